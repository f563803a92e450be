//===- CpuKernelsTest.cpp - lcc_sgemm/lcc_dgemm against a double reference -===//
//
// Every layout the compiler can pass: row- or column-major A, B (BLAS with the
// matching transpose), broadcast batch operands (stride 0), degenerate M or N
// of 1, and strides BLAS cannot express (plain-loop fallback). C accumulates
// (C += A B), which the reference checks by starting from non-zero C.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuKernels.h"
#include "runtime/cpu/Parallel.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <gtest/gtest.h>
#include <random>
#include <vector>

namespace {

struct Layout {
  const char *name;
  int64_t batch, m, n, k;
  // Strides (elements): A batch, m, k; B batch, k, n; C batch, m, n.
  int64_t aB, aM, aK, bB, bK, bN, cB, cM, cN;
};

/// `overwrite`: beta 0, with C's elements NaN before the call (never read),
/// so the reference starts from 0; else beta 1 from random C.
template <typename T>
std::vector<T> check(const Layout &l, double tol, bool overwrite = false) {
  auto extent = [&](int64_t b, int64_t r, int64_t c, int64_t sb, int64_t sr, int64_t sc) {
    return (b - 1) * sb + (r - 1) * sr + (c - 1) * sc + 1;
  };
  std::mt19937 rng(17);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> a(size_t(extent(l.batch, l.m, l.k, l.aB, l.aM, l.aK)) + 3),
      b(size_t(extent(l.batch, l.k, l.n, l.bB, l.bK, l.bN)) + 3),
      c(size_t(extent(l.batch, l.m, l.n, l.cB, l.cM, l.cN)) + 3);
  for (auto *v : {&a, &b, &c})
    for (T &x : *v)
      x = T(u(rng));
  std::vector<double> want(c.begin(), c.end());
  if (overwrite)
    for (int64_t i = 0; i < l.batch; ++i)
      for (int64_t r = 0; r < l.m; ++r)
        for (int64_t s = 0; s < l.n; ++s) {
          size_t at = size_t(i * l.cB + r * l.cM + s * l.cN);
          c[at] = std::numeric_limits<T>::quiet_NaN();
          want[at] = 0;
        }
  const int64_t off = 3; // a non-zero offset, as subviews have
  for (int64_t i = 0; i < l.batch; ++i)
    for (int64_t r = 0; r < l.m; ++r)
      for (int64_t s = 0; s < l.n; ++s) {
        double acc = 0;
        for (int64_t p = 0; p < l.k; ++p)
          acc += double(a[size_t(off - 3 + i * l.aB + r * l.aM + p * l.aK)]) *
                 double(b[size_t(off - 3 + i * l.bB + p * l.bK + s * l.bN)]);
        want[size_t(i * l.cB + r * l.cM + s * l.cN)] += acc;
      }
  auto addr = [](std::vector<T> &v) { return int64_t(reinterpret_cast<intptr_t>(v.data())); };
  // The pointers are 3 elements before the data: the offset argument is 3.
  int64_t pa = addr(a) - 3 * int64_t(sizeof(T)), pb = addr(b) - 3 * int64_t(sizeof(T)),
          pc = addr(c) - 3 * int64_t(sizeof(T));
  auto fn = sizeof(T) == 4 ? lcc_sgemm : lcc_dgemm;
  fn(l.batch, 1, 1, l.m, l.n, l.k, pa, off, l.aB, 0, 0, l.aM, l.aK, pb, off, l.bB, 0, 0, l.bK,
     l.bN, pc, off, l.cB, 0, 0, l.cM, l.cN, overwrite ? 0 : 1);
  for (size_t i = 0; i < c.size(); ++i)
    EXPECT_NEAR(double(c[i]), want[i], tol * (1 + std::fabs(want[i]))) << l.name << " at " << i;
  return c;
}

const Layout kLayouts[] = {
    {"nn", 2, 5, 7, 3, 15, 3, 1, 21, 7, 1, 35, 7, 1},
    {"nt (x @ w.T)", 2, 5, 7, 3, 15, 3, 1, 0, 1, 3, 35, 7, 1},  // B [n, k], shared
    {"tn", 1, 5, 7, 3, 0, 1, 5, 0, 7, 1, 0, 7, 1},              // A stored [k, m]
    {"tt", 3, 4, 6, 5, 20, 1, 4, 30, 1, 5, 24, 6, 1},
    {"broadcast A", 3, 4, 6, 5, 0, 5, 1, 30, 6, 1, 24, 6, 1},
    {"m = 1", 2, 1, 6, 5, 5, 99, 1, 30, 6, 1, 6, 77, 1},
    {"n = 1", 2, 4, 1, 5, 20, 5, 1, 5, 1, 42, 4, 1, 9},
    {"strided rows (fallback)", 2, 4, 6, 5, 60, 10, 2, 90, 12, 2, 80, 14, 2},
    {"column-major C (fallback)", 2, 4, 6, 5, 20, 5, 1, 30, 6, 1, 24, 1, 4},
    {"k = 0 (C unchanged)", 1, 3, 3, 0, 0, 1, 1, 0, 1, 1, 0, 3, 1},
};

TEST(CpuKernels, SgemmMatchesReferenceOnEveryLayout) {
  for (const Layout &l : kLayouts)
    check<float>(l, 1e-5);
}

TEST(CpuKernels, DgemmMatchesReferenceOnEveryLayout) {
  for (const Layout &l : kLayouts)
    check<double>(l, 1e-13);
}

// GEMMs over 1 MFLOP are split over the pool (runtime/cpu/Parallel.h): by batch
// element, by blocks of 16 rows or of 16 columns. Every split must give the
// reference for any thread count (including counts that do not divide the
// work), and the same bits when repeated with the same count. (Not the same
// bits as one thread: OpenBLAS computes the edges of a block with other
// micro-kernels, so float results move by an ulp with the split.)
const Layout kSplitLayouts[] = {
    {"batch split", 5, 64, 48, 64, 64 * 64, 64, 1, 0, 48, 1, 64 * 48, 48, 1},
    {"row split", 1, 200, 40, 80, 0, 80, 1, 0, 40, 1, 0, 40, 1},
    {"column split (x @ w.T)", 1, 40, 200, 80, 0, 80, 1, 0, 1, 80, 0, 200, 1},
    {"row split, fallback loop", 1, 100, 90, 60, 0, 120, 2, 0, 180, 2, 0, 90, 1},
};

TEST(CpuKernels, SplitGemmsMatchReferenceForAnyThreadCount) {
  for (const Layout &l : kSplitLayouts)
    for (int threads : {1, 2, 3, 4}) {
      lcc::setNumThreads(threads);
      std::vector<float> first = check<float>(l, 1e-5);
      EXPECT_EQ(check<float>(l, 1e-5), first) << l.name << " with " << threads << " threads";
      check<double>(l, 1e-13);
    }
  lcc::setNumThreads(2);
}

// One row of A (a decode step's token): matrix-vector products, split into
// the same blocks of columns for every thread count, so unlike the splits
// above the bits do not move with the count. A's elements strided (a
// transposed row), B as x @ w and x @ w.T, beta 1 and beta 0.
const Layout kVectorLayouts[] = {
    {"gemv (x @ w)", 1, 1, 1000, 600, 0, 0, 1, 0, 1000, 1, 0, 0, 1},
    {"gemv (x @ w.T)", 1, 1, 1000, 600, 0, 0, 1, 0, 1, 600, 0, 0, 1},
    {"gemv, strided x", 1, 1, 700, 900, 0, 0, 3, 0, 700, 1, 0, 0, 1},
    {"gemv, one block", 1, 1, 200, 50, 0, 0, 1, 0, 200, 1, 0, 0, 1},
};

TEST(CpuKernels, GemvMatchesReferenceWithTheSameBitsForAnyThreadCount) {
  for (const Layout &l : kVectorLayouts)
    for (bool overwrite : {false, true}) {
      lcc::setNumThreads(1);
      std::vector<float> one = check<float>(l, 1e-5, overwrite);
      check<double>(l, 1e-13, overwrite);
      for (int threads : {2, 3}) {
        lcc::setNumThreads(threads);
        EXPECT_EQ(check<float>(l, 1e-5, overwrite), one) << l.name << " with " << threads;
      }
    }
  lcc::setNumThreads(2);
}

// beta 0 (lcc-gemm-to-library drops C's zero fill): C is overwritten and its
// old contents (NaN here) never read, on the BLAS and the fallback loop, for
// k = 0 too (C becomes 0), and under every split.
TEST(CpuKernels, BetaZeroOverwritesWithoutReading) {
  for (const Layout &l : kLayouts) {
    check<float>(l, 1e-5, /*overwrite=*/true);
    check<double>(l, 1e-13, /*overwrite=*/true);
  }
  for (int threads : {1, 3})
    for (const Layout &l : kSplitLayouts) {
      lcc::setNumThreads(threads);
      check<float>(l, 1e-5, /*overwrite=*/true);
    }
  lcc::setNumThreads(2);
}

TEST(CpuKernels, BuiltWithBlas) {
  // CI installs OpenBLAS; a build without it would silently be 5x slower.
  EXPECT_TRUE(lcc::cpuKernelsHaveBlas());
}

// bf16 A (transposed) and B into f32 C, batched: C += A B with the bf16
// values widened exactly, against a double-precision loop.
TEST(CpuKernels, Bf16GemmWidensExactly) {
  const int64_t nb = 2, m = 5, n = 7, k = 33;
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> bits(0x3C00, 0x4000); // bf16 values in [2^-7, 2]
  std::vector<uint16_t> a(nb * k * m), b(nb * k * n);
  for (auto &v : a)
    v = uint16_t(bits(rng)) | uint16_t((rng() & 1) << 15);
  for (auto &v : b)
    v = uint16_t(bits(rng));
  auto widen = [](uint16_t h) {
    uint32_t w = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &w, 4);
    return double(f);
  };
  std::vector<float> c(nb * m * n, 1.0f);
  // A is stored [batch, k, m] (transposed), B [batch, k, n], C [batch, m, n].
  lcc_bf16gemm(nb, 1, 1, m, n, k, int64_t(a.data()), 0, k * m, 0, 0, 1, m, int64_t(b.data()), 0,
               k * n, 0, 0, n, 1, int64_t(c.data()), 0, m * n, 0, 0, n, 1, 1);
  for (int64_t i = 0; i < nb; ++i)
    for (int64_t r = 0; r < m; ++r)
      for (int64_t col = 0; col < n; ++col) {
        double want = 1.0;
        for (int64_t x = 0; x < k; ++x)
          want += widen(a[i * k * m + x * m + r]) * widen(b[i * k * n + x * n + col]);
        EXPECT_NEAR(c[i * m * n + r * n + col], want, 1e-5 * (1 + std::fabs(want)));
      }
}

