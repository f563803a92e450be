//===- CpuProgram.cpp - load and call the CPU code of a train.bin ---------===//
#include "runtime/cpu/CpuProgram.h"
#include "runtime/support/Entries.h"
#include "runtime/support/Format.h"
#include "runtime/support/Sharding.h"

#include <algorithm>
#include <cstdlib>

#include <cerrno>
#include <cstdio>
#include <climits>
#include <cstdint>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace lcc {

const char *slotRoleName(Slot::Role role) {
  switch (role) {
  case Slot::Param: return "param";
  case Slot::State: return "state";
  case Slot::Step: return "step";
  case Slot::Input: return "input";
  case Slot::Output: return "output";
  case Slot::Workspace: return "workspace";
  }
  return "?";
}

std::vector<std::string> hostCpuTargets() {
  std::vector<std::string> out;
#if defined(__x86_64__)
  __builtin_cpu_init();
  // x86-64-v4 as LLVM defines it: v3 plus AVX-512 F, BW, CD, DQ, VL (the
  // checks include the OS's support for the registers).
  bool v4 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
            __builtin_cpu_supports("avx512vl");
  // x86-64-v3 as LLVM defines it: AVX2, FMA, BMI1/2, F16C, LZCNT, MOVBE.
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") &&
      __builtin_cpu_supports("f16c")) {
    if (v4)
      out.push_back("cpu-x86_64-v4");
    out.push_back("cpu-x86_64-v3");
  }
  out.push_back("cpu-x86_64");
#elif defined(__aarch64__)
  out.push_back("cpu-aarch64");
#endif
  return out;
}

