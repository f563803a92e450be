//===- ShardDataParallel.cpp - data parallelism: averaged gradients -------===//
//
// Every rank holds the whole model and trains on its own batch (the model's
// batch size is the per-rank batch, as with PyTorch DDP). The step stays
// correct when each rank uses the mean of all ranks' gradients, which is the
// gradient of the loss over the union of the batches: one all_reduce(mean)
// per bucket of gradients, issued as soon as the bucket's last gradient is
// computed. Buckets (DDP's idea, default 25 MB) turn many small messages
// into few large ones. Replicas stay identical because every rank applies
// the same update to the same parameters (the runtime's reductions give
// bitwise-equal results on every rank). The loss is averaged too, so every
// rank reports the global loss; so is @forward's, for evaluation.
//
//===----------------------------------------------------------------------===//
#include "dialects/lcc/vjp/VjpUtils.h"
#include "passes/shard/Passes.h"
#include "passes/shard/ShardUtils.h"

namespace lcc {
#define GEN_PASS_DEF_LCCSHARDDATAPARALLELPASS
#include "passes/shard/Passes.h.inc"
} // namespace lcc

using namespace mlir;
namespace vjp = lcc::vjp;

namespace {

struct LccShardDataParallelPass
    : lcc::impl::LccShardDataParallelPassBase<LccShardDataParallelPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = module.lookupSymbol<func::FuncOp>("train_step");
    if (!step || step.isExternal())
      return fail(module, "no @train_step (run lcc-build-train-step first)");
    if (dp < 1)
      return fail(module, "dp must be >= 1, got " + std::to_string(int64_t(dp)));
    SmallVector<lcc::GradientOp> markers = lcc::shard::markersByReadiness(step);
    if (markers.empty())
      return fail(step, "@train_step has no lcc.gradient markers (built by "
                        "lcc-build-train-step); nothing to all-reduce");
    if (dp == 1)
      return; // one replica: nothing to communicate
    if (failed(lcc::shard::declareGroup(module, "dp", dp, "lcc-shard-dp")))
      return signalPassFailure();

    int64_t bytes = int64_t(bucketMb * 1024 * 1024);
    Block *block = &step.getBody().front();
    OpBuilder b(module.getContext());
    for (auto &bucket : lcc::shard::buckets(markers, bytes)) {
      SmallVector<Value> grads;
      for (lcc::GradientOp m : bucket)
        grads.push_back(m.getInput());
      lcc::shard::setInsertionAfterAll(b, block, grads);
      Location loc = bucket.front().getLoc();
      for (auto [m, mean] :
           llvm::zip(bucket, lcc::shard::allReduceTogether(b, loc, grads, "dp", "mean")))
        m.getResult().replaceAllUsesWith(mean);
    }
    for (lcc::GradientOp m : markers)
      m.erase();
    lcc::shard::averageLoss(step, "dp");
    if (auto forward = module.lookupSymbol<func::FuncOp>("forward"); forward && !forward.isExternal())
      lcc::shard::averageLoss(forward, "dp");
  }

  void fail(Operation *op, const std::string &message) {
    op->emitError() << "lcc-shard-dp: " << message;
    signalPassFailure();
  }
};

} // namespace
