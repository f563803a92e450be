//===- GpuDevice.h - a Device that runs a CUDA train.bin --------*- C++ -*-===//
//
// The device side of a --target=cuda run: the Device the Trainer keeps its
// buffers on (runtime/cpu/Device.h) and the CudaBackend the compiled host
// code calls for launches, GEMMs and collectives while an entry runs. Two
// implementations: CudaSession (a real GPU) and EmulatedGpu (the kernels of
// an `lcc --arch=emulated` train.bin run on the CPU, for testing without a
// GPU). Both behave as a GPU does for the Trainer: separate memory (the
// emulator's is host memory, but inputs are still copied to buffers of their
// own, whose addresses a captured graph keeps), asynchronous work, graphs.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_CUDA_GPUDEVICE_H
#define LCC_RUNTIME_CUDA_GPUDEVICE_H

#include "runtime/cpu/Device.h"
#include "runtime/cuda/CudaLaunch.h"

namespace lcc {

class GpuDevice : public CudaBackend, public Device {
public:
  std::string where() const override { return "the GPU"; }
  bool sharesHostMemory() const override { return false; }
  bool asynchronous() const override { return true; }
  /// The host code of `entry` issues its work to this device.
  Status call(const Program &program, const EntryPoint &entry,
              const std::vector<void *> &buffers) override {
    CudaBackend *previous = cudaBackend();
    setCudaBackend(this);
    program.call(entry, buffers);
    setCudaBackend(previous);
    return {};
  }
};

} // namespace lcc

#endif
