//===- LaunchSequenceTest.cpp - a CUDA train.bin's host side, no GPU ------===//
//
// The host code of a --target=cuda train.bin only computes addresses and
// calls the runtime (runtime/cuda/CudaLaunch.h), so it runs here under a
// recording backend: the calls are exactly what the GPU backend launches or
// captures into its CUDA graph. Checked against oracles independent of the
// compiler:
//  - the PTX in the file: each launch passes as many pointers as its
//    kernel's .entry declares parameters;
//  - the manifest's buffer sizes: every pointer a launch passes, and every
//    element a GEMM's sizes and strides reach, lies inside one buffer of the
//    call;
//  - what a training step must do: every parameter and optimizer-state
//    buffer is written on the device by @train_step (and every parameter by
//    @init), the loss is produced there, and two steps issue the same
//    sequence (one captured graph can replay every step);
//  - sharded steps (ZeRO-2, tensor parallel; 2 ranks): every collective
//    inside its buffers, started ones waited for before their output is
//    used, and the ZeRO gradients and parameters covered exactly once.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuKernels.h"
#include "runtime/cpu/CpuProgram.h"
#include "runtime/support/Json.h"
#include "runtime/cuda/CudaLaunch.h"
#include "runtime/cuda/GemmLayout.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <algorithm>
#include <map>
#include <random>
#include <regex>
#include <memory>
#include <set>
#include <tuple>

using namespace lcc;

namespace {

const Program &loadProgram(const char *path) {
  auto *p = new Program();
  Status st = Program::load(path, *p);
  EXPECT_TRUE(st) << st.message();
  return *p;
}

const Program &program() {
  static const Program &p = loadProgram(LCC_CUDA_TEST_BIN);
  return p;
}

/// The same model in bf16 with --attention=fused.
const Program &fusedProgram() {
  static const Program &p = loadProgram(LCC_CUDA_FUSED_TEST_BIN);
  return p;
}

/// Parameters of each kernel entry in the PTX, by name.
std::map<std::string, int> ptxParams(const std::string &ptx) {
  std::map<std::string, int> out;
  std::regex entry(R"(\.visible \.entry (\w+)\(([^)]*)\))");
  for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), entry); it != std::sregex_iterator();
       ++it) {
    std::string params = (*it)[2];
    int n = 0;
    for (size_t at = params.find(".param"); at != std::string::npos;
         at = params.find(".param", at + 1))
      ++n;
    out[(*it)[1]] = n;
  }
  return out;
}

/// Host memory standing in for the device buffers of one call.
struct Buffers {
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<void *> pointers;
  const EntryPoint *entry = nullptr;

  explicit Buffers(const EntryPoint &e) : entry(&e) {
    for (const Slot &s : e.slots) {
      int64_t n = 1;
      for (int64_t d : s.shape)
        n *= d;
      size_t size = s.role == Slot::Workspace ? size_t(n) : size_t(n) * elementSize(s.dtype);
      bytes.emplace_back(std::max<size_t>(size, 1), 0);
      pointers.push_back(bytes.back().data());
    }
  }
  /// The slot whose buffer holds [p, p + size), or -1.
  int slotOf(uint64_t p, uint64_t size = 1) const {
    for (size_t i = 0; i < bytes.size(); ++i) {
      auto base = reinterpret_cast<uint64_t>(bytes[i].data());
      if (p >= base && p + size <= base + bytes[i].size())
        return int(i);
    }
    return -1;
  }
};

std::vector<RecordingBackend::Call> record(Buffers &buffers, const Program &from = program()) {
  RecordingBackend recorder;
  setCudaBackend(&recorder);
  from.call(*buffers.entry, buffers.pointers);
  setCudaBackend(nullptr);
  return recorder.calls;
}

/// Slots a recorded sequence passes to kernels (read or written).
std::set<int> slotsTouched(const std::vector<RecordingBackend::Call> &calls, const Buffers &b) {
  std::set<int> out;
  for (const auto &c : calls) {
    if (c.isGemm) {
      for (int operand = 0; operand < 3; ++operand)
        out.insert(b.slotOf(c.gemm.operand(operand).base));
      continue;
    }
    for (uint64_t p : c.launch.args)
      out.insert(b.slotOf(p));
  }
  return out;
}

