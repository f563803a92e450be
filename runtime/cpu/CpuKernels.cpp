//===- CpuKernels.cpp - library kernels the compiled CPU code calls --------===//
#include "runtime/cpu/CpuKernels.h"

#include "runtime/cpu/Attention.h"
#include "runtime/cpu/CpuProgram.h"
#include "runtime/cpu/Parallel.h"

#include <cstdlib>
#include <cstring>
#include <vector>

#ifdef LCC_HAVE_CBLAS
#include <cblas.h>
#endif

#include <algorithm>
#include <mutex>

namespace {

/// The pool (runtime/cpu/Parallel.h) splits GEMMs; OpenBLAS's own threads would
/// compete with it for the same cores (and spin in sched_yield between calls).
void singleThreadedBlas() {
#if defined(LCC_HAVE_CBLAS) && defined(OPENBLAS_VERSION)
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
#endif
}

struct Matrix {
  int64_t row, col; // strides of the two matrix dims
};

/// Leading dimension and transpose flag for a row-major BLAS view of a
/// rows x cols matrix with the given strides, when one exists.
template <typename Flag>
bool blasView(Matrix s, int64_t rows, int64_t cols, Flag noTrans, Flag trans, Flag &flag,
              int64_t &ld) {
  // A dimension of size 1 has an arbitrary stride: normalize it so the
  // other's unit stride decides.
  if (cols == 1)
    s.col = 1;
  if (rows == 1)
    s.row = cols;
  if (s.col == 1 && s.row >= cols && s.row >= 1) {
    flag = noTrans;
    ld = s.row;
    return true;
  }
  if (rows == 1 && cols >= 1)
    s.row = 1;
  if (s.row == 1 && s.col >= rows && s.col >= 1) {
    flag = trans;
    ld = s.col;
    return true;
  }
  return false;
}

template <typename T>
void naive(int64_t m, int64_t n, int64_t k, const T *a, Matrix as, const T *b, Matrix bs, T *c,
           Matrix cs, bool overwrite) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      T acc = overwrite ? T(0) : c[i * cs.row + j * cs.col];
      for (int64_t p = 0; p < k; ++p)
        acc += a[i * as.row + p * as.col] * b[p * bs.row + j * bs.col];
      c[i * cs.row + j * cs.col] = acc;
    }
}

/// One GEMM (or a block of rows or columns of one) through the BLAS when the
/// layout allows, else the loop; `overwrite`: C = A B (beta 0), else C += A B.
template <typename T>
void gemmOne(int64_t m, int64_t n, int64_t k, const T *A, Matrix as, const T *B, Matrix bs,
             T *C, Matrix cs, bool overwrite) {
  if (m == 0 || n == 0)
    return;
#ifdef LCC_HAVE_CBLAS
  CBLAS_TRANSPOSE ta, tb, tc;
  int64_t lda, ldb, ldc;
  // C must be a row-major matrix with unit column stride for cblas.
  if (k > 0 && blasView(as, m, k, CblasNoTrans, CblasTrans, ta, lda) &&
      blasView(bs, k, n, CblasNoTrans, CblasTrans, tb, ldb) &&
      blasView(cs, m, n, CblasNoTrans, CblasTrans, tc, ldc) && tc == CblasNoTrans) {
    T beta = overwrite ? T(0) : T(1);
    // One row of A (decoding one token): a matrix-vector product; sgemm
    // would copy (pack) all of B first, which costs as much as the product.
    if (m == 1) {
      int incA = ta == CblasNoTrans ? 1 : int(lda);
      // B [k, n] row-major: C = B^T a; B stored [n, k] (a transposed use): C = B a.
      CBLAS_TRANSPOSE t = tb == CblasNoTrans ? CblasTrans : CblasNoTrans;
      int rows = int(tb == CblasNoTrans ? k : n), cols = int(tb == CblasNoTrans ? n : k);
      if constexpr (sizeof(T) == 4)
        cblas_sgemv(CblasRowMajor, t, rows, cols, 1.0f, B, int(ldb), A, incA, beta, C, 1);
      else
        cblas_dgemv(CblasRowMajor, t, rows, cols, 1.0, B, int(ldb), A, incA, beta, C, 1);
      return;
    }
    if constexpr (sizeof(T) == 4)
      cblas_sgemm(CblasRowMajor, ta, tb, int(m), int(n), int(k), 1.0f, A, int(lda), B, int(ldb),
                  beta, C, int(ldc));
    else
      cblas_dgemm(CblasRowMajor, ta, tb, int(m), int(n), int(k), 1.0, A, int(lda), B, int(ldb),
                  beta, C, int(ldc));
    return;
  }
#endif
  naive(m, n, k, A, as, B, bs, C, cs, overwrite);
}

