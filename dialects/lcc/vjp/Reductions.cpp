//===- Reductions.cpp - VJPs of reduce_sum, reduce_mean, reduce_max -------===//
//
// The gradient of a reduction is the result gradient broadcast back over the
// reduced axes (vjp::unreduce); mean scales it by 1/N first, on the small
// reduced tensor.
//
// reduce_max: the gradient goes to the positions equal to the maximum; when
// several positions tie, it is split evenly among them (as torch.amax), so
// the gradient still sums to g. Random inputs never tie, so the split only
// matters for constant or saturated inputs.
//
//===----------------------------------------------------------------------===//
#include "dialects/lcc/vjp/VjpUtils.h"

using namespace mlir;

namespace lcc {

LogicalResult ReduceSumOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                                    SmallVectorImpl<Value> &out) {
  out.assign(1, Value());
  if (!needed[0] || !rg[0])
    return success();
  auto in = getInput().getType();
  out[0] = vjp::unreduce(b, getLoc(), rg[0], in.getShape(),
                         vjp::normalizedAxes(getAxes(), in.getRank()));
  return success();
}

LogicalResult ReduceMeanOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                                     SmallVectorImpl<Value> &out) {
  out.assign(1, Value());
  if (!needed[0] || !rg[0])
    return success();
  auto in = getInput().getType();
  auto axes = vjp::normalizedAxes(getAxes(), in.getRank());
  int64_t count = 1;
  for (int64_t a : axes)
    count *= in.getDimSize(a);
  Value g = vjp::scale(b, getLoc(), rg[0], 1.0 / double(count));
  out[0] = vjp::unreduce(b, getLoc(), g, in.getShape(), axes);
  return success();
}

LogicalResult ReduceMaxOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                                    SmallVectorImpl<Value> &out) {
  out.assign(1, Value());
  if (!needed[0] || !rg[0])
    return success();
  Location loc = getLoc();
  Value x = getInput();
  auto in = getInput().getType();
  auto axes = vjp::normalizedAxes(getAxes(), in.getRank());
  SmallVector<int64_t> kept(in.getShape());
  for (int64_t a : axes)
    kept[a] = 1;
  Value mask = vjp::cmp(b, loc, "eq", x, vjp::reshape(b, loc, getResult(), kept));
  Value zero = vjp::scalar(b, loc, x, 0.0);
  Value count = vjp::reduceSum(b, loc, vjp::select(b, loc, mask, vjp::scalar(b, loc, x, 1.0), zero),
                               axes, /*keepdim=*/true);
  Value share = vjp::div(b, loc, vjp::reshape(b, loc, rg[0], kept), count);
  out[0] = vjp::select(b, loc, mask, share, zero);
  return success();
}

} // namespace lcc
