//===- Device.h - where the Trainer runs a Program -------------*- C++ -*-===//
//
// The Trainer (runtime/train/Trainer.h) keeps a run's buffers on a Device and
// calls the compiled functions there; it has one code path for every device.
// Three implementations: HostDevice (below: a CPU train.bin, buffers in host
// memory), and the GpuDevices of a --target=cuda train.bin (runtime/cuda/
// GpuDevice.h): CudaSession (a real GPU) and EmulatedGpu (its kernels on the
// CPU, for testing without one).
//
// A buffer is named by its device address (a uint64_t: CUdeviceptr on a GPU,
// the pointer itself on the host). Work is issued in order; on an
// asynchronous device it runs later, and the host learns it finished
// through synchronize() or an event.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_CPU_DEVICE_H
#define LCC_RUNTIME_CPU_DEVICE_H

#include "runtime/cpu/CpuProgram.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lcc {

class Device {
public:
  virtual ~Device() = default;

  /// For lcc-run's header line: the device and how its code runs.
  virtual std::string description() const = 0;
  /// Where errors happened, for messages: "the GPU".
  virtual std::string where() const = 0;

  /// Memory, zero-filled and aligned (64 bytes on the host, 256 on a GPU);
  /// 0 when it cannot be had. Freed by release() or with the device.
  virtual uint64_t allocate(size_t bytes) = 0;
  virtual void release(uint64_t buffer) = 0;
  /// Copies in issue order (host memory must stay valid until the copy ran).
  virtual void upload(uint64_t device, const void *host, size_t bytes) = 0;
  virtual void download(void *host, uint64_t device, size_t bytes) = 0;
  /// Host memory copies from and to which never wait for the device
  /// (page-locked on a GPU); freed with the device. Null when it cannot be had.
  virtual void *allocateHost(size_t bytes) = 0;
  /// The code reads and writes host memory in place: a host pointer is a
  /// device address, so inputs need no copy (and no device buffer).
  virtual bool sharesHostMemory() const = 0;

  /// Issues `entry` of `program` with one device address per slot.
  virtual Status call(const Program &program, const EntryPoint &entry,
                      const std::vector<void *> &buffers) = 0;
  /// call() returns before the work is done: the Trainer reads a step's
  /// results one step later, so the host never waits between steps.
  virtual bool asynchronous() const = 0;
  /// Waits for everything issued; fails when the code faulted.
  virtual Status synchronize() = 0;
  /// Marks what is issued so far (`slot`: 0 or 1, reused), and waits for
  /// such a mark: what came after it may still run.
  virtual Status recordEvent(int slot) = 0;
  virtual Status waitEvent(int slot) = 0;

  /// Graph capture of what is issued in between (slot: which graph); a
  /// device that cannot capture fails beginCapture.
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

/// A CPU train.bin: the code runs in the calling thread (and the thread
/// pool) on host memory; nothing is asynchronous, there are no graphs (the
/// collectives' timeout is the communicator's own).
class HostDevice : public Device {
public:
  HostDevice() = default;
  ~HostDevice() override;
  HostDevice(const HostDevice &) = delete;
  HostDevice &operator=(const HostDevice &) = delete;

  std::string description() const override;
  std::string where() const override { return "the CPU"; }
  uint64_t allocate(size_t bytes) override;
  void release(uint64_t buffer) override;
  void upload(uint64_t device, const void *host, size_t bytes) override;
  void download(void *host, uint64_t device, size_t bytes) override;
  void *allocateHost(size_t bytes) override;
  bool sharesHostMemory() const override { return true; }
  Status call(const Program &program, const EntryPoint &entry,
              const std::vector<void *> &buffers) override;
  bool asynchronous() const override { return false; }
  Status synchronize() override { return {}; }
  Status recordEvent(int) override { return {}; }
  Status waitEvent(int) override { return {}; }
  Status beginCapture() override;
  Status endCapture(int) override { return beginCapture(); }
  bool hasGraph(int) const override { return false; }
  void dropGraphs() override {}
  Status replay(int) override { return beginCapture(); }
  void setCollectiveTimeout(double) override {}

private:
  std::vector<void *> allocations_;
};

} // namespace lcc

#endif