/// A batched GEMM and how it is split over the pool's threads: by batch
/// element, or (one or few big matrices) by blocks of rows or of columns, or
/// (one row: a matrix-vector product) by fixed blocks of columns.
/// Every output element is computed by exactly one part, the same way for any
/// split, so the split never changes results.
template <typename T>
struct GemmJob {
  int64_t nb0, nb1, nb2, m, n, k;
  const T *A, *B;
  T *C;
  int64_t aB0, aB1, aB2, bB0, bB1, bB2, cB0, cB1, cB2;
  Matrix as, bs, cs;
  enum { Batch, Rows, Cols, Vector } split;
  bool overwrite; // beta 0
  static constexpr int64_t kBlock = 16; // rows/columns per unit of a split
  // A GEMV's columns per call: the same blocks for any thread count (how a
  // BLAS sums a matrix-vector product may depend on how many columns one
  // call gets).
  static constexpr int64_t kVectorBlock = 256;

  void batch(int64_t i, int64_t r0, int64_t r1, int64_t c0, int64_t c1) const {
    int64_t i0 = i / (nb1 * nb2), i1 = i / nb2 % nb1, i2 = i % nb2;
    const T *a = A + i0 * aB0 + i1 * aB1 + i2 * aB2 + r0 * as.row;
    const T *b = B + i0 * bB0 + i1 * bB1 + i2 * bB2 + c0 * bs.col;
    T *c = C + i0 * cB0 + i1 * cB1 + i2 * cB2 + r0 * cs.row + c0 * cs.col;
    gemmOne(r1 - r0, c1 - c0, k, a, as, b, bs, c, cs, overwrite);
  }

  static void part(void *self, int64_t lo, int64_t hi) {
    const GemmJob &j = *static_cast<const GemmJob *>(self);
    switch (j.split) {
    case Batch:
      for (int64_t i = lo; i < hi; ++i)
        j.batch(i, 0, j.m, 0, j.n);
      return;
    case Rows:
      for (int64_t i = 0; i < j.batches(); ++i)
        j.batch(i, lo * kBlock, std::min(j.m, hi * kBlock), 0, j.n);
      return;
    case Cols:
      for (int64_t i = 0; i < j.batches(); ++i)
        j.batch(i, 0, j.m, lo * kBlock, std::min(j.n, hi * kBlock));
      return;
    case Vector:
      for (int64_t b = lo; b < hi; ++b)
        j.batch(0, 0, 1, b * kVectorBlock, std::min(j.n, (b + 1) * kVectorBlock));
      return;
    }
  }

  int64_t batches() const { return nb0 * nb1 * nb2; }
};

template <typename T> void gemm(LCC_GEMM_PARAMS) {
  singleThreadedBlas();
  GemmJob<T> job{nb0, nb1, nb2, m, n, k,
                 reinterpret_cast<const T *>(a) + aOff, reinterpret_cast<const T *>(b) + bOff,
                 reinterpret_cast<T *>(c) + cOff,
                 aB0, aB1, aB2, bB0, bB1, bB2, cB0, cB1, cB2,
                 Matrix{aM, aK}, Matrix{bK, bN}, Matrix{cM, cN}, GemmJob<T>::Batch, beta == 0};
  int64_t batches = job.batches();
  if (batches <= 0)
    return;
  // Below ~1 MFLOP a split costs more than it saves.
  double flops = 2.0 * double(m) * double(n) * double(k) * double(batches);
  int threads = lcc::numThreads();
  if (m == 1 && batches == 1) {
    job.split = GemmJob<T>::Vector;
    int64_t units = (n + GemmJob<T>::kVectorBlock - 1) / GemmJob<T>::kVectorBlock;
    if (threads == 1 || flops < double(1 << 20) || units == 1)
      GemmJob<T>::part(&job, 0, units);
    else
      lcc_parallel_for(&GemmJob<T>::part, &job, units);
    return;
  }
  if (threads == 1 || flops < double(1 << 20)) {
    GemmJob<T>::part(&job, 0, batches);
    return;
  }
  int64_t units = batches;
  if (batches < threads) {
    job.split = m >= n ? GemmJob<T>::Rows : GemmJob<T>::Cols;
    units = ((m >= n ? m : n) + GemmJob<T>::kBlock - 1) / GemmJob<T>::kBlock;
  }
  lcc_parallel_for(&GemmJob<T>::part, &job, units);
}

} // namespace

