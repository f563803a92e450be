//===- Collectives.cpp - VJPs of tensor parallelism's operators -----------===//
//
// Megatron's pair: `parallel_copy` (f) is the identity where a replicated
// value enters work split over a group, and its gradient is the sum of every
// rank's share; `all_reduce` (g) sums the split work's partial results, and
// because every rank then computes the same loss from the same sum, the
// gradient of its input is the (replicated) gradient of its result.
//
// Sequence parallelism (lcc-sequence-parallel) splits g into reduce_scatter
// (each rank keeps its part of the sum: the gradient of every rank's partial
// input is every part's gradient, all_gather) and f into all_gather (each
// rank's split work yields its share of the whole value's gradient: summed
// and cut back into parts, reduce_scatter). `shard_slice` takes a rank's part
// of a replicated value; the parts' gradients together are the value's
// (all_gather).
//
//===----------------------------------------------------------------------===//
#include "dialects/lcc/vjp/VjpUtils.h"

using namespace mlir;

namespace lcc {

LogicalResult ParallelCopyOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                                       SmallVectorImpl<Value> &out) {
  out.assign(1, Value());
  if (needed[0] && rg[0])
    out[0] = AllReduceOp::create(b, getLoc(), rg[0].getType(), rg[0], getGroup(), "sum");
  return success();
}

LogicalResult AllReduceOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                                    SmallVectorImpl<Value> &out) {
  out.assign(1, Value());
  StringRef reduction = getReduction();
  if (reduction != "sum" && reduction != "mean")
    return emitOpError() << "has no VJP for reduction '" << reduction << "'";
  if (!needed[0] || !rg[0])
    return success();
  out[0] = rg[0];
  if (reduction == "mean") {
    auto groups = processGroups(*this);
    int64_t n = groups ? groups.getAs<IntegerAttr>(getGroup()).getInt() : 1;
    out[0] = vjp::scale(b, getLoc(), rg[0], 1.0 / double(n));
  }
  return success();
}

/// The gradient of `input` from a parted result's: every rank's part, on
/// every rank (all_gather), or the parts' gradients summed and cut back into
/// parts (reduce_scatter), along the op's axis.
template <typename Gradient, typename Op>
LogicalResult partedVjp(Op op, OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                        SmallVectorImpl<Value> &out) {
  out.assign(1, Value());
  if (!needed[0] || !rg[0])
    return success();
  if constexpr (std::is_same_v<Gradient, ReduceScatterOp>)
    out[0] = ReduceScatterOp::create(b, op.getLoc(), op.getInput().getType(), rg[0], op.getGroup(),
                                     uint64_t(op.getAxis()), "sum");
  else
    out[0] = AllGatherOp::create(b, op.getLoc(), op.getInput().getType(), rg[0], op.getGroup(),
                                 uint64_t(op.getAxis()));
  return success();
}

LogicalResult AllGatherOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                                    SmallVectorImpl<Value> &out) {
  return partedVjp<ReduceScatterOp>(*this, b, rg, needed, out);
}

LogicalResult ReduceScatterOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                                        SmallVectorImpl<Value> &out) {
  if (getReduction() != "sum")
    return emitOpError() << "has no VJP for reduction '" << getReduction() << "'";
  return partedVjp<AllGatherOp>(*this, b, rg, needed, out);
}

LogicalResult ShardSliceOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                                     SmallVectorImpl<Value> &out) {
  return partedVjp<AllGatherOp>(*this, b, rg, needed, out);
}

} // namespace lcc
