//===- LlvmSetup.h - what the JIT and the AOT compiler both need -*- C++ -*-===//
#ifndef LCC_COMPILER_CPU_LLVMSETUP_H
#define LCC_COMPILER_CPU_LLVMSETUP_H

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace lcc {

/// Registers the host target, its assembly printer and parser (once per process).
void initializeNativeTargetOnce();

/// Dialects the lowering produces, with the external interface models
/// (bufferization, tiling...) and the LLVM-IR translations; missing models
/// fail late and confusingly (TOOLCHAIN.md pitfall 2).
void prepareLoweringContext(mlir::MLIRContext *ctx);

} // namespace lcc

#endif
