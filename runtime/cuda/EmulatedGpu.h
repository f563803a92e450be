//===- EmulatedGpu.h - a CUDA train.bin's kernels on the CPU ----*- C++ -*-===//
//
// `lcc --target=cuda --arch=emulated` compiles the CUDA target's kernels into
// host functions (passes/gpu/EmulateGpuKernels.cpp) next to the unchanged host
// code. This device runs them: "device" memory is host memory (256-byte
// aligned, as cuMemAlloc's), a launch runs its blocks one after another and
// a block's threads one after another, as fibers switching at each barrier
// and warp shuffle where the kernel synchronizes them, GEMMs and the fused
// attention go to the CPU kernels of the same ABI, collectives to the CPU's
// (Gloo moves host memory; a 1-rank group copies), and a captured graph is
// the recorded list of calls, replayed.
// So the generated kernels, multi-tensor launches and the Trainer's device
// path are checked numerically on machines without a GPU (lcc-run runs such
// a train.bin like any CUDA one).
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_CUDA_EMULATEDGPU_H
#define LCC_RUNTIME_CUDA_EMULATEDGPU_H

#include "runtime/cpu/CpuProgram.h"
#include "runtime/cuda/GpuDevice.h"

#include <functional>
#include <map>
#include <memory>
#include <vector>

namespace lcc {

struct EmulatedBlock;

class EmulatedGpu : public GpuDevice {
public:
  /// Null with `error` when `program` is not an emulated CUDA train.bin.
  static Status create(const Program &program, std::unique_ptr<EmulatedGpu> &out);
  EmulatedGpu();
  ~EmulatedGpu() override;

  std::string description() const override;
  uint64_t allocate(size_t bytes) override;
  void release(uint64_t buffer) override;
  void upload(uint64_t device, const void *host, size_t bytes) override;
  void download(void *host, uint64_t device, size_t bytes) override;
  Status synchronize() override;
  void *allocateHost(size_t bytes) override;
  Status recordEvent(int) override { return {}; }
  Status waitEvent(int) override { return {}; }
  Status beginCapture() override;
  Status endCapture(int slot) override;
  bool hasGraph(int slot) const override { return graphs_.count(slot) > 0; }
  void dropGraphs() override { graphs_.clear(); }
  Status replay(int slot) override;
  void setCollectiveTimeout(double) override {}

  void launch(int64_t kernel, int64_t grid, int64_t block, const uint64_t *args,
              int64_t argc) override;
  void gemm(const GemmCall &call) override;
  void attention(const AttentionCall &call) override;
  void collective(const CollectiveCall &call) override;

private:
  using Kernel = void (*)(void **argv);
  const Program *program_ = nullptr;
  const Kernel *kernels_ = nullptr;
  const int8_t *synchronizes_ = nullptr;
  int64_t count_ = 0;
  bool reverse_ = false; // LCC_EMU_ORDER=reverse: blocks and threads last to first
  std::vector<void *> allocations_;
  bool capturing_ = false;
  std::vector<std::function<void()>> recording_;
  std::map<int, std::vector<std::function<void()>>> graphs_;
  std::string error_; // the first failure (sticky)
  /// The fibers of a synchronizing kernel's block (EmulatedGpu.cpp).
  std::unique_ptr<EmulatedBlock> block_;

  /// Runs `work` now, or records it while capturing.
  void issue(std::function<void()> work);
  void run(int64_t kernel, int64_t grid, int64_t block, const std::vector<void *> &argv);
};

} // namespace lcc

#endif
