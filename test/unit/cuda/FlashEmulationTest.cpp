//===- FlashEmulationTest.cpp - the CUDA fused attention on the CPU -------===//
//
// runtime/cuda/kernels/FlashAttention.cuh compiled as C++ against
// GpuEmulator.h (every block as 128 real threads with real barriers) and run
// on bf16/f16 inputs. The oracle is the CPU's fused attention in fp64
// (runtime/cpu/Attention.h, itself checked against materialized scores and
// finite differences) on the very same, exactly representable, inputs. The
// kernels round P and dS to the operand type before their tensor-core
// products, as FlashAttention does, so they differ from fp64 by a few
// roundings of 2^-9 (bf16) relative to the values' scale: the bound is 2% of
// each tensor's largest magnitude (an indexing or masking bug is O(100%)).
// Shapes cover several 64-row tiles with a partial last one, grouped-query
// heads, causal masks with Tq < Tk and Tq > Tk (queries that see no key:
// NaN, as on the CPU), and every head size the runtime instantiates up to 64.
//
//===----------------------------------------------------------------------===//
#include "GpuEmulator.h"

#include "runtime/cpu/Attention.h"
#include "runtime/cuda/kernels/FlashAttention.cuh"

#include <gtest/gtest.h>

#include <random>

namespace {

using lcc::flash::Params;

struct Case {
  int b, h, hkv, tq, tk, d;
  bool causal;
  const char *name;
};

int64_t bits(double x) {
  int64_t r;
  std::memcpy(&r, &x, 8);
  return r;
}
int64_t addr(const void *p) { return reinterpret_cast<int64_t>(p); }

/// Random values rounded to T, and the same values as doubles.
template <typename T> struct Tensor {
  std::vector<T> t;
  std::vector<double> d;
  Tensor(size_t n, std::mt19937 &rng, double range) {
    std::uniform_real_distribution<double> dist(-range, range);
    for (size_t i = 0; i < n; ++i) {
      t.push_back(gx::fromFloat<T>(float(dist(rng))));
      d.push_back(gx::toFloat(t.back()));
    }
  }
  explicit Tensor(size_t n) : t(n, gx::fromFloat<T>(0.0f)), d(n, 0.0) {}
  std::vector<double> widened() const {
    std::vector<double> r;
    for (const T &x : t)
      r.push_back(gx::toFloat(x));
    return r;
  }
};

/// max |got - want| over entries where want is finite, relative to max |want|;
/// NaN must sit exactly where the oracle has NaN.
::testing::AssertionResult closeTo(const std::vector<double> &got, const std::vector<double> &want,
                                 double rel, const char *what) {
  double scale = 0, worst = 0;
  for (double w : want)
    if (!std::isnan(w))
      scale = std::max(scale, std::abs(w));
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i]) != std::isnan(got[i]))
      return ::testing::AssertionFailure()
             << what << "[" << i << "]: got " << got[i] << ", want " << want[i];
    if (!std::isnan(want[i]))
      worst = std::max(worst, std::abs(got[i] - want[i]));
  }
  if (worst > rel * scale + 1e-6)
    return ::testing::AssertionFailure() << what << ": max error " << worst << " against scale "
                                         << scale << " (bound " << rel << " relative)";
  return ::testing::AssertionSuccess() << what << ": max error " << worst << " / " << scale;
}

/// closeTo, printing the measured error (the margin the bound leaves).
void expectClose(const std::vector<double> &got, const std::vector<double> &want,
                 const char *what) {
  ::testing::AssertionResult r = closeTo(got, want, 0.02, what);
  std::printf("[flash] %s\n", r.message());
  EXPECT_TRUE(r);
}

