//===- HostDevice.cpp - a CPU train.bin's code on host memory -------------===//
#include "runtime/cpu/Device.h"
#include "runtime/cpu/Parallel.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace lcc {

HostDevice::~HostDevice() {
  for (void *p : allocations_)
    std::free(p);
}

std::string HostDevice::description() const { return std::to_string(numThreads()) + " threads"; }

uint64_t HostDevice::allocate(size_t bytes) {
  size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  void *p = std::aligned_alloc(64, rounded);
  if (!p)
    return 0;
  std::memset(p, 0, rounded);
  allocations_.push_back(p);
  return reinterpret_cast<uint64_t>(p);
}

void HostDevice::release(uint64_t buffer) {
  void *p = reinterpret_cast<void *>(buffer);
  auto it = std::find(allocations_.begin(), allocations_.end(), p);
  if (it == allocations_.end())
    return;
  std::free(p);
  allocations_.erase(it);
}

// Host pointers are device addresses: a copy onto itself (an input or output
// the code used in place) is no copy.
void HostDevice::upload(uint64_t device, const void *host, size_t bytes) {
  if (reinterpret_cast<const void *>(device) != host)
    std::memcpy(reinterpret_cast<void *>(device), host, bytes);
}

void HostDevice::download(void *host, uint64_t device, size_t bytes) {
  if (reinterpret_cast<const void *>(device) != host)
    std::memcpy(host, reinterpret_cast<const void *>(device), bytes);
}

void *HostDevice::allocateHost(size_t bytes) { return reinterpret_cast<void *>(allocate(bytes)); }

Status HostDevice::call(const Program &program, const EntryPoint &entry,
                        const std::vector<void *> &buffers) {
  program.call(entry, buffers);
  return {};
}

Status HostDevice::beginCapture() { return Status::failure("the CPU does not capture graphs"); }

} // namespace lcc