#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 13)
extern "C" __bf16 __truncsfbf2(float);

/// The bf16 bits of the runtime's f32 -> bf16 rounding.
uint16_t bf16Bits(float x) {
  __bf16 b = __truncsfbf2(x);
  uint16_t bits;
  std::memcpy(&bits, &b, 2);
  return bits;
}

/// The reference: the nearest of the two bf16 neighbours of x (the
/// truncation and the next one up in magnitude), ties to the even one,
/// decided in double.
uint16_t nearestBf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  uint16_t lo = uint16_t(u >> 16), hi = uint16_t(lo + 1);
  auto value = [](uint16_t bits) {
    uint32_t w = uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &w, 4);
    return double(f);
  };
  double dl = std::fabs(double(x) - value(lo)), dh = std::fabs(value(hi) - double(x));
  if (dl != dh)
    return dl < dh ? lo : hi;
  return (lo & 1) ? hi : lo;
}

// --precision=bf16 on the CPU rounds with this builtin (LLVM calls it for
// fptrunc to bfloat); lcc-run must provide it and round to nearest even.
TEST(CpuKernels, TruncSfBf2RoundsToNearestEven) {
  EXPECT_EQ(bf16Bits(1.0f), 0x3F80);
  EXPECT_EQ(bf16Bits(1.0f + 0x1p-8f), 0x3F80);           // a tie: to the even 0x3F80
  EXPECT_EQ(bf16Bits(1.0f + 0x1p-7f + 0x1p-8f), 0x3F82); // a tie: to the even 0x3F82
  EXPECT_EQ(bf16Bits(-2.5f), 0xC020);
  EXPECT_EQ(bf16Bits(3.4e38f), 0x7F80);                  // rounds up to infinity
  EXPECT_EQ(bf16Bits(INFINITY), 0x7F80);
  uint16_t nan = bf16Bits(NAN);
  EXPECT_EQ(nan & 0x7F80, 0x7F80);
  EXPECT_NE(nan & 0x7F, 0); // still a NaN
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(-1000, 1000);
  for (int i = 0; i < 100000; ++i) {
    float x = uniform(rng) * std::pow(2.0f, float(int(rng() % 60) - 30));
    ASSERT_EQ(bf16Bits(x), nearestBf16(x)) << x;
  }
}
#endif

