// RUN: lcc-opt %s --lcc-gemm-to-library | FileCheck %s
// RUN: lcc-opt %s --lcc-gemm-to-library --cse | FileCheck %s --check-prefix=BETA
// Tests passes/kernels/GemmToLibrary.cpp.

// A batched matmul with a transposed, broadcast right operand (the tied
// output head's x @ wte.T): C[b, m, n] += A[b, m, k] * W[n, k].
// CHECK-LABEL: func.func private @lcc_sgemm(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64)
// CHECK-LABEL: func.func @head(
// CHECK-DAG:     %[[B:.*]] = arith.constant 2 : i64
// CHECK-DAG:     %[[M:.*]] = arith.constant 3 : i64
// CHECK-DAG:     %[[N:.*]] = arith.constant 5 : i64
// CHECK-DAG:     %[[K:.*]] = arith.constant 4 : i64
// CHECK:         %{{.*}}, %{{.*}}, %{{.*}}:2, %[[SW:.*]]:2 = memref.extract_strided_metadata %arg1
// CHECK:         %[[PW:.*]] = memref.extract_aligned_pointer_as_index %arg1
// CHECK:         %[[PWI:.*]] = arith.index_cast %[[PW]]
// CHECK:         %[[Z0:.*]] = arith.constant 0 : i64
// CHECK:         %[[Z1:.*]] = arith.constant 0 : i64
// CHECK:         %[[Z2:.*]] = arith.constant 0 : i64
// W is [n, k]: the k stride is its dim 1, the n stride its dim 0.
// CHECK:         %[[WK:.*]] = arith.index_cast %[[SW]]#1
// CHECK:         %[[WN:.*]] = arith.index_cast %[[SW]]#0
// batch sizes (2, 1, 1), M, N, K, A's 7 values, then W: pointer, offset, batch
// strides 0 (it has no batch dim: broadcast), k and n strides; C's 7 values,
// then beta 1: C accumulates (nothing zero-filled it here; after cse the
// function has one constant 1 : i64).
// CHECK:         call @lcc_sgemm(%[[B]], %{{.*}}, %{{.*}}, %[[M]], %[[N]], %[[K]], {{(%[a-z0-9_]+, )+}}%[[PWI]], %{{[0-9]+}}, %[[Z0]], %[[Z1]], %[[Z2]], %[[WK]], %[[WN]],
// BETA-LABEL:    func.func @head(
// BETA:          %[[ACC:.*]] = arith.constant 1 : i64
// BETA:          call @lcc_sgemm({{(%[a-z0-9_]+, )+}}%[[ACC]])
// CHECK-NOT:     linalg.generic
// CHECK:         return
#a = affine_map<(b, m, n, k) -> (b, m, k)>
#w = affine_map<(b, m, n, k) -> (n, k)>
#c = affine_map<(b, m, n, k) -> (b, m, n)>
func.func @head(%x: memref<2x3x4xf32>, %w: memref<5x4xf32>, %out: memref<2x3x5xf32>) {
  linalg.generic {indexing_maps = [#a, #w, #c],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<2x3x4xf32>, memref<5x4xf32>) outs(%out : memref<2x3x5xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// Not a GEMM: a reduction that is not a sum of products stays a generic, as
// does a bf16 matmul (no BLAS for it).
// CHECK-LABEL: func.func @not_gemm(
// CHECK-COUNT-2: linalg.generic
// CHECK-NOT:     call @lcc_
#a2 = affine_map<(m, n, k) -> (m, k)>
#b2 = affine_map<(m, n, k) -> (k, n)>
#c2 = affine_map<(m, n, k) -> (m, n)>
func.func @not_gemm(%a: memref<3x4xf32>, %b: memref<4x5xf32>, %c: memref<3x5xf32>,
                    %ah: memref<3x4xbf16>, %bh: memref<4x5xbf16>, %ch: memref<3x5xbf16>) {
  linalg.generic {indexing_maps = [#a2, #b2, #c2], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<3x4xf32>, memref<4x5xf32>) outs(%c : memref<3x5xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.maximumf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#a2, #b2, #c2], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%ah, %bh : memref<3x4xbf16>, memref<4x5xbf16>) outs(%ch : memref<3x5xbf16>) {
  ^bb0(%p: bf16, %q: bf16, %acc: bf16):
    %m = arith.mulf %p, %q : bf16
    %s = arith.addf %acc, %m : bf16
    linalg.yield %s : bf16
  }
  return
}

// bf16 operands widened into an f32 accumulator (lcc-precision's matmul):
// lcc_bf16gemm. A bf16 operand that is not simply widened (truncated again
// after the extension) is not a GEMM and stays a loop nest.
// CHECK-LABEL: func.func @bf16(
// CHECK:         call @lcc_bf16gemm(
// CHECK-NOT:     linalg.generic
// CHECK:         return
// CHECK-LABEL: func.func @not_widened(
// CHECK-NOT:     call @lcc_bf16gemm
// CHECK:         linalg.generic
#bfa = affine_map<(m, n, k) -> (m, k)>
#bfb = affine_map<(m, n, k) -> (k, n)>
#bfc = affine_map<(m, n, k) -> (m, n)>
func.func @bf16(%x: memref<3x4xbf16>, %w: memref<4x5xbf16>, %out: memref<3x5xf32>) {
  linalg.generic {indexing_maps = [#bfa, #bfb, #bfc], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<3x4xbf16>, memref<4x5xbf16>) outs(%out : memref<3x5xf32>) {
  ^bb0(%p: bf16, %q: bf16, %acc: f32):
    %pe = arith.extf %p : bf16 to f32
    %qe = arith.extf %q : bf16 to f32
    %m = arith.mulf %pe, %qe : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}
func.func @not_widened(%x: memref<3x4xbf16>, %w: memref<4x5xbf16>, %out: memref<3x5xf32>) {
  linalg.generic {indexing_maps = [#bfa, #bfb, #bfc], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<3x4xbf16>, memref<4x5xbf16>) outs(%out : memref<3x5xf32>) {
  ^bb0(%p: bf16, %q: bf16, %acc: f32):
    %pe = arith.extf %p : bf16 to f32
    %qe = arith.extf %q : bf16 to f32
    %qr = arith.mulf %qe, %qe : f32
    %m = arith.mulf %pe, %qr : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// f16 operands widened into an f32 accumulator (--precision=fp16): lcc_hgemm.
// CHECK-LABEL: func.func @f16(
// CHECK:         call @lcc_hgemm(
// CHECK-NOT:     linalg.generic
// CHECK:         return
func.func @f16(%x: memref<3x4xf16>, %w: memref<4x5xf16>, %out: memref<3x5xf32>) {
  linalg.generic {indexing_maps = [#bfa, #bfb, #bfc], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<3x4xf16>, memref<4x5xf16>) outs(%out : memref<3x5xf32>) {
  ^bb0(%p: f16, %q: f16, %acc: f32):
    %pe = arith.extf %p : f16 to f32
    %qe = arith.extf %q : f16 to f32
    %m = arith.mulf %pe, %qe : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// C zero-filled right before the GEMM (views and constants in between do not
// matter): the fill goes and the GEMM overwrites C (beta 0).
// CHECK-LABEL: func.func @fresh(
// CHECK-NOT:     linalg.fill
// CHECK:         call @lcc_sgemm(
// CHECK-NOT:     linalg.fill
// CHECK:         return
// BETA-LABEL:    func.func @fresh(
// BETA:          %[[OVERWRITE:.*]] = arith.constant 0 : i64
// BETA:          call @lcc_sgemm({{(%[a-z0-9_]+, )+}}%[[OVERWRITE]])
func.func @fresh(%a: memref<3x4xf32>, %b: memref<4x5xf32>, %c: memref<3x5xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<3x5xf32>)
  %v = memref.cast %a : memref<3x4xf32> to memref<3x4xf32>
  linalg.generic {indexing_maps = [#a2, #b2, #c2], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%v, %b : memref<3x4xf32>, memref<4x5xf32>) outs(%c : memref<3x5xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// Kept, with beta 1: a fill of another value; a zero fill whose buffer is
// read before the GEMM; a zero fill of another buffer.
// CHECK-LABEL: func.func @kept(
// CHECK:         linalg.fill
// CHECK:         call @lcc_sgemm(
// CHECK:         linalg.fill
// CHECK:         memref.copy
// CHECK:         call @lcc_sgemm(
// CHECK:         linalg.fill
// CHECK:         call @lcc_sgemm(
// BETA-LABEL:    func.func @kept(
// BETA:          %[[ONE:.*]] = arith.constant 1 : i64
// BETA-COUNT-3:  call @lcc_sgemm({{(%[a-z0-9_]+, )+}}%[[ONE]])
func.func @kept(%a: memref<3x4xf32>, %b: memref<4x5xf32>, %c: memref<3x5xf32>,
                %other: memref<3x5xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%c : memref<3x5xf32>)
  linalg.generic {indexing_maps = [#a2, #b2, #c2], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<3x4xf32>, memref<4x5xf32>) outs(%c : memref<3x5xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  linalg.fill ins(%zero : f32) outs(%c : memref<3x5xf32>)
  memref.copy %c, %other : memref<3x5xf32> to memref<3x5xf32>
  linalg.generic {indexing_maps = [#a2, #b2, #c2], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<3x4xf32>, memref<4x5xf32>) outs(%c : memref<3x5xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  linalg.fill ins(%zero : f32) outs(%other : memref<3x5xf32>)
  linalg.generic {indexing_maps = [#a2, #b2, #c2], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<3x4xf32>, memref<4x5xf32>) outs(%c : memref<3x5xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}