TEST(CudaLaunchSequence, ProgramIsCuda) {
  const Program &p = program();
  ASSERT_TRUE(p.isCuda());
  EXPECT_EQ(p.cudaArch(), "sm_90");
  EXPECT_FALSE(p.cudaCubin().empty());
  std::map<std::string, int> params = ptxParams(p.cudaPtx());
  EXPECT_EQ(params.size(), p.cudaKernels().size());
  for (const std::string &k : p.cudaKernels())
    EXPECT_TRUE(params.count(k)) << k << " is listed but not in the PTX";
}

TEST(CudaLaunchSequence, LaunchesMatchTheKernelsAndStayInsideTheBuffers) {
  const Program &p = program();
  std::map<std::string, int> params = ptxParams(p.cudaPtx());
  std::set<int64_t> launched;
  // Every entry of the manifest, the text-generation ones too
  // (lcc-build-generation: @prefill, @prefill_16, @decode_step): their
  // kernels are in the same file.
  std::vector<std::string> functions;
  for (const auto &[name, slots] : p.manifest().get("functions")->members())
    functions.push_back(name);
  for (const char *expected :
       {"init", "forward", "train_step", "prefill", "prefill_16", "decode_step"})
    EXPECT_TRUE(std::count(functions.begin(), functions.end(), expected)) << expected;
  for (const std::string &function : functions) {
    SCOPED_TRACE(function);
    const EntryPoint *e = p.entry(function);
    ASSERT_NE(e, nullptr);
    Buffers b(*e);
    std::vector<RecordingBackend::Call> calls = record(b);
    ASSERT_FALSE(calls.empty());
    for (const auto &c : calls) {
      if (c.isGemm)
        continue;
      const auto &l = c.launch;
      ASSERT_GE(l.kernel, 0);
      ASSERT_LT(l.kernel, int64_t(p.cudaKernels().size()));
      const std::string &name = p.cudaKernels()[l.kernel];
      launched.insert(l.kernel);
      EXPECT_GE(l.grid, 1) << name;
      EXPECT_GE(l.block, 1) << name;
      EXPECT_LE(l.block, 1024) << name;
      EXPECT_EQ(int(l.args.size()), params[name]) << name << ": pointers vs PTX parameters";
      for (uint64_t ptr : l.args)
        EXPECT_GE(b.slotOf(ptr), 0) << name << " gets a pointer outside every buffer";
    }
  }
  // No kernel in the file is dead.
  EXPECT_EQ(launched.size(), p.cudaKernels().size());
}

/// The bytes a GEMM's operand (0 A, 1 B, 2 C) reaches: from its first
/// element to its last, by the sizes and strides of the call.
std::pair<uint64_t, uint64_t> gemmExtent(const GemmCall &call, int operand) {
  int64_t rows[3] = {call.m, call.k, call.m}, cols[3] = {call.k, call.n, call.n};
  const GemmOperand &o = call.operand(operand);
  int64_t span = 0;
  for (int d = 0; d < 3; ++d)
    span += (call.batch[size_t(d)] - 1) * o.batchStride[size_t(d)];
  span += (rows[operand] - 1) * o.rowStride + (cols[operand] - 1) * o.colStride;
  size_t element = call.elementSize(operand);
  return {o.base + uint64_t(o.offset) * element, uint64_t(span + 1) * element};
}

TEST(CudaLaunchSequence, GemmsReachOnlyTheirBuffers) {
  const Program &p = program();
  const EntryPoint *e = p.entry("train_step");
  ASSERT_NE(e, nullptr);
  Buffers b(*e);
  int gemms = 0;
  for (const auto &c : record(b)) {
    if (!c.isGemm)
      continue;
    ++gemms;
    for (int operand = 0; operand < 3; ++operand) {
      auto [first, bytes] = gemmExtent(c.gemm, operand);
      EXPECT_GE(b.slotOf(first, bytes), 0)
          << "GEMM #" << gemms << " operand " << operand << " reaches outside its buffer";
    }
  }
  EXPECT_GT(gemms, 0);
}