#ifdef __FLT16_MAX__
extern "C" _Float16 __truncsfhf2(float);
extern "C" float __extendhfsf2(_Float16);
#endif

/// The reference value of IEEE binary16 bits, from the format's definition
/// (sign, 5-bit exponent biased by 15, 10-bit fraction), in double.
double halfValue(uint16_t h) {
  int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exp == 0x1f)
    return mant ? NAN : sign * INFINITY;
  if (exp == 0)
    return sign * std::ldexp(double(mant), -24);
  return sign * std::ldexp(double(1024 + mant), exp - 25);
}

/// The reference rounding: the nearest half to x, ties to the even bit
/// pattern, found by binary search over the positive halves (ordered as
/// their bits); past 65504 the next step up would be 65536, so x >= 65520
/// is infinity (IEEE's rule for overflow).
uint16_t nearestHalf(float x) {
  double ax = std::fabs(double(x));
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  auto value = [](uint16_t h) { return h == 0x7c00 ? 65536.0 : halfValue(h); };
  uint16_t lo = 0, hi = 0x7c00; // value(lo) <= ax < value(hi) once narrowed
  if (ax >= 65536.0)
    return sign | 0x7c00;
  while (hi - lo > 1) {
    uint16_t mid = uint16_t((lo + hi) / 2);
    (value(mid) <= ax ? lo : hi) = mid;
  }
  double dl = ax - value(lo), dh = value(hi) - ax;
  uint16_t r = dl < dh ? lo : dh < dl ? hi : (lo & 1) ? hi : lo;
  return sign | r;
}

