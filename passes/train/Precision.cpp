//===- Precision.cpp - the mixed-precision policy (autocast) --------------===//
//
// See Passes.td (lcc-precision). The policy is PyTorch autocast's: the ops
// that tensor cores run (matmul, attention) take bf16/f16 operands and give a
// bf16/f16 result (the lowering accumulates in f32), everything else stays
// f32, converting up at its inputs. Applied to @forward before autodiff, it
// gives the backward its mirror image for free: the VJP of a convert is the
// convert back, so parameter gradients arrive in f32 and the optimizer, its
// state and the master weights never leave f32.
//
//===----------------------------------------------------------------------===//
#include "passes/train/Passes.h"

#include "dialects/lcc/LccOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace lcc {
#define GEN_PASS_DEF_LCCPRECISIONPASS
#include "passes/train/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {

RankedTensorType withElement(Value v, Type element) {
  return llvm::cast<RankedTensorType>(v.getType()).clone(element);
}

/// `op` on `low` copies of its float operands, its result converted back.
void lower(Operation *op, Type low) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  for (OpOperand &operand : op->getOpOperands())
    operand.set(lcc::ConvertOp::create(b, loc, withElement(operand.get(), low), operand.get()));
  Value result = op->getResult(0);
  Type wide = result.getType();
  result.setType(withElement(result, low));
  b.setInsertionPointAfter(op);
  auto back = lcc::ConvertOp::create(b, loc, wide, result);
  result.replaceAllUsesExcept(back, back);
}

struct LccPrecisionPass : lcc::impl::LccPrecisionPassBase<LccPrecisionPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<lcc::Precision> policy = lcc::parseMode<lcc::Precision>(precision);
    if (!policy) {
      module.emitError() << "lcc-precision: unknown precision '" << precision << "'; expected "
                         << lcc::modeChoices<lcc::Precision>();
      return signalPassFailure();
    }
    if (*policy == lcc::Precision::FP32)
      return;
    auto fn = module.lookupSymbol<func::FuncOp>(function);
    if (!fn) {
      module.emitError() << "lcc-precision: no function @" << function;
      return signalPassFailure();
    }
    if (module.lookupSymbol(function + "_grad")) {
      fn.emitError() << "lcc-precision: @" << function
                     << "_grad exists; the precision policy must be applied before lcc-autodiff "
                        "(the backward inherits it)";
      return signalPassFailure();
    }
    Builder b(module.getContext());
    Type low = *policy == lcc::Precision::BF16 ? Type(b.getBF16Type()) : Type(b.getF16Type());
    int64_t lowered = 0;
    fn.walk([&](Operation *op) {
      if (!llvm::isa<lcc::MatmulOp, lcc::AttentionOp>(op))
        return;
      // Only f32 work moves to the tensor cores (f64 stays exact, half is done).
      if (!llvm::cast<RankedTensorType>(op->getResult(0).getType()).getElementType().isF32())
        return;
      lower(op, low);
      ++lowered;
    });
    module->setAttr("lcc.precision", b.getStringAttr(precision));
    if (lowered == 0)
      fn.emitWarning() << "lcc-precision: @" << function
                       << " has no f32 matmul or attention; --precision=" << precision
                       << " changes nothing";
  }
};

} // namespace
