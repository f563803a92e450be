//===- Fuse.cpp - fuse elementwise producers into their consumers ---------===//
//
// See Passes.td (lcc-fuse). The rewrite itself is upstream's elementwise
// fusion (producer body inlined into the consumer's, indexing maps composed);
// what lcc decides is *when*:
//  - the producer is an all-parallel linalg.generic with exactly one use, so
//    nothing is computed twice (an exp feeding two consumers stays one kernel);
//  - the consumer reads it without broadcasting (a permutation map), so no
//    element is recomputed per broadcast position;
//  - neither side is a contraction: a matmul stays a clean generic that
//    lcc-gemm-to-library hands to BLAS, with its operands materialized.
// Fusion changes where values are computed, never the arithmetic on them,
// so results are bitwise those of the unfused code.
//
//===----------------------------------------------------------------------===//
#include "dialects/lcc/lowering/Lowering.h"
#include "passes/tensor/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace lcc {
#define GEN_PASS_DEF_LCCFUSEPASS
#include "passes/tensor/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {

int64_t countKernels(Operation *root) {
  int64_t n = 0;
  root->walk([&](linalg::LinalgOp op) {
    if (!llvm::isa<linalg::FillOp>(op.getOperation()))
      ++n;
  });
  return n;
}

/// Why the linalg.generic producing `operand` is not fused into the linalg
/// op reading it, or std::nullopt when it is fused. Asked by the fusion
/// driver and, with `explain`, of every pair left unfused afterwards.
std::optional<std::string> refusal(OpOperand *operand, unsigned maxInputs) {
  auto producer = operand->get().getDefiningOp<linalg::GenericOp>();
  auto consumer = llvm::dyn_cast<linalg::LinalgOp>(operand->getOwner());
  if (!producer || !consumer)
    return "not a linalg.generic read by a linalg op";
  if (!operand->get().hasOneUse())
    return "its result has other uses (fused, it would be computed twice)";
  // Not into a loop over micro-batches from outside it: the producer would
  // run once per iteration.
  if (producer->getBlock() != consumer->getBlock())
    return "it is outside the micro-batch loop this op is in (fused, it would run every "
           "iteration)";
  // The consumer must read each produced element exactly once: through a
  // broadcast (a map that drops loops) the fused producer would be
  // recomputed for every broadcast position (an rsqrt per element instead of
  // per row).
  if (!consumer.getMatchingIndexingMap(operand).isPermutation())
    return "this op reads it broadcast (fused, it would be recomputed per broadcast position)";
  if (linalg::isaContractionOpInterface(producer) || linalg::isaContractionOpInterface(consumer))
    return "a contraction stays a separate GEMM for the BLAS / cuBLASLt call";
  // A bounded number of inputs per kernel. A chain of N binary ops (the
  // global gradient norm's running sum: one add per parameter) would
  // otherwise be fused one link at a time, each step copying the whole grown
  // kernel -- quadratic in depth (1.3 s of 1.7 s at 96 layers) -- into one
  // kernel with N inputs, more than a GPU kernel's parameter space holds.
  if (producer.getNumDpsInputs() + consumer.getNumDpsInputs() - 1 > maxInputs)
    return "the fused kernel would read more than max-inputs (" + std::to_string(maxInputs) +
           ") tensors";
  return std::nullopt;
}

struct LccFusePass : lcc::impl::LccFusePassBase<LccFusePass> {
  using LccFusePassBase::LccFusePassBase;

  void runOnOperation() override {
    Operation *root = getOperation();
    // Fusion works on linalg: an lcc op left means the pipeline is out of
    // order (collectives stay lcc ops until bufferization).
    Operation *lccOp = nullptr;
    root->walk([&](Operation *op) {
      if (!lccOp && op->getDialect() && op->getDialect()->getNamespace() == "lcc" &&
          !lcc::becomesRuntimeCall(op))
        lccOp = op;
    });
    if (lccOp) {
      lccOp->emitError() << "lcc-fuse: '" << lccOp->getName()
                         << "' is not lowered yet; run lcc-lower-to-linalg first";
      return signalPassFailure();
    }
    int64_t before = countKernels(root);
    linalg::ControlFusionFn control = [this](OpOperand *operand) {
      return !refusal(operand, maxInputs);
    };
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    // Fusion only rewrites ops; simplifying every region after each round
    // (the driver's default) was most of this pass's time on a deep step.
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    // Every op but terminators: a function's return has an operand per
    // result of the step (thousands at depth), and the driver, revisiting it
    // after each fusion that replaces one of them, gathered all its operands
    // as fold constants each time -- quadratic in depth, for an op that
    // never folds. Fusion never creates a terminator, so ExistingAndNewOps
    // sees every op it would otherwise.
    SmallVector<Operation *> ops;
    root->walk([&](Operation *op) {
      if (!op->hasTrait<OpTrait::IsTerminator>() && op != root)
        ops.push_back(op);
    });
    std::reverse(ops.begin(), ops.end());
    config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
    if (failed(applyOpPatternsGreedily(ops, std::move(patterns), config))) {
      root->emitError() << "lcc-fuse: fusion did not converge";
      return signalPassFailure();
    }
    int64_t after = countKernels(root);
    if (explain)
      root->walk([&](linalg::LinalgOp consumer) {
        for (OpOperand *operand : consumer.getDpsInputOperands()) {
          auto producer = operand->get().getDefiningOp<linalg::GenericOp>();
          if (!producer)
            continue;
          if (std::optional<std::string> why = refusal(operand, maxInputs))
            consumer->emitRemark() << "input " << operand->getOperandNumber()
                                   << " not fused (produced at " << producer->getLoc()
                                   << "): " << *why;
        }
      });
    // Visible in the IR (and read by `lcc --report`).
    Builder b(&getContext());
    root->setAttr("lcc.fusion", b.getDictionaryAttr(
                                    {b.getNamedAttr("kernels_before", b.getI64IntegerAttr(before)),
                                     b.getNamedAttr("kernels_after", b.getI64IntegerAttr(after))}));
  }
};

} // namespace
