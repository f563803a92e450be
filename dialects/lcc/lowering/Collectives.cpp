//===- Collectives.cpp - collectives become calls into the runtime --------===//
//
// Collectives are lcc ops on tensors until bufferization, so every pass
// before it (fusion, canonicalization) sees them as opaque side-effecting
// ops and keeps their order. One-shot bufferization then turns each into a
// call of the runtime's C ABI (runtime/dist/Collectives.h), with the buffers
// as int64 addresses and the counts as elements:
//
//   lcc_all_reduce(group, dtype, reduction, in, out, count)        in place
//   lcc_all_gather(group, dtype, in, out, countPerRank)           new buffer
//   lcc_reduce_scatter(group, dtype, reduction, in, out, countPerRank)
//   lcc_broadcast(group, dtype, root, in, out, count)              in place
//   lcc_send(group, dtype, peer, in, count)
//   lcc_recv(group, dtype, peer, out, count)                     new buffer
//   lcc_group_rank(group) -> i64                          (for shard_slice)
//
// An exchange is its sends and receives between lcc_group_start(group) and
// lcc_group_end(group): the runtime posts them together at the end (NCCL's
// ncclGroupStart/End), receives into new buffers; a posted exchange ends
// with lcc_group_end_posted(group), which returns once the sends are posted.
//
// `group` is the position of the group's name in the module's
// lcc.process_groups (a dictionary, so names in sorted order); the runtime
// installs its communicators in the same order. all_reduce and broadcast
// work in place, so a bucket of gradients needs no second buffer.
// all_gather and reduce_scatter need their concatenation axis to be the
// outermost non-unit one, where a part is one contiguous block (the sharding
// passes only use such axes).
//
// An asynchronous collective (with a `ticket`, see lcc-overlap-collectives)
// calls the `_start` variant of its function, which takes the ticket first
// and returns at once; its lcc.wait becomes
//
//   lcc_wait(ticket, in, out)
//
// with the very addresses the start call got. Passing them again is what keeps
// the buffers alive: lcc-plan-memory follows every value derived from a
// buffer (these addresses too) to its last use, so neither buffer is reused
// while the runtime's communication thread still reads or writes it. The
// wait finds its start call by the `lcc.ticket` attribute bufferization
// leaves on it. An in-place all_reduce of a non-contiguous buffer (never made
// by the sharding passes) runs synchronously on a contiguous copy; its wait
// then lowers to nothing.
//
// `lcc.gradient` and `lcc.parallel_copy` lower to their input, `lcc.shard_slice` to a slice at
// offset rank * size, with the rank from the runtime.
//
//===----------------------------------------------------------------------===//
#include "dialects/lcc/lowering/Lowering.h"
#include "dialects/lcc/lowering/RuntimeCalls.h"
#include "dialects/lcc/lowering/Utils.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::bufferization;

namespace lcc {

using lowering::bufferAddress;
using lowering::contiguousBuffer;
using lowering::declareRuntime;
using lowering::i64Constant;

/// Position of `group` in the enclosing module's lcc.process_groups.
static FailureOr<int64_t> groupIndex(Operation *op, StringRef group) {
  if (DictionaryAttr groups = processGroups(op))
    for (auto [i, entry] : llvm::enumerate(groups))
      if (entry.getName() == group)
        return int64_t(i);
  return op->emitOpError() << "process group '" << group << "' is not declared";
}

/// The runtime's code for an element type (runtime/support/HostTensor.h ElementType).
static FailureOr<int64_t> dtypeCode(Operation *op, Type t) {
  if (t.isF32())
    return int64_t(0);
  if (t.isF64())
    return int64_t(1);
  if (t.isInteger(32))
    return int64_t(2);
  if (t.isInteger(64))
    return int64_t(3);
  if (t.isInteger(1))
    return int64_t(4);
  return op->emitOpError() << "cannot communicate elements of type " << t
                           << " (the runtime has f32, f64, i32, i64, i1)";
}

static int64_t reductionCode(StringRef r) {
  return llvm::StringSwitch<int64_t>(r).Case("sum", 0).Case("mean", 1).Case("max", 2).Default(3);
}

/// Whether the parts along `axis` are contiguous blocks (all outer dims 1).
static LogicalResult checkOuterAxis(Operation *op, RankedTensorType type, int64_t axis) {
  for (int64_t d = 0; d < axis; ++d)
    if (type.getDimSize(d) != 1)
      return op->emitOpError() << "along axis " << axis
                               << " is not lowered yet: only the outermost non-unit axis, where "
                                  "each rank's part is contiguous";
  return success();
}

namespace {

/// Emits the runtime call of one collective on bufferized operands.
struct CallBuilder {
  RewriterBase &rewriter;
  Location loc;

