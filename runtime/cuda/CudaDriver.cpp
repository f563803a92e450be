//===- CudaDriver.cpp - the CUDA driver, loaded at run time ---------------===//
#include "runtime/cuda/CudaDriver.h"

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>

namespace lcc {

namespace {
// Device attributes (CUdevice_attribute values of the driver API).
constexpr int kMultiprocessorCount = 16;
constexpr int kSharedMemoryPerBlockOptIn = 97;
constexpr int kComputeCapabilityMajor = 75;
constexpr int kComputeCapabilityMinor = 76;

} // namespace

void *lookupSymbol(void *library, const char *name, std::string &missing) {
  void *fn = dlsym(library, name);
  if (!fn)
    missing += (missing.empty() ? "" : ", ") + std::string(name);
  return fn;
}

std::string CudaDriver::errorText(Result r) const {
  const char *text = nullptr;
  if (getErrorString && getErrorString(r, &text) == 0 && text)
    return std::string(text) + " (CUresult " + std::to_string(r) + ")";
  return "CUresult " + std::to_string(r);
}

Status loadCudaDriver(int ordinal, const CudaDriver *&driver, CudaDevice &device) {
  static CudaDriver d;
  static std::string loadError;
  static std::once_flag once;
  std::call_once(once, [] {
    const char *override = std::getenv("LCC_CUDA_DRIVER");
    const char *path = override && *override ? override : "libcuda.so.1";
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      loadError = std::string("the NVIDIA driver library ") + path +
                  " cannot be loaded (no NVIDIA driver on this machine?): " + dlerror();
      return;
    }
    std::string missing;
    resolveSymbol(lib, "cuInit", d.init, missing);
    resolveSymbol(lib, "cuDeviceGetCount", d.deviceGetCount, missing);
    resolveSymbol(lib, "cuDeviceGet", d.deviceGet, missing);
    resolveSymbol(lib, "cuDeviceGetName", d.deviceGetName, missing);
    resolveSymbol(lib, "cuDeviceGetAttribute", d.deviceGetAttribute, missing);
    resolveSymbol(lib, "cuGetErrorString", d.getErrorString, missing);
    d.library = lib;
    if (!missing.empty()) {
      loadError = std::string(path) + " lacks " + missing + " (a driver too old for CUDA 12?)";
      return;
    }
    if (CudaDriver::Result r = d.init(0); r != 0)
      loadError = "cuInit failed: " + d.errorText(r);
  });
  if (!loadError.empty())
    return Status::failure(loadError);
  int count = 0;
  if (CudaDriver::Result r = d.deviceGetCount(&count); r != 0)
    return Status::failure("cuDeviceGetCount failed: " + d.errorText(r));
  if (count == 0)
    return Status::failure("the driver sees no CUDA device");
  if (ordinal < 0 || ordinal >= count)
    return Status::failure("device " + std::to_string(ordinal) +
                           " does not exist (the driver sees " + std::to_string(count) + ")");
  int handle = 0;
  if (CudaDriver::Result r = d.deviceGet(&handle, ordinal); r != 0)
    return Status::failure("cuDeviceGet failed: " + d.errorText(r));
  char name[256] = {};
  d.deviceGetName(name, sizeof(name), handle);
  device.ordinal = ordinal;
  device.handle = handle;
  device.name = name;
  d.deviceGetAttribute(&device.major, kComputeCapabilityMajor, handle);
  d.deviceGetAttribute(&device.minor, kComputeCapabilityMinor, handle);
  d.deviceGetAttribute(&device.multiprocessors, kMultiprocessorCount, handle);
  d.deviceGetAttribute(&device.sharedMemoryOptIn, kSharedMemoryPerBlockOptIn, handle);
  driver = &d;
  return {};
}

} // namespace lcc
