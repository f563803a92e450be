//===- Pipelines.h - the one place pass order is written --------*- C++ -*-===//
#ifndef LCC_PASSES_PIPELINES_H
#define LCC_PASSES_PIPELINES_H

#include "mlir/Pass/PassManager.h"

namespace lcc {

/// Phases a compilation can stop after (`lcc --compile-to=<phase>`).
enum class Phase {
  Input,  ///< the lcc dialect as the frontend produced it
  Linalg, ///< target-neutral linalg on tensors
  LLVM,   ///< LLVM dialect for the host CPU
};

/// lcc dialect -> linalg/tensor/arith/math on tensors (target neutral).
void buildLowerToLinalgPipeline(mlir::OpPassManager &pm);

/// linalg on tensors -> LLVM dialect for the CPU (bufferization, loops, LLVM).
void buildLinalgToLLVMPipeline(mlir::OpPassManager &pm);

/// Everything from the lcc dialect up to `phase`.
void buildPipelineUpTo(mlir::OpPassManager &pm, Phase phase);

/// Registers the pipelines with the pass registry (`lcc-opt --lcc-cpu-pipeline`).
void registerPipelines();

} // namespace lcc

#endif
