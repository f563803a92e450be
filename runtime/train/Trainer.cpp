//===- Trainer.cpp - the state of a training run over a Program -----------===//
#include "runtime/train/Trainer.h"
#include "runtime/support/Sharding.h"
#include "runtime/cuda/GpuDevice.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace lcc {

Status Trainer::create(const Program &program, Trainer &out) {
  Trainer t;
  t.program_ = &program;
  t.init_ = program.entry("init");
  t.step_ = program.entry("train_step");
  t.forward_ = program.entry("forward");
  if (!t.init_ || !t.step_ || !t.forward_)
    return Status::failure("the program lacks @init, @train_step or @forward");
  for (const Slot &s : t.init_->slots) {
    t.paramNames_.push_back(s.name);
    t.current_.emplace(s.name, HostTensor(s.dtype, s.shape));
    t.next_.emplace(s.name, HostTensor(s.dtype, s.shape));
  }
  for (const Slot &s : t.step_->slots) {
    // A partitioned parameter (ZeRO-3) is stored as this rank's piece; @init
    // still computes it whole (init() cuts it).
    if (s.role == Slot::Param && s.shard.sharded() && t.current_.count(s.name)) {
      t.layouts_[s.name] = s.shard;
      t.current_[s.name] = HostTensor(s.dtype, s.shape);
      t.next_[s.name] = HostTensor(s.dtype, s.shape);
    }
    if (s.role == Slot::State && s.shard.sharded())
      t.layouts_[s.name] = s.shard;
    if (s.role == Slot::State && !s.out) {
      t.stateNames_.push_back(s.name);
      t.current_.emplace(s.name, HostTensor(s.dtype, s.shape));
      t.next_.emplace(s.name, HostTensor(s.dtype, s.shape));
    } else if (s.role == Slot::Input) {
      t.stepInputs_.push_back(s);
    } else if (s.role == Slot::Output) {
      t.outputs_.emplace(s.name, HostTensor(s.dtype, s.shape));
    } else if (s.role == Slot::Param && !t.current_.count(s.name)) {
      return Status::failure("@train_step uses parameter '" + s.name +
                             "' that @init does not produce");
    }
  }
  for (const EntryPoint *e : {t.init_, t.step_, t.forward_})
    for (const Slot &s : e->slots)
      if (s.role == Slot::Workspace) {
        size_t bytes = (size_t(s.shape.empty() ? 0 : s.shape[0]) + 63) / 64 * 64;
        void *p = std::aligned_alloc(64, std::max<size_t>(bytes, 64));
        if (!p)
          return Status::failure("cannot allocate the " + std::to_string(bytes) +
                                 "-byte arena of @" + e->name);
        t.arenas_.emplace(e->name, std::unique_ptr<uint8_t, void (*)(void *)>(
                                       static_cast<uint8_t *>(p), std::free));
      }
  for (const Slot &s : t.forward_->slots) {
    if (s.role == Slot::Input)
      t.forwardInputs_.push_back(s);
    else if (s.role == Slot::Output && !t.outputs_.count(s.name))
      t.outputs_.emplace(s.name, HostTensor(s.dtype, s.shape));
  }
  out = std::move(t);
  return {};
}

Status Trainer::run(const EntryPoint &entry,
                    const std::map<std::string, const HostTensor *> &inputs, bool swap) {
  if (cuda_)
    return runOnDevice(entry, inputs, swap);
  std::vector<void *> buffers;
  for (const Slot &s : entry.slots) {
    HostTensor *t = nullptr;
    switch (s.role) {
    case Slot::Param:
    case Slot::State: {
      auto &set = s.out && swap ? next_ : current_;
      auto it = set.find(s.name);
      t = it == set.end() ? nullptr : &it->second;
      break;
    }
    case Slot::Step:
      t = &stepTensor_;
      break;
    case Slot::Input: {
      auto it = inputs.find(s.name);
      if (it == inputs.end() || !it->second)
        return Status::failure("no data for input '" + s.name + "'");
      t = const_cast<HostTensor *>(it->second); // read-only for the code
      break;
    }
    case Slot::Output:
      t = &outputs_[s.name];
      break;
    case Slot::Workspace:
      buffers.push_back(arenas_.at(entry.name).get());
      continue;
    }
    if (!t || t->elementType() != s.dtype || t->shape() != s.shape)
      return Status::failure("@" + entry.name + ": buffer for " + slotRoleName(s.role) + " '" +
                             s.name + "' has the wrong type or shape");
    buffers.push_back(t->rawData());
  }
  program_->call(entry, buffers);
  if (swap) // parameters and state the step wrote become current; frozen ones stay
    for (const Slot &s : entry.slots)
      if (s.out && (s.role == Slot::Param || s.role == Slot::State))
        std::swap(current_[s.name], next_[s.name]);
  return {};
}

