//===- JitExecutor.h - run lcc modules on the host CPU ----------*- C++ -*-===//
//
// Lowers a module with the project pipeline (buildPipelineUpTo(Phase::LLVM))
// and JIT-compiles it, so tests and `lcc --run-forward` can call its
// functions with HostTensors. The caller's module is never modified.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_COMPILER_CPU_JITEXECUTOR_H
#define LCC_COMPILER_CPU_JITEXECUTOR_H

#include "passes/Modes.h"
#include "runtime/support/HostTensor.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
class ExecutionEngine;
} // namespace mlir

namespace lcc {

/// The static type of one function argument or result, as HostTensor sees it.
/// `element` is empty when the MLIR type has no HostTensor equivalent (a
/// non-tensor, a dynamic shape, bf16...); `spelling` is the MLIR type, for
/// error messages.
struct TensorSignature {
  std::optional<ElementType> element;
  std::vector<int64_t> shape;
  std::string spelling;
};

struct FunctionSignature {
  std::vector<TensorSignature> inputs;
  std::vector<TensorSignature> results;
};

class CpuJit {
public:
  /// Lowers a clone of `module` (lcc dialect, or any mix down to the LLVM
  /// dialect) and JIT-compiles it with LLVM -O2 for the host. Pipeline and
  /// translation failures come back as errors carrying the MLIR diagnostics.
  /// `attention`: decomposed, fused (the runtime's fused kernels instead of
  /// matmuls and softmax) or auto (fused where Tq * Tk >= 512 * 512).
  static llvm::Expected<std::unique_ptr<CpuJit>>
  compile(mlir::ModuleOp module, AttentionMode attention = AttentionMode::Auto);

  /// Calls the public func.func `function` with tensors matching its argument
  /// types exactly (element type and shape; checked). Results are copied into
  /// fresh HostTensors and the buffers the JIT code allocated are freed.
  llvm::Expected<std::vector<HostTensor>> call(llvm::StringRef function,
                                               const std::vector<HostTensor> &args);

  /// The signature of a public function, or null when there is none.
  const FunctionSignature *signature(llvm::StringRef function) const;

  ~CpuJit();
  CpuJit(const CpuJit &) = delete;
  CpuJit &operator=(const CpuJit &) = delete;

private:
  CpuJit();

  std::unique_ptr<mlir::ExecutionEngine> engine;
  llvm::StringMap<FunctionSignature> functions;
};

} // namespace lcc

#endif // LCC_COMPILER_CPU_JITEXECUTOR_H
