// RUN: lcc-opt %s --lcc-gemm-to-library -verify-diagnostics
// Tests passes/kernels/GemmToLibrary.cpp.

// The kernel's name is taken with another signature.
// expected-error @+1 {{lcc-gemm-to-library: @lcc_sgemm is defined with another signature; expected 28 i64 arguments and no result (runtime/cpu/CpuKernels.h)}}
func.func private @lcc_sgemm(i32)

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @mm(%x: memref<3x4xf32>, %y: memref<4x5xf32>, %z: memref<3x5xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %y : memref<3x4xf32>, memref<4x5xf32>) outs(%z : memref<3x5xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}