TEST(CudaLaunchSequence, StepUpdatesEverythingOnTheDeviceTheSameWayEachTime) {
  const Program &p = program();
  const EntryPoint *e = p.entry("train_step");
  ASSERT_NE(e, nullptr);
  Buffers b(*e);
  std::vector<RecordingBackend::Call> first = record(b);
  std::set<int> touched = slotsTouched(first, b);
  for (size_t i = 0; i < e->slots.size(); ++i) {
    const Slot &s = e->slots[i];
    bool mustWrite = s.out && (s.role == Slot::Param || s.role == Slot::State ||
                               (s.role == Slot::Output && s.name == "loss"));
    if (mustWrite)
      EXPECT_TRUE(touched.count(int(i)))
          << slotRoleName(s.role) << " " << s.name << " is never passed to a kernel or GEMM";
  }
  // A CUDA graph captured from one step replays the next: same calls, same
  // addresses.
  std::vector<RecordingBackend::Call> second = record(b);
  ASSERT_EQ(first.size(), second.size());
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i].isGemm, second[i].isGemm);
    EXPECT_EQ(first[i].gemm.abi(), second[i].gemm.abi());
    EXPECT_EQ(first[i].launch.kernel, second[i].launch.kernel);
    EXPECT_EQ(first[i].launch.args, second[i].launch.args);
  }

  const EntryPoint *init = p.entry("init");
  ASSERT_NE(init, nullptr);
  Buffers ib(*init);
  std::set<int> initialized = slotsTouched(record(ib), ib);
  for (size_t i = 0; i < init->slots.size(); ++i)
    EXPECT_TRUE(initialized.count(int(i))) << init->slots[i].name << " is not initialized";
}

/// What cuBLASLt computes for `plan` (column-major D = beta D + op(X) op(Y)
/// per batch and call), written from its documented semantics, in double.
void emulateCuBlasLt(const GemmCall &call, const LtGemm &g) {
  for (int64_t c = 0; c < ltCalls(call, g); ++c) {
    auto *X = reinterpret_cast<const float *>(ltAddress(call, g, 0, c));
    auto *Y = reinterpret_cast<const float *>(ltAddress(call, g, 1, c));
    auto *D = reinterpret_cast<float *>(ltAddress(call, g, 2, c));
    for (int32_t b = 0; b < g.batch; ++b) {
      const float *x = X + b * g.strideX, *y = Y + b * g.strideY;
      float *d = D + b * g.strideC;
      for (int64_t i = 0; i < g.m; ++i)
        for (int64_t j = 0; j < g.n; ++j) {
          double sum = 0;
          for (int64_t k = 0; k < g.k; ++k) {
            double xv = g.x.transpose ? x[k + i * g.x.ld] : x[i + k * g.x.ld];
            double yv = g.y.transpose ? y[j + k * g.y.ld] : y[k + j * g.y.ld];
            sum += xv * yv;
          }
          float &out = d[i + j * g.ldc];
          out = call.accumulate ? out + float(sum) : float(sum);
        }
    }
  }
}

// The GEMM calls of a step, mapped to cuBLASLt (GemmLayout.h) and computed
// as cuBLASLt would, give what the CPU's lcc_sgemm gives on the same
// buffers: transposes, leading dimensions, batch folding and C^T = B^T A^T.
TEST(CudaLaunchSequence, GemmsMapToCuBlasLtExactly) {
  const EntryPoint *e = program().entry("train_step");
  ASSERT_NE(e, nullptr);
  Buffers b(*e);
  std::vector<RecordingBackend::Call> calls = record(b);
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (auto &buffer : b.bytes)
    for (size_t i = 0; i + 4 <= buffer.size(); i += 4) {
      float v = uniform(rng);
      std::memcpy(buffer.data() + i, &v, 4);
    }
  int checked = 0, swapped = 0, batched = 0;
  for (const auto &c : calls) {
    if (!c.isGemm)
      continue;
    ASSERT_FALSE(c.gemm.f64);
    LtGemm g = planLtGemm(c.gemm);
    ASSERT_EQ(g.error, "") << "GEMM #" << checked;
    std::vector<std::vector<uint8_t>> before = b.bytes;
    std::apply(lcc_sgemm, c.gemm.abi());
    std::vector<std::vector<uint8_t>> reference = b.bytes;
    for (size_t i = 0; i < b.bytes.size(); ++i)
      std::memcpy(b.bytes[i].data(), before[i].data(), before[i].size());
    emulateCuBlasLt(c.gemm, g);
    size_t changed = 0;
    for (size_t i = 0; i < b.bytes.size(); ++i)
      for (size_t j = 0; j + 4 <= b.bytes[i].size(); j += 4) {
        float want, got, was;
        std::memcpy(&want, reference[i].data() + j, 4);
        std::memcpy(&got, b.bytes[i].data() + j, 4);
        std::memcpy(&was, before[i].data() + j, 4);
        changed += want != was;
        ASSERT_NEAR(got, want, 1e-4 * (1 + std::fabs(want)))
            << "GEMM #" << checked << " buffer " << e->slots[i].name << " element " << j / 4;
      }
    EXPECT_GT(changed, 0u) << "GEMM #" << checked << " wrote nothing";
    ++checked;
    swapped += g.swapped;
    batched += g.batch > 1;
  }
  EXPECT_GT(checked, 0);
  EXPECT_GT(swapped, 0); // row-major outputs: C^T = B^T A^T
  EXPECT_GT(batched, 0); // attention's per-head GEMMs
}