namespace {

/// A slot's bytes (0 when it says no dtype or shape); false for a negative
/// dimension or a size that does not fit in int64 (a hostile manifest's).
bool slotBytes(const json::Value &slot, int64_t &n) {
  n = 0;
  const json::Value *dtype = slot.get("dtype"), *shape = slot.get("shape");
  if (!dtype || !dtype->isString() || !shape || !shape->isArray())
    return true;
  const std::string &d = dtype->asString();
  n = d == "f64" || d == "i64" ? 8 : d == "i8" || d == "i1" ? 1 : 4;
  for (const json::Value &dim : shape->items())
    if ((dim.isInt() && dim.asInt() < 0) ||
        __builtin_mul_overflow(n, dim.isInt() ? dim.asInt() : 0, &n))
      return false;
  return true;
}

bool planOf(const json::Value &manifest, MemoryPlanLines &p) {
  const json::Value *params = manifest.get("params"), *state = manifest.get("state"),
                    *functions = manifest.get("functions");
  if (!params || !state || !functions || !params->isArray() || !state->isArray() ||
      !functions->isObject())
    return false;
  // Sums of a manifest's sizes: none may overflow (the plan is then not given).
  bool fits = true;
  auto add = [&](int64_t &sum, const json::Value &slot) {
    int64_t n = 0;
    fits = fits && slotBytes(slot, n) && !__builtin_add_overflow(sum, n, &sum);
  };
  for (const json::Value &s : params->items()) {
    const json::Value *f = s.get("frozen");
    add(f && f->isBool() && f->asBool() ? p.frozen : p.params, s);
  }
  for (const json::Value &s : state->items())
    add(p.state, s);
  // Inputs and outputs of the step (the batch, loss, ...): what the runtime
  // allocates besides parameters, state and arenas.
  for (const auto &[name, slots] : functions->members()) {
    // The text-generation entries' buffers exist only in lcc-run --generate.
    if (isGenerationEntry(name))
      continue;
    for (const json::Value &s : slots.items()) {
      const json::Value *role = s.get("role");
      if (!role || !role->isString())
        continue;
      if (role->asString() == "workspace") {
        int64_t bytes = 0;
        add(bytes, s);
        p.arenas.push_back({name, bytes});
      } else if (name == "train_step" && role->asString() != "param" &&
                 role->asString() != "state") {
        add(p.io, s);
      }
    }
  }
  // Parameters and state are double-buffered (the step reads one set and
  // writes the other); frozen parameters are never written, but the runtime
  // keeps both sets uniform.
  int64_t held = 0;
  fits = fits && !__builtin_add_overflow(p.params, p.frozen, &held) &&
         !__builtin_add_overflow(held, p.state, &held) &&
         !__builtin_mul_overflow(held, int64_t(2), &p.total) &&
         !__builtin_add_overflow(p.total, p.io, &p.total);
  for (auto &[name, bytes] : p.arenas)
    fits = fits && bytes <= INT64_MAX - 63 &&
           !__builtin_add_overflow(p.total, (bytes + 63) / 64 * 64, &p.total);
  return fits;
}

bool parseDtype(const std::string &s, ElementType &out) {
  static const std::pair<const char *, ElementType> names[] = {
      {"f32", ElementType::F32}, {"f64", ElementType::F64}, {"i32", ElementType::I32},
      {"i64", ElementType::I64}, {"i1", ElementType::I1}};
  for (auto &[n, t] : names)
    if (s == n) {
      out = t;
      return true;
    }
  return false;
}

/// A slot's "shard" (lcc.shard): how a buffer of `piece`'s shape holds part
/// of a tensor of `shape`; a "within" inside it says how that tensor was cut
/// from the whole one first, and must produce exactly it.
static Status parseShard(const json::Value &v, const std::vector<int64_t> &piece, ShardSpec &spec,
                         const std::string &name) {
  const json::Value *full = nullptr;
  if (Status st = json::getString(v, "group", spec.group); !st)
    return st;
  if (Status st = json::getInt(v, "parts", spec.parts); !st)
    return st;
  if (Status st = json::getArray(v, "shape", full); !st)
    return st;
  for (const json::Value &d : full->items()) {
    if (!d.isInt() || d.asInt() < 0 || d.asInt() > (int64_t(1) << 40))
      return Status::failure("bad dimension in the shard shape of '" + name + "'");
    spec.shape.push_back(d.asInt());
  }
  if (const json::Value *dim = v.get("dim"))
    spec.dim = dim->isInt() ? dim->asInt() : -2;
  if (const json::Value *blocks = v.get("blocks"))
    spec.blocks = blocks->isInt() ? blocks->asInt() : 0;
  if (!validShardSpec(spec) || shardShape(spec) != piece)
    return Status::failure("the shard of '" + name + "' does not match its shape");
  if (const json::Value *within = v.get("within")) {
    auto inner = std::make_shared<ShardSpec>();
    if (Status st = parseShard(*within, spec.shape, *inner, name); !st)
      return st;
    if (inner->within || inner->group == spec.group)
      return Status::failure("the shard of '" + name + "' nests more than two groups");
    spec.within = std::move(inner);
  }
  return {};
}

Status parseSlot(const json::Value &v, Slot &slot) {
  std::string role, dtype;
  const json::Value *shape = nullptr;
  if (!v.isObject())
    return Status::failure("a slot must be an object");
  for (Status st : {json::getString(v, "role", role), json::getString(v, "name", slot.name),
                    json::getBool(v, "out", slot.out), json::getString(v, "dtype", dtype),
                    json::getArray(v, "shape", shape)})
    if (!st)
      return st; // the first missing or mistyped field
  static const std::pair<const char *, Slot::Role> roles[] = {
      {"param", Slot::Param}, {"state", Slot::State}, {"step", Slot::Step},
      {"input", Slot::Input}, {"output", Slot::Output}, {"workspace", Slot::Workspace}};
  bool known = false;
  for (auto &[n, r] : roles)
    if (role == n) {
      slot.role = r;
      known = true;
    }
  if (!known)
    return Status::failure("unknown slot role '" + role + "'");
  // A workspace is raw bytes (the arena of lcc-plan-memory).
  if (slot.role == Slot::Workspace ? dtype != "i8" : !parseDtype(dtype, slot.dtype))
    return Status::failure("unknown dtype '" + dtype + "' for a " + role + " slot");
  for (const json::Value &d : shape->items()) {
    if (!d.isInt() || d.asInt() < 0 || d.asInt() > (int64_t(1) << 40))
      return Status::failure("bad dimension in the shape of '" + slot.name + "'");
    slot.shape.push_back(d.asInt());
  }
  if (const json::Value *shard = v.get("shard"))
    return parseShard(*shard, slot.shape, slot.shard, slot.name);
  return {};
}

/// dlopen from memory: an anonymous memfd (no file left behind, even on a
/// crash), or a temporary file where memfd_create is unavailable. `keepFd`:
/// the memfd, which the caller closes after dlclose (its path names the
/// library for dlopen).
Status openSharedObject(const uint8_t *data, size_t size, int &keepFd, void *&handle) {
  int fd = -1;
  std::string path;
#ifdef MFD_CLOEXEC
  fd = memfd_create("lcc-train-bin-code", MFD_CLOEXEC);
#endif
  bool temp = false;
  // For profilers (perf cannot name the kernels of a deleted memfd): the code
  // is written to $LCC_CODE_DIR/lcc-train-bin-code.so, kept, and loaded from there.
  if (const char *keep = getenv("LCC_CODE_DIR"); keep && *keep) {
    if (fd >= 0)
      close(fd);
    path = std::string(keep) + "/lcc-train-bin-code.so";
    fd = open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0)
      return Status::failure("cannot create " + path + ": " + strerror(errno));
  } else if (fd < 0) {
    const char *dir = getenv("TMPDIR");
    path = std::string(dir && *dir ? dir : "/tmp") + "/lcc-code-XXXXXX";
    std::vector<char> name(path.begin(), path.end());
    name.push_back(0);
    fd = mkstemp(name.data());
    if (fd < 0)
      return Status::failure("cannot create a file for the code: " + std::string(strerror(errno)));
    path = name.data();
    temp = true;
  } else {
    path = "/proc/self/fd/" + std::to_string(fd);
  }
  size_t done = 0;
  while (done < size) {
    ssize_t n = write(fd, data + done, size - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      Status st = Status::failure("cannot write the code: " + std::string(strerror(errno)));
      close(fd);
      if (temp)
        unlink(path.c_str());
      return st;
    }
    done += size_t(n);
  }
  handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  Status st;
  if (!handle)
    st = Status::failure(std::string("cannot load the compiled code: ") + dlerror());
  bool memfd = !temp && path.rfind("/proc/self/fd/", 0) == 0;
  if (handle && memfd)
    keepFd = fd;
  else
    close(fd); // the mapping keeps the code alive
  if (temp)
    unlink(path.c_str());
  return st;
}

} // namespace

