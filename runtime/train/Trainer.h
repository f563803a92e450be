//===- Trainer.h - the state of a training run over a Program --*- C++ -*-===//
//
// Owns what persists between steps — parameters, optimizer state, the step
// counter — and feeds the compiled functions: @init once, @train_step per
// step (double-buffered: the step writes new parameters/state into the
// second set, then the sets swap), @forward for evaluation. Checkpoints are
// one safetensors file (parameters under their names, state under
// "m:<name>"-style names, the step in the metadata), written atomically.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_TRAINER_H
#define LCC_RUNTIME_TRAINER_H

#include "runtime/cpu/CpuProgram.h"
#include "runtime/support/Safetensors.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace lcc {

class GpuDevice;

struct StepResult {
  int64_t step = 0; // the update these are of (1-based)
  double loss = 0, gradNorm = 0, lr = 0;
  /// fp16: the loss scale the step used (0 without loss scaling). A step
  /// whose gradient norm is not finite was skipped.
  double lossScale = 0;
};

class Trainer {
public:
  /// Binds to `program` (which must outlive the trainer) and allocates the
  /// buffers its manifest describes.
  static Status create(const Program &program, Trainer &out);

  /// This process's rank in each process group (ZeRO: which piece of a
  /// partitioned tensor it holds); groups not named are rank 0. Set before
  /// init() or restore().
  void setGroupRanks(std::map<std::string, int64_t> ranks);

  /// Runs the compiled functions on a GPU (a --target=cuda program, whose
  /// session must outlive the trainer): parameters, state, outputs and
  /// arenas live in device memory, inputs are copied in before each call and
  /// outputs (the loss, grad norm, lr) copied back after it. With `graphs`
  /// the step is captured once as a CUDA graph after an eager warm-up step
  /// (one graph per parameter buffer set: two, as the step double-buffers)
  /// and replayed from then on. Call before init() or restore().
  void useCuda(GpuDevice *device, bool graphs);
  /// Steps run as graph replays so far (0 without graphs).
  int64_t graphReplays() const { return replays_; }

  /// Fresh parameters from @init, zero optimizer state, step 0.
  Status init();
  /// One optimizer update with `inputs` (by name, shaped as @train_step
  /// takes them: [K, ...] when the model accumulates K micro-batches).
  Status step(const std::map<std::string, const HostTensor *> &inputs, StepResult &out);
  /// The same without waiting for it: starts the update and appends to
  /// `done` the results that are ready, in step order. On a GPU these are
  /// the previous update's (read back through pinned memory while this one
  /// runs, so the host never waits for the GPU between steps); on the CPU,
  /// this update's own, unless setLateResults emulates the GPU's order.
  /// finishSteps() waits for the rest; until then only startStep may be
  /// called (evaluation, snapshots and restores need the GPU idle).
  Status startStep(const std::map<std::string, const HostTensor *> &inputs,
                   std::vector<StepResult> &done);
  Status finishSteps(std::vector<StepResult> &done);
  /// CPU: hold each step's results back until the next startStep or
  /// finishSteps, as a GPU run delivers them (for testing callers).
  void setLateResults(bool late) { lateResults_ = late; }
  /// The loss of @forward on one batch ([...] without the K dimension).
  Status evalLoss(const std::map<std::string, const HostTensor *> &inputs, double &loss);

  /// Completed updates (the next step passes stepCount() + 1 to the code).
  int64_t stepCount() const { return steps_; }

  /// Parameters (and state when `withState`) as a safetensors file; the
  /// metadata holds the step and `extra`. Partitioned tensors are this
  /// rank's piece, described in the metadata (runtime/support/Sharding.h); whole
  /// tensors are left out when `withWhole` is false (ranks other than 0
  /// need not write replicated values).
  SafetensorsFile snapshot(bool withState, const std::map<std::string, std::string> &extra,
                           bool withWhole = true) const;
  /// Restores parameters, state and step from a snapshot with state holding
  /// whole tensors (assembleShards merges the pieces of a sharded one); each
  /// is cut into this run's piece where this run partitions it, so a
  /// checkpoint loads at any world size and sharding mode. Every tensor
  /// must be present with the same whole shape and type.
  Status restore(const SafetensorsFile &file);
  /// How `name` is partitioned, or null when this run holds it whole.
  const ShardSpec *layout(const std::string &name) const {
    auto it = layouts_.find(name);
    return it == layouts_.end() ? nullptr : &it->second;
  }