template <typename T, int D> void runCase(const Case &c) {
  std::mt19937 rng(42);
  size_t nq = size_t(c.b) * c.h * c.tq * D, nk = size_t(c.b) * c.hkv * c.tk * D;
  Tensor<T> q(nq, rng, 2.0), k(nk, rng, 2.0), v(nk, rng, 1.0), dout(nq, rng, 1.0);
  double scale = 1.0 / std::sqrt(double(D));
  Params p{c.b, c.h, c.hkv, c.tq, c.tk, c.causal ? 1 : 0, float(scale)};
  gx::gErrors.clear();

  // Forward on the "GPU".
  Tensor<T> o(nq);
  int qBlocks = (c.tq + 63) / 64, kBlocks = (c.tk + 63) / 64;
  gx::launch(c.b * c.h, qBlocks, lcc::flash::forwardSmem(D, sizeof(T)), [&](unsigned char *s) {
    lcc::flash::flashForward<T, D>(p, q.t.data(), k.t.data(), v.t.data(), o.t.data(), s);
  });
  // The oracle in fp64 on the same values.
  std::vector<double> want(nq);
  lcc_attention_fwd(1, c.b, c.h, c.hkv, c.tq, c.tk, D, c.causal, bits(scale), addr(q.d.data()),
                    addr(k.d.data()), addr(v.d.data()), addr(want.data()));
  expectClose(o.widened(), want, "o");

  // Backward: the query kernel (also writing lse and delta), then the keys'.
  Tensor<T> dq(nq), dk(nk), dv(nk);
  std::vector<float> lse(size_t(c.b) * c.h * c.tq), delta(lse.size());
  gx::launch(c.b * c.h, qBlocks, lcc::flash::backwardQuerySmem(D, sizeof(T)),
             [&](unsigned char *s) {
               lcc::flash::flashBackwardQuery<T, D>(p, q.t.data(), k.t.data(), v.t.data(),
                                                    o.t.data(), dout.t.data(), dq.t.data(),
                                                    lse.data(), delta.data(), s);
             });
  gx::launch(c.b * c.hkv, kBlocks, lcc::flash::backwardKeysSmem(D, sizeof(T)),
             [&](unsigned char *s) {
               lcc::flash::flashBackwardKeys<T, D>(p, q.t.data(), k.t.data(), v.t.data(),
                                                   dout.t.data(), dk.t.data(), dv.t.data(),
                                                   lse.data(), delta.data(), s);
             });
  std::vector<double> wdq(nq), wdk(nk), wdv(nk), ow = o.widened();
  lcc_attention_bwd(1, c.b, c.h, c.hkv, c.tq, c.tk, D, c.causal, bits(scale), addr(q.d.data()),
                    addr(k.d.data()), addr(v.d.data()), addr(ow.data()), addr(dout.d.data()),
                    addr(wdq.data()), addr(wdk.data()), addr(wdv.data()));
  expectClose(dq.widened(), wdq, "dq");
  expectClose(dk.widened(), wdk, "dk");
  expectClose(dv.widened(), wdv, "dv");
  for (const std::string &e : gx::gErrors)
    ADD_FAILURE() << c.name << ": " << e;
}

const Case kCases[] = {
    {1, 4, 2, 150, 150, 16, true, "gqa_causal_three_tiles"},
    {1, 2, 2, 70, 130, 32, true, "causal_fewer_queries_than_keys"},
    {2, 2, 1, 64, 100, 16, false, "mqa_not_causal"},
    {1, 2, 1, 80, 40, 16, true, "causal_queries_without_keys"},
    {1, 1, 1, 128, 128, 64, true, "head_dim_64"},
    {1, 1, 1, 70, 70, 128, true, "head_dim_128"},
};

TEST(FlashEmulation, Bf16MatchesFp64Oracle) {
  for (const Case &c : kCases) {
    SCOPED_TRACE(c.name);
    switch (c.d) {
    case 16: runCase<gx::bf16, 16>(c); break;
    case 32: runCase<gx::bf16, 32>(c); break;
    case 64: runCase<gx::bf16, 64>(c); break;
    default: runCase<gx::bf16, 128>(c); break;
    }
  }
}

TEST(FlashEmulation, F16MatchesFp64Oracle) {
  runCase<gx::f16, 16>(kCases[0]);
  runCase<gx::f16, 32>(kCases[1]);
  runCase<gx::f16, 64>(kCases[4]);
  runCase<gx::f16, 128>(kCases[5]);
}

// Every kernel's shared memory fits Hopper's 227 KB per block, for every
// head size the runtime instantiates (A100's 163 KB and sm_86/89's 99 KB do
// not fit the largest; the runtime says so on those GPUs).
TEST(FlashEmulation, SharedMemoryFitsHopper) {
  for (int d : {16, 32, 64, 128}) {
    EXPECT_LE(lcc::flash::forwardSmem(d, 2), gx::kMaxSharedMemory) << d;
    EXPECT_LE(lcc::flash::backwardQuerySmem(d, 2), gx::kMaxSharedMemory) << d;
    EXPECT_LE(lcc::flash::backwardKeysSmem(d, 2), gx::kMaxSharedMemory) << d;
  }
}

// The emulator's own checks fire: a misaligned tile is reported.
TEST(FlashEmulation, EmulatorReportsMisalignedTiles) {
  gx::gErrors.clear();
  gx::launch(1, 1, 4096, [](unsigned char *s) {
    gx::FragA<gx::bf16> a;
    gx::load(a, reinterpret_cast<gx::bf16 *>(s + 2), 16);
  });
  ASSERT_FALSE(gx::gErrors.empty());
  EXPECT_NE(gx::gErrors.front().find("not 32-byte aligned"), std::string::npos);
}

} // namespace