void Trainer::useCuda(GpuDevice *device, bool graphs) {
  cuda_ = device;
  graphs_ = graphs;
  deviceStale_ = true;
}

/// Where a slot's bytes sit in a staging block ("input:tokens").
static std::string stagingKey(const Slot &s) { return slotRoleName(s.role) + (":" + s.name); }

Status Trainer::runOnDevice(const EntryPoint &entry,
                            const std::map<std::string, const HostTensor *> &inputs, bool swap,
                            bool late) {
  GpuDevice &gpu = *cuda_;
  // Late results: the copies in and out go through pinned memory (a copy
  // from pageable memory may wait for the stream), one staging slot per
  // step parity; the host fills slot s while the step before runs from the
  // other one, and the step two back, which used s, has been collected.
  int slot = int((steps_ + 1) % 2);
  uint8_t *staging = nullptr;
  if (late) {
    if (!staging_[1]) {
      stagingOffsets_.clear();
      stagingBytes_ = 0;
      for (const Slot &s : entry.slots)
        if (s.role == Slot::Input || s.role == Slot::Output || s.role == Slot::Step) {
          stagingOffsets_[stagingKey(s)] = stagingBytes_;
          stagingBytes_ += (HostTensor(s.dtype, s.shape).byteSize() + 63) / 64 * 64;
        }
      for (uint8_t *&block : staging_)
        if (!(block = static_cast<uint8_t *>(gpu.allocateHost(std::max<size_t>(stagingBytes_, 64)))))
          return Status::failure("cannot allocate " + std::to_string(stagingBytes_) +
                                 " bytes of pinned host memory for the step's copies");
    }
    staging = staging_[slot];
  }
  // Host memory `t` goes to the device at `p`: through the staging slot
  // when late.
  auto upload = [&](uint64_t p, const Slot &s, const HostTensor &t) {
    if (!staging)
      return gpu.upload(p, t.rawData(), t.byteSize());
    uint8_t *at = staging + stagingOffsets_.at(stagingKey(s));
    std::memcpy(at, t.rawData(), t.byteSize());
    gpu.upload(p, at, t.byteSize());
  };
  auto fail = [&](const std::string &m) { return Status::failure("@" + entry.name + ": " + m); };
  // Device buffers are allocated once, on first use (the eager first step),
  // so a captured graph's addresses stay valid.
  auto ensure = [&](std::map<std::string, uint64_t> &m, const std::string &key, size_t bytes) {
    auto it = m.find(key);
    return it != m.end() ? it->second : (m[key] = gpu.allocate(bytes));
  };
  if (deviceStale_) {
    for (auto &[n, t] : current_)
      gpu.upload(ensure(devCurrent_, n, t.byteSize()), t.rawData(), t.byteSize());
    for (auto &[n, t] : next_)
      ensure(devNext_, n, t.byteSize());
    deviceStale_ = false;
  }
  std::vector<void *> buffers;
  for (const Slot &s : entry.slots) {
    uint64_t p = 0;
    switch (s.role) {
    case Slot::Param:
    case Slot::State: {
      auto &set = s.out && swap ? devNext_ : devCurrent_;
      auto it = set.find(s.name);
      if (it == set.end())
        return fail("no device buffer for " + std::string(slotRoleName(s.role)) + " '" + s.name +
                    "'");
      p = it->second;
      break;
    }
    case Slot::Step:
      p = ensure(devArenas_, "step counter", stepTensor_.byteSize());
      upload(p, s, stepTensor_);
      break;
    case Slot::Input: {
      auto it = inputs.find(s.name);
      if (it == inputs.end() || !it->second)
        return Status::failure("no data for input '" + s.name + "'");
      const HostTensor &t = *it->second;
      if (t.elementType() != s.dtype || t.shape() != s.shape)
        return fail("input '" + s.name + "' has the wrong type or shape");
      p = ensure(devInputs_, entry.name + "/" + s.name, t.byteSize());
      upload(p, s, t);
      break;
    }
    case Slot::Output: {
      HostTensor &t = outputs_[s.name];
      if (t.elementType() != s.dtype || t.shape() != s.shape)
        t = HostTensor(s.dtype, s.shape);
      p = ensure(devOutputs_, s.name, t.byteSize());
      break;
    }
    case Slot::Workspace:
      p = ensure(devArenas_, entry.name, size_t(s.shape.empty() ? 0 : s.shape[0]));
      break;
    }
    if (!p)
      return fail("cannot allocate device memory for '" + s.name + "'");
    buffers.push_back(reinterpret_cast<void *>(p));
  }

  CudaBackend *previous = cudaBackend();
  setCudaBackend(cuda_);
  // After one eager step (which also sets up every GEMM plan and buffer),
  // each parameter-set parity is captured once and replayed from then on.
  int parity = int(steps_ % 2);
  Status st;
  // After a resume, too, the first step of the process runs eagerly: it
  // allocates and plans what a capture must not, and makes NCCL's first
  // calls (connection set-up; captured point-to-point calls also need an
  // eager one before them).
  if (graphs_ && &entry == step_ && warm_) {
    if (!gpu.hasGraph(parity)) {
      st = gpu.beginCapture();
      if (st) {
        program_->call(entry, buffers);
        st = gpu.endCapture(parity);
      }
    }
    if (st)
      st = gpu.replay(parity);
    replays_ += st.ok();
  } else {
    program_->call(entry, buffers);
    warm_ |= &entry == step_;
  }
  setCudaBackend(previous);
  if (!st)
    return fail("on the GPU: " + st.message());
  // A copy into pageable memory returns only when it is done, so it would
  // wait for the step without the timeout that catches a peer that stopped
  // taking part in a collective: wait the polling way first.
  if (!late) {
    if (st = gpu.synchronize(); !st)
      return fail("on the GPU: " + st.message());
  }
  // Back to the host: the outputs, and what @init computed.
  for (const Slot &s : entry.slots) {
    if (s.role == Slot::Output) {
      HostTensor &t = outputs_[s.name];
      void *to = staging ? staging + stagingOffsets_.at(stagingKey(s)) : t.rawData();
      gpu.download(to, devOutputs_.at(s.name), t.byteSize());
    } else if (s.out && !swap && (s.role == Slot::Param || s.role == Slot::State)) {
      HostTensor &t = current_.at(s.name);
      gpu.download(t.rawData(), devCurrent_.at(s.name), t.byteSize());
    }
  }
  // Late: the host goes on; collectDevice waits for this event.
  if (st = late ? gpu.recordEvent(slot) : gpu.synchronize(); !st)
    return fail("on the GPU: " + st.message());
  if (swap) {
    for (const Slot &s : entry.slots)
      if (s.out && (s.role == Slot::Param || s.role == Slot::State)) {
        std::swap(current_[s.name], next_[s.name]);
        std::swap(devCurrent_[s.name], devNext_[s.name]);
      }
    hostStale_ = true;
  }
  return {};
}

