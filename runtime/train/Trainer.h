//===- Trainer.h - the state of a training run over a Program --*- C++ -*-===//
//
// Owns what persists between steps — parameters, optimizer state, the step
// counter — on the Device the code runs on (runtime/cpu/Device.h: the host
// or a GPU, one code path for both), and feeds the compiled functions:
// @init once, @train_step per step (double-buffered: the step writes new
// parameters/state into the second set, then the sets swap), @forward for
// evaluation. Checkpoints are one safetensors file (parameters under their
// names, state under "m:<name>"-style names, the step in the metadata),
// written atomically.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_TRAINER_H
#define LCC_RUNTIME_TRAINER_H

#include "runtime/cpu/CpuProgram.h"
#include "runtime/cpu/Device.h"
#include "runtime/support/Safetensors.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace lcc {

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
  /// buffers its manifest describes on `device` (which must outlive it too;
  /// a GpuDevice for a --target=cuda program), or on the host when null.
  static Status create(const Program &program, Trainer &out, Device *device = nullptr);

  /// This process's rank in each process group (ZeRO: which piece of a
  /// partitioned tensor it holds); groups not named are rank 0. Set before
  /// init() or restore().
  void setGroupRanks(std::map<std::string, int64_t> ranks);

  /// Captures the step once as a graph after an eager warm-up step (one
  /// graph per parameter buffer set: two, as the step double-buffers) and
  /// replays it from then on; for a device that captures (a GPU).
  void useGraphs(bool graphs) { graphs_ = graphs; }
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
  /// Undoes the last update's writes: parameters and optimizer state become
  /// what they were before it (the other buffer of the double buffering
  /// still holds them); the step count stays (the next update is the next
  /// step: its data and learning rate). For a step whose results were all
  /// finished (finishSteps) and whose loss or gradient was not finite
  /// (lcc-run --on-nan=skip).
  Status undoLastStep();
  /// CPU: hold each step's results back until the next startStep or
  /// finishSteps, as a GPU run delivers them (for testing callers).
  void setLateResults(bool late) { lateResults_ = late; }
  /// The loss of @forward on one batch ([...] without the K dimension).
  Status evalLoss(const std::map<std::string, const HostTensor *> &inputs, double &loss);

  /// Calls `entry`, one of the program's other entries (text generation:
  /// runtime/train/Generator.h), with the current parameters, its arena
  /// (allocated on the first call) and device buffers of `inputs` and
  /// `outputs` (by slot name) for its other slots; waits for it. With
  /// graphs (useGraphs), `graph` >= 0 replays graph slot `graph`, captured
  /// on its first such call (the caller makes one eager call before, and
  /// keeps the buffers of a slot's calls the same).
  Status callEntry(const EntryPoint &entry, const std::map<std::string, uint64_t> &inputs,
                   const std::map<std::string, uint64_t> &outputs, int graph = -1);
  Device &device() const { return *device_; }
  const Program &program() const { return *program_; }
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
  /// As init(), with the parameters in `values` (whole tensors by name, for
  /// instance a Hugging Face model: lcc-run --init-from) instead of @init's,
  /// cut into this run's piece as restore() does; @init runs only for the
  /// parameters absent from it (LoRA adapters). Names this run does not hold
  /// are ignored.
  Status initFrom(const std::map<std::string, HostTensor> &values);
  /// How `name` is partitioned, or null when this run holds it whole.
  const ShardSpec *layout(const std::string &name) const {
    auto it = layouts_.find(name);
    return it == layouts_.end() ? nullptr : &it->second;
  }

  /// Names and shapes of what the compiled step reads, for the data feeder.
  const std::vector<Slot> &stepInputs() const { return stepInputs_; }
  const std::vector<Slot> &forwardInputs() const { return forwardInputs_; }
  const std::vector<std::string> &paramNames() const { return paramNames_; }

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
  std::unique_ptr<Device> host_; // the device when create() was given none
  Device *device_ = nullptr;
  // A parameter or optimizer state: this rank's piece when partitioned, in
  // two buffers for the step's in/out double buffering.
  struct Persistent {
    ElementType dtype;
    std::vector<int64_t> shape;
    bool state = false; // optimizer state: zero at init()
    uint64_t current = 0, next = 0;
    size_t bytes() const { return byteSize(dtype, shape); }
  };
  std::map<std::string, Persistent> persistent_;
  // The functions' outputs: their device buffers and host copies.
  struct Output {
    HostTensor host;
    uint64_t buffer = 0;
  };
  std::map<std::string, Output> outputs_;
  std::vector<std::string> paramNames_, stateNames_;
  std::vector<Slot> stepInputs_, forwardInputs_;
  HostTensor stepTensor_{ElementType::I64, {}};
  // One arena per function that has one (lcc-plan-memory).
  std::map<std::string, uint64_t> arenas_;
  // Device buffers of the inputs and the step counter ("<function>/<name>"),
  // where the device cannot read them in host memory; allocated on first use
  // and kept, so captured graphs stay valid.
  std::map<std::string, uint64_t> inputBuffers_;
  int64_t steps_ = 0;
  // Partitioned parameters and state, and this process's piece per group.
  std::map<std::string, ShardSpec> layouts_;
  std::map<std::string, int64_t> groupRanks_;

  bool graphs_ = false;
  bool warm_ = false; // a step ran eagerly in this process (plans and buffers exist)
  int64_t replays_ = 0;
  // A step whose results are not read yet (at most one: they come back into
  // staging slot n % 2). Results are read one step late on an asynchronous
  // device, or on request (setLateResults).
  bool lateResults_ = false;
  int64_t pendingStep_ = 0;
  // Host memory per staging slot, page-locked on a GPU: each step input, the
  // step counter and each output of @train_step at its offset.
  uint8_t *staging_[2] = {nullptr, nullptr};
  std::map<std::string, size_t> stagingOffsets_;

  int64_t pieceIndex(const ShardSpec &spec) const;
  // The parameter or state `s` names, when this run holds it with `s`'s
  // type and shape (else null).
  const Persistent *heldAs(const Slot &s) const;
  // Calls `entry` on `buffers`, or (graph >= 0) replays graph slot `graph`,
  // capturing it from this call first if it has none.
  Status issue(const EntryPoint &entry, const std::vector<void *> &buffers, int graph);
  /// `whole` cut to this rank's piece when `name` is partitioned.
  HostTensor local(const std::string &name, const HostTensor &whole) const;
  /// Replaces parameters and state with `values` (whole tensors, cut here),
  /// zero for state absent from it; step `step`, nothing pending.
  Status load(const std::map<std::string, HostTensor> &values, int64_t step);

  /// Issues `entry`; parameters and state the code writes go to the second
  /// set and become current when `swap`, else to the current one or to
  /// `written` (name -> buffer). `staged`: the step's inputs go through the
  /// staging slot and its outputs come back into it, with an event instead of
  /// a synchronization (collect reads them).
  Status run(const EntryPoint &entry, const std::map<std::string, const HostTensor *> &inputs,
             bool swap, bool staged, const std::map<std::string, uint64_t> &written = {});
  StepResult resultFromOutputs() const;
  /// Waits for step n's results and takes them from its staging slot.
  Status collect(int64_t n, std::vector<StepResult> &done);
  /// Drops unread results (init, restore: a new run).
  void forgetPending();
};

} // namespace lcc

#endif