// Horizontal fusion and chains (lcc-gpu-kernels, GpuMultiTensor.h): the
// optimizer's update, which writes every new parameter and both moments of
// each, is one launch for all of them (AdamW as one multi-tensor kernel):
// the new moments, written by the update and read by the parameter's,
// appear in exactly one launch, which also takes every new parameter.
TEST(CudaLaunchSequence, OptimizerWritesEveryParameterInOneLaunch) {
  const EntryPoint *e = program().entry("train_step");
  ASSERT_NE(e, nullptr);
  Buffers b(*e);
  std::vector<RecordingBackend::Call> calls = record(b);
  std::set<int> outParams, moments;
  for (size_t i = 0; i < e->slots.size(); ++i) {
    const Slot &s = e->slots[i];
    if ((s.role == Slot::Param || s.role == Slot::State) && s.out)
      outParams.insert(int(i));
    if (s.role == Slot::State && s.out)
      moments.insert(int(i));
  }
  ASSERT_GT(outParams.size(), 8u);
  ASSERT_GT(moments.size(), 8u);
  int touching = 0;
  bool all = false;
  for (const auto &c : calls) {
    if (c.isGemm || c.isAttention || c.isCollective)
      continue;
    std::set<int> slots;
    for (uint64_t p : c.launch.args)
      slots.insert(b.slotOf(p));
    touching += std::any_of(slots.begin(), slots.end(), [&](int s) { return moments.count(s); });
    all |= std::includes(slots.begin(), slots.end(), outParams.begin(), outParams.end());
  }
  EXPECT_TRUE(all) << "no launch takes all " << outParams.size()
                   << " new parameters and optimizer moments";
  EXPECT_EQ(touching, 1) << "the optimizer's moments and parameters take several launches";
}

// --attention=fused: @forward calls the fused forward once per layer,
// @train_step the forward and the backward once each, with the model's
// shapes (gpt-tiny, 1 layer: batch 4, 4 heads, 32 positions, head size 16,
// causal, scale 1/4) in bf16; every buffer they read or write lies inside
// one buffer of the call, and what the backward writes overlaps nothing it
// reads.
TEST(CudaLaunchSequence, FusedAttentionCallsStayInsideTheirBuffers) {
  const Program &p = fusedProgram();
  for (const char *function : {"forward", "train_step"}) {
    SCOPED_TRACE(function);
    const EntryPoint *e = p.entry(function);
    ASSERT_NE(e, nullptr);
    Buffers b(*e);
    int forwards = 0, backwards = 0;
    for (const auto &c : record(b, p)) {
      if (!c.isAttention)
        continue;
      const AttentionCall &a = c.attention;
      (a.backward ? backwards : forwards)++;
      EXPECT_EQ(a.dtype, 2);
      EXPECT_EQ(std::vector<int64_t>({a.b, a.h, a.hkv, a.tq, a.tk, a.d}),
                std::vector<int64_t>({4, 4, 4, 32, 32, 16}));
      EXPECT_TRUE(a.causal);
      EXPECT_EQ(a.scale, 0.25);
      for (int i = 0; i < a.numBuffers(); ++i) {
        EXPECT_GE(b.slotOf(a.buffers[size_t(i)], a.bytes(i)), 0)
            << "buffer " << i << " reaches outside every buffer";
        for (int j = 0; j < a.numBuffers(); ++j) {
          bool overlap = a.buffers[size_t(i)] < a.buffers[size_t(j)] + a.bytes(j) &&
                         a.buffers[size_t(j)] < a.buffers[size_t(i)] + a.bytes(i);
          if (i != j && a.writes(i) && overlap)
            ADD_FAILURE() << "written buffer " << i << " overlaps buffer " << j;
        }
      }
    }
    EXPECT_EQ(forwards, 1);
    EXPECT_EQ(backwards, std::string(function) == "train_step" ? 1 : 0);
  }
}

