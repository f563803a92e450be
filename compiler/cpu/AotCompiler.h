//===- AotCompiler.h - ahead-of-time CPU code for train.bin -----*- C++ -*-===//
//
// Lowers a model module (after the train-step phase) with the project's AOT
// pipeline (passes/Pipelines.cpp: buildAotCpuPipeline) and turns it into a
// position-independent shared object for the host architecture. The runtime
// (runtime/CpuProgram) loads it from memory without any MLIR/LLVM.
//
// ABI of the shared object, for each exported function F of the module:
//   void lcc_F(void **args)
// where args[i] points to the i-th buffer of F's plan signature (docs/train-bin.md):
// F's own arguments first, then one caller-owned buffer per result
// (lcc-out-params), then, when F has temporaries, its arena (lcc-plan-memory:
// i8 [CpuCode::arenaBytes[F]], 64-byte aligned). Every buffer is a dense,
// row-major array of its static shape; the code neither allocates nor frees
// them. The array itself is read during the call (lcc-loop-layer-calls: a
// loop over layers finds each layer's buffers there), so it must stay as it
// is until F returns.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_COMPILER_CPU_AOTCOMPILER_H
#define LCC_COMPILER_CPU_AOTCOMPILER_H

#include "compiler/cuda/CudaBinary.h"

#include "passes/Modes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace lcc {

struct AotOptions {
  /// LLVM CPU name the code is tuned and restricted for. x86-64-v3 is AVX2 +
  /// FMA (Haswell, Zen 1 and later): what the runtime checks at load time.
  std::string cpu = "x86-64-v3";
  unsigned optLevel = 3;
  /// Exported functions (module functions that exist); others are dropped
  /// before lowering so they cost no compile time. @prefill and @decode_step
  /// are the text-generation entries (lcc-build-generation); whatever other
  /// entries the module has (@prefill_<L>, runtime/support/Entries.h) are
  /// exported too.
  std::vector<std::string> functions = {"init", "forward", "train_step", "prefill", "decode_step"};
  /// Threads for LLVM's optimization and code generation (0: LCC_NUM_THREADS or
  /// the CPUs in the affinity mask); the code does not depend on it (compiler/cpu/ParallelCodegen.h).
  unsigned threads = 0;
  /// Print MLIR's per-pass timing report (stderr) for the lowering (lcc --timing).
  bool passTiming = false;
  /// Collectives in flight while the step computes (lcc-overlap-collectives
  /// depth, lcc --overlap; 0: each waits where it is issued).
  int64_t overlap = 2;
  /// Repeated layers become one function per layer kind until bufferization
  /// (lcc-outline-layers; lcc --inline-layers turns it off).
  bool outlineLayers = true;
  /// lcc --attention (passes/Pipelines.h).
  AttentionMode attention = AttentionMode::Auto;
  /// "cpu", or "cuda": kernels for an NVIDIA GPU of `cudaArch` (PTX and
  /// cubin), host code (launches, cuBLASLt and NCCL calls) for `cpu`.
  std::string target = "cpu";
  std::string cudaArch = "sm_90";
  /// Stop once the memory is planned (the CPU pipeline up to lcc-plan-memory;
  /// the CUDA one whole): arenaBytes is filled, no LLVM IR or machine code is made (the planner's
  /// probes, compiler/package/PlannerProbe.h, need the plan of many variants).
  bool planOnly = false;
};

/// Why `target` / `arch` (AotOptions::target, cudaArch) cannot be compiled
/// for, or "" when they can: user input, checked before compiling.
std::string aotTargetError(const std::string &target, const std::string &arch);

/// The train.bin target name of code built with `options` ("cpu-x86_64-v3").
std::string aotTargetName(const AotOptions &options);

/// What the AOT compiler produces.
struct CpuCode {
  std::vector<uint8_t> sharedObject;
  /// Per exported function, the bytes of its arena (lcc-plan-memory); the
  /// function then takes one more buffer, last: the arena, i8 [bytes].
  std::map<std::string, int64_t> arenaBytes;
  /// What the compilation did, for `lcc --report`: "linalg_ops_before_fusion",
  /// "linalg_ops_after_fusion" (lcc-fuse), "kernels" (outlined loop nests),
  /// "gemm_calls" (lcc-gemm-to-library), each over all exported functions;
  /// "layer_functions" and "layer_calls" (lcc-outline-layers).
  std::map<std::string, int64_t> report;
  /// The device code when the target is cuda (the shared object is then the
  /// host code that launches it).
  CudaKernels cuda;
  /// Wall seconds of each compilation phase, in order (lcc --timing).
  std::vector<std::pair<std::string, double>> phaseSeconds;
};

/// Compiles `module` (lcc dialect with @init/@forward/@train_step, not
/// modified; a clone is lowered) into a shared object (and, for the cuda
/// target, the kernels it launches).
llvm::Expected<CpuCode> compileCpuSharedObject(mlir::ModuleOp module, const AotOptions &options);

/// The passes compileCpuSharedObject runs on a module at the train-step
/// phase, down to the LLVM dialect (lcc --compile-to=aot runs or prints
/// them): the exported functions only, then the CPU or CUDA AOT pipeline.
llvm::Error buildAotPipeline(mlir::OpPassManager &pm, const AotOptions &options);

} // namespace lcc

#endif
