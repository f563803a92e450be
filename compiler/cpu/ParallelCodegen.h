//===- ParallelCodegen.h - optimize and emit objects in parallel -*- C++ -*-===//
//
// LLVM's optimization and code generation are single-threaded per module and
// took most of a big model's compile time (GPT-2 124M: ~8 of ~12 s). The step
// functions each get a partition of their own, compiled by the fast code
// generator; the kernels are split into a fixed number of partitions
// (llvm::SplitModule, by size), each optimized; every partition is compiled
// to an object file in its own LLVMContext on its own thread. The partitions
// do not depend on the machine, so neither does the code.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_COMPILER_CPU_PARALLELCODEGEN_H
#define LCC_COMPILER_CPU_PARALLELCODEGEN_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace lcc {

struct ParallelCodegenOptions {
  unsigned optLevel = 3;
  /// Partitions of the module (fixed: it decides the code).
  unsigned partitions = 8;
  /// Threads to use (0: lcc::defaultNumThreads(), i.e. LCC_NUM_THREADS or the CPUs in
  /// the affinity mask); never changes the code.
  unsigned threads = 0;
  /// Functions compiled alone, each in a partition of its own, with LLVM's
  /// fast code generator (CodeGenOptLevel::None) and no IR optimization: the
  /// step functions, one long block of calls where optimizing buys nothing
  /// and the optimizing instruction selector, scheduler and register
  /// allocator are superlinear in the block's size.
  std::vector<std::string> fastFunctions;
};

struct EmittedObjects {
  /// One ELF object per partition, in partition order.
  std::vector<llvm::SmallVector<char, 0>> objects;
  unsigned threads = 1; // used
};

/// Makes a target machine; `fast`: for the fast code generator
/// (CodeGenOptLevel::None), else the optimizing one.
using MakeTargetMachine = std::function<std::unique_ptr<llvm::TargetMachine>(bool fast)>;

/// Splits `module` (consumed): each of `fastFunctions` into a partition of its
/// own, the rest into `partitions` partitions optimized at `optLevel`; then
/// compiles each partition to an object. `makeMachine` is called once per
/// partition (TargetMachine is not thread-safe) and must configure the same
/// target each time.
llvm::Expected<EmittedObjects>
optimizeAndEmitObjects(std::unique_ptr<llvm::Module> module, const MakeTargetMachine &makeMachine,
                       const ParallelCodegenOptions &options);

} // namespace lcc

#endif
