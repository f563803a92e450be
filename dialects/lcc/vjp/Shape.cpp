//===- Shape.cpp - VJPs of reshape, transpose, slice, concat, broadcast_to ===//
//
// Shape ops move elements without arithmetic, so their VJPs move the
// gradient back: reshape back, the inverse permutation, slices of the
// gradient for concat, a sum over broadcast dimensions for broadcast_to.
//
// slice is padded back with zeros built from concat (lcc has no pad op):
// per sliced dimension, a step s > 1 first interleaves s - 1 zero rows after
// every gradient row (reshape [.., n, ..] -> [.., n, 1, ..], concat zeros
// [.., n, s-1, ..], reshape [.., n*s, ..], trim to the input's extent), then
// zeros are concatenated before `start` and after the covered range. Only
// dimensions that were actually sliced get any op.
//
//===----------------------------------------------------------------------===//
#include "dialects/lcc/vjp/VjpUtils.h"

using namespace mlir;

namespace lcc {

namespace {

/// A zero tensor like `like` but with dimension `axis` of size `size`.
Value zerosAlong(OpBuilder &b, Location loc, Value like, int64_t axis, int64_t size) {
  auto t = vjp::tensorType(like);
  SmallVector<int64_t> shape(t.getShape());
  shape[axis] = size;
  return vjp::fill(b, loc, RankedTensorType::get(shape, t.getElementType()), 0.0);
}

/// The gradient `g` of slice dimension `d` (n = g.shape[d] rows taken at
/// start, start + step, ...) scattered back into `extent` rows.
Value unsliceDim(OpBuilder &b, Location loc, Value g, int64_t d, int64_t start, int64_t step,
                 int64_t extent) {
  auto t = vjp::tensorType(g);
  int64_t n = t.getDimSize(d);
  int64_t covered = n; // rows from `start` on that the gradient now spans
  if (step > 1 && n > 0) {
    SmallVector<int64_t> split(t.getShape());
    split.insert(split.begin() + d + 1, 1);
    Value rows = vjp::reshape(b, loc, g, split);
    Value gaps = zerosAlong(b, loc, rows, d + 1, step - 1);
    Value spread = vjp::concat(b, loc, {rows, gaps}, d + 1);
    SmallVector<int64_t> merged(t.getShape());
    merged[d] = n * step;
    g = vjp::reshape(b, loc, spread, merged);
    // The trailing gap of the last row may run past the input's end.
    covered = std::min(n * step, extent - start);
    g = vjp::sliceAxis(b, loc, g, d, 0, covered);
  }
  SmallVector<Value> parts;
  if (start > 0)
    parts.push_back(zerosAlong(b, loc, g, d, start));
  parts.push_back(g);
  if (extent - start - covered > 0)
    parts.push_back(zerosAlong(b, loc, g, d, extent - start - covered));
  return vjp::concat(b, loc, parts, d);
}

} // namespace

LogicalResult ReshapeOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                                  SmallVectorImpl<Value> &out) {
  out.assign(1, Value());
  if (needed[0] && rg[0])
    out[0] = vjp::reshape(b, getLoc(), rg[0], getInput().getType().getShape());
  return success();
}

LogicalResult TransposeOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                                    SmallVectorImpl<Value> &out) {
  out.assign(1, Value());
  if (!needed[0] || !rg[0])
    return success();
  ArrayRef<int64_t> perm = getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  out[0] = TransposeOp::create(b, getLoc(), getInput().getType(), rg[0],
                               b.getDenseI64ArrayAttr(inverse));
  return success();
}

LogicalResult SliceOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                                SmallVectorImpl<Value> &out) {
  out.assign(1, Value());
  if (!needed[0] || !rg[0])
    return success();
  auto in = getInput().getType();
  Value g = rg[0];
  for (int64_t d = 0; d < in.getRank(); ++d) {
    int64_t step = getStep() ? (*getStep())[d] : 1;
    int64_t extent = in.getDimSize(d);
    if (vjp::tensorType(g).getDimSize(d) == extent && getStart()[d] == 0)
      continue; // the whole dimension was taken (step 1, or a single row)
    g = unsliceDim(b, getLoc(), g, d, getStart()[d], step, extent);
  }
  out[0] = g;
  return success();
}

LogicalResult ConcatOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                                 SmallVectorImpl<Value> &out) {
  out.assign(getNumOperands(), Value());
  if (!rg[0])
    return success();
  int64_t axis = normalizeAxis(int64_t(getAxis()), getType().getRank());
  int64_t offset = 0;
  for (auto [j, input] : llvm::enumerate(getInputs())) {
    int64_t size = vjp::tensorType(input).getDimSize(axis);
    if (needed[j])
      out[j] = vjp::sliceAxis(b, getLoc(), rg[0], axis, offset, offset + size);
    offset += size;
  }
  return success();
}

LogicalResult BroadcastToOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                                      SmallVectorImpl<Value> &out) {
  out.assign(1, Value());
  if (needed[0] && rg[0])
    out[0] = vjp::sumToShape(b, getLoc(), rg[0], getInput().getType());
  return success();
}

} // namespace lcc