std::string memoryPlanReport(const json::Value &manifest) {
  MemoryPlanLines p;
  if (!planOf(manifest, p))
    return "";
  char line[160];
  std::string out = "memory plan (per rank):\n";
  auto row = [&](const char *what, int64_t bytes, const char *note) {
    std::snprintf(line, sizeof line, "  %-34s %16s B  %s\n", what, withCommas(bytes).c_str(), note);
    out += line;
  };
  row("parameters (trainable)", 2 * p.params, "x2, double-buffered");
  if (p.frozen)
    row("parameters (frozen)", 2 * p.frozen, "x2");
  row("optimizer state", 2 * p.state, "x2, double-buffered");
  row("gradients", 0, "in the train_step arena (live only within the step)");
  for (auto &[name, bytes] : p.arenas)
    row(("arena of @" + name).c_str(), (bytes + 63) / 64 * 64,
        name == "train_step" ? "activations, gradients, temporaries" : "temporaries");
  row("inputs and outputs", p.io, "batch, loss, grad norm, lr, step");
  row("total", p.total, "");
  return out;
}

bool memoryPlanLines(const json::Value &manifest, MemoryPlanLines &lines) {
  lines = MemoryPlanLines();
  return planOf(manifest, lines);
}

int64_t memoryPlanBytes(const json::Value &manifest) {
  MemoryPlanLines p;
  return planOf(manifest, p) ? p.total : 0;
}

