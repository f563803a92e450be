//===- lcc-opt.cpp - mlir-opt with the lcc dialect and passes -------------===//
#include "dialects/lcc/lowering/Lowering.h"
#include "dialects/lcc/LccDialect.h"
#include "passes/Passes.h"
#include "passes/buffer/CallAnalysis.h"
#include "passes/Pipelines.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  lcc::registerLccPasses();
  lcc::registerPipelines();

  mlir::DialectRegistry registry;
  registry.insert<lcc::LccDialect>();
  // All upstream dialects with their interface models and extensions: lcc
  // lowers into several of them and TOOLCHAIN.md pitfall 2 shows what goes
  // wrong when the external models are missing.
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  lcc::registerCollectiveBufferization(registry);
  lcc::registerCallAnalysis(registry); // after upstream's models: it patches func.call's
  // gpu-module-to-binary (lcc-aot-cuda-pipeline) translates the device module
  // to LLVM IR.
  mlir::registerAllToLLVMIRTranslations(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "lcc optimizer driver\n", registry));
}