void Trainer::pullHost() const {
  if (!cuda_ || !hostStale_)
    return;
  for (auto &[n, t] : current_)
    cuda_->download(t.rawData(), devCurrent_.at(n), t.byteSize());
  (void)cuda_->synchronize(); // a failure shows at the next step
  hostStale_ = false;
}

void Trainer::setGroupRanks(std::map<std::string, int64_t> ranks) {
  groupRanks_ = std::move(ranks);
}

int64_t Trainer::pieceIndex(const ShardSpec &spec) const {
  auto it = groupRanks_.find(spec.group);
  return it == groupRanks_.end() ? 0 : it->second;
}

HostTensor Trainer::local(const std::string &name, const HostTensor &whole) const {
  auto it = layouts_.find(name);
  if (it == layouts_.end())
    return whole;
  const ShardSpec &s = it->second;
  return cutPiece(whole, s, pieceIndex(s), s.within ? pieceIndex(*s.within) : 0);
}

Status Trainer::init() {
  // Whole initial values first (parameters may be stored as this rank's piece).
  std::map<std::string, HostTensor> whole;
  if (const SafetensorsFile *given = program_->initialParameters()) {
    // Stored values (ONNX initializers): each must match its @init slot.
    for (const Slot &s : init_->slots) {
      auto it = given->tensors.find(s.name);
      if (it == given->tensors.end())
        return Status::failure("the stored initial parameters lack '" + s.name + "'");
      if (it->second.elementType() != s.dtype || it->second.shape() != s.shape)
        return Status::failure("the stored initial value of '" + s.name +
                               "' has another type or shape than the parameter");
      whole[s.name] = it->second;
    }
  } else {
    std::map<std::string, HostTensor> kept = std::move(current_);
    current_.clear();
    for (const Slot &s : init_->slots)
      current_.emplace(s.name, HostTensor(s.dtype, s.shape));
    Status st = run(*init_, {}, /*swap=*/false);
    whole = std::move(current_);
    current_ = std::move(kept);
    if (!st)
      return st;
  }
  for (const std::string &n : paramNames_)
    current_[n] = local(n, whole.at(n));
  for (const std::string &n : stateNames_)
    current_[n] = HostTensor(current_[n].elementType(), current_[n].shape());
  steps_ = 0;
  forgetPending();
  deviceStale_ = true;
  if (cuda_) // the graphs were captured for the old step parity's buffers
    cuda_->dropGraphs();
  hostStale_ = false;
  return {};
}

