//===- ParallelCodegen.h - optimize and emit objects in parallel -*- C++ -*-===//
//
// LLVM's optimization and code generation are single-threaded per module and
// take most of a big model's compile time (GPT-2 124M: ~8 of ~12 s). The
// module is split into a fixed number of partitions (llvm::SplitModule, by
// size), each optimized and compiled to an object file in its own
// LLVMContext on its own thread. The partition count does not depend on the
// machine, so the code is the same whatever the compiling machine's cores.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_COMPILER_CPU_PARALLELCODEGEN_H
#define LCC_COMPILER_CPU_PARALLELCODEGEN_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <memory>
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
};

struct EmittedObjects {
  /// One ELF object per partition, in partition order.
  std::vector<llvm::SmallVector<char, 0>> objects;
  unsigned threads = 1; // used
};

/// Splits `module` (consumed), optimizes each partition at `optLevel` and
/// compiles it to an object. `makeMachine` is called once per partition
/// (TargetMachine is not thread-safe) and must configure the same target each time.
llvm::Expected<EmittedObjects>
optimizeAndEmitObjects(std::unique_ptr<llvm::Module> module,
                       const std::function<std::unique_ptr<llvm::TargetMachine>()> &makeMachine,
                       const ParallelCodegenOptions &options);

} // namespace lcc

#endif
