//===- SequenceParallel.cpp - the residual stream split by tokens ---------===//
//
// See Passes.td (lcc-sequence-parallel). The stream's type is what
// lcc-shard-tp's regions read (parallel_copy operands) and write (the sums
// of row-parallel results, all_reduce); [..., D] is viewed as [N, D] with N
// the tokens (every dimension but the last), and each rank keeps N / tp
// consecutive rows. Megatron cuts along the sequence of its [s, b, h]
// layout; lcc's [b, s, h] flattened and cut by rows is the same split when
// b = 1 and otherwise cuts whole sequences first. Every op between the
// regions is token-wise, so which tokens a rank holds does not matter, and
// the collectives' axis is the outermost, where parts are contiguous.
//
//===----------------------------------------------------------------------===//
#include "passes/shard/Passes.h"
#include "passes/shard/ShardUtils.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

namespace lcc {
#define GEN_PASS_DEF_LCCSEQUENCEPARALLELPASS
#include "passes/shard/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kGroup = "tp";

RankedTensorType typeOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

/// Ops computed token by token on the stream: elementwise, and norms over
/// the last (feature) dimension.
bool tokenWise(Operation *op) {
  return (lcc::shard::isElementwise(op) && !llvm::isa<lcc::CmpOp, lcc::WhereOp>(op)) ||
         llvm::isa<lcc::LayerNormOp, lcc::RmsNormOp>(op);
}

/// A value made of constants only (its gradient is nothing to sum).
bool constant(Value v) {
  Operation *def = v.getDefiningOp();
  return def && (matchPattern(v, m_Constant()) || llvm::isa<lcc::FillOp, lcc::IotaOp>(def));
}

struct LccSequenceParallelPass : lcc::impl::LccSequenceParallelPassBase<LccSequenceParallelPass> {
  using Base::Base;
  void runOnOperation() override;
};

void LccSequenceParallelPass::runOnOperation() {
  ModuleOp module = getOperation();
  func::FuncOp fn = lcc::shard::forwardToSplit(module, function, tp, "lcc-sequence-parallel",
                                               "the residual stream");
  if (!fn)
    return signalPassFailure();
  if (tp == 1)
    return;
  Block &body = fn.getBody().front();

  // The stream's types: what tp regions read and write.
  llvm::DenseSet<Type> stream;
  body.walk([&](lcc::ParallelCopyOp op) {
    if (op.getGroup() == kGroup)
      stream.insert(op.getType());
  });
  auto isSeed = [&](Operation *op) {
    auto ar = llvm::dyn_cast<lcc::AllReduceOp>(op);
    return ar && ar.getGroup() == kGroup && ar.getReduction() == "sum" &&
           stream.contains(ar.getType());
  };
  if (stream.empty() || !llvm::any_of(body, [&](Operation &op) { return isSeed(&op); })) {
    fn.emitError() << "lcc-sequence-parallel: @" << function
                   << " has no tensor-parallel regions (run lcc-shard-tp first); nothing to split "
                      "by tokens";
    return signalPassFailure();
  }

  // Which values are the stream, split: from the seeds through token-wise
  // ops. Checked before anything changes: every reader of a split value
  // must be token-wise or a region's input.
  llvm::DenseSet<Value> split;
  for (Operation &op : body) {
    bool reads = llvm::any_of(op.getOperands(), [&](Value v) { return split.contains(v); });
    if (isSeed(&op) || (reads && tokenWise(&op) && stream.contains(op.getResult(0).getType())))
      split.insert(op.getResult(0));
    else if (reads && !(llvm::isa<lcc::ParallelCopyOp>(op) &&
                        llvm::cast<lcc::ParallelCopyOp>(op).getGroup() == kGroup)) {
      op.emitError() << "lcc-sequence-parallel: '" << op.getName()
                     << "' reads the residual stream, which is split by tokens between "
                        "tensor-parallel regions; only token-wise ops (elementwise, norms) and "
                        "the regions' inputs may";
      return signalPassFailure();
    }
  }
  for (Type t : stream) {
    auto type = llvm::cast<RankedTensorType>(t);
    int64_t tokens = type.getNumElements() / type.getDimSize(type.getRank() - 1);
    if (type.getRank() < 2 || tokens % tp) {
      fn.emitError() << "lcc-sequence-parallel: the residual stream " << type << " has " << tokens
                     << " tokens, not a multiple of tp = " << int64_t(tp);
      return signalPassFailure();
    }
  }

  // Parameters broadcast over the tokens (one row: a norm's weight, a bias)
  // that only the stream's ops read: each rank's gradient is a share,
  // summed over the group once per step with the others, in one all-reduce
  // (lcc-build-train-step). Decided before the rewrite adds readers.
  auto oneRow = [](Type t) {
    auto type = llvm::dyn_cast<RankedTensorType>(t);
    return type && type.getRank() && type.getNumElements() == type.getDimSize(type.getRank() - 1);
  };
  for (BlockArgument arg : body.getArguments())
    if (fn.getArgAttr(arg.getArgNumber(), "lcc.param") && oneRow(arg.getType()) &&
        !arg.use_empty() && llvm::all_of(arg.getUsers(), [&](Operation *u) {
          return u->getNumResults() && split.contains(u->getResult(0));
        }))
      fn.setArgAttr(arg.getArgNumber(), lcc::kPartialGradAttr,
                    StringAttr::get(&getContext(), kGroup));

  // Rewrite in order: each split value gets its part [N / tp, D].
  llvm::DenseMap<Value, Value> part;
  auto rows = [&](RankedTensorType t, int64_t n) {
    int64_t d = t.getDimSize(t.getRank() - 1);
    return RankedTensorType::get({n / d, d}, t.getElementType());
  };
  SmallVector<Operation *> dead;
  for (Operation &op : llvm::make_early_inc_range(body)) {
    OpBuilder b(&op);
    Location loc = op.getLoc();
    if (isSeed(&op)) {
      auto ar = llvm::cast<lcc::AllReduceOp>(op);
      RankedTensorType t = ar.getType();
      Value flat = lcc::ReshapeOp::create(b, loc, rows(t, t.getNumElements()), ar.getInput());
      part[ar.getResult()] = lcc::ReduceScatterOp::create(b, loc, rows(t, t.getNumElements() / tp),
                                                          flat, kGroup, 0, "sum");
      dead.push_back(&op);
      continue;
    }
    if (auto copy = llvm::dyn_cast<lcc::ParallelCopyOp>(op); copy && part.count(copy.getInput())) {
      RankedTensorType t = copy.getType();
      Value whole = lcc::AllGatherOp::create(b, loc, rows(t, t.getNumElements()),
                                             part.lookup(copy.getInput()), kGroup, 0);
      copy.getResult().replaceAllUsesWith(lcc::ReshapeOp::create(b, loc, t, whole));
      dead.push_back(&op);
      continue;
    }
    if (!split.contains(op.getNumResults() ? op.getResult(0) : Value()))
      continue;
    // A token-wise op on the parts; its other operands made to fit them.
    RankedTensorType t = typeOf(op.getResult(0));
    IRMapping map;
    for (Value v : op.getOperands()) {
      if (Value p = part.lookup(v)) {
        map.map(v, p);
        continue;
      }
      RankedTensorType vt = typeOf(v);
      int64_t features = vt.getRank() ? vt.getDimSize(vt.getRank() - 1) : 1;
      Value fit = v;
      if (vt.getNumElements() == features) {
        // Broadcast over the tokens: one row. Every rank's tokens add to
        // its gradient, so a trainable one is summed over the group.
        if (vt.getRank() > 1)
          fit = lcc::ReshapeOp::create(b, loc,
                                       RankedTensorType::get({features}, vt.getElementType()), v);
        // Any other (not a parameter marked above): summed where it is used.
        auto arg = llvm::dyn_cast<BlockArgument>(v);
        bool marked = arg && arg.getOwner() == &body &&
                      fn.getArgAttr(arg.getArgNumber(), lcc::kPartialGradAttr);
        if (!marked && !constant(v) && llvm::isa<FloatType>(vt.getElementType()))
          fit = lcc::ParallelCopyOp::create(b, loc, fit, kGroup);
      } else {
        // Its own tokens (a position table): the rank's rows of it, whose
        // gradients together are the whole one's (shard_slice's VJP).
        RankedTensorType whole = t.clone(vt.getElementType());
        if (vt != whole)
          fit = lcc::BroadcastToOp::create(b, loc, whole, fit);
        fit = lcc::ReshapeOp::create(b, loc, rows(whole, whole.getNumElements()), fit);
        fit = lcc::ShardSliceOp::create(b, loc, rows(whole, whole.getNumElements() / tp), fit,
                                        kGroup, 0);
      }
      map.map(v, fit);
    }
    Operation *copy = b.clone(op, map);
    copy->getResult(0).setType(rows(t, t.getNumElements() / tp));
    part[op.getResult(0)] = copy->getResult(0);
    dead.push_back(&op);
  }
  // Only dead ops read dead ops now (the checks above).
  for (Operation *op : llvm::reverse(dead)) {
    op->dropAllUses();
    op->erase();
  }
}

} // namespace
