// RUN: lcc-opt %s --lcc-cpu-pipeline | FileCheck %s
// RUN: sed -e 's/xf32>/xf64>/g' -e 's/tensor<f32>/tensor<f64>/g' %s | lcc-opt --lcc-cpu-pipeline | FileCheck %s
// RUN: sed -e 's/xf32>/xbf16>/g' -e 's/tensor<f32>/tensor<bf16>/g' %s | lcc-opt --lcc-cpu-pipeline | FileCheck %s

// Every lcc op, each result returned so none is erased as dead code before
// bufferization: the whole pipeline must take all of them to the LLVM
// dialect (the second and third runs repeat it in f64 and bf16).

// CHECK-NOT: {{^ *(%[^ ]+ = )?lcc\.}}
// CHECK-NOT: linalg.
// CHECK-NOT: tensor.
// CHECK-NOT: memref.
// CHECK-NOT: math.
// CHECK:     llvm.func @every_op(
// CHECK-NOT: {{^ *(%[^ ]+ = )?lcc\.}}
// CHECK-NOT: linalg.
// CHECK-NOT: tensor.
// CHECK-NOT: memref.
// CHECK-NOT: math.
// CHECK-NOT: func.func
// CHECK-NOT: bufferization.
func.func @every_op(%x: tensor<2x3x4xf32>, %w: tensor<4xf32>, %m: tensor<4x5xf32>, %tok: tensor<2x3xi32>, %tab: tensor<10x4xf32>, %q: tensor<1x4x3x8xf32>, %kv: tensor<1x2x3x8xf32>) -> (tensor<f32>, tensor<2x3x4xf32>, tensor<4x5xf32>, tensor<4xf32>, tensor<2x3xi64>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xi1>, tensor<2x3x4xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<1x3x1xf32>, tensor<2x3xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x5xf32>, tensor<2x3x5xf32>, tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32>, tensor<6x5xf32>, tensor<5x6xf32>, tensor<5x3xf32>, tensor<5x6xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<f32>) {
  %c = lcc.constant dense<2.0> : tensor<f32>
  %f = lcc.fill {value = 1.0 : f64} : tensor<2x3x4xf32>
  %s7 = arith.constant 7 : i64
  %s3 = arith.constant 3 : i64
  %rn = lcc.random_normal %s7 {std = 0.02 : f64} : tensor<4x5xf32>
  %ru = lcc.random_uniform %s3 {low = -1.0 : f64, high = 1.0 : f64} : tensor<4xf32>
  %io = lcc.iota {dim = 1 : i64} : tensor<2x3xi64>
  %iof = lcc.iota {dim = 2 : i64} : tensor<2x3x4xf32>
  %a0 = lcc.neg %x : tensor<2x3x4xf32>
  %a1 = lcc.exp %a0 : tensor<2x3x4xf32>
  %a2 = lcc.log %a1 : tensor<2x3x4xf32>
  %a3 = lcc.tanh %a2 : tensor<2x3x4xf32>
  %a4 = lcc.erf %a3 : tensor<2x3x4xf32>
  %a5 = lcc.sqrt %a1 : tensor<2x3x4xf32>
  %a6 = lcc.rsqrt %a5 : tensor<2x3x4xf32>
  %a7 = lcc.relu %a6 : tensor<2x3x4xf32>
  %a8 = lcc.sigmoid %a7 : tensor<2x3x4xf32>
  %a9 = lcc.silu %a8 : tensor<2x3x4xf32>
  %g0 = lcc.gelu %a9 : tensor<2x3x4xf32>
  %g1 = lcc.gelu %g0 {approximate = "tanh"} : tensor<2x3x4xf32>
  %b0 = lcc.add %g1, %w : tensor<2x3x4xf32>, tensor<4xf32> -> tensor<2x3x4xf32>
  %b1 = lcc.sub %b0, %c : tensor<2x3x4xf32>, tensor<f32> -> tensor<2x3x4xf32>
  %b2 = lcc.mul %b1, %f : tensor<2x3x4xf32>, tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %b3 = lcc.div %b2, %ru : tensor<2x3x4xf32>, tensor<4xf32> -> tensor<2x3x4xf32>
  %b4 = lcc.pow %b3, %c : tensor<2x3x4xf32>, tensor<f32> -> tensor<2x3x4xf32>
  %b5 = lcc.maximum %b4, %iof : tensor<2x3x4xf32>, tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %b6 = lcc.minimum %b5, %x : tensor<2x3x4xf32>, tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %cm = lcc.cmp "gt", %b6, %x : tensor<2x3x4xf32>, tensor<2x3x4xf32> -> tensor<2x3x4xi1>
  %wh = lcc.where %cm, %b6, %c : tensor<2x3x4xi1>, tensor<2x3x4xf32>, tensor<f32> -> tensor<2x3x4xf32>
  %cv = lcc.convert %io : tensor<2x3xi64> -> tensor<2x3xf32>
  %r0 = lcc.reduce_sum %wh {axes = array<i64: 2>} : tensor<2x3x4xf32> -> tensor<2x3xf32>
  %r1 = lcc.reduce_mean %wh {axes = array<i64: 0, 2>, keepdim = true} : tensor<2x3x4xf32> -> tensor<1x3x1xf32>
  %r2 = lcc.reduce_max %wh {axes = array<i64: -1>} : tensor<2x3x4xf32> -> tensor<2x3xf32>
  %s0 = lcc.softmax %wh : tensor<2x3x4xf32>
  %s1 = lcc.log_softmax %s0 {axis = 1 : i64} : tensor<2x3x4xf32>
  %ln = lcc.layer_norm %s1, %w, %w : tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>
  %rm = lcc.rms_norm %ln, %w : tensor<2x3x4xf32>, tensor<4xf32>
  %mm = lcc.matmul %rm, %m : tensor<2x3x4xf32>, tensor<4x5xf32> -> tensor<2x3x5xf32>
  %mt = lcc.matmul %rm, %rn {transpose_rhs = false, transpose_lhs = false} : tensor<2x3x4xf32>, tensor<4x5xf32> -> tensor<2x3x5xf32>
  %at = lcc.attention %q, %kv, %kv {causal = true} : tensor<1x4x3x8xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>
  %ro = lcc.rope %at : tensor<1x4x3x8xf32>
  %cmk = lcc.causal_mask %ro : tensor<1x4x3x8xf32>
  %rs = lcc.reshape %mm : tensor<2x3x5xf32> -> tensor<6x5xf32>
  %tr = lcc.transpose %rs {perm = array<i64: 1, 0>} : tensor<6x5xf32> -> tensor<5x6xf32>
  %sl = lcc.slice %tr {start = array<i64: 0, 1>, limit = array<i64: 5, 6>, step = array<i64: 1, 2>} : tensor<5x6xf32> -> tensor<5x3xf32>
  %cc = lcc.concat %sl, %sl {axis = 1 : i64} : tensor<5x3xf32>, tensor<5x3xf32> -> tensor<5x6xf32>
  %bt = lcc.broadcast_to %r1 : tensor<1x3x1xf32> -> tensor<2x3x4xf32>
  %ga = lcc.gather %tab, %tok : tensor<10x4xf32>, tensor<2x3xi32> -> tensor<2x3x4xf32>
  %ce = lcc.cross_entropy %mm, %tok : tensor<2x3x5xf32>, tensor<2x3xi32> -> tensor<f32>
  return %c, %f, %rn, %ru, %io, %iof, %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7, %a8, %a9, %g0, %g1, %b0, %b1, %b2, %b3, %b4, %b5, %b6, %cm, %wh, %cv, %r0, %r1, %r2, %s0, %s1, %ln, %rm, %mm, %mt, %at, %ro, %cmk, %rs, %tr, %sl, %cc, %bt, %ga, %ce :
    tensor<f32>, tensor<2x3x4xf32>, tensor<4x5xf32>, tensor<4xf32>, tensor<2x3xi64>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xi1>, tensor<2x3x4xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<1x3x1xf32>, tensor<2x3xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x5xf32>, tensor<2x3x5xf32>, tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32>, tensor<6x5xf32>, tensor<5x6xf32>, tensor<5x3xf32>, tensor<5x6xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<f32>
}
