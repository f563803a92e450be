//===- VjpUtils.cpp - builders shared by the VJPs of lcc ops --------------===//
#include "dialects/lcc/vjp/VjpUtils.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace lcc::vjp {

RankedTensorType tensorType(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

Value fill(OpBuilder &b, Location loc, Type type, double value) {
  return FillOp::create(b, loc, type, b.getF64FloatAttr(value));
}

Value scalar(OpBuilder &b, Location loc, Value like, double value) {
  return fill(b, loc, RankedTensorType::get({}, tensorType(like).getElementType()), value);
}

/// The result type of a broadcasting binary op on `lhs` and `rhs`.
static RankedTensorType broadcastType(Value lhs, Value rhs, Type element = {}) {
  auto l = tensorType(lhs), r = tensorType(rhs);
  auto shape = broadcastShapes(l.getShape(), r.getShape());
  assert(shape && "VJP operands must broadcast");
  return RankedTensorType::get(*shape, element ? element : l.getElementType());
}

Value add(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  return AddOp::create(b, loc, broadcastType(lhs, rhs), lhs, rhs);
}
Value sub(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  return SubOp::create(b, loc, broadcastType(lhs, rhs), lhs, rhs);
}
Value mul(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  return MulOp::create(b, loc, broadcastType(lhs, rhs), lhs, rhs);
}
Value div(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  return DivOp::create(b, loc, broadcastType(lhs, rhs), lhs, rhs);
}
Value scale(OpBuilder &b, Location loc, Value lhs, double c) {
  return mul(b, loc, lhs, scalar(b, loc, lhs, c));
}
Value neg(OpBuilder &b, Location loc, Value v) { return NegOp::create(b, loc, v.getType(), v); }

Value cmp(OpBuilder &b, Location loc, StringRef predicate, Value lhs, Value rhs) {
  return CmpOp::create(b, loc, broadcastType(lhs, rhs, b.getI1Type()), lhs, rhs,
                       b.getStringAttr(predicate));
}

Value select(OpBuilder &b, Location loc, Value cond, Value lhs, Value rhs) {
  auto branches = broadcastType(lhs, rhs);
  auto shape = broadcastShapes(branches.getShape(), tensorType(cond).getShape());
  assert(shape && "where operands must broadcast");
  return WhereOp::create(b, loc, RankedTensorType::get(*shape, branches.getElementType()), cond,
                         lhs, rhs);
}

Value reshape(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(shape, tensorType(v).getElementType());
  if (type == v.getType())
    return v;
  return ReshapeOp::create(b, loc, type, v);
}

Value broadcastTo(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(shape, tensorType(v).getElementType());
  if (type == v.getType())
    return v;
  return BroadcastToOp::create(b, loc, type, v);
}

Value reduceSum(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> axes, bool keepdim) {
  auto in = tensorType(v);
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < in.getRank(); ++d) {
    if (!llvm::is_contained(axes, d))
      shape.push_back(in.getDimSize(d));
    else if (keepdim)
      shape.push_back(1);
  }
  return ReduceSumOp::create(b, loc, RankedTensorType::get(shape, in.getElementType()), v,
                             b.getDenseI64ArrayAttr(axes), b.getBoolAttr(keepdim));
}

Value sliceAxis(OpBuilder &b, Location loc, Value v, int64_t axis, int64_t start, int64_t limit) {
  auto in = tensorType(v);
  if (start == 0 && limit == in.getDimSize(axis))
    return v;
  SmallVector<int64_t> starts(in.getRank(), 0), limits(in.getShape());
  starts[axis] = start;
  limits[axis] = limit;
  SmallVector<int64_t> shape(in.getShape());
  shape[axis] = limit - start;
  return SliceOp::create(b, loc, RankedTensorType::get(shape, in.getElementType()), v,
                         b.getDenseI64ArrayAttr(starts), b.getDenseI64ArrayAttr(limits),
                         DenseI64ArrayAttr());
}

Value concat(OpBuilder &b, Location loc, ArrayRef<Value> parts, int64_t axis) {
  assert(!parts.empty() && "concat of nothing");
  if (parts.size() == 1)
    return parts.front();
  auto first = tensorType(parts.front());
  SmallVector<int64_t> shape(first.getShape());
  shape[axis] = 0;
  for (Value p : parts)
    shape[axis] += tensorType(p).getDimSize(axis);
  return ConcatOp::create(b, loc, RankedTensorType::get(shape, first.getElementType()), parts,
                          b.getI64IntegerAttr(axis));
}

Value sumToShape(OpBuilder &b, Location loc, Value grad, Type target) {
  if (grad.getType() == target)
    return grad;
  auto g = tensorType(grad);
  auto t = llvm::cast<RankedTensorType>(target);
  int64_t lead = g.getRank() - t.getRank();
  assert(lead >= 0 && "gradient has lower rank than its operand");
  SmallVector<int64_t> axes;
  for (int64_t d = 0; d < g.getRank(); ++d)
    if (d < lead || (t.getDimSize(d - lead) == 1 && g.getDimSize(d) != 1))
      axes.push_back(d);
  Value v = grad;
  // keepdim, then one reshape: drops the leading dims and keeps the size-1
  // dims of the target in a single op.
  if (!axes.empty())
    v = reduceSum(b, loc, v, axes, /*keepdim=*/true);
  return reshape(b, loc, v, t.getShape());
}

Value unreduce(OpBuilder &b, Location loc, Value grad, ArrayRef<int64_t> inputShape,
               ArrayRef<int64_t> axes) {
  SmallVector<int64_t> kept(inputShape);
  for (int64_t a : axes)
    kept[a] = 1;
  return broadcastTo(b, loc, reshape(b, loc, grad, kept), inputShape);
}

SmallVector<int64_t> normalizedAxes(ArrayRef<int64_t> axes, int64_t rank) {
  SmallVector<int64_t> out;
  for (int64_t a : axes)
    out.push_back(normalizeAxis(a, rank));
  llvm::sort(out);
  return out;
}

} // namespace lcc::vjp