  Value i64(int64_t v) { return i64Constant(rewriter, loc, v); }

  Value address(Value buf) { return bufferAddress(rewriter, loc, buf); }

  /// `buf` itself when contiguous, else a contiguous copy of it.
  Value contiguous(Value buf) { return contiguousBuffer(rewriter, loc, buf); }

  /// The first arguments of every call: the group's index and the element
  /// type's code (failure after an error on `op`).
  FailureOr<SmallVector<Value>> head(Operation *op, StringRef group, Type element) {
    auto index = groupIndex(op, group);
    auto dtype = dtypeCode(op, element);
    if (failed(index) || failed(dtype))
      return failure();
    return SmallVector<Value>{i64(*index), i64(*dtype)};
  }

  Value alloc(Type tensor) {
    auto t = llvm::cast<RankedTensorType>(tensor);
    return memref::AllocOp::create(rewriter, loc,
                                   MemRefType::get(t.getShape(), t.getElementType()));
  }

  LogicalResult call(Operation *op, StringRef name, ArrayRef<Value> args) {
    return callWithTicket(op, name, args, std::nullopt);
  }

  /// The call of `name`, or of `name`_start with the ticket first when the
  /// collective is asynchronous (`start`); either call carries the ticket as
  /// `lcc.ticket` for the wait to find.
  LogicalResult callWithTicket(Operation *op, StringRef name, ArrayRef<Value> args,
                               std::optional<uint64_t> ticket, bool start = true) {
    SmallVector<Value> all;
    std::string callee = name.str();
    if (ticket && start) {
      all.push_back(i64(int64_t(*ticket)));
      callee += "_start";
    }
    all.append(args.begin(), args.end());
    auto f = declareRuntime(op, callee, all.size(), 0);
    if (failed(f))
      return failure();
    auto call = func::CallOp::create(rewriter, loc, *f, all);
    if (ticket)
      call->setAttr("lcc.ticket", rewriter.getI64IntegerAttr(int64_t(*ticket)));
    return success();
  }
};

/// Shared analysis answers: every collective reads its operand; all_reduce
/// and broadcast write it in place (result equivalent to operand), the others
/// produce a new buffer.
template <typename ConcreteModel, typename ConcreteOp, bool InPlace>
struct CollectiveModelBase
    : public BufferizableOpInterface::ExternalModel<ConcreteModel, ConcreteOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &, const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &, const AnalysisState &) const {
    return InPlace;
  }
  bool bufferizesToAllocation(Operation *, Value) const { return !InPlace; }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &, const AnalysisState &) const {
    if (!InPlace || op->getNumResults() == 0)
      return {};
    return {{op->getResult(0), BufferRelation::Equivalent}};
  }
};

