//===- CpuKernels.cpp - library kernels the compiled CPU code calls --------===//
#include "runtime/CpuKernels.h"

#include <cstring>
#include <vector>

#ifdef LCC_HAVE_CBLAS
#include <cblas.h>
#endif

namespace {

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
           Matrix cs) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      T acc = c[i * cs.row + j * cs.col];
      for (int64_t p = 0; p < k; ++p)
        acc += a[i * as.row + p * as.col] * b[p * bs.row + j * bs.col];
      c[i * cs.row + j * cs.col] = acc;
    }
}

template <typename T>
void gemm(int64_t nb0, int64_t nb1, int64_t nb2, int64_t m, int64_t n, int64_t k, int64_t a,
          int64_t aOff, int64_t aB0, int64_t aB1, int64_t aB2, int64_t aM, int64_t aK,
          int64_t b, int64_t bOff, int64_t bB0, int64_t bB1, int64_t bB2, int64_t bK,
          int64_t bN, int64_t c, int64_t cOff, int64_t cB0, int64_t cB1, int64_t cB2,
          int64_t cM, int64_t cN) {
  const T *A = reinterpret_cast<const T *>(a) + aOff;
  const T *B = reinterpret_cast<const T *>(b) + bOff;
  T *C = reinterpret_cast<T *>(c) + cOff;
  Matrix as{aM, aK}, bs{bK, bN}, cs{cM, cN};
  for (int64_t i0 = 0; i0 < nb0; ++i0)
    for (int64_t i1 = 0; i1 < nb1; ++i1)
      for (int64_t i2 = 0; i2 < nb2; ++i2) {
        const T *Ai = A + i0 * aB0 + i1 * aB1 + i2 * aB2;
        const T *Bi = B + i0 * bB0 + i1 * bB1 + i2 * bB2;
        T *Ci = C + i0 * cB0 + i1 * cB1 + i2 * cB2;
        if (m == 0 || n == 0)
          continue;
#ifdef LCC_HAVE_CBLAS
        CBLAS_TRANSPOSE ta, tb, tc;
        int64_t lda, ldb, ldc;
        // C must be a row-major matrix with unit column stride for cblas.
        if (k > 0 && blasView(as, m, k, CblasNoTrans, CblasTrans, ta, lda) &&
            blasView(bs, k, n, CblasNoTrans, CblasTrans, tb, ldb) &&
            blasView(cs, m, n, CblasNoTrans, CblasTrans, tc, ldc) && tc == CblasNoTrans) {
          if constexpr (sizeof(T) == 4)
            cblas_sgemm(CblasRowMajor, ta, tb, int(m), int(n), int(k), 1.0f, Ai, int(lda), Bi,
                        int(ldb), 1.0f, Ci, int(ldc));
          else
            cblas_dgemm(CblasRowMajor, ta, tb, int(m), int(n), int(k), 1.0, Ai, int(lda), Bi,
                        int(ldb), 1.0, Ci, int(ldc));
          continue;
        }
#endif
        naive(m, n, k, Ai, as, Bi, bs, Ci, cs);
      }
}

} // namespace

extern "C" __attribute__((visibility("default"))) void
lcc_sgemm(int64_t nb0, int64_t nb1, int64_t nb2, int64_t m, int64_t n, int64_t k, int64_t a,
          int64_t aOff, int64_t aB0, int64_t aB1, int64_t aB2, int64_t aM, int64_t aK, int64_t b,
          int64_t bOff, int64_t bB0, int64_t bB1, int64_t bB2, int64_t bK, int64_t bN, int64_t c,
          int64_t cOff, int64_t cB0, int64_t cB1, int64_t cB2, int64_t cM, int64_t cN) {
  gemm<float>(nb0, nb1, nb2, m, n, k, a, aOff, aB0, aB1, aB2, aM, aK, b, bOff, bB0, bB1, bB2, bK,
              bN, c, cOff, cB0, cB1, cB2, cM, cN);
}

extern "C" __attribute__((visibility("default"))) void
lcc_dgemm(int64_t nb0, int64_t nb1, int64_t nb2, int64_t m, int64_t n, int64_t k, int64_t a,
          int64_t aOff, int64_t aB0, int64_t aB1, int64_t aB2, int64_t aM, int64_t aK, int64_t b,
          int64_t bOff, int64_t bB0, int64_t bB1, int64_t bB2, int64_t bK, int64_t bN, int64_t c,
          int64_t cOff, int64_t cB0, int64_t cB1, int64_t cB2, int64_t cM, int64_t cN) {
  gemm<double>(nb0, nb1, nb2, m, n, k, a, aOff, aB0, aB1, aB2, aM, aK, b, bOff, bB0, bB1, bB2, bK,
               bN, c, cOff, cB0, cB1, cB2, cM, cN);
}

namespace lcc {

const CpuKernelSymbol *cpuKernelSymbols() {
  static const CpuKernelSymbol table[] = {
      {"lcc_sgemm", reinterpret_cast<void *>(&lcc_sgemm)},
      {"lcc_dgemm", reinterpret_cast<void *>(&lcc_dgemm)},
      {nullptr, nullptr}};
  return table;
}

bool cpuKernelsHaveBlas() {
#ifdef LCC_HAVE_CBLAS
  return true;
#else
  return false;
#endif
}

} // namespace lcc
