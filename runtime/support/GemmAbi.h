//===- GemmAbi.h - the parameter list of lcc's GEMM calls -------*- C++ -*-===//
//
// The 28 int64 arguments every GEMM of compiled code takes, in order
// (runtime/cpu/CpuKernels.h says what each is): the CPU kernels
// (lcc_sgemm, ...) and the CUDA target's (lcc_cuda_sgemm, ...) declare and
// define their functions with these, so the order is written once.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_SUPPORT_GEMMABI_H
#define LCC_RUNTIME_SUPPORT_GEMMABI_H

#include <cstdint>

/// The parameters, for declarations and definitions.
#define LCC_GEMM_PARAMS                                                                            \
  int64_t nb0, int64_t nb1, int64_t nb2, int64_t m, int64_t n, int64_t k, int64_t a, int64_t aOff, \
      int64_t aB0, int64_t aB1, int64_t aB2, int64_t aM, int64_t aK, int64_t b, int64_t bOff,      \
      int64_t bB0, int64_t bB1, int64_t bB2, int64_t bK, int64_t bN, int64_t c, int64_t cOff,      \
      int64_t cB0, int64_t cB1, int64_t cB2, int64_t cM, int64_t cN, int64_t beta

/// The same names as arguments, to pass them on.
#define LCC_GEMM_ARGS                                                                              \
  nb0, nb1, nb2, m, n, k, a, aOff, aB0, aB1, aB2, aM, aK, b, bOff, bB0, bB1, bB2, bK, bN, c, cOff, \
      cB0, cB1, cB2, cM, cN, beta

#endif