/// all_reduce and broadcast: one call on the operand's buffer, in place.
/// The third argument is the reduction (all_reduce) or the root (broadcast).
template <typename Op>
struct InPlaceModel : CollectiveModelBase<InPlaceModel<Op>, Op, true> {
  LogicalResult bufferize(Operation *o, RewriterBase &rewriter, const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto op = llvm::cast<Op>(o);
    rewriter.setInsertionPoint(op);
    CallBuilder c{rewriter, op.getLoc()};
    auto buf = getBuffer(rewriter, op.getInput(), options, state);
    auto args = c.head(op, op.getGroup(), op.getType().getElementType());
    if (failed(buf) || failed(args))
      return failure();
    Value work = c.contiguous(*buf);
    Value addr = c.address(work);
    int64_t third;
    std::optional<uint64_t> ticket;
    if constexpr (std::is_same_v<Op, AllReduceOp>) {
      third = reductionCode(op.getReduction());
      ticket = op.getTicket();
    } else {
      third = op.getRoot();
    }
    args->append({c.i64(third), addr, addr, c.i64(op.getType().getNumElements())});
    StringRef callee = std::is_same_v<Op, AllReduceOp> ? "lcc_all_reduce" : "lcc_broadcast";
    // A copy must be copied back after the collective: synchronously, then.
    if (failed(c.callWithTicket(op, callee, *args, ticket, /*start=*/work == *buf)))
      return failure();
    if (work != *buf)
      memref::CopyOp::create(rewriter, op.getLoc(), work, *buf);
    replaceOpWithBufferizedValues(rewriter, op, *buf);
    return success();
  }
};

/// all_gather and reduce_scatter: input read, result a new buffer.
template <typename Op, bool Gather>
struct ResizeModel : CollectiveModelBase<ResizeModel<Op, Gather>, Op, false> {
  LogicalResult bufferize(Operation *o, RewriterBase &rewriter, const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto op = llvm::cast<Op>(o);
    rewriter.setInsertionPoint(op);
    CallBuilder c{rewriter, op.getLoc()};
    auto buf = getBuffer(rewriter, op.getInput(), options, state);
    auto head = c.head(op, op.getGroup(), op.getType().getElementType());
    auto large = Gather ? op.getType() : op.getInput().getType();
    if (failed(buf) || failed(head) || failed(checkOuterAxis(op, large, op.getAxis())))
      return failure();
    Value in = c.contiguous(*buf);
    Value out = c.alloc(op.getType());
    SmallVector<Value> args = std::move(*head);
    int64_t perRank;
    if constexpr (Gather) {
      perRank = op.getInput().getType().getNumElements();
    } else {
      args.push_back(c.i64(reductionCode(op.getReduction())));
      perRank = op.getType().getNumElements();
    }
    args.append({c.address(in), c.address(out), c.i64(perRank)});
    if (failed(c.callWithTicket(op, Gather ? "lcc_all_gather" : "lcc_reduce_scatter", args,
                                op.getTicket())))
      return failure();
    replaceOpWithBufferizedValues(rewriter, op, out);
    return success();
  }
};

/// lcc.wait: returns the collective's buffer; reads `keep` (so bufferization
/// lets nothing overwrite the input before the wait) and writes nothing.
struct WaitModel : BufferizableOpInterface::ExternalModel<WaitModel, WaitOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &, const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &, const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &operand,
                                      const AnalysisState &) const {
    if (operand.getOperandNumber() != 0)
      return {};
    return {{op->getResult(0), BufferRelation::Equivalent}};
  }

  LogicalResult bufferize(Operation *o, RewriterBase &rewriter, const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto op = llvm::cast<WaitOp>(o);
    auto buf = getBuffer(rewriter, op.getValue(), options, state);
    if (failed(buf))
      return failure();
    // The start call is earlier in the same block (the collective dominates
    // its wait and both are top-level ops of one function).
    func::CallOp start;
    for (Operation *p = op->getPrevNode(); p && !start; p = p->getPrevNode())
      if (auto call = llvm::dyn_cast<func::CallOp>(p))
        if (auto t = call->getAttrOfType<IntegerAttr>("lcc.ticket"))
          if (t.getInt() == int64_t(op.getTicket()))
            start = call;
    if (!start)
      return op.emitOpError() << "found no call that issued ticket " << op.getTicket()
                              << " before it in its block";
    start->removeAttr("lcc.ticket");
    if (start.getCallee().ends_with("_start")) {
      rewriter.setInsertionPoint(op);
      CallBuilder c{rewriter, op.getLoc()};
      // start(ticket, ..., in, out, count): hand in and out over again.
      unsigned n = start.getNumOperands();
      if (failed(c.call(op, "lcc_wait",
                        {c.i64(int64_t(op.getTicket())), start.getOperand(n - 3),
                         start.getOperand(n - 2)})))
        return failure();
    }
    replaceOpWithBufferizedValues(rewriter, op, *buf);
    return success();
  }
};

