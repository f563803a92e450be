//===- CloneFills.cpp - one fill per destination-passing user -------------===//
//
// See Passes.td (lcc-clone-fills) for what and why: undoing CSE for fills is
// what lets bufferization write every accumulator in place instead of
// copying one shared zero buffer before each writer.
//
//===----------------------------------------------------------------------===//
#include "passes/buffer/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

namespace lcc {
#define GEN_PASS_DEF_LCCCLONEFILLSPASS
#include "passes/buffer/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {

struct LccCloneFillsPass : lcc::impl::LccCloneFillsPassBase<LccCloneFillsPass> {
  void runOnOperation() override {
    SmallVector<linalg::FillOp> fills;
    WalkResult walk = getOperation()->walk([&](linalg::FillOp fill) {
      // On buffers the copies this pass avoids are already there: the
      // pipeline has it in the wrong place.
      if (!fill.hasPureTensorSemantics()) {
        fill.emitError() << "lcc-clone-fills: runs before bufferization; this linalg.fill "
                            "writes a memref";
        return WalkResult::interrupt();
      }
      fills.push_back(fill);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    for (linalg::FillOp fill : fills) {
      Value filled = fill.getResult(0);
      SmallVector<OpOperand *> inits;
      for (OpOperand &use : filled.getUses()) {
        auto dps = llvm::dyn_cast<DestinationStyleOpInterface>(use.getOwner());
        // A micro-batch loop's carried sum is written in place too
        // (lcc-accumulate-in-place): it starts from a fill of its own. A
        // fill stored into several out-params (equal initial parameters)
        // fills each of them.
        auto store = llvm::dyn_cast<bufferization::MaterializeInDestinationOp>(use.getOwner());
        if ((dps && dps.isDpsInit(&use)) || lcc::isMicroBatchLoop(use.getOwner()) ||
            (store && use.getOperandNumber() == 0))
          inits.push_back(&use);
      }
      // A fill whose only use is one init already writes its own buffer; it
      // moves right before that user (lcc-gemm-to-library drops a zero fill
      // there), as the ops that shared it may have gone elsewhere
      // (lcc-outline-layers).
      if (inits.size() == 1 && filled.hasOneUse()) {
        Operation *user = inits.front()->getOwner();
        if (user->getBlock() == fill->getBlock() && !lcc::isMicroBatchLoop(user) &&
            fill->getNextNode() != user)
          fill->moveBefore(user);
        continue;
      }
      if (inits.empty() || filled.hasOneUse())
        continue;
      for (OpOperand *use : inits) {
        OpBuilder b(use->getOwner());
        IRMapping map;
        Value dest = fill.getOutputs()[0];
        if (auto empty = dest.getDefiningOp<tensor::EmptyOp>())
          map.map(dest, b.clone(*empty)->getResult(0));
        use->set(b.clone(*fill, map)->getResult(0));
      }
      if (fill->use_empty())
        fill->erase();
    }
  }
};

} // namespace