Status Trainer::step(const std::map<std::string, const HostTensor *> &inputs, StepResult &out) {
  std::vector<StepResult> done;
  Status st = startStep(inputs, done);
  if (st)
    st = finishSteps(done);
  if (st)
    out = done.back();
  return st;
}

StepResult Trainer::resultFromOutputs() const {
  auto scalar = [&](const char *name) {
    auto it = outputs_.find(name);
    return it == outputs_.end() ? 0.0 : it->second.getDouble(0);
  };
  StepResult r;
  r.loss = scalar("loss");
  r.gradNorm = scalar("grad_norm");
  r.lr = scalar("lr");
  r.lossScale = scalar("loss_scale");
  return r;
}

Status Trainer::startStep(const std::map<std::string, const HostTensor *> &inputs,
                          std::vector<StepResult> &done) {
  stepTensor_.data<int64_t>()[0] = steps_ + 1; // the update being made, 1-based
  if (cuda_) {
    // Queue this step first, then read the previous one's results: the GPU
    // has the next step while the host waits, logs and prepares.
    int64_t previous = devicePendingStep_;
    if (Status st = runOnDevice(*step_, inputs, /*swap=*/true, /*late=*/true); !st)
      return st;
    devicePendingStep_ = ++steps_;
    return previous ? collectDevice(previous, done) : Status();
  }
  if (Status st = run(*step_, inputs, /*swap=*/true); !st)
    return st;
  StepResult r = resultFromOutputs();
  r.step = ++steps_;
  done.insert(done.end(), pending_.begin(), pending_.end());
  pending_.clear();
  (lateResults_ ? pending_ : done).push_back(r);
  return {};
}

Status Trainer::finishSteps(std::vector<StepResult> &done) {
  done.insert(done.end(), pending_.begin(), pending_.end());
  pending_.clear();
  int64_t n = devicePendingStep_;
  devicePendingStep_ = 0;
  return n ? collectDevice(n, done) : Status();
}

void Trainer::forgetPending() {
  pending_.clear();
  // Its copies into staging must be done before the slot is reused (a
  // failure shows at the next step).
  if (devicePendingStep_)
    (void)cuda_->synchronize();
  devicePendingStep_ = 0;
}

Status Trainer::collectDevice(int64_t n, std::vector<StepResult> &done) {
  if (Status st = cuda_->waitEvent(int(n % 2)); !st)
    return Status::failure("@train_step: on the GPU: " + st.message());
  for (const Slot &s : step_->slots)
    if (s.role == Slot::Output) {
      HostTensor &t = outputs_[s.name];
      std::memcpy(t.rawData(), staging_[n % 2] + stagingOffsets_.at(stagingKey(s)), t.byteSize());
    }
  StepResult r = resultFromOutputs();
  r.step = n;
  done.push_back(r);
  return {};
}