struct SendModel : CollectiveModelBase<SendModel, SendOp, false> {
  LogicalResult bufferize(Operation *o, RewriterBase &rewriter, const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto op = llvm::cast<SendOp>(o);
    rewriter.setInsertionPoint(op);
    CallBuilder c{rewriter, op.getLoc()};
    auto type = op.getInput().getType();
    auto buf = getBuffer(rewriter, op.getInput(), options, state);
    auto args = c.head(op, op.getGroup(), type.getElementType());
    if (failed(buf) || failed(args))
      return failure();
    args->append({c.i64(op.getPeer()), c.address(c.contiguous(*buf)), c.i64(type.getNumElements())});
    if (failed(c.call(op, "lcc_send", *args)))
      return failure();
    rewriter.eraseOp(op);
    return success();
  }
};

struct RecvModel : CollectiveModelBase<RecvModel, RecvOp, false> {
  LogicalResult bufferize(Operation *o, RewriterBase &rewriter, const BufferizationOptions &,
                          BufferizationState &) const {
    auto op = llvm::cast<RecvOp>(o);
    rewriter.setInsertionPoint(op);
    CallBuilder c{rewriter, op.getLoc()};
    auto args = c.head(op, op.getGroup(), op.getType().getElementType());
    if (failed(args))
      return failure();
    Value out = c.alloc(op.getType());
    args->append({c.i64(op.getPeer()), c.address(out), c.i64(op.getType().getNumElements())});
    if (failed(c.call(op, "lcc_recv", *args)))
      return failure();
    replaceOpWithBufferizedValues(rewriter, op, out);
    return success();
  }
};

struct ExchangeModel : CollectiveModelBase<ExchangeModel, ExchangeOp, false> {
  /// The runtime reads the sends' buffers and writes the receives' at
  /// lcc_group_end, not at the calls that name them; the memory plan sees
  /// a buffer's life end at its last named use. So every buffer (the
  /// receives', contiguous copies of the sends') is made before
  /// lcc_group_start, and nothing new is allocated until lcc_group_end:
  /// none can be placed over a buffer still in flight.
  LogicalResult bufferize(Operation *o, RewriterBase &rewriter, const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto op = llvm::cast<ExchangeOp>(o);
    rewriter.setInsertionPoint(op);
    CallBuilder c{rewriter, op.getLoc()};
    auto group = groupIndex(op, op.getGroup());
    if (failed(group))
      return failure();
    SmallVector<SmallVector<Value>> calls; // each send's and receive's arguments
    for (auto [input, peer] : llvm::zip(op.getInputs(), op.getSendPeers())) {
      auto type = llvm::cast<RankedTensorType>(input.getType());
      auto buf = getBuffer(rewriter, input, options, state);
      auto args = c.head(op, op.getGroup(), type.getElementType());
      if (failed(buf) || failed(args))
        return failure();
      args->append({c.i64(peer), c.address(c.contiguous(*buf)), c.i64(type.getNumElements())});
      calls.push_back(*args);
    }
    SmallVector<Value> outs;
    for (auto [result, peer] : llvm::zip(op.getResults(), op.getRecvPeers())) {
      auto type = llvm::cast<RankedTensorType>(result.getType());
      auto args = c.head(op, op.getGroup(), type.getElementType());
      if (failed(args))
        return failure();
      outs.push_back(c.alloc(type));
      args->append({c.i64(peer), c.address(outs.back()), c.i64(type.getNumElements())});
      calls.push_back(*args);
    }
    if (failed(c.call(op, "lcc_group_start", {c.i64(*group)})))
      return failure();
    for (auto [k, args] : llvm::enumerate(calls))
      if (failed(c.call(op, k < op.getInputs().size() ? "lcc_send" : "lcc_recv", args)))
        return failure();
    if (failed(
            c.call(op, op.getPosted() ? "lcc_group_end_posted" : "lcc_group_end", {c.i64(*group)})))
      return failure();
    replaceOpWithBufferizedValues(rewriter, op, outs);
    return success();
  }
};