  /// Names and shapes of what the compiled step reads, for the data feeder.
  const std::vector<Slot> &stepInputs() const { return stepInputs_; }
  const std::vector<Slot> &forwardInputs() const { return forwardInputs_; }
  const std::vector<std::string> &paramNames() const { return paramNames_; }
  const HostTensor *param(const std::string &name) const;

  /// Bytes this trainer allocated for the compiled code: parameters and
  /// state (twice: double buffering), outputs, the step counter and the
  /// arenas. With every temporary planned, this is the run's whole memory
  /// for the step besides the input batch (docs/lcc-run.md).
  int64_t allocatedBytes() const;
  /// allocatedBytes() plus the step's input batch (which the caller
  /// allocates): what the manifest's memory plan counts (memoryPlanBytes).
  int64_t stepMemoryBytes() const;

private:
  const Program *program_ = nullptr;
  const EntryPoint *init_ = nullptr, *step_ = nullptr, *forward_ = nullptr;
  // Persistent buffers by name ("wte", "m:wte", ...), two sets for the step's
  // in/out double buffering. On a GPU the host copies are refreshed lazily
  // (mutable: snapshot() and param() refresh them).
  mutable std::map<std::string, HostTensor> current_;
  std::map<std::string, HostTensor> next_;
  std::map<std::string, HostTensor> outputs_;
  std::vector<std::string> paramNames_, stateNames_;
  std::vector<Slot> stepInputs_, forwardInputs_;
  HostTensor stepTensor_{ElementType::I64, {}};
  // One arena per function that has one (lcc-plan-memory), 64-byte aligned.
  std::map<std::string, std::unique_ptr<uint8_t, void (*)(void *)>> arenas_;
  int64_t steps_ = 0;
  // Partitioned parameters and state, and this process's piece per group.
  std::map<std::string, ShardSpec> layouts_;
  std::map<std::string, int64_t> groupRanks_;

  int64_t pieceIndex(const ShardSpec &spec) const;
  /// `whole` cut to this rank's piece when `name` is partitioned.
  HostTensor local(const std::string &name, const HostTensor &whole) const;

  Status run(const EntryPoint &entry, const std::map<std::string, const HostTensor *> &inputs,
             bool swap);

  // The GPU side (runtime/cuda/GpuDevice.h): device buffers by name, in the
  // same roles as the host ones; allocated once, so captured graphs stay valid.
  GpuDevice *cuda_ = nullptr;
  bool graphs_ = false;
  bool warm_ = false; // a step ran eagerly in this process (plans and buffers exist)
  bool deviceStale_ = true;       // host parameters/state newer than the device's
  mutable bool hostStale_ = false; // the device's newer than the host's
  std::map<std::string, uint64_t> devCurrent_, devNext_, devOutputs_, devInputs_, devArenas_;
  int64_t replays_ = 0;
  /// `late`: the step's inputs go through pinned staging and its outputs
  /// come back into it, with an event instead of a synchronization
  /// (collectDevice reads them).
  Status runOnDevice(const EntryPoint &entry,
                     const std::map<std::string, const HostTensor *> &inputs, bool swap,
                     bool late = false);
  // Started steps whose results are not read yet (at most one on a GPU: its
  // staging slot is steps_ % 2).
  bool lateResults_ = false;
  std::vector<StepResult> pending_; // CPU
  int64_t devicePendingStep_ = 0;   // GPU: its results come back into staging slot n % 2
  // Pinned host memory per staging slot: each step input, the step counter
  // and each output of @train_step at its offset.
  uint8_t *staging_[2] = {nullptr, nullptr};
  std::map<std::string, size_t> stagingOffsets_;
  size_t stagingBytes_ = 0;
  StepResult resultFromOutputs() const;
  /// Waits for step n's copies and takes its results from the staging slot.
  Status collectDevice(int64_t n, std::vector<StepResult> &done);
  /// Drops unread results (init, restore: a new run).
  void forgetPending();
  void pullHost() const;
};

} // namespace lcc

#endif