// --precision=fp16 on the CPU converts with these (LLVM's __truncsfhf2 and
// __extendhfsf2 where the CPU lacks F16C; the hgemm's widening).
TEST(CpuKernels, HalfConversionsMatchTheFormat) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    double want = halfValue(uint16_t(h));
    float got = lcc::widenHalf(uint16_t(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << h;
      ASSERT_EQ(lcc::roundToHalf(got) & 0x7e00, 0x7e00) << h; // a quiet NaN
      continue;
    }
    ASSERT_EQ(double(got), want) << h;
    ASSERT_EQ(lcc::roundToHalf(got), uint16_t(h)) << h; // every half round-trips
  }
  EXPECT_EQ(lcc::roundToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(lcc::roundToHalf(65519.99f), 0x7bff);
  EXPECT_EQ(lcc::roundToHalf(65520.0f), 0x7c00);        // the overflow tie goes to infinity
  EXPECT_EQ(lcc::roundToHalf(0x1p-25f), 0x0000);        // a tie between 0 and 2^-24: to 0
  EXPECT_EQ(lcc::roundToHalf(0x1.8p-24f), 0x0002);      // a tie between 1 and 2 units: to 2
  EXPECT_EQ(lcc::roundToHalf(-1.0f - 0x1p-11f), 0xbc00); // a tie: to the even 0xbc00
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (int i = 0; i < 200000; ++i) {
    float x = uniform(rng) * std::ldexp(1.0f, int(rng() % 48) - 28);
    ASSERT_EQ(lcc::roundToHalf(x), nearestHalf(x)) << x;
  }
#ifdef __FLT16_MAX__
  // The exported builtins are the same functions.
  for (float x : {1.0f, -3.14159f, 1e-6f, 7e4f, 0x1p-20f})
    EXPECT_EQ(__builtin_bit_cast(uint16_t, __truncsfhf2(x)), lcc::roundToHalf(x)) << x;
  EXPECT_EQ(__extendhfsf2(__builtin_bit_cast(_Float16, uint16_t(0x3555))),
            lcc::widenHalf(0x3555));
#endif
}

