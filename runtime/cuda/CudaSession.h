//===- CudaSession.h - one GPU running a CUDA train.bin ---------*- C++ -*-===//
//
// The CudaBackend that really runs: the kernels of the train.bin loaded into
// a module (the cubin for the GPU it was compiled for, else the PTX, which
// the driver compiles), one stream everything is issued on, cuBLASLt for the
// GEMMs (descriptors and algorithm chosen once per GEMM shape, a workspace
// allocated up front, so a step can be captured), device memory, and CUDA
// graphs: a step issued between beginCapture() and endCapture() is recorded,
// not run, and replay() runs it again with one launch.
//
// The driver and cuBLASLt are loaded at run time (CudaDriver.h); this file
// is compiled only where the CUDA headers exist (LCC_HAVE_CUDA_HEADERS),
// for their types and constants.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_CUDA_CUDASESSION_H
#define LCC_RUNTIME_CUDA_CUDASESSION_H

#include "runtime/cpu/CpuProgram.h"
#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/CudaLaunch.h"
#include "runtime/cuda/GpuDevice.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace lcc {

class CudaSession : public GpuDevice {
public:
  /// Opens device `ordinal`, loads `program`'s kernels and cuBLASLt into
  /// `out`; fails with a one-line message when anything is missing, and
  /// always without CUDA headers at build time ("built without CUDA support").
  static Status create(const Program &program, int ordinal, std::unique_ptr<CudaSession> &out);
  ~CudaSession() override;

  const CudaDevice &device() const;
  /// "NVIDIA H200 (sm_90, kernels from cubin)".
  std::string description() const override;
  /// "cubin" or "ptx": what the kernels were loaded from.
  const std::string &loadedFrom() const;

  /// Device memory, zero-filled; freed with the session.
  uint64_t allocate(size_t bytes) override;
  void release(uint64_t buffer) override;
  /// Copies on the stream (the host memory must stay valid until synchronize()).
  void upload(uint64_t device, const void *host, size_t bytes) override;
  void download(void *host, uint64_t device, size_t bytes) override;
  /// Waits for everything issued; false (with `error`) when a kernel faulted.
  Status synchronize() override;
  /// Page-locked host memory (copies from and to it never wait for the
  /// stream); freed with the session. Null when it cannot be had.
  void *allocateHost(size_t bytes) override;
  /// Marks what is issued so far (`slot`: 0 or 1, reused), and waits for
  /// such a mark: what came after it may still run.
  Status recordEvent(int slot) override;
  Status waitEvent(int slot) override;

  /// Graph capture of what is issued in between (slot: which graph).
  Status beginCapture() override;
  Status endCapture(int slot) override;
  bool hasGraph(int slot) const override;
  /// Forgets the captured graphs (their buffers changed roles: a restored
  /// or re-initialized run); the next steps capture again.
  void dropGraphs() override;
  Status replay(int slot) override;

  void launch(int64_t kernel, int64_t grid, int64_t block, const uint64_t *args,
              int64_t argc) override;
  void gemm(const GemmCall &call) override;
  /// bf16/f16 only, head sizes 16, 32, 64, 128 (the kernels of
  /// runtime/cuda/kernels/FlashAttention.cu, embedded when nvcc was there).
  void attention(const AttentionCall &call) override;
  /// On the groups lcc-run installed (runtime/dist/Collectives.h): NCCL for
  /// groups of several ranks, a device copy for 1-rank groups. Failures end
  /// the process as the CPU's collectives do (exit code 4).
  void collective(const CollectiveCall &call) override;
  /// How long synchronize() waits for a step with collectives before it
  /// gives up on the peers (lcc-run's --timeout; default 300 s).
  void setCollectiveTimeout(double seconds) override;

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace lcc

#endif
