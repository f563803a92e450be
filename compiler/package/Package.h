//===- Package.h - write a compiled model as train.bin ----------*- C++ -*-===//
//
// The compiler's last step: the manifest (docs/train-bin.md) describing the
// model and, for every compiled function, the ordered buffers it takes; plus
// the code of each target. The runtime (runtime/CpuProgram) reads it back.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_COMPILER_PACKAGE_PACKAGE_H
#define LCC_COMPILER_PACKAGE_PACKAGE_H

#include "compiler/cpu/AotCompiler.h"
#include "runtime/support/Json.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace lcc {

struct PackageOptions {
  AotOptions cpu;
  uint64_t seed = 1337;
  /// Recorded for reports and for lcc-run's defaults (the values are already
  /// compiled into @train_step).
  json::Value training = json::Value::object();
  std::string source; // the model file it was compiled from
  /// docs/distributed.md; the process groups come from the module.
  ShardMode sharding = ShardMode::None;
  /// The Hugging Face mapping (HfNames.h), null when the model has none.
  json::Value hf;
};

/// A dictionary of scalar attributes (integers, i1 as bool, floats,
/// strings) as a JSON object: the DSL's config (lcc.config) and hf section.
json::Value scalarsToJson(mlir::DictionaryAttr dict);

/// The manifest of a module at the train-step phase (@init, @forward,
/// @train_step present). Errors name what is missing.
llvm::Expected<json::Value> buildManifest(mlir::ModuleOp module, const PackageOptions &options);

/// A compiled model: the manifest (with each function's arena slot) and the
/// sections of the train.bin.
struct Package {
  json::Value manifest;
  std::string target; // of the code section
  std::vector<uint8_t> code;
  /// CUDA target: the kernels (sections cuda.cubin and cuda.ptx); `code` is
  /// then the host code that launches them (section cuda.host), so a CPU
  /// runtime never mistakes it for a CPU program.
  CudaKernels cuda;
  /// The source ONNX model, when there is one: section "onnx", so that
  /// lcc-run --export-onnx can write the trained weights back into it.
  std::vector<uint8_t> onnxModel;
  /// Initial parameter values as a safetensors file (section "params"); when
  /// present the runtime takes the parameters from it instead of running @init.
  std::vector<uint8_t> initParams;
  /// The world size of this variant when a train.bin holds several (its
  /// sections are then manifest.wN and code.wN); 0 for the only one.
  int64_t world = 0;
  /// The pipeline stage of this variant (sections manifest.wN.sK, code.wN.sK,
  /// with its world), or -1.
  int64_t stage = -1;
  /// Wall seconds of each code-generation phase (CpuCode::phaseSeconds).
  std::vector<std::pair<std::string, double>> phaseSeconds;
};

/// Compiles `module` for the CPU.
llvm::Expected<Package> compilePackage(mlir::ModuleOp module, const PackageOptions &options);

/// `lcc --report`: what fusion, kernel outlining, the GPU thread mappings
/// and the GEMM library calls did (the manifest's compile_report).
std::string compileReportText(const json::Value &manifest);

/// What lcc-recompute made again in one layer: ops, their FLOPs per
/// micro-batch, bytes of forward values no longer kept.
struct RecomputedLayer {
  std::string layer;
  int64_t ops = 0, flops = 0, bytes = 0;
};
/// Per layer, from the manifest's compile_report, in layer order; empty
/// without recomputation.
std::vector<RecomputedLayer> recomputedLayers(const json::Value &manifest);
/// Their FLOPs summed.
int64_t recomputedFlops(const json::Value &manifest);

/// Writes compiled packages (one per world size; the first one's params and
/// onnx sections serve all) to `path` atomically.
llvm::Error writePackage(const std::vector<Package> &packages, const std::string &path);

} // namespace lcc

#endif