Status Program::load(const std::string &path, Program &out, int64_t world, int64_t stage) {
  TrainBin bin;
  Status st = TrainBin::open(path, bin);
  if (!st)
    return Status::failure(st.message());
  return load(bin, path, out, world, stage);
}

std::vector<int64_t> compiledWorlds(const TrainBin &bin) {
  std::vector<int64_t> worlds;
  for (const TrainBinSection &s : bin.sections())
    if (s.name.rfind("manifest.w", 0) == 0)
      worlds.push_back(std::strtoll(s.name.c_str() + 10, nullptr, 10));
  std::sort(worlds.begin(), worlds.end());
  worlds.erase(std::unique(worlds.begin(), worlds.end()), worlds.end());
  return worlds;
}

int64_t compiledStages(const TrainBin &bin, int64_t world) {
  int64_t stages = 0;
  std::string prefix = "manifest.w" + std::to_string(world) + ".s";
  for (const TrainBinSection &s : bin.sections())
    if (s.name.rfind(prefix, 0) == 0)
      ++stages;
  return stages;
}

Status Program::loadManifest(const TrainBin &bin, const std::string &what, Program &out,
                             int64_t world, int64_t stage) {
  Program p;
  std::string suffix;
  if (Status st = readManifest(bin, what, p, world, stage, suffix); !st)
    return st;
  out = std::move(p);
  return {};
}

