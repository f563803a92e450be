//===- LowerToLinalg.cpp - lcc to linalg on tensors -----------------------===//
//
// Applies the per-family patterns of dialects/lcc/lowering and then insists
// that no lcc op is left: a partial lowering would surface much later as an
// unhelpful bufferization or LLVM-conversion failure.
//
//===----------------------------------------------------------------------===//
#include "dialects/lcc/LccOps.h"
#include "dialects/lcc/lowering/Lowering.h"
#include "passes/tensor/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace lcc {
#define GEN_PASS_DEF_LCCLOWERTOLINALGPASS
#include "passes/tensor/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {
struct LccLowerToLinalgPass : lcc::impl::LccLowerToLinalgPassBase<LccLowerToLinalgPass> {
  // Collectives survive this pass and bufferize into runtime calls later;
  // their bufferization models come with it so every pipeline has them.
  void getDependentDialects(DialectRegistry &registry) const override {
    LccLowerToLinalgPassBase::getDependentDialects(registry);
    lcc::registerCollectiveBufferization(registry);
  }

  void runOnOperation() override {
    // The patterns size every tensor from its type: dynamic dims would need
    // shape operands that lcc ops do not carry.
    bool dynamic = false;
    getOperation()->walk([&](Operation *op) {
      if (!llvm::isa_and_nonnull<lcc::LccDialect>(op->getDialect()))
        return;
      for (Type t : llvm::concat<const Type>(op->getOperandTypes(), op->getResultTypes())) {
        auto shaped = llvm::dyn_cast<ShapedType>(t);
        if (shaped && !shaped.hasStaticShape()) {
          op->emitError() << "failed to lower '" << op->getName()
                          << "': only static shapes are supported, got " << t;
          dynamic = true;
          return;
        }
      }
    });
    if (dynamic)
      return signalPassFailure();

    RewritePatternSet patterns(&getContext());
    lcc::populateLccToLinalgPatterns(patterns);
    GreedyRewriteConfig config;
    config.enableFolding(false);
    // Failure only means "did not converge"; leftovers are reported below.
    (void)applyPatternsGreedily(getOperation(), std::move(patterns), config);

    bool failedAny = false;
    getOperation()->walk([&](Operation *op) {
      // Collectives and the attention lcc-decompose kept whole for the fused
      // kernels become runtime calls at bufferization.
      if (!llvm::isa_and_nonnull<lcc::LccDialect>(op->getDialect()) ||
          lcc::becomesRuntimeCall(op))
        return;
      failedAny = true;
      op->emitError() << "failed to lower '" << op->getName() << "'";
    });
    if (failedAny)
      signalPassFailure();
  }
};
} // namespace
