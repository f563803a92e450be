//===- CpuKernels.h - library kernels the compiled CPU code calls -*- C++ -*-===//
//
// `lcc-gemm-to-library` replaces matmul loop nests with calls to these. They
// are C functions with only int64 arguments so the generated code needs no
// knowledge of C++ or of the BLAS in use:
//
//   lcc_sgemm(nb0, nb1, nb2, M, N, K,
//             A, aOffset, aStrideB0, aStrideB1, aStrideB2, aStrideM, aStrideK,
//             B, bOffset, bStrideB0, bStrideB1, bStrideB2, bStrideK, bStrideN,
//             C, cOffset, cStrideB0, cStrideB1, cStrideB2, cStrideM, cStrideN, beta)
//
// computes, for every batch index (i0 < nb0, i1 < nb1, i2 < nb2),
//   C[i, m, n] = beta * C[i, m, n] + sum_k A[i, m, k] * B[i, k, n]
// with beta 1 (accumulate) or 0 (overwrite: C's old contents, NaN included,
// are never read; lcc-gemm-to-library passes 0 instead of zero-filling C)
// where X[i, r, c] is the element at X + xOffset + i0*xStrideB0 + i1*xStrideB1
// + i2*xStrideB2 + r*xStride(row) + c*xStride(col), in elements (a stride may
// be 0: broadcast). A, B, C are addresses. Matrices with a unit stride in one
// dimension go to the BLAS (cblas_sgemm, row-major, with the transpose that
// matches); other layouts use a plain loop. lcc_dgemm is the same for double.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_CPUKERNELS_H
#define LCC_RUNTIME_CPUKERNELS_H

#include "runtime/support/GemmAbi.h"
#include "runtime/support/Symbol.h"

#include <cstdint>
#include <string>

extern "C" {
void lcc_sgemm(LCC_GEMM_PARAMS);
/// bf16 A and B (2-byte elements), f32 C; otherwise lcc_sgemm.
void lcc_bf16gemm(LCC_GEMM_PARAMS);
/// f16 A and B, f32 C; otherwise lcc_sgemm.
void lcc_hgemm(LCC_GEMM_PARAMS);
void lcc_dgemm(LCC_GEMM_PARAMS);
}

namespace lcc {

/// Every kernel, for JITs that bind symbols explicitly.
const RuntimeSymbol *cpuKernelSymbols();

/// Whether GEMMs go to a BLAS in this build (else plain loops).
bool cpuKernelsHaveBlas();

/// OpenBLAS built with DYNAMIC_ARCH (Debian's) picks its kernels by CPU
/// model when it is loaded, and falls back to "Prescott" (SSE3) on a model
/// newer than it knows: Debian 12's 0.3.21 on Emerald Rapids runs GEMMs 3x
/// slower than with its SkylakeX kernels. The OPENBLAS_CORETYPE to load it
/// with instead (SkylakeX where the CPU runs x86-64-v4 code, Haswell where it
/// runs x86-64-v3: hostCpuTargets), or null:
/// when the pick is not that fallback, the user set OPENBLAS_CORETYPE, or
/// the BLAS is not OpenBLAS. lcc-run restarts itself with it.
const char *betterBlasCoreType();
/// The rule, for tests: `current` is the core OpenBLAS picked.
const char *betterBlasCoreType(const char *current, bool userChose, bool avx512, bool avx2Fma);
/// "OpenBLAS <core>", "BLAS" or "no BLAS": what runs the GEMMs, for logs.
std::string blasDescription();

/// C += A B (or C = A B with `overwrite`: C is not read) with A m x k, B k x
/// n, C m x n, each given by its row and column strides (a transpose is
/// swapped strides): the BLAS when the strides allow, else loops. Runs on the
/// calling thread: callers split the work (the fused attention kernels,
/// runtime/cpu/Attention.h).
void gemmAccumulate(int64_t m, int64_t n, int64_t k, const float *a, int64_t aRow, int64_t aCol,
                    const float *b, int64_t bRow, int64_t bCol, float *c, int64_t cRow,
                    int64_t cCol, bool overwrite = false);
void gemmAccumulate(int64_t m, int64_t n, int64_t k, const double *a, int64_t aRow,
                    int64_t aCol, const double *b, int64_t bRow, int64_t bCol, double *c,
                    int64_t cRow, int64_t cCol, bool overwrite = false);

/// f32 -> IEEE binary16 bits (round to nearest even) and back (exact): what
/// __truncsfhf2 / __extendhfsf2 compute for fp16 code on the CPU.
uint16_t roundToHalf(float x);
float widenHalf(uint16_t h);
/// f32 -> bfloat16 bits (round to nearest even, NaN kept quiet) and back
/// (exact): what __truncsfbf2 computes for bf16 code on the CPU.
uint16_t roundToBfloat16(float x);
float widenBfloat16(uint16_t h);

} // namespace lcc

#endif
