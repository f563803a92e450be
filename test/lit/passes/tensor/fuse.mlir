// RUN: lcc-opt %s --lcc-fuse | FileCheck %s
// Tests passes/tensor/Fuse.cpp.

// bias + tanh + exp: each feeds exactly one consumer, so the chain becomes one
// kernel; the matmul (a contraction) is left alone for BLAS; the exp result has
// two consumers, so it is not fused into them (it would be computed twice).
// CHECK: module attributes {lcc.fusion = {kernels_after = 4 : i64, kernels_before = 6 : i64}}
// CHECK-LABEL: func.func @chain(
// CHECK:         %[[MM:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-NEXT:    ^bb0(%{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT:      arith.mulf
// CHECK-NEXT:      arith.addf
// CHECK-NEXT:      linalg.yield
// CHECK:         %[[E:.*]] = linalg.generic {{.*}} ins(%[[MM]], %{{.*}} : tensor<4x8xf32>, tensor<8xf32>)
// CHECK:           arith.addf
// CHECK-NEXT:      math.tanh
// CHECK-NEXT:      math.exp
// CHECK-NEXT:      linalg.yield
// CHECK:         linalg.generic {{.*}} ins(%[[E]] : tensor<4x8xf32>)
// CHECK:         linalg.generic {{.*}} ins(%[[E]] : tensor<4x8xf32>)
#mk = affine_map<(m, n, k) -> (m, k)>
#kn = affine_map<(m, n, k) -> (k, n)>
#mn = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(m, n) -> (m, n)>
#row = affine_map<(m, n) -> (n)>
func.func @chain(%x: tensor<4x16xf32>, %w: tensor<16x8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<4x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm = linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<4x16xf32>, tensor<16x8xf32>) outs(%acc : tensor<4x8xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %biased = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<4x8xf32>, tensor<8xf32>) outs(%e0 : tensor<4x8xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %t = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%biased : tensor<4x8xf32>) outs(%e0 : tensor<4x8xf32>) {
  ^bb0(%p: f32, %o: f32):
    %s = math.tanh %p : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %ex = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t : tensor<4x8xf32>) outs(%e0 : tensor<4x8xf32>) {
  ^bb0(%p: f32, %o: f32):
    %s = math.exp %p : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %one = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ex : tensor<4x8xf32>) outs(%e0 : tensor<4x8xf32>) {
  ^bb0(%p: f32, %o: f32):
    %s = arith.addf %p, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %two = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ex : tensor<4x8xf32>) outs(%e0 : tensor<4x8xf32>) {
  ^bb0(%p: f32, %o: f32):
    %s = arith.mulf %p, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %one, %two : tensor<4x8xf32>, tensor<4x8xf32>
}
