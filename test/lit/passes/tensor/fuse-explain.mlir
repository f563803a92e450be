// RUN: lcc-opt %s --lcc-fuse="explain=true" -verify-diagnostics -mlir-print-op-on-diagnostic=false -o /dev/null
// Tests passes/tensor/Fuse.cpp's `explain`: each op still reading an unfused
// linalg.generic result says why (fuse-max-inputs.mlir has the bound's).
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
  // The fused bias + tanh + exp kernel keeps the matmul apart.
  // expected-remark @below {{a contraction stays a separate GEMM for the BLAS / cuBLASLt call}}
  %ex = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t : tensor<4x8xf32>) outs(%e0 : tensor<4x8xf32>) {
  ^bb0(%p: f32, %o: f32):
    %s = math.exp %p : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  // expected-remark @below {{its result has other uses (fused, it would be computed twice)}}
  %one = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ex : tensor<4x8xf32>) outs(%e0 : tensor<4x8xf32>) {
  ^bb0(%p: f32, %o: f32):
    %s = arith.addf %p, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  // expected-remark @below {{its result has other uses (fused, it would be computed twice)}}
  %two = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ex : tensor<4x8xf32>) outs(%e0 : tensor<4x8xf32>) {
  ^bb0(%p: f32, %o: f32):
    %s = arith.mulf %p, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %one, %two : tensor<4x8xf32>, tensor<4x8xf32>
}

// A per-row value read broadcast over the columns stays its own kernel.
#col = affine_map<(m, n) -> (m)>
#vec = affine_map<(m) -> (m)>
func.func @broadcast(%v: tensor<4xf32>, %x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e1 = tensor.empty() : tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#vec, #vec], iterator_types = ["parallel"]}
      ins(%v : tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%p: f32, %o: f32):
    %s = math.rsqrt %p : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  // expected-remark @below {{this op reads it broadcast (fused, it would be recomputed per broadcast position)}}
  %y = linalg.generic {indexing_maps = [#col, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r, %x : tensor<4xf32>, tensor<4x8xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.mulf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
