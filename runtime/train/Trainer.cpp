//===- Trainer.cpp - the state of a training run over a Program -----------===//
#include "runtime/train/Trainer.h"
#include "runtime/support/Sharding.h"

#include <algorithm>
#include <set>
#include <utility>

namespace lcc {

/// Where a slot's bytes sit in a staging block ("input:tokens").
static std::string stagingKey(const Slot &s) { return slotRoleName(s.role) + (":" + s.name); }

Status Trainer::create(const Program &program, Trainer &out, Device *device) {
  Trainer t;
  t.program_ = &program;
  if (!device) {
    t.host_ = std::make_unique<HostDevice>();
    device = t.host_.get();
  }
  t.device_ = device;
  t.init_ = program.entry("init");
  t.step_ = program.entry("train_step");
  t.forward_ = program.entry("forward");
  if (!t.init_ || !t.step_ || !t.forward_)
    return Status::failure("the program lacks @init, @train_step or @forward");
  for (const Slot &s : t.init_->slots) {
    t.paramNames_.push_back(s.name);
    t.persistent_[s.name] = {s.dtype, s.shape};
  }
  for (const Slot &s : t.step_->slots) {
    // A partitioned parameter (ZeRO-3) is stored as this rank's piece; @init
    // still computes it whole (init() cuts it).
    if (s.role == Slot::Param && s.shard.sharded() && t.persistent_.count(s.name)) {
      t.layouts_[s.name] = s.shard;
      t.persistent_[s.name] = {s.dtype, s.shape};
    }
    if (s.role == Slot::State && s.shard.sharded())
      t.layouts_[s.name] = s.shard;
    if (s.role == Slot::State && !s.out) {
      t.stateNames_.push_back(s.name);
      t.persistent_.emplace(s.name, Persistent{s.dtype, s.shape, /*state=*/true});
    } else if (s.role == Slot::Input) {
      t.stepInputs_.push_back(s);
    } else if (s.role == Slot::Output) {
      t.outputs_.emplace(s.name, Output{HostTensor(s.dtype, s.shape)});
    } else if (s.role == Slot::Param && !t.persistent_.count(s.name)) {
      return Status::failure("@train_step uses parameter '" + s.name +
                             "' that @init does not produce");
    }
  }
  for (const Slot &s : t.forward_->slots) {
    if (s.role == Slot::Input)
      t.forwardInputs_.push_back(s);
    else if (s.role == Slot::Output && !t.outputs_.count(s.name))
      t.outputs_.emplace(s.name, Output{HostTensor(s.dtype, s.shape)});
  }

  // Every buffer the functions keep is allocated here, once, so a captured
  // graph's addresses stay valid.
  auto allocate = [&](size_t bytes, uint64_t &at, const std::string &what) {
    if (!(at = device->allocate(bytes)))
      return Status::failure("cannot allocate " + std::to_string(bytes) + " bytes on " +
                             device->where() + " for " + what);
    return Status();
  };
  for (auto &[name, p] : t.persistent_)
    for (uint64_t *at : {&p.current, &p.next})
      if (Status st = allocate(p.bytes(), *at, "'" + name + "'"); !st)
        return st;
  for (auto &[name, o] : t.outputs_)
    if (Status st = allocate(o.host.byteSize(), o.buffer, "output '" + name + "'"); !st)
      return st;
  for (const EntryPoint *e : {t.init_, t.step_, t.forward_})
    for (const Slot &s : e->slots)
      if (s.role == Slot::Workspace)
        if (Status st = allocate(s.bytes(), t.arenas_[e->name], "the arena of @" + e->name); !st)
          return st;
  out = std::move(t);
  return {};
}

Status Trainer::run(const EntryPoint &entry,
                    const std::map<std::string, const HostTensor *> &inputs, bool swap, bool staged,
                    const std::map<std::string, uint64_t> &written) {
  Device &dev = *device_;
  auto fail = [&](const std::string &m) { return Status::failure("@" + entry.name + ": " + m); };
  // Staged: the copies in and out go through host memory of the device's
  // choice (a copy from pageable memory may wait for a GPU's stream), one
  // staging slot per step parity; the host fills slot s while the step
  // before runs from the other one, and the step two back, which used s, has
  // been collected.
  int slot = int((steps_ + 1) % 2);
  uint8_t *staging = nullptr;
  if (staged) {
    if (!staging_[1]) {
      stagingOffsets_.clear();
      size_t bytes = 0;
      for (const Slot &s : entry.slots)
        if (s.role == Slot::Input || s.role == Slot::Output || s.role == Slot::Step) {
          stagingOffsets_[stagingKey(s)] = bytes;
          bytes += (s.bytes() + 63) / 64 * 64;
        }
      for (uint8_t *&block : staging_)
        if (!(block = static_cast<uint8_t *>(dev.allocateHost(std::max<size_t>(bytes, 64)))))
          return Status::failure("cannot allocate " + std::to_string(bytes) +
                                 " bytes of pinned host memory for the step's copies");
    }
    staging = staging_[slot];
  }
  // Host memory `t` as the code reads it: in place where the device can, else
  // copied (through the staging slot when staged) into a buffer of its own.
  auto bind = [&](const Slot &s, const HostTensor &t) -> uint64_t {
    if (dev.sharesHostMemory()) // read-only for the code
      return reinterpret_cast<uint64_t>(t.rawData());
    uint64_t &buffer = inputBuffers_[entry.name + "/" + stagingKey(s)];
    if (!buffer && !(buffer = dev.allocate(t.byteSize())))
      return 0;
    const void *from = t.rawData();
    if (staging) {
      uint8_t *at = staging + stagingOffsets_.at(stagingKey(s));
      std::memcpy(at, t.rawData(), t.byteSize());
      from = at;
    }
    dev.upload(buffer, from, t.byteSize());
    return buffer;
  };
  std::vector<void *> buffers;
  for (const Slot &s : entry.slots) {
    uint64_t p = 0;
    switch (s.role) {
    case Slot::Param:
    case Slot::State: {
      if (auto w = written.find(s.name); s.out && w != written.end()) {
        p = w->second;
        break;
      }
      const Persistent *held = heldAs(s);
      if (!held)
        return fail("buffer for " + std::string(slotRoleName(s.role)) + " '" + s.name +
                    "' has the wrong type or shape");
      p = s.out && swap ? held->next : held->current;
      break;
    }
    case Slot::Step: p = bind(s, stepTensor_); break;
    case Slot::Input: {
      auto it = inputs.find(s.name);
      if (it == inputs.end() || !it->second)
        return Status::failure("no data for input '" + s.name + "'");
      const HostTensor &t = *it->second;
      if (t.elementType() != s.dtype || t.shape() != s.shape)
        return fail("buffer for input '" + s.name + "' has the wrong type or shape");
      p = bind(s, t);
      break;
    }
    case Slot::Output: {
      const Output &o = outputs_.at(s.name);
      if (o.host.elementType() != s.dtype || o.host.shape() != s.shape)
        return fail("buffer for output '" + s.name + "' has the wrong type or shape");
      p = o.buffer;
      break;
    }
    case Slot::Workspace: p = arenas_.at(entry.name); break;
    }
    if (!p)
      return fail("cannot allocate memory for '" + s.name + "' on " + dev.where());
    buffers.push_back(reinterpret_cast<void *>(p));
  }

  // After one eager step (which also sets up every GEMM plan and buffer),
  // each parameter-set parity is captured once and replayed from then on.
  // After a resume, too, the first step of the process runs eagerly: it
  // allocates and plans what a capture must not, and makes NCCL's first
  // calls (connection set-up; captured point-to-point calls also need an
  // eager one before them).
  Status st = issue(entry, buffers, graphs_ && &entry == step_ && warm_ ? int(steps_ % 2) : -1);
  warm_ |= st.ok() && &entry == step_;
  // A copy into pageable memory returns only when it is done, so it would
  // wait for the step without the timeout that catches a peer that stopped
  // taking part in a collective: wait the polling way first.
  if (st && !staged)
    st = dev.synchronize();
  if (!st)
    return fail("on " + dev.where() + ": " + st.message());
  for (const Slot &s : entry.slots)
    if (s.role == Slot::Output) {
      Output &o = outputs_.at(s.name);
      void *to = staging ? staging + stagingOffsets_.at(stagingKey(s)) : o.host.rawData();
      dev.download(to, o.buffer, o.host.byteSize());
    }
  // Staged: the host goes on; collect() waits for this event.
  if (st = staged ? dev.recordEvent(slot) : dev.synchronize(); !st)
    return fail("on " + dev.where() + ": " + st.message());
  if (swap) // parameters and state the step wrote become current; frozen ones stay
    for (const Slot &s : entry.slots)
      if (s.out && (s.role == Slot::Param || s.role == Slot::State)) {
        Persistent &p = persistent_.at(s.name);
        std::swap(p.current, p.next);
      }
  return {};
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

Status Trainer::load(const std::map<std::string, HostTensor> &values, int64_t step) {
  forgetPending();
  std::vector<uint8_t> zeros;
  for (const auto &[name, p] : persistent_) {
    const void *from = nullptr;
    HostTensor piece;
    if (auto it = values.find(name); it != values.end()) {
      from = it->second.rawData();
      if (layouts_.count(name)) {
        piece = local(name, it->second);
        from = piece.rawData();
      }
    } else if (p.state) {
      zeros.resize(std::max(zeros.size(), p.bytes()));
      from = zeros.data();
    } else {
      continue; // a parameter @init computed in place
    }
    device_->upload(p.current, from, p.bytes());
    // The copy reads `from` (the piece) until it ran.
    if (Status st = device_->synchronize(); !st)
      return Status::failure("on " + device_->where() + ": " + st.message());
  }
  steps_ = step;
  device_->dropGraphs(); // they were captured for the old step parity's buffers
  return {};
}

Status Trainer::init() { return initFrom({}); }

Status Trainer::initFrom(const std::map<std::string, HostTensor> &values) {
  // Whole initial values, where they are not computed in place: `values`,
  // else the stored ones (ONNX initializers), each checked against its
  // @init slot. LoRA adapters (the manifest's "lora") have no stored value.
  std::map<std::string, HostTensor> whole;
  const SafetensorsFile *stored = program_->initialParameters();
  std::set<std::string> adapters;
  if (const json::Value *lora = program_->manifest().get("lora"))
    for (const json::Value &a : lora->get("adapters")->items())
      adapters.insert({a.get("a")->asString(), a.get("b")->asString()});
  bool compute = false;
  for (const Slot &s : init_->slots) {
    const HostTensor *value = nullptr;
    bool isStored = false;
    if (auto it = values.find(s.name); it != values.end()) {
      value = &it->second;
    } else if (stored) {
      if (auto it = stored->tensors.find(s.name); it != stored->tensors.end())
        value = &it->second, isStored = true;
    }
    if (!value) {
      if (stored && !adapters.count(s.name))
        return Status::failure("the stored initial parameters lack '" + s.name + "'");
      compute = true;
      continue;
    }
    if (value->elementType() != s.dtype || value->shape() != s.shape)
      return Status::failure(isStored ? "the stored initial value of '" + s.name +
                                            "' has another type or shape than the parameter"
                                      : "the value of '" + s.name + "' is " + value->typeString() +
                                            ", the model needs " +
                                            HostTensor(s.dtype, s.shape).typeString());
    whole[s.name] = *value;
  }
  if (compute) {
    // @init computes whole tensors: into the current buffers where this run
    // holds them whole, else into temporary ones, cut by load(). The values
    // above then replace what it computed for them.
    forgetPending();
    std::map<std::string, uint64_t> temporary;
    Status st;
    for (const Slot &s : init_->slots)
      if (layouts_.count(s.name) && !(temporary[s.name] = device_->allocate(s.bytes())))
        st = Status::failure("cannot allocate the whole initial value of '" + s.name + "' on " +
                             device_->where());
    if (st)
      st = run(*init_, {}, /*swap=*/false, /*staged=*/false, temporary);
    for (const Slot &s : init_->slots)
      if (auto it = temporary.find(s.name); st && it != temporary.end() && !whole.count(s.name)) {
        HostTensor &t = whole[s.name] = HostTensor(s.dtype, s.shape);
        device_->download(t.rawData(), it->second, t.byteSize());
      }
    if (Status synced = device_->synchronize(); st && !synced)
      st = Status::failure("on " + device_->where() + ": " + synced.message());
    for (auto &[name, buffer] : temporary)
      device_->release(buffer);
    if (!st)
      return st;
  }
  return load(whole, 0);
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
    return it == outputs_.end() ? 0.0 : it->second.host.getDouble(0);
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
  // Queue this step first, then read the previous one's results: an
  // asynchronous device has the next step while the host waits, logs and
  // prepares.
  int64_t previous = pendingStep_;
  if (Status st = run(*step_, inputs, /*swap=*/true, /*staged=*/true); !st)
    return st;
  pendingStep_ = ++steps_;
  if (previous)
    if (Status st = collect(previous, done); !st)
      return st;
  if (device_->asynchronous() || lateResults_)
    return {};
  return finishSteps(done);
}

Status Trainer::finishSteps(std::vector<StepResult> &done) {
  int64_t n = pendingStep_;
  pendingStep_ = 0;
  return n ? collect(n, done) : Status();
}

Status Trainer::undoLastStep() {
  if (pendingStep_ || steps_ == 0)
    return Status::failure("undoLastStep: no finished step to undo");
  // Through the host: a rare event, and the Device has no device-to-device
  // copy. The swap itself is kept, so captured graphs (one per buffer set)
  // stay paired with the step parity they were captured at.
  std::vector<uint8_t> host;
  for (const Slot &s : step_->slots)
    if (s.out && (s.role == Slot::Param || s.role == Slot::State)) {
      Persistent &p = persistent_.at(s.name);
      host.resize(p.bytes());
      device_->download(host.data(), p.next, host.size());
      device_->upload(p.current, host.data(), host.size());
    }
  return device_->synchronize();
}

void Trainer::forgetPending() {
  // Its copies into staging must be done before the slot is reused (a
  // failure shows at the next step).
  if (pendingStep_)
    (void)device_->synchronize();
  pendingStep_ = 0;
}

Status Trainer::collect(int64_t n, std::vector<StepResult> &done) {
  if (Status st = device_->waitEvent(int(n % 2)); !st)
    return Status::failure("@train_step: on " + device_->where() + ": " + st.message());
  for (const Slot &s : step_->slots)
    if (s.role == Slot::Output) {
      HostTensor &t = outputs_.at(s.name).host;
      std::memcpy(t.rawData(), staging_[n % 2] + stagingOffsets_.at(stagingKey(s)), t.byteSize());
    }
  StepResult r = resultFromOutputs();
  r.step = n;
  done.push_back(r);
  return {};
}

Status Trainer::evalLoss(const std::map<std::string, const HostTensor *> &inputs, double &loss) {
  if (Status st = run(*forward_, inputs, /*swap=*/false, /*staged=*/false); !st)
    return st;
  loss = outputs_.at("loss").host.getDouble(0);
  return {};
}

const Trainer::Persistent *Trainer::heldAs(const Slot &s) const {
  auto it = persistent_.find(s.name);
  return it != persistent_.end() && it->second.dtype == s.dtype && it->second.shape == s.shape
             ? &it->second
             : nullptr;
}

Status Trainer::issue(const EntryPoint &entry, const std::vector<void *> &buffers, int graph) {
  Device &dev = *device_;
  if (graph < 0)
    return dev.call(*program_, entry, buffers);
  Status st;
  if (!dev.hasGraph(graph)) {
    st = dev.beginCapture();
    if (st) {
      st = dev.call(*program_, entry, buffers);
      Status end = dev.endCapture(graph);
      if (st)
        st = end;
    }
  }
  if (st)
    st = dev.replay(graph);
  replays_ += st.ok();
  return st;
}

Status Trainer::callEntry(const EntryPoint &entry, const std::map<std::string, uint64_t> &inputs,
                          const std::map<std::string, uint64_t> &outputs, int graph) {
  Device &dev = *device_;
  auto fail = [&](const std::string &m) { return Status::failure("@" + entry.name + ": " + m); };
  std::vector<void *> buffers;
  for (const Slot &s : entry.slots) {
    uint64_t p = 0;
    if (s.role == Slot::Param) {
      const Persistent *held = heldAs(s);
      if (!held)
        return fail("parameter '" + s.name + "' is not held whole by this run");
      p = held->current;
    } else if (s.role == Slot::Workspace) {
      uint64_t &arena = arenas_[entry.name];
      if (!arena && !(arena = dev.allocate(s.bytes())))
        return fail("cannot allocate its arena of " + std::to_string(s.bytes()) + " bytes on " +
                    dev.where());
      p = arena;
    } else {
      const auto &named = s.out ? outputs : inputs;
      auto it = named.find(s.name);
      if (it == named.end() || !it->second)
        return fail("no buffer for " + std::string(s.out ? "output" : "input") + " '" + s.name +
                    "'");
      p = it->second;
    }
    buffers.push_back(reinterpret_cast<void *>(p));
  }
  Status st = issue(entry, buffers, graphs_ ? graph : -1);
  if (st)
    st = dev.synchronize();
  return st ? Status() : fail("on " + dev.where() + ": " + st.message());
}

int64_t Trainer::allocatedBytes() const {
  int64_t total = int64_t(stepTensor_.byteSize());
  for (const auto &[name, p] : persistent_)
    total += 2 * int64_t(p.bytes());
  for (const auto &[name, o] : outputs_)
    total += int64_t(o.host.byteSize());
  for (const EntryPoint *e : {init_, step_, forward_})
    for (const Slot &s : e->slots)
      if (s.role == Slot::Workspace)
        total += int64_t(s.bytes() + 63) / 64 * 64;
  return total;
}

int64_t Trainer::stepMemoryBytes() const {
  int64_t total = allocatedBytes();
  for (const Slot &s : stepInputs_)
    total += int64_t(s.bytes());
  return total;
}

SafetensorsFile Trainer::snapshot(bool withState, const std::map<std::string, std::string> &extra,
                                  bool withWhole) const {
  SafetensorsFile f;
  auto add = [&](const std::string &n) {
    auto layout = layouts_.find(n);
    if (layout == layouts_.end() && !withWhole)
      return;
    const Persistent &p = persistent_.at(n);
    HostTensor &t = f.tensors[n] = HostTensor(p.dtype, p.shape);
    device_->download(t.rawData(), p.current, p.bytes());
    if (layout == layouts_.end())
      return;
    const ShardSpec &s = layout->second;
    f.metadata[shardMetadataKey(n)] =
        shardMetadataValue(s, pieceIndex(s), s.within ? pieceIndex(*s.within) : 0);
  };
  for (const std::string &n : paramNames_)
    add(n);
  if (withState)
    for (const std::string &n : stateNames_)
      add(n);
  (void)device_->synchronize(); // the copies ran (a failure shows at the next step)
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
    const Persistent &mine = persistent_.at(n);
    auto layout = layouts_.find(n);
    std::vector<int64_t> shape =
        layout == layouts_.end() ? mine.shape : layout->second.wholeShape();
    if (t->second.elementType() != mine.dtype || t->second.shape() != shape)
      return Status::failure("checkpoint tensor '" + n + "' is " + t->second.typeString() +
                             ", the model needs " + HostTensor(mine.dtype, shape).typeString());
  }
  return load(file.tensors, step);
}

} // namespace lcc