/// A sharded gpt-tiny, the code for 2 ranks.
const Program &loadForTwoRanks(const char *path) {
  auto *q = new Program();
  Status st = Program::load(path, *q, 2);
  EXPECT_TRUE(st) << st.message();
  return *q;
}

/// Bytes of `call`'s input and output in a group of `ranks`.
std::pair<uint64_t, uint64_t> collectiveBytes(const CollectiveCall &call, int64_t ranks) {
  uint64_t e = elementSize(ElementType(call.dtype)), n = uint64_t(call.count) * e;
  switch (call.kind) {
  case CollectiveCall::AllGather:
    return {n, n * uint64_t(ranks)};
  case CollectiveCall::ReduceScatter:
    return {n * uint64_t(ranks), n};
  case CollectiveCall::Send:
    return {n, 0};
  case CollectiveCall::Recv:
    return {0, n};
  default:
    return {n, n};
  }
}

/// What the collectives of a sharded step (recorded, 2 ranks) must satisfy:
/// every collective stays inside one buffer (the manifest's group sizes);
/// every started one is waited for, with its buffers, before the step ends;
/// while one is in flight no GEMM touches its output or writes its input,
/// and no kernel is passed a pointer into its output; two steps issue the
/// same collectives (a captured graph replays them). Returns the f32
/// elements reduce-scattered and all-gathered.
struct CollectiveTotals {
  uint64_t scattered = 0, gathered = 0, paramElements = 0;
  int collectives = 0, started = 0;
};
CollectiveTotals checkCollectives(const Program &p) {
  CollectiveTotals totals;
  EXPECT_TRUE(p.isCuda());
  std::vector<int64_t> groupSizes;
  if (const json::Value *groups = p.manifest().get("process_groups"); groups && groups->isArray())
    for (const json::Value &g : groups->items())
      groupSizes.push_back(g.get("size")->asInt());
  const EntryPoint *e = p.entry("train_step");
  if (!e) {
    ADD_FAILURE() << "no @train_step";
    return totals;
  }
  Buffers b(*e);
  std::vector<RecordingBackend::Call> calls = record(b, p);
  uint64_t &paramElements = totals.paramElements;
  for (const Slot &s : e->slots)
    if (s.role == Slot::Param && !s.out) {
      uint64_t n = 1;
      for (int64_t d : s.shape)
        n *= uint64_t(d);
      paramElements += n;
    }
  struct InFlight {
    uint64_t in, inBytes, out, outBytes;
  };
  std::map<int64_t, InFlight> inFlight;
  auto overlaps = [](uint64_t a, uint64_t an, uint64_t b, uint64_t bn) {
    return a < b + bn && b < a + an;
  };
  uint64_t &scattered = totals.scattered, &gathered = totals.gathered;
  int &collectives = totals.collectives, &started = totals.started;
  for (size_t i = 0; i < calls.size(); ++i) {
    const auto &c = calls[i];
    if (c.isGemm) {
      for (int operand = 0; operand < 3; ++operand) {
        auto [first, bytes] = gemmExtent(c.gemm, operand);
        int slot = b.slotOf(first, bytes);
        if (slot < 0) {
          ADD_FAILURE() << "GEMM at call " << i << " outside every buffer";
          return totals;
        }
        for (auto &[ticket, f] : inFlight) {
          EXPECT_FALSE(overlaps(first, bytes, f.out, f.outBytes))
              << "GEMM at call " << i << " touches the output of collective ticket " << ticket
              << " while it is in flight";
          if (operand == 2)
            EXPECT_FALSE(overlaps(first, bytes, f.in, f.inBytes))
                << "GEMM at call " << i << " writes the input of collective ticket " << ticket
                << " while it is in flight";
        }
      }
      continue;
    }
    if (!c.isCollective) {
      if (!c.isAttention)
        for (auto &[ticket, f] : inFlight)
          for (uint64_t ptr : c.launch.args)
            EXPECT_FALSE(ptr >= f.out && ptr < f.out + f.outBytes)
                << "kernel launch at call " << i << " gets a pointer into the output of "
                << "collective ticket " << ticket << " while it is in flight";
      continue;
    }
    const CollectiveCall &cc = c.collective;
    if (cc.kind == CollectiveCall::Wait) {
      auto it = inFlight.find(cc.ticket);
      if (it == inFlight.end()) {
        ADD_FAILURE() << "wait for ticket " << cc.ticket << " never started";
        return totals;
      }
      EXPECT_EQ(it->second.in, cc.in);
      EXPECT_EQ(it->second.out, cc.out);
      inFlight.erase(it);
      continue;
    }
    ++collectives;
    if (cc.group < 0 || cc.group >= int64_t(groupSizes.size())) {
      ADD_FAILURE() << "collective on group #" << cc.group << " of " << groupSizes.size();
      return totals;
    }
    int64_t ranks = groupSizes[size_t(cc.group)];
    auto [inBytes, outBytes] = collectiveBytes(cc, ranks);
    if (inBytes)
      EXPECT_GE(b.slotOf(cc.in, inBytes), 0) << cc.name() << " at call " << i << " reads outside every buffer";
    if (outBytes)
      EXPECT_GE(b.slotOf(cc.out, outBytes), 0) << cc.name() << " at call " << i << " writes outside every buffer";
    if (cc.dtype == int64_t(ElementType::F32)) {
      if (cc.kind == CollectiveCall::ReduceScatter)
        scattered += uint64_t(cc.count * ranks);
      if (cc.kind == CollectiveCall::AllGather)
        gathered += uint64_t(cc.count * ranks);
    }
    if (cc.start) {
      ++started;
      EXPECT_TRUE(inFlight.emplace(cc.ticket, InFlight{cc.in, inBytes, cc.out, outBytes}).second)
          << "ticket " << cc.ticket << " started twice";
    }
  }
  EXPECT_TRUE(inFlight.empty()) << inFlight.size() << " collectives never waited for";
  EXPECT_GT(collectives, 0);
  EXPECT_GT(started, 0) << "nothing overlaps the computation (lcc-overlap-collectives)";

  std::vector<RecordingBackend::Call> again = record(b, p);
  EXPECT_EQ(again.size(), calls.size());
  for (size_t i = 0; i < std::min(calls.size(), again.size()); ++i) {
    EXPECT_EQ(again[i].isCollective, calls[i].isCollective);
    const CollectiveCall &x = calls[i].collective, &y = again[i].collective;
    EXPECT_EQ(std::make_tuple(x.kind, x.start, x.ticket, x.group, x.in, x.out, x.count),
              std::make_tuple(y.kind, y.start, y.ticket, y.group, y.in, y.out, y.count));
  }
  return totals;
}

