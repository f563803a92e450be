//===- LlvmSetup.cpp - target and context set-up for CPU code generation ---===//
#include "dialects/lcc/lowering/Lowering.h"
#include "compiler/cpu/LlvmSetup.h"

#include "dialects/lcc/LccDialect.h"
#include "passes/buffer/CallAnalysis.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/TargetSelect.h"

#include <mutex>

namespace lcc {

void initializeNativeTargetOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    // -O3's full-unroll budget (300) turns the constant fills of big
    // buffers (a [12, 1024] softmax accumulator) into thousands of stores in
    // one block, which the code generator then takes seconds over (2 of GPT-2
    // 124M's kernels: 1.5 s each). -O2's budget keeps them loops; the kernels'
    // speed did not measurably change. A user's -unroll-threshold wins.
    auto &options = llvm::cl::getRegisteredOptions();
    if (auto *threshold = options.lookup("unroll-threshold");
        threshold && threshold->getNumOccurrences() == 0)
      threshold->addOccurrence(0, "unroll-threshold", "150");
  });
}

void prepareLoweringContext(mlir::MLIRContext *ctx) {
  mlir::DialectRegistry registry;
  registry.insert<LccDialect>();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  registerCollectiveBufferization(registry);
  lcc::registerCallAnalysis(registry); // after upstream's models: it patches func.call's
  ctx->appendDialectRegistry(registry);
}

} // namespace lcc