extern "C" __attribute__((visibility("default"))) void lcc_sgemm(LCC_GEMM_PARAMS) {
  gemm<float>(LCC_GEMM_ARGS);
}

extern "C" __attribute__((visibility("default"))) void lcc_dgemm(LCC_GEMM_PARAMS) {
  gemm<double>(LCC_GEMM_ARGS);
}

// f32 -> bf16 rounding (round to nearest even, NaN kept quiet), which LLVM
// calls as a compiler-rt builtin: mixed-precision code (lcc --precision=bf16)
// on the CPU emulates bf16 with it, and lcc-run links no compiler-rt. Only
// compilers with the __bf16 type (clang, GCC 13) can define it with the ABI
// LLVM expects (the result in an SSE register).
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 13)
extern "C" __attribute__((visibility("default"))) __bf16 __truncsfbf2(float x) {
  return __builtin_bit_cast(__bf16, lcc::roundToBfloat16(x));
}
#endif

namespace lcc {

uint16_t roundToBfloat16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  return (u & 0x7fffffffu) > 0x7f800000u ? uint16_t((u >> 16) | 0x40u)
                                         : uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

float widenBfloat16(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

/// IEEE binary16 -> f32, exact (every half is a float).
float widenHalf(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) { // inf, NaN (payload kept, quiet bit as given)
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) { // normal: rebias 15 -> 127
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else { // subnormal: normalize the mantissa
    int shift = 0;
    while (!(mant & 0x400u)) {
      mant <<= 1;
      ++shift;
    }
    bits = sign | (uint32_t(113 - shift) << 23) | ((mant & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

/// f32 -> IEEE binary16, round to nearest even; overflow to inf, NaN quiet.
uint16_t roundToHalf(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u)
    return uint16_t(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) // 65520 and up round past 65504
    return uint16_t(sign | 0x7c00u);
  if (a >= 0x38800000u) { // a normal half: round the 13 dropped bits, rebias
    a += 0xfffu + ((a >> 13) & 1u);
    return uint16_t(sign | ((a - 0x38000000u) >> 13));
  }
  if (a < 0x33000000u) // below 2^-25 (and 2^-25 itself, a tie) round to 0
    return sign;
  // A subnormal half: the significand in units of 2^-24, rounded to even
  // (a carry into 0x400 is the smallest normal, correctly encoded).
  uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
  uint32_t shift = 126 - e, r = m >> shift, rest = m & ((1u << shift) - 1), half = 1u << (shift - 1);
  if (rest > half || (rest == half && (r & 1u)))
    ++r;
  return uint16_t(sign | r);
}

} // namespace lcc

namespace {
/// f32 copies of the 2-byte elements a GEMM operand reaches (offset plus the
/// extent of its strides), so the call keeps its offset and strides.
std::vector<float> widen(int64_t base, int64_t offset, const int64_t sizes[5],
                         const int64_t strides[5], float (*toFloat)(uint16_t)) {
  int64_t extent = offset + 1;
  for (int d = 0; d < 5; ++d)
    extent += (sizes[d] - 1) * strides[d];
  std::vector<float> out(size_t(extent > 0 ? extent : 0));
  const auto *in = reinterpret_cast<const uint16_t *>(base);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = toFloat(in[i]);
  return out;
}

/// A GEMM on 2-byte A and B into an f32 C: the conversion to f32 is exact,
/// so widening the operands and running the f32 GEMM is the tensor-core
/// arithmetic (products of half-precision values, f32 accumulation).
void widenedGemm(float (*toFloat)(uint16_t), LCC_GEMM_PARAMS) {
  const int64_t aSizes[5] = {nb0, nb1, nb2, m, k}, aStrides[5] = {aB0, aB1, aB2, aM, aK};
  const int64_t bSizes[5] = {nb0, nb1, nb2, k, n}, bStrides[5] = {bB0, bB1, bB2, bK, bN};
  std::vector<float> wa = widen(a, aOff, aSizes, aStrides, toFloat);
  std::vector<float> wb = widen(b, bOff, bSizes, bStrides, toFloat);
  // A and B replaced by their f32 copies (same offsets and strides).
  gemm<float>(nb0, nb1, nb2, m, n, k, int64_t(wa.data()), aOff, aB0, aB1, aB2, aM, aK,
              int64_t(wb.data()), bOff, bB0, bB1, bB2, bK, bN, c, cOff, cB0, cB1, cB2, cM, cN,
              beta);
}
} // namespace

// f32 <-> f16, which LLVM calls as compiler-rt builtins where the CPU has no
// conversion instructions (--cpu=x86-64; x86-64-v3 has F16C): fp16 code on
// the CPU (lcc --precision=fp16) emulates half precision with them. Only
// compilers with the _Float16 type can define them with the ABI LLVM expects
// (the value in an SSE register).
#ifdef __FLT16_MAX__
extern "C" __attribute__((visibility("default"))) _Float16 __truncsfhf2(float x) {
  return __builtin_bit_cast(_Float16, lcc::roundToHalf(x));
}
extern "C" __attribute__((visibility("default"))) float __extendhfsf2(_Float16 h) {
  return lcc::widenHalf(__builtin_bit_cast(uint16_t, h));
}
#endif


// bf16 (lcc --precision=bf16) or f16 (fp16) A and B, f32 C.
extern "C" __attribute__((visibility("default"))) void lcc_bf16gemm(LCC_GEMM_PARAMS) {
  widenedGemm(lcc::widenBfloat16, LCC_GEMM_ARGS);
}
extern "C" __attribute__((visibility("default"))) void lcc_hgemm(LCC_GEMM_PARAMS) {
  widenedGemm(lcc::widenHalf, LCC_GEMM_ARGS);
}

namespace lcc {

const RuntimeSymbol *cpuKernelSymbols() {
  static const RuntimeSymbol table[] = {
      {"lcc_sgemm", reinterpret_cast<void *>(&lcc_sgemm)},
      {"lcc_dgemm", reinterpret_cast<void *>(&lcc_dgemm)},
      {"lcc_bf16gemm", reinterpret_cast<void *>(&lcc_bf16gemm)},
      {"lcc_hgemm", reinterpret_cast<void *>(&lcc_hgemm)},
      {"lcc_parallel_for", reinterpret_cast<void *>(&lcc_parallel_for)},
      {"lcc_attention_fwd", reinterpret_cast<void *>(&lcc_attention_fwd)},
      {"lcc_attention_bwd", reinterpret_cast<void *>(&lcc_attention_bwd)},
      {nullptr, nullptr}};
  return table;
}

void gemmAccumulate(int64_t m, int64_t n, int64_t k, const float *a, int64_t aRow, int64_t aCol,
                    const float *b, int64_t bRow, int64_t bCol, float *c, int64_t cRow,
                    int64_t cCol, bool overwrite) {
  singleThreadedBlas();
  gemmOne(m, n, k, a, Matrix{aRow, aCol}, b, Matrix{bRow, bCol}, c, Matrix{cRow, cCol}, overwrite);
}

void gemmAccumulate(int64_t m, int64_t n, int64_t k, const double *a, int64_t aRow,
                    int64_t aCol, const double *b, int64_t bRow, int64_t bCol, double *c,
                    int64_t cRow, int64_t cCol, bool overwrite) {
  singleThreadedBlas();
  gemmOne(m, n, k, a, Matrix{aRow, aCol}, b, Matrix{bRow, bCol}, c, Matrix{cRow, cCol}, overwrite);
}

bool cpuKernelsHaveBlas() {
#ifdef LCC_HAVE_CBLAS
  return true;
#else
  return false;
#endif
}

const char *betterBlasCoreType(const char *current, bool userChose, bool avx512, bool avx2Fma) {
  if (userChose || !current || std::strcmp(current, "Prescott") != 0)
    return nullptr;
  return avx512 ? "SkylakeX" : avx2Fma ? "Haswell" : nullptr;
}

const char *betterBlasCoreType() {
#if defined(LCC_HAVE_CBLAS) && defined(OPENBLAS_VERSION)
  // The kernels of the code levels this CPU runs (CpuProgram.h): v4 has
  // AVX-512, v3 AVX2 and FMA.
  std::vector<std::string> targets = hostCpuTargets();
  auto runs = [&](const char *t) {
    return std::find(targets.begin(), targets.end(), t) != targets.end();
  };
  return betterBlasCoreType(openblas_get_corename(), std::getenv("OPENBLAS_CORETYPE") != nullptr,
                            runs("cpu-x86_64-v4"), runs("cpu-x86_64-v3"));
#else
  return nullptr;
#endif
}

std::string blasDescription() {
#if defined(LCC_HAVE_CBLAS) && defined(OPENBLAS_VERSION)
  return std::string("OpenBLAS ") + openblas_get_corename();
#elif defined(LCC_HAVE_CBLAS)
  return "BLAS";
#else
  return "no BLAS";
#endif
}

} // namespace lcc