// --shard=zero2 on CUDA: the step's collectives go to the GPU runtime
// (lcc-gemm-to-library retargets them) and obey checkCollectives; the
// gradients reduce-scattered and the parameters all-gathered over "dp"
// cover every parameter once (buckets padded to the group size, no more).
TEST(CudaLaunchSequence, ZeroStepCollectivesAreStreamOrderedAndCoverTheModel) {
  static const Program &p = loadForTwoRanks(LCC_CUDA_ZERO2_TEST_BIN);
  CollectiveTotals t = checkCollectives(p);
  EXPECT_GE(t.scattered, t.paramElements);
  EXPECT_LE(t.scattered, t.paramElements + 2 * 64);
  EXPECT_GE(t.gathered, t.paramElements);
  EXPECT_LE(t.gathered, t.paramElements + 2 * 64);
}

// --tp=2: the activations' all-reduces (forward and backward, started and
// waited around the computation) obey the same rules; nothing is
// reduce-scattered or gathered.
TEST(CudaLaunchSequence, TensorParallelStepCollectivesAreStreamOrdered) {
  static const Program &p = loadForTwoRanks(LCC_CUDA_TP2_TEST_BIN);
  CollectiveTotals t = checkCollectives(p);
  EXPECT_GE(t.collectives, 4); // per layer: attention and MLP, forward and backward
  EXPECT_EQ(t.scattered + t.gathered, 0u);
}

