//===- AccumulateInPlace.cpp - micro-batch sums updated in place ----------===//
//
// See Passes.td (lcc-accumulate-in-place). One-shot bufferization keeps a
// loop-carried tensor in one buffer only when what the body yields is written
// into that buffer; `acc + g` lowered to a generic with a fresh init would
// make every iteration allocate the next sum (and the memory plan could not
// place it: it leaves the body).
//
//===----------------------------------------------------------------------===//
#include "passes/buffer/Passes.h"

namespace lcc {
#define GEN_PASS_DEF_LCCACCUMULATEINPLACEPASS
#include "passes/buffer/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {

/// Makes `op`'s result `r` be written into `acc` when `op` is elementwise,
/// reads `acc` with the identity map as its only use, and never reads the
/// init it has for `r` (so the init's value does not matter).
bool writeInto(linalg::GenericOp op, unsigned r, BlockArgument acc) {
  if (op.getNumParallelLoops() != op.getNumLoops() || !acc.hasOneUse() ||
      acc.getUses().begin()->getOwner() != op.getOperation())
    return false;
  OpOperand *input = &*acc.getUses().begin();
  OpOperand *init = op.getDpsInitOperand(r);
  if (!op.isDpsInput(input) || !op.getMatchingIndexingMap(input).isIdentity() ||
      !op.getMatchingIndexingMap(init).isIdentity() || op.payloadUsesValueFromOperand(init) ||
      init->get().getType() != acc.getType())
    return false;
  init->set(acc);
  return true;
}

struct LccAccumulateInPlacePass
    : lcc::impl::LccAccumulateInPlacePassBase<LccAccumulateInPlacePass> {
  void runOnOperation() override {
    int64_t inPlace = 0, left = 0;
    getOperation()->walk([&](scf::ForOp loop) {
      if (!lcc::isMicroBatchLoop(loop))
        return;
      if (llvm::any_of(loop->getOperandTypes(), llvm::IsaPred<BaseMemRefType>)) {
        loop.emitError() << "lcc-accumulate-in-place: runs on tensors, before bufferization";
        return signalPassFailure();
      }
      auto yield = llvm::cast<scf::YieldOp>(loop.getBody()->getTerminator());
      for (auto [n, acc] : llvm::enumerate(loop.getRegionIterArgs())) {
        auto sum = llvm::dyn_cast<OpResult>(yield.getOperand(n));
        auto op = sum ? llvm::dyn_cast<linalg::GenericOp>(sum.getOwner()) : nullptr;
        if (op && writeInto(op, sum.getResultNumber(), acc))
          ++inPlace;
        else
          ++left;
      }
    });
    numInPlace += inPlace;
    numLeft += left;
  }
};

} // namespace
