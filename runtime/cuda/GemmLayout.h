//===- GemmLayout.h - lcc's GEMM ABI as cuBLASLt calls ----------*- C++ -*-===//
//
// lcc's GEMM calls (runtime/cpu/CpuKernels.h: row-major logical matrices with
// arbitrary strides, up to three batch dimensions, C += A B) become cuBLASLt
// matmuls, which are column-major with one strided batch dimension. The
// mapping, kept free of CUDA so it is tested on any machine:
//  - an operand whose rows are contiguous is a column-major matrix; one whose
//    columns are contiguous is the transpose of one;
//  - C is computed as is when its rows are contiguous, else as
//    C^T = B^T A^T (the usual row-major case);
//  - the innermost batch dimension of size > 1 is the strided batch; outer
//    ones fold into it when every operand's strides nest, else each of their
//    points is a separate call.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_CUDA_GEMMLAYOUT_H
#define LCC_RUNTIME_CUDA_GEMMLAYOUT_H

#include "runtime/cuda/CudaLaunch.h"

#include <string>
#include <vector>

namespace lcc {

/// One cuBLASLt operand: a column-major `rows` x `cols` matrix with leading
/// dimension `ld`, used transposed or not.
struct LtOperand {
  bool transpose = false;
  int64_t rows = 0, cols = 0, ld = 0;
};

/// D (m x n, column-major, leading dimension ldc) += op(X) op(Y), `batch`
/// times at the given element strides, once per point of `outer`.
struct LtGemm {
  std::string error;    // empty: the call maps
  bool swapped = false; // X is B and Y is A (C computed transposed)
  LtOperand x, y;
  int64_t m = 0, n = 0, k = 0, ldc = 0;
  int32_t batch = 1;
  int64_t strideX = 0, strideY = 0, strideC = 0;
  std::vector<int> outer; // batch dimensions looped over (indices 0..2)
};

LtGemm planLtGemm(const GemmCall &call);

/// Calls one GEMM needs (the points of `outer`).
int64_t ltCalls(const GemmCall &call, const LtGemm &plan);

/// Element address of operand X (0), Y (1) or C (2) for call `index`.
uint64_t ltAddress(const GemmCall &call, const LtGemm &plan, int operand, int64_t index);

} // namespace lcc

#endif
