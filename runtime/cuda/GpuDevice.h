//===- GpuDevice.h - what the Trainer needs of a GPU ------------*- C++ -*-===//
//
// The device side of a --target=cuda run, as the Trainer (runtime/train/Trainer.h)
// and lcc-run use it: memory, copies, events, CUDA graphs, on top of the
// CudaBackend the host code calls. Two implementations: CudaSession (a real
// GPU) and EmulatedGpu (the kernels of an `lcc --arch=emulated` train.bin run
// on the CPU, for testing without a GPU).
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_CUDA_GPUDEVICE_H
#define LCC_RUNTIME_CUDA_GPUDEVICE_H

#include "runtime/cuda/CudaLaunch.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace lcc {

class GpuDevice : public CudaBackend {
public:
  /// For lcc-run's header line: the device and how its kernels run.
  virtual std::string description() const = 0;

  /// Device memory, zero-filled, 256-byte aligned; freed with the device.
  virtual uint64_t allocate(size_t bytes) = 0;
  /// Stream-ordered copies (host memory must stay valid until the copy ran).
  virtual void upload(uint64_t device, const void *host, size_t bytes) = 0;
  virtual void download(void *host, uint64_t device, size_t bytes) = 0;
  /// Waits for everything issued; false (with `error`) when a kernel faulted.
  virtual Status synchronize() = 0;
  /// Page-locked host memory (copies from and to it never wait for the
  /// stream); freed with the device. Null when it cannot be had.
  virtual void *allocateHost(size_t bytes) = 0;
  /// Marks what is issued so far (`slot`: 0 or 1, reused), and waits for
  /// such a mark: what came after it may still run.
  virtual Status recordEvent(int slot) = 0;
  virtual Status waitEvent(int slot) = 0;

  /// Graph capture of what is issued in between (slot: which graph).
  virtual Status beginCapture() = 0;
  virtual Status endCapture(int slot) = 0;
  virtual bool hasGraph(int slot) const = 0;
  /// Forgets the captured graphs (their buffers changed roles: a restored
  /// or re-initialized run); the next steps capture again.
  virtual void dropGraphs() = 0;
  virtual Status replay(int slot) = 0;

  /// How long a wait for a step with collectives may take before the peers
  /// are given up (lcc-run's --timeout).
  virtual void setCollectiveTimeout(double seconds) = 0;
};

} // namespace lcc

#endif