Status Program::readManifest(const TrainBin &bin, const std::string &what, Program &p,
                             int64_t world, int64_t stage, std::string &suffix) {
  auto fail = [&](const std::string &msg) { return Status::failure(what + ": " + msg); };
  // A train.bin compiled for several world sizes has one manifest and code
  // per size (manifest.wN, code.wN); otherwise one of each.
  suffix.clear();
  std::vector<int64_t> worlds = compiledWorlds(bin);
  if (!worlds.empty()) {
    if (std::find(worlds.begin(), worlds.end(), world) == worlds.end()) {
      std::string list;
      for (int64_t w : worlds)
        list += (list.empty() ? "" : ", ") + std::to_string(w);
      return fail("compiled for " + list + " ranks, but the job has " + std::to_string(world) +
                  " (lcc-run -n / WORLD_SIZE); recompile with lcc --world=" +
                  std::to_string(world));
    }
    suffix = ".w" + std::to_string(world);
  }
  if (int64_t stages = compiledStages(bin, world); stages > 0) {
    if (stage < 0 || stage >= stages)
      return fail("compiled as " + std::to_string(stages) + " pipeline stages; stage " +
                  std::to_string(stage) + " is not one of them");
    suffix += ".s" + std::to_string(stage);
  }
  TrainBinBytes manifest = bin.find("manifest" + suffix, "any", -1);
  if (!manifest.found())
    return fail("no manifest section, not a train.bin written by lcc");
  if (Status st = json::parse(
          std::string_view(reinterpret_cast<const char *>(manifest.data), manifest.size),
          p.manifest_);
      !st)
    return fail("manifest: " + st.message());
  // The container has its own version; this one covers what lcc writes into
  // the manifest (docs/train-bin.md). Bumped with compiler/package.
  constexpr int64_t kManifestVersion = 1;
  std::string format;
  int64_t version = 0;
  if (!json::getString(p.manifest_, "format", format) || format != "lcc-train-bin")
    return fail("manifest: not an lcc training program (format '" + format + "')");
  if (Status st = json::getInt(p.manifest_, "version", version); !st)
    return fail("manifest: " + st.message());
  if (version != kManifestVersion)
    return fail("manifest version " + std::to_string(version) + ", this lcc-run reads version " +
                std::to_string(kManifestVersion) + "; recompile the model with this lcc");
  const json::Value *functions = nullptr;
  if (Status st = json::getObject(p.manifest_, "functions", functions); !st)
    return fail("manifest: " + st.message());
  for (const auto &[name, slots] : functions->members()) {
    EntryPoint e;
    e.name = name;
    if (!slots.isArray())
      return fail("manifest: the slots of '" + name + "' must be an array");
    for (const json::Value &s : slots.items()) {
      Slot slot;
      if (Status st = parseSlot(s, slot); !st)
        return fail("manifest: function '" + name + "': " + st.message());
      e.slots.push_back(std::move(slot));
    }
    p.entries_[name] = std::move(e);
  }

  TrainBinBytes params = bin.find("params", "any", -1);
  if (params.found()) {
    Status st = parseSafetensors(params.data, params.size, p.initial_);
    if (!st)
      return fail("section params: " + st.message());
    p.hasInitial_ = true;
  }

  // A CUDA train.bin's kernels: their names, the cubin and PTX sections.
  const json::Value *target = p.manifest_.get("target");
  bool cuda = target && target->isString() && target->asString() == "cuda";
  if (cuda) {
    const json::Value *c = p.manifest_.get("cuda");
    const json::Value *kernels = c ? c->get("kernels") : nullptr;
    const json::Value *arch = c ? c->get("arch") : nullptr;
    if (!kernels || !kernels->isArray() || kernels->items().empty() || !arch ||
        !arch->isString())
      return fail("manifest: a cuda target without its kernel list (cuda.kernels, cuda.arch)");
    for (const json::Value &k : kernels->items()) {
      if (!k.isString())
        return fail("manifest: cuda.kernels must hold names");
      p.cudaKernels_.push_back(k.asString());
    }
    p.cudaArch_ = arch->asString();
    TrainBinBytes cubin = bin.find("cuda.cubin" + suffix, "cuda-" + p.cudaArch_, -1);
    TrainBinBytes ptx = bin.find("cuda.ptx" + suffix, "cuda-ptx", -1);
    // (An emulated target's kernels are in its host code.)
    if (!ptx.found() && p.cudaArch_ != "emulated")
      return fail("no section cuda.ptx" + suffix + " with the kernels");
    if (cubin.found())
      p.cudaCubin_.assign(cubin.data, cubin.data + cubin.size);
    if (ptx.found())
      p.cudaPtx_.assign(reinterpret_cast<const char *>(ptx.data), ptx.size);
  }
  return {};
}

Status Program::load(const TrainBin &bin, const std::string &what, Program &out, int64_t world,
                     int64_t stage) {
  auto fail = [&](const std::string &msg) { return Status::failure(what + ": " + msg); };
  Program p;
  std::string suffix;
  if (Status st = readManifest(bin, what, p, world, stage, suffix); !st)
    return st;
  // A CUDA train.bin's code is the host side of its kernels (section
  // cuda.host), compiled for a CPU like the CPU target's.
  std::string codeName = (p.isCuda() ? "cuda.host" : "code") + suffix;

  // The best code this CPU can run.
  std::vector<std::string> mine = hostCpuTargets();
  TrainBinBytes code;
  for (const std::string &t : mine) {
    code = bin.find(codeName, t, -1);
    if (code.found()) {
      p.target_ = t;
      break;
    }
  }
  if (!code.found()) {
    std::string have, can;
    for (const TrainBinSection &s : bin.sections())
      if (s.name == codeName)
        have += (have.empty() ? "" : ", ") + s.target;
    for (const std::string &t : mine)
      can += (can.empty() ? "" : ", ") + t;
    return fail("no code this CPU can run: the file has code for " +
                (have.empty() ? std::string("no CPU target") : have) + ", this CPU runs " + can +
                "; recompile the model for it (lcc --cpu=...)");
  }
  if (Status st = openSharedObject(code.data, code.size, p.codeFd_, p.handle_); !st)
    return fail(st.message());
  for (auto &[name, e] : p.entries_) {
    e.fn = reinterpret_cast<void (*)(void **)>(dlsym(p.handle_, ("lcc_" + name).c_str()));
    if (!e.fn)
      return fail("the code has no function lcc_" + name + " that the manifest lists");
  }
  out = std::move(p);
  return {};
}

