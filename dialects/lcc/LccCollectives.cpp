//===- LccCollectives.cpp - verifiers of the collective ops ---------------===//
//
// Collectives name a process group declared on an enclosing module
// (`lcc.process_groups = {NAME = SIZE, ...}`); the size fixes the shapes of
// all_gather / reduce_scatter and bounds root and peer ranks.
//
//===----------------------------------------------------------------------===//
#include "dialects/lcc/LccOps.h"

#include "mlir/IR/BuiltinOps.h"

using namespace mlir;

namespace lcc {

DictionaryAttr processGroups(Operation *op) {
  for (Operation *p = op->getParentOp(); p; p = p->getParentOp())
    if (auto module = llvm::dyn_cast<ModuleOp>(p))
      if (auto groups = module->getAttrOfType<DictionaryAttr>("lcc.process_groups"))
        return groups;
  return {};
}

/// The size of `group` from the nearest enclosing module that declares
/// process groups, or failure with an error on `op`.
static FailureOr<int64_t> groupSize(Operation *op, StringRef group) {
  DictionaryAttr groups = processGroups(op);
  if (!groups)
    return op->emitOpError() << "names process group '" << group
                             << "', but no enclosing module declares lcc.process_groups";
  auto size = groups.getAs<IntegerAttr>(group);
  if (!size)
    return op->emitOpError() << "process group '" << group
                             << "' is not declared in the module's lcc.process_groups";
  if (size.getInt() < 1)
    return op->emitOpError() << "process group '" << group << "' has size " << size.getInt()
                             << "; expected at least 1";
  return size.getInt();
}

static LogicalResult verifyReduction(Operation *op, StringRef reduction) {
  if (reduction != "sum" && reduction != "mean" && reduction != "max" && reduction != "min")
    return op->emitOpError() << "reduction '" << reduction
                             << "' is not one of sum, mean, max, min";
  return success();
}

static LogicalResult verifyRank(Operation *op, int64_t rank, int64_t size, StringRef what) {
  if (rank < 0 || rank >= size)
    return op->emitOpError() << what << " " << rank << " is not a rank of the group (0.."
                             << size - 1 << ")";
  return success();
}

/// Input and result agree but for `axis`, where result = input * factor
/// (all_gather) or input = result * factor (reduce_scatter).
static LogicalResult verifyAlongAxis(Operation *op, RankedTensorType small,
                                     RankedTensorType large, int64_t axis, int64_t factor) {
  int64_t rank = small.getRank();
  if (axis < 0 || axis >= rank)
    return op->emitOpError() << "axis " << axis << " is out of range for rank " << rank;
  if (large.getRank() != rank || large.getElementType() != small.getElementType())
    return op->emitOpError() << "input and result differ in rank or element type";
  for (int64_t d = 0; d < rank; ++d) {
    int64_t want = d == axis ? small.getDimSize(d) * factor : small.getDimSize(d);
    if (large.getDimSize(d) != want)
      return op->emitOpError() << "dimension " << d << " is " << large.getDimSize(d)
                               << " on the gathered side; expected " << want << " (group size "
                               << factor << " along axis " << axis << ")";
  }
  return success();
}

std::optional<AsyncCollective> asAsyncCollective(Operation *op) {
  if (auto ar = llvm::dyn_cast_or_null<AllReduceOp>(op))
    return AsyncCollective{ar.getInput(), ar.getTicket(), true};
  if (auto ag = llvm::dyn_cast_or_null<AllGatherOp>(op))
    return AsyncCollective{ag.getInput(), ag.getTicket(), false};
  if (auto rs = llvm::dyn_cast_or_null<ReduceScatterOp>(op))
    return AsyncCollective{rs.getInput(), rs.getTicket(), false};
  return std::nullopt;
}

/// An asynchronous collective (one with a ticket) has one use: the lcc.wait
/// with its ticket. Anything else could read the result before it exists.
static LogicalResult verifyTicket(Operation *op, std::optional<uint64_t> ticket) {
  if (!ticket)
    return success();
  Value result = op->getResult(0);
  auto wait = result.hasOneUse() ? llvm::dyn_cast<WaitOp>(*result.getUsers().begin()) : WaitOp();
  if (!wait || wait.getValue() != result)
    return op->emitOpError() << "with ticket " << *ticket
                             << " must have one use, the lcc.wait of that ticket (its result "
                                "exists only once the wait returns)";
  if (uint64_t(wait.getTicket()) != *ticket)
    return op->emitOpError() << "with ticket " << *ticket << " is waited for by ticket "
                             << wait.getTicket();
  return success();
}

LogicalResult AllReduceOp::verify() {
  if (failed(groupSize(*this, getGroup())) || failed(verifyTicket(*this, getTicket())))
    return failure();
  return verifyReduction(*this, getReduction());
}

LogicalResult AllGatherOp::verify() {
  auto size = groupSize(*this, getGroup());
  if (failed(size) || failed(verifyTicket(*this, getTicket())))
    return failure();
  return verifyAlongAxis(*this, getInput().getType(), getType(), getAxis(), *size);
}

LogicalResult WaitOp::verify() {
  auto collective = asAsyncCollective(getValue().getDefiningOp());
  if (!collective || !collective->ticket)
    return emitOpError() << "waits for a value that is not the result of an all_reduce, "
                            "all_gather or reduce_scatter with a ticket";
  if (*collective->ticket != uint64_t(getTicket()))
    return emitOpError() << "ticket " << getTicket() << " does not match the collective's ticket "
                         << *collective->ticket;
  // The runtime reads an out-of-place collective's input until the wait.
  bool inPlace = collective->inPlace;
  if (inPlace ? !getKeep().empty() : getKeep().size() != 1 || getKeep()[0] != collective->input)
    return emitOpError() << "must keep " << (inPlace ? "nothing (all_reduce works in place)"
                                                     : "exactly the collective's input")
                         << " alive until the wait";
  return success();
}

/// The input is cut into `group`'s size parts along `axis` (reduce_scatter,
/// shard_slice): divisible, and the result is one part.
static LogicalResult verifyPart(Operation *op, StringRef group, RankedTensorType in,
                                RankedTensorType part, int64_t axis) {
  auto size = groupSize(op, group);
  if (failed(size))
    return failure();
  if (axis >= 0 && axis < in.getRank() && in.getDimSize(axis) % *size != 0)
    return op->emitOpError() << "dimension " << axis << " of the input (" << in.getDimSize(axis)
                             << ") is not divisible by the group size " << *size;
  return verifyAlongAxis(op, part, in, axis, *size);
}

LogicalResult ReduceScatterOp::verify() {
  if (failed(verifyReduction(*this, getReduction())) || failed(verifyTicket(*this, getTicket())))
    return failure();
  return verifyPart(*this, getGroup(), getInput().getType(), getType(), getAxis());
}

LogicalResult BroadcastOp::verify() {
  auto size = groupSize(*this, getGroup());
  if (failed(size))
    return failure();
  return verifyRank(*this, getRoot(), *size, "root");
}

LogicalResult SendOp::verify() {
  auto size = groupSize(*this, getGroup());
  if (failed(size))
    return failure();
  return verifyRank(*this, getPeer(), *size, "peer");
}

LogicalResult RecvOp::verify() {
  auto size = groupSize(*this, getGroup());
  if (failed(size))
    return failure();
  return verifyRank(*this, getPeer(), *size, "peer");
}

LogicalResult ExchangeOp::verify() {
  auto size = groupSize(*this, getGroup());
  if (failed(size))
    return failure();
  if (getSendPeers().size() != getInputs().size())
    return emitOpError() << "has " << getInputs().size() << " inputs but " << getSendPeers().size()
                         << " send_peers";
  if (getPosted() && !getResults().empty())
    return emitOpError() << "is posted but receives: only sends complete after it returns";
  if (getRecvPeers().size() != getResults().size())
    return emitOpError() << "has " << getResults().size() << " results but "
                         << getRecvPeers().size() << " recv_peers";
  for (int64_t peer : llvm::concat<const int64_t>(getSendPeers(), getRecvPeers()))
    if (failed(verifyRank(*this, peer, *size, "peer")))
      return failure();
  return success();
}

LogicalResult ShardSliceOp::verify() {
  return verifyPart(*this, getGroup(), getInput().getType(), getType(), getAxis());
}

OpFoldResult GradientOp::fold(FoldAdaptor) { return getInput(); }

LogicalResult ParallelCopyOp::verify() { return groupSize(*this, getGroup()); }

} // namespace lcc
