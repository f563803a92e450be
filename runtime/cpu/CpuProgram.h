//===- CpuProgram.h - load and call the CPU code of a train.bin -*- C++ -*-===//
//
// A train.bin holds a "manifest" section (JSON: the model, its parameters,
// optimizer state, inputs, and for each compiled function the ordered list of
// buffers it takes — docs/train-bin.md) and a "code" section per target (for
// the CPU a shared object exporting `void lcc_<function>(void **buffers)`).
// Program loads both, checks that this CPU can run the code, and calls the
// functions with HostTensors in the manifest's order. No MLIR/LLVM.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_CPUPROGRAM_H
#define LCC_RUNTIME_CPUPROGRAM_H

#include "runtime/support/Status.h"

#include "runtime/support/HostTensor.h"
#include "runtime/support/Json.h"
#include "runtime/support/Safetensors.h"
#include "runtime/support/Sharding.h"
#include "runtime/support/TrainBin.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace lcc {

/// One buffer of a compiled function's signature.
struct Slot {
  enum Role { Param, State, Step, Input, Output, Workspace };
  Role role = Param;
  std::string name;  // parameter / state ("m:wte") / input / output ("loss") name
  bool out = false;  // written by the function (a result), else read
  ElementType dtype = ElementType::F32; // unused for a workspace (bytes)
  std::vector<int64_t> shape;            // a workspace: [bytes]
  ShardSpec shard;                       // when the buffer is one rank's part

  /// The buffer's bytes.
  size_t bytes() const {
    if (role == Workspace)
      return shape.empty() ? 0 : static_cast<size_t>(shape[0]);
    return byteSize(dtype, shape);
  }
};
const char *slotRoleName(Slot::Role role);

struct EntryPoint {
  std::string name;
  std::vector<Slot> slots;
  void (*fn)(void **) = nullptr;
};

class Program {
public:
  /// Opens `path`, parses its manifest, loads the code for this CPU. A
  /// train.bin compiled for several world sizes (lcc --world=1,2,4) gives the
  /// variant for `world` ranks (an error naming the sizes it has otherwise);
  /// one compiled with pipeline stages (lcc --pp) the program of `stage`.
  static Status load(const std::string &path, Program &out, int64_t world = 1, int64_t stage = -1);
  /// The same from an open container (the error prefix is `what`).
  static Status load(const TrainBin &bin, const std::string &what, Program &out, int64_t world = 1,
                     int64_t stage = -1);
  /// What load reads before the code, without loading any: the variant's
  /// manifest (checked: format, version, every function's slots), the
  /// initial parameters (section params) and a CUDA program's kernel list
  /// and sections. The entries' functions are null and target() is empty.
  /// For tools and tests that inspect a train.bin (test/fuzz/TrainBinFuzz.cpp).
  static Status loadManifest(const TrainBin &bin, const std::string &what, Program &out,
                             int64_t world = 1, int64_t stage = -1);

  const json::Value &manifest() const { return manifest_; }
  /// Initial parameter values stored as data (section "params", written for
  /// ONNX models); null when @init computes them.
  const SafetensorsFile *initialParameters() const {
    return hasInitial_ ? &initial_ : nullptr;
  }
  const EntryPoint *entry(const std::string &name) const;
  const std::string &target() const { return target_; }

  /// A --target=cuda train.bin: the loaded code is the host side (launches,
  /// GEMM and collective calls into runtime/cuda/CudaLaunch.h), the kernels
  /// are below; calling an entry needs a CudaBackend.
  bool isCuda() const { return !cudaKernels_.empty(); }
  const std::string &cudaArch() const { return cudaArch_; }
  /// Kernel names by launch id.
  const std::vector<std::string> &cudaKernels() const { return cudaKernels_; }
  const std::vector<uint8_t> &cudaCubin() const { return cudaCubin_; }
  const std::string &cudaPtx() const { return cudaPtx_; }
  /// A symbol of the loaded code (null when absent): the emulated CUDA
  /// target's kernel table (lcc --arch=emulated).
  void *codeSymbol(const char *name) const;

  /// Calls `entry` with one pointer per slot, in order (each at least the
  /// slot's byte size; the Trainer allocates them from the slots).
  void call(const EntryPoint &entry, const std::vector<void *> &buffers) const;

  Program() = default;
  Program(Program &&other) noexcept;
  Program &operator=(Program &&other) noexcept;
  Program(const Program &) = delete;
  Program &operator=(const Program &) = delete;
  ~Program();

private:
  /// loadManifest into `p`, and the sections' suffix of the variant read
  /// (".w4", ".w4.s1", or empty).
  static Status readManifest(const TrainBin &bin, const std::string &what, Program &p,
                             int64_t world, int64_t stage, std::string &suffix);

  json::Value manifest_;
  std::map<std::string, EntryPoint> entries_;
  std::string target_;
  SafetensorsFile initial_;
  bool hasInitial_ = false;
  void *handle_ = nullptr; // dlopen handle of the code
  // The memfd the code was loaded from, open while it is loaded: dlopen knows
  // a library by its path, /proc/self/fd/N, so a second program loaded after
  // N was closed and reused would get the first one's code.
  int codeFd_ = -1;
  std::string cudaArch_;
  std::vector<std::string> cudaKernels_;
  std::vector<uint8_t> cudaCubin_;
  std::string cudaPtx_;
};

/// The memory plan of a manifest, per rank, as `lcc --plan` and lcc-run print
/// it: parameters and optimizer state (double-buffered by the runtime), the
/// arenas of the compiled functions (activations, gradients and temporaries,
/// lcc-plan-memory), inputs and outputs, and the total. Empty when the
/// manifest lacks what it needs or its sizes overflow 64 bits.
std::string memoryPlanReport(const json::Value &manifest);
/// The total of memoryPlanReport, in bytes.
int64_t memoryPlanBytes(const json::Value &manifest);
/// memoryPlanReport's lines, in bytes: parameters, frozen parameters and
/// optimizer state once (the total counts them twice), inputs and outputs,
/// each arena, and the total.
struct MemoryPlanLines {
  int64_t params = 0, frozen = 0, state = 0, io = 0, total = 0;
  std::vector<std::pair<std::string, int64_t>> arenas;
};
/// False when the manifest lacks what the plan needs or its sizes overflow.
bool memoryPlanLines(const json::Value &manifest, MemoryPlanLines &lines);

/// The world sizes a train.bin has variants for (sorted; empty when it has
/// one program for whatever world it was compiled for).
std::vector<int64_t> compiledWorlds(const TrainBin &bin);
/// The pipeline stages of the variant for `world` ranks (lcc --pp: sections
/// manifest.wN.sK); 0 when it has none.
int64_t compiledStages(const TrainBin &bin, int64_t world);

/// The CPU target names this machine can run, best first ("cpu-x86_64-v3",
/// "cpu-x86_64").
std::vector<std::string> hostCpuTargets();

} // namespace lcc

#endif
