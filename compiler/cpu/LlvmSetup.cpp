//===- LlvmSetup.cpp - target and context set-up for CPU code generation ---===//
#include "dialects/lcc/lowering/Lowering.h"
#include "compiler/cpu/LlvmSetup.h"

#include "dialects/lcc/LccDialect.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/Support/TargetSelect.h"

#include <mutex>

namespace lcc {

void initializeNativeTargetOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

void prepareLoweringContext(mlir::MLIRContext *ctx) {
  mlir::DialectRegistry registry;
  registry.insert<LccDialect>();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  registerCollectiveBufferization(registry);
  ctx->appendDialectRegistry(registry);
}

} // namespace lcc
