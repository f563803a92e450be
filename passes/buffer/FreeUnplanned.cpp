//===- FreeUnplanned.cpp - free what the memory plan left to the heap -----===//
//
// See Passes.td (lcc-free-unplanned) for what and why.
//
//===----------------------------------------------------------------------===//
#include "passes/buffer/Passes.h"

#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Pass/PassManager.h"

namespace lcc {
#define GEN_PASS_DEF_LCCFREEUNPLANNEDPASS
#include "passes/buffer/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {

struct LccFreeUnplannedPass : lcc::impl::LccFreeUnplannedPassBase<LccFreeUnplannedPass> {
  void runOnOperation() override {
    // What the deallocation pipeline would have to free: heap buffers.
    // Stack buffers (memref.alloca) and the arena's views need nothing.
    bool heap = getOperation()
                    ->walk([](Operation *op) {
                      return llvm::isa<memref::AllocOp, memref::ReallocOp,
                                       bufferization::CloneOp>(op)
                                 ? WalkResult::interrupt()
                                 : WalkResult::advance();
                    })
                    .wasInterrupted();
    if (!heap)
      return;
    OpPassManager deallocation(ModuleOp::getOperationName());
    bufferization::buildBufferDeallocationPipeline(deallocation);
    if (failed(runPipeline(deallocation, getOperation())))
      signalPassFailure();
  }
};

} // namespace