Status Trainer::evalLoss(const std::map<std::string, const HostTensor *> &inputs, double &loss) {
  if (Status st = run(*forward_, inputs, /*swap=*/false); !st)
    return st;
  loss = outputs_["loss"].getDouble(0);
  return {};
}

int64_t Trainer::allocatedBytes() const {
  int64_t total = int64_t(stepTensor_.byteSize());
  for (const std::map<std::string, HostTensor> *set : {&std::as_const(current_), &next_, &outputs_})
    for (const auto &[name, t] : *set)
      total += int64_t(t.byteSize());
  for (const EntryPoint *e : {init_, step_, forward_})
    for (const Slot &s : e->slots)
      if (s.role == Slot::Workspace)
        total += (s.shape.empty() ? 0 : s.shape[0] + 63) / 64 * 64;
  return total;
}

int64_t Trainer::stepMemoryBytes() const {
  int64_t total = allocatedBytes();
  for (const Slot &s : stepInputs_)
    total += int64_t(HostTensor(s.dtype, s.shape).byteSize());
  return total;
}

const HostTensor *Trainer::param(const std::string &name) const {
  pullHost();
  auto it = current_.find(name);
  return it == current_.end() ? nullptr : &it->second;
}

SafetensorsFile Trainer::snapshot(bool withState,
                                  const std::map<std::string, std::string> &extra,
                                  bool withWhole) const {
  pullHost();
  SafetensorsFile f;
  auto add = [&](const std::string &n) {
    auto layout = layouts_.find(n);
    if (layout == layouts_.end()) {
      if (withWhole)
        f.tensors[n] = current_.at(n);
      return;
    }
    f.tensors[n] = current_.at(n);
    const ShardSpec &s = layout->second;
    f.metadata[shardMetadataKey(n)] =
        shardMetadataValue(s, pieceIndex(s), s.within ? pieceIndex(*s.within) : 0);
  };
  for (const std::string &n : paramNames_)
    add(n);
  if (withState)
    for (const std::string &n : stateNames_)
      add(n);
  for (const auto &[k, v] : extra)
    f.metadata[k] = v;
  f.metadata["lcc.step"] = std::to_string(steps_);
  return f;
}

Status Trainer::restore(const SafetensorsFile &file) {
  auto it = file.metadata.find("lcc.step");
  if (it == file.metadata.end())
    return Status::failure("not an lcc checkpoint (no lcc.step in its metadata)");
  int64_t step = 0;
  for (char c : it->second) {
    if (c < '0' || c > '9' || step > (int64_t(1) << 50))
      return Status::failure("bad lcc.step '" + it->second + "' in the checkpoint");
    step = step * 10 + (c - '0');
  }
  std::vector<std::string> names = paramNames_;
  names.insert(names.end(), stateNames_.begin(), stateNames_.end());
  for (const std::string &n : names) {
    auto t = file.tensors.find(n);
    if (t == file.tensors.end())
      return Status::failure("the checkpoint has no tensor '" + n +
                             "' (was it saved from another model or optimizer?)");
    // The checkpoint holds whole tensors (assembleShards); partitioned ones
    // are cut for this run's layout, whatever layout wrote them.
    const HostTensor &mine = current_.at(n);
    auto layout = layouts_.find(n);
    HostTensor want = layout == layouts_.end()
                          ? HostTensor(mine.elementType(), mine.shape())
                          : HostTensor(mine.elementType(), layout->second.wholeShape());
    if (t->second.elementType() != want.elementType() || t->second.shape() != want.shape())
      return Status::failure("checkpoint tensor '" + n + "' is " + t->second.typeString() +
                             ", the model needs " + want.typeString());
  }
  for (const std::string &n : names)
    current_[n] = local(n, file.tensors.at(n));
  steps_ = step;
  forgetPending();
  deviceStale_ = true;
  if (cuda_)
    cuda_->dropGraphs();
  hostStale_ = false;
  return {};
}

} // namespace lcc
