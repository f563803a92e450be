//===- CudaDriver.h - the CUDA driver, loaded at run time -------*- C++ -*-===//
//
// lcc-run is one binary for CPU and GPU machines: it does not link
// libcuda.so (which only exists where an NVIDIA driver is installed) but
// loads it when a --target=cuda train.bin is run, so a binary built anywhere
// starts anywhere and says clearly why it cannot train on a GPU. The driver
// API's types are declared here (a stable C ABI), so building the runtime
// needs no CUDA headers either.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_CUDA_CUDADRIVER_H
#define LCC_RUNTIME_CUDA_CUDADRIVER_H

#include <cstdint>
#include "runtime/support/Status.h"

#include <string>

namespace lcc {

struct CudaDevice {
  int ordinal = 0;
  std::string name;
  int handle = 0;           // the driver's CUdevice
  int major = 0, minor = 0; // compute capability
  int multiprocessors = 0;
  int sharedMemoryOptIn = 0; // bytes of shared memory a block may opt into
  /// "sm_90" from the compute capability.
  std::string arch() const { return "sm_" + std::to_string(major * 10 + minor); }
};

/// The driver library and its entry points lcc uses; opened once per
/// process (loadCudaDriver).
struct CudaDriver {
  using Result = int;      // CUresult: 0 is CUDA_SUCCESS
  void *library = nullptr; // the dlopen handle, for more entry points (CudaSession)
  Result (*init)(unsigned) = nullptr;
  Result (*deviceGetCount)(int *) = nullptr;
  Result (*deviceGet)(int *, int) = nullptr;
  Result (*deviceGetName)(char *, int, int) = nullptr;
  Result (*deviceGetAttribute)(int *, int, int) = nullptr;
  Result (*getErrorString)(Result, const char **) = nullptr;
  /// Why a call failed: "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)".
  std::string errorText(Result r) const;
};

/// dlsym of `name` in `library`; a missing name is appended to `missing`.
void *lookupSymbol(void *library, const char *name, std::string &missing);
template <typename F>
void resolveSymbol(void *library, const char *name, F &fn, std::string &missing) {
  fn = reinterpret_cast<F>(lookupSymbol(library, name, missing));
}

/// Loads libcuda.so.1 (or $LCC_CUDA_DRIVER, for tests and unusual
/// installs), initializes it and describes device `ordinal`. Fails with a
/// one-line reason: no driver library, no device, a driver too old.
Status loadCudaDriver(int ordinal, const CudaDriver *&driver, CudaDevice &device);

} // namespace lcc

#endif