const EntryPoint *Program::entry(const std::string &name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second;
}

void Program::call(const EntryPoint &entry, const std::vector<void *> &buffers) const {
  entry.fn(const_cast<void **>(buffers.data()));
}

Program::Program(Program &&other) noexcept { *this = std::move(other); }

/// dlclose, then the memfd the code came from.
static void unload(void *&handle, int &fd) {
  if (handle)
    dlclose(handle);
  if (fd >= 0)
    close(fd);
  handle = nullptr;
  fd = -1;
}

Program &Program::operator=(Program &&other) noexcept {
  if (this != &other) {
    unload(handle_, codeFd_);
    manifest_ = std::move(other.manifest_);
    entries_ = std::move(other.entries_);
    target_ = std::move(other.target_);
    cudaArch_ = std::move(other.cudaArch_);
    cudaKernels_ = std::move(other.cudaKernels_);
    cudaCubin_ = std::move(other.cudaCubin_);
    cudaPtx_ = std::move(other.cudaPtx_);
    initial_ = std::move(other.initial_);
    hasInitial_ = other.hasInitial_;
    other.hasInitial_ = false;
    handle_ = other.handle_;
    other.handle_ = nullptr;
    codeFd_ = other.codeFd_;
    other.codeFd_ = -1;
  }
  return *this;
}

Program::~Program() { unload(handle_, codeFd_); }

void *Program::codeSymbol(const char *name) const {
  return handle_ ? dlsym(handle_, name) : nullptr;
}

} // namespace lcc

//===----------------------------------------------------------------------===//
// Helpers the compiled code calls (resolved when the code is dlopened; every
// executable linking LccRuntime exports them, see runtime/CMakeLists.txt).
//===----------------------------------------------------------------------===//

namespace {
/// MLIR's unranked memref as the lowered code passes it.
struct UnrankedMemRef {
  int64_t rank;
  void *descriptor; // {T *allocated, T *aligned, int64 offset, int64 sizes[rank], int64 strides[rank]}
};
} // namespace

/// memref.copy between strided (non-contiguous) views: a plain element-wise
/// copy in row-major index order, as MLIR's CRunnerUtils defines it.
extern "C" __attribute__((visibility("default"))) void memrefCopy(int64_t elemSize,
                                                                 UnrankedMemRef *src,
                                                                 UnrankedMemRef *dst) {
  int64_t rank = src->rank;
  auto *s = static_cast<int64_t *>(src->descriptor);
  auto *d = static_cast<int64_t *>(dst->descriptor);
  auto *sBase = reinterpret_cast<char *>(s[1]) + s[2] * elemSize;
  auto *dBase = reinterpret_cast<char *>(d[1]) + d[2] * elemSize;
  const int64_t *sizes = s + 3, *sStrides = s + 3 + rank, *dStrides = d + 3 + rank;
  int64_t total = 1;
  for (int64_t i = 0; i < rank; ++i)
    total *= sizes[i];
  if (total == 0)
    return;
  std::vector<int64_t> index(size_t(rank), 0);
  int64_t sOff = 0, dOff = 0;
  for (int64_t n = 0; n < total; ++n) {
    std::memcpy(dBase + dOff * elemSize, sBase + sOff * elemSize, size_t(elemSize));
    for (int64_t axis = rank - 1; axis >= 0; --axis) {
      sOff += sStrides[axis];
      dOff += dStrides[axis];
      if (++index[size_t(axis)] < sizes[axis])
        break;
      sOff -= sStrides[axis] * sizes[axis];
      dOff -= dStrides[axis] * sizes[axis];
      index[size_t(axis)] = 0;
    }
  }
}