/// lcc.gradient and lcc.parallel_copy are identities once differentiated.
template <typename Op>
struct IdentityLowering : OpRewritePattern<Op> {
  using OpRewritePattern<Op>::OpRewritePattern;
  LogicalResult matchAndRewrite(Op op, PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, op.getInput());
    return success();
  }
};

/// Part r of `axis`: a slice at offset r * size, r from lcc_group_rank.
struct ShardSliceLowering : OpRewritePattern<ShardSliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ShardSliceOp op, PatternRewriter &rewriter) const override {
    auto group = groupIndex(op, op.getGroup());
    if (failed(group))
      return failure();
    auto f = declareRuntime(op, "lcc_group_rank", 1, 1);
    if (failed(f))
      return failure();
    Location loc = op.getLoc();
    auto type = op.getType();
    int64_t axis = op.getAxis();
    Value id = arith::ConstantIntOp::create(rewriter, loc, *group, 64);
    Value rank = func::CallOp::create(rewriter, loc, *f, ValueRange{id}).getResult(0);
    Value rankIndex = arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(), rank);
    Value offset = arith::MulIOp::create(
        rewriter, loc, rankIndex,
        arith::ConstantIndexOp::create(rewriter, loc, type.getDimSize(axis)));
    SmallVector<OpFoldResult> offsets, sizes, strides;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      offsets.push_back(d == axis ? OpFoldResult(offset) : rewriter.getIndexAttr(0));
      sizes.push_back(rewriter.getIndexAttr(type.getDimSize(d)));
      strides.push_back(rewriter.getIndexAttr(1));
    }
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(op, type, op.getInput(), offsets, sizes,
                                                        strides);
    return success();
  }
};

} // namespace

bool isCollective(Operation *op) {
  return llvm::isa<AllReduceOp, AllGatherOp, ReduceScatterOp, BroadcastOp, SendOp, RecvOp,
                   ExchangeOp, WaitOp>(op);
}

bool becomesRuntimeCall(Operation *op) {
  return isCollective(op) || llvm::isa<AttentionOp, AttentionGradOp>(op);
}

void registerCollectiveBufferization(DialectRegistry &registry) {
  registerAttentionBufferization(registry);
  registry.addExtension(+[](MLIRContext *ctx, LccDialect *) {
    AllReduceOp::attachInterface<InPlaceModel<AllReduceOp>>(*ctx);
    BroadcastOp::attachInterface<InPlaceModel<BroadcastOp>>(*ctx);
    AllGatherOp::attachInterface<ResizeModel<AllGatherOp, true>>(*ctx);
    ReduceScatterOp::attachInterface<ResizeModel<ReduceScatterOp, false>>(*ctx);
    SendOp::attachInterface<SendModel>(*ctx);
    RecvOp::attachInterface<RecvModel>(*ctx);
    ExchangeOp::attachInterface<ExchangeModel>(*ctx);
    WaitOp::attachInterface<WaitModel>(*ctx);
  });
}

namespace lowering {
void populateCollectivePatterns(RewritePatternSet &patterns) {
  patterns.add<IdentityLowering<GradientOp>, IdentityLowering<ParallelCopyOp>, ShardSliceLowering>(
      patterns.getContext());
}
} // namespace lowering

} // namespace lcc