// A pipeline rank's transfers are lcc.exchange groups. Every send and
// receive lies between a group_start and group_end of its group (one NCCL
// group on the communication stream), inside one buffer, and no receive's
// buffer overlaps a send's of the same group (the runtime reads and writes
// them all at group_end). Returns the groups, sends and receives of rank
// `rank`'s step in `bin` (a train.bin for 2 ranks).
struct Exchanges {
  int groups = 0, sends = 0, recvs = 0;
};
Exchanges checkExchangeGroups(const char *bin, int64_t rank) {
  // Kept for the process, as the other programs here (reachable: no leak).
  static std::vector<std::unique_ptr<Program>> kept;
  Program *p = kept.emplace_back(std::make_unique<Program>()).get();
  Status st = Program::load(bin, *p, 2, rank);
  EXPECT_TRUE(st) << st.message();
  const EntryPoint *e = st ? p->entry("train_step") : nullptr;
  EXPECT_NE(e, nullptr);
  if (!e)
    return {};
  Buffers b(*e);
  std::vector<RecordingBackend::Call> calls = record(b, *p);
  bool open = false;
  Exchanges n;
  std::vector<std::pair<uint64_t, uint64_t>> sent, received; // (address, bytes)
  for (const RecordingBackend::Call &c : calls) {
    if (!c.isCollective)
      continue;
    const CollectiveCall &k = c.collective;
    if (k.kind == CollectiveCall::GroupStart) {
      EXPECT_FALSE(open) << "a group inside a group";
      open = true;
      ++n.groups;
      sent.clear();
      received.clear();
    } else if (k.kind == CollectiveCall::GroupEnd) {
      EXPECT_TRUE(open) << "group_end without group_start";
      open = false;
      for (auto [r, rn] : received)
        for (auto [s, sn] : sent)
          EXPECT_FALSE(r < s + sn && s < r + rn) << "a receive over a send of its group";
    } else if (k.kind == CollectiveCall::Send || k.kind == CollectiveCall::Recv) {
      EXPECT_TRUE(open) << k.name() << " outside a group";
      bool send = k.kind == CollectiveCall::Send;
      auto [inBytes, outBytes] = collectiveBytes(k, 2);
      uint64_t at = send ? k.in : k.out, bytes = send ? inBytes : outBytes;
      EXPECT_GE(b.slotOf(at, bytes), 0) << k.name() << " outside every buffer";
      (send ? sent : received).push_back({at, bytes});
      ++(send ? n.sends : n.recvs);
    }
  }
  EXPECT_FALSE(open);
  return n;
}

/// checkExchangeGroups on both ranks of `bin`, each with these counts.
void expectExchanges(const char *bin, int groups, int sends, int recvs) {
  for (int64_t rank : {0, 1}) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    Exchanges n = checkExchangeGroups(bin, rank);
    EXPECT_EQ(n.groups, groups);
    EXPECT_EQ(n.sends, sends);
    EXPECT_EQ(n.recvs, recvs);
  }
}

// --pp=2 on CUDA (1F1B, 4 micro-batches): each stage has 5 groups: 4
// activations go forward, 4 gradients back.
TEST(CudaLaunchSequence, PipelineStagesExchangeInGroups) {
  expectExchanges(LCC_CUDA_PP2_TEST_BIN, 5, 4, 4);
}

// --pp=2 --virtual=2 (interleaved, 4 micro-batches): each rank runs two of
// the four stages, so per micro-batch it receives and sends one activation
// and one gradient per stage, but for the first stage's input and the last
// one's output: 12 sends and 12 receives, in the 11 groups of Megatron's
// order (a steady-state forward and backward share one).
TEST(CudaLaunchSequence, InterleavedStagesExchangeInGroups) {
  expectExchanges(LCC_CUDA_PP2V2_TEST_BIN, 11, 12, 12);
}

TEST(CudaLaunchSequenceDeathTest, HostCodeWithoutABackendStopsWithAMessage) {
  const EntryPoint *e = program().entry("forward");
  ASSERT_NE(e, nullptr);
  Buffers b(*e);
  EXPECT_DEATH(program().call(*e, b.pointers), "without a CUDA backend");
}

} // namespace