// f16 A and B (transposed) into f32 C, batched, against a double loop on
// the reference values.
TEST(CpuKernels, HgemmWidensExactly) {
  const int64_t nb = 2, m = 6, n = 5, k = 31;
  std::mt19937 rng(13);
  std::uniform_int_distribution<int> bits(0x2000, 0x4000); // halves in [2^-7, 2]
  std::vector<uint16_t> a(nb * m * k), b(nb * n * k);
  for (auto &v : a)
    v = uint16_t(bits(rng)) | uint16_t((rng() & 1) << 15);
  for (auto &v : b)
    v = uint16_t(bits(rng));
  std::vector<float> c(nb * m * n, -2.0f);
  // A is [batch, m, k], B stored transposed [batch, n, k], C [batch, m, n].
  lcc_hgemm(nb, 1, 1, m, n, k, int64_t(a.data()), 0, m * k, 0, 0, k, 1, int64_t(b.data()), 0,
            n * k, 0, 0, 1, k, int64_t(c.data()), 0, m * n, 0, 0, n, 1, 1);
  for (int64_t i = 0; i < nb; ++i)
    for (int64_t r = 0; r < m; ++r)
      for (int64_t col = 0; col < n; ++col) {
        double want = -2.0;
        for (int64_t x = 0; x < k; ++x)
          want += halfValue(a[i * m * k + r * k + x]) * halfValue(b[i * n * k + col * k + x]);
        EXPECT_NEAR(c[i * m * n + r * n + col], want, 1e-5 * (1 + std::fabs(want)));
      }
}

// OpenBLAS's fallback for CPUs newer than it knows ("Prescott") is replaced
// by the kernels the CPU runs, and only that: a core it picked by model, one
// the user chose, and a CPU without AVX2 keep theirs.
TEST(CpuKernels, BlasCoreTypeReplacesOnlyTheFallback) {
  EXPECT_STREQ(lcc::betterBlasCoreType("Prescott", false, true, true), "SkylakeX");
  EXPECT_STREQ(lcc::betterBlasCoreType("Prescott", false, false, true), "Haswell");
  EXPECT_EQ(lcc::betterBlasCoreType("Prescott", false, false, false), nullptr);
  EXPECT_EQ(lcc::betterBlasCoreType("Prescott", true, true, true), nullptr);
  EXPECT_EQ(lcc::betterBlasCoreType("SkylakeX", false, true, true), nullptr);
  EXPECT_EQ(lcc::betterBlasCoreType("Haswell", false, true, true), nullptr);
  EXPECT_EQ(lcc::betterBlasCoreType(nullptr, false, true, true), nullptr);
}

} // namespace
