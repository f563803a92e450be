// RUN: lcc-opt %s --lcc-gemm-to-library="explain=true" -verify-diagnostics | FileCheck %s
// Tests passes/kernels/GemmToLibrary.cpp's `explain`: every multiplying
// reduction of two buffers left a loop nest says why; GEMMs, plain sums and
// one-buffer reductions say nothing.

#mk = affine_map<(m, n, k) -> (m, k)>
#kn = affine_map<(m, n, k) -> (k, n)>
#mn = affine_map<(m, n, k) -> (m, n)>

// A plain GEMM becomes a library call, with no remark.
// CHECK-LABEL: func.func @gemm(
// CHECK:         call @lcc_sgemm(
func.func @gemm(%a: memref<3x4xf32>, %b: memref<4x5xf32>, %c: memref<3x5xf32>) {
  linalg.generic {indexing_maps = [#mk, #kn, #mn],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<3x4xf32>, memref<4x5xf32>) outs(%c : memref<3x5xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// A product with an op fused into its body stays a loop nest.
// CHECK-LABEL: func.func @fused(
// CHECK:         linalg.generic
func.func @fused(%a: memref<3x4xf32>, %b: memref<4x5xf32>, %c: memref<3x5xf32>) {
  // expected-remark @below {{lcc-gemm-to-library: not a library GEMM (stays a loop nest): its body is not exactly out + a * b (something was fused into it)}}
  linalg.generic {indexing_maps = [#mk, #kn, #mn],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<3x4xf32>, memref<4x5xf32>) outs(%c : memref<3x5xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %e = math.exp %p : f32
    %m = arith.mulf %e, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// A matrix-vector product: the result has one dimension.
// CHECK-LABEL: func.func @matvec(
// CHECK:         linalg.generic
func.func @matvec(%a: memref<3x4xf32>, %x: memref<4xf32>, %y: memref<3xf32>) {
  // expected-remark @below {{its result has fewer than two dimensions (a matrix-vector product)}}
  linalg.generic {indexing_maps = [affine_map<(m, k) -> (m, k)>, affine_map<(m, k) -> (k)>,
                                   affine_map<(m, k) -> (m)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%a, %x : memref<3x4xf32>, memref<4xf32>) outs(%y : memref<3xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// A sum of squares reduces and multiplies but reads one buffer: no GEMM
// candidate, no remark.
// CHECK-LABEL: func.func @squares(
func.func @squares(%a: memref<3x4xf32>, %y: memref<3xf32>) {
  linalg.generic {indexing_maps = [affine_map<(m, k) -> (m, k)>, affine_map<(m, k) -> (m)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<3x4xf32>) outs(%y : memref<3xf32>) {
  ^bb0(%p: f32, %acc: f32):
    %m = arith.mulf %p, %p : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// A plain sum is no GEMM candidate: no remark.
// CHECK-LABEL: func.func @sum(
func.func @sum(%a: memref<3x4xf32>, %y: memref<3xf32>) {
  linalg.generic {indexing_maps = [affine_map<(m, k) -> (m, k)>, affine_map<(m, k) -> (m)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<3x4xf32>) outs(%y : memref<3xf32>) {
  ^bb0(%p: f32, %acc: f32):
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
