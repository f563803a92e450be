// RUN: lcc-opt %s --lcc-shard-tp="tp=2" | FileCheck %s
// RUN: lcc-opt %s --lcc-shard-tp="tp=2" --lcc-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: lcc-opt %s --lcc-shard-tp="tp=1" | FileCheck %s --check-prefix=ONE
// Tests passes/shard/ShardTensorParallel.cpp.

// An attention block with a fused q/k/v projection (3 blocks of 8 features,
// 4 heads of 2) and an output projection, over 2 tensor-parallel ranks.
// CHECK: module attributes {lcc.process_groups = {tp = 2 : i64}}
// Column-parallel q/k/v: each rank holds half of each block (2 heads of q,
// of k and of v); the bias likewise. Row-parallel projection: half its rows.
// Its bias is added after the all_reduce, whole.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: tensor<4x12xf32> {lcc.param = "qkv.w", lcc.shard = {blocks = 3 : i64, dim = 1 : i64, group = "tp", parts = 2 : i64, shape = array<i64: 4, 24>}}
// CHECK-SAME: tensor<12xf32> {lcc.param = "qkv.b", lcc.shard = {blocks = 3 : i64, dim = 0 : i64, group = "tp", parts = 2 : i64, shape = array<i64: 24>}}
// CHECK-SAME: tensor<4x4xf32> {lcc.param = "proj.w", lcc.shard = {blocks = 1 : i64, dim = 0 : i64, group = "tp", parts = 2 : i64, shape = array<i64: 8, 4>}}
// CHECK-SAME: tensor<4xf32> {lcc.param = "proj.b"}
// CHECK:      %[[X:.*]] = lcc.mul %arg5, %arg4
// CHECK-NEXT: %[[IN:.*]] = lcc.parallel_copy %[[X]] {group = "tp"} : tensor<2x3x4xf32>
// CHECK:      lcc.matmul %[[IN]], %arg0 : tensor<2x3x4xf32>, tensor<4x12xf32> -> tensor<2x3x12xf32>
// The block slices select this rank's part of q, k and v.
// CHECK:      lcc.slice %{{.*}} {limit = array<i64: 2, 3, 4>, start = array<i64: 0, 0, 0>} : tensor<2x3x12xf32> -> tensor<2x3x4xf32>
// CHECK:      lcc.slice %{{.*}} {limit = array<i64: 2, 3, 8>, start = array<i64: 0, 0, 4>}
// CHECK:      lcc.slice %{{.*}} {limit = array<i64: 2, 3, 12>, start = array<i64: 0, 0, 8>}
// CHECK:      lcc.attention {{.*}} : tensor<2x2x3x2xf32>, tensor<2x2x3x2xf32>, tensor<2x2x3x2xf32>
// CHECK:      %[[P:.*]] = lcc.matmul %{{.*}}, %arg2 : tensor<2x3x4xf32>, tensor<4x4xf32> -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[S:.*]] = lcc.all_reduce %[[P]] {group = "tp"} : tensor<2x3x4xf32>
// CHECK-NEXT: lcc.add %[[S]], %arg3
// The residual uses the input itself, not the copy.
// CHECK:      lcc.add %[[X]],

// The backward autodiff derives: the copy's gradient is summed over the
// ranks (Megatron's f), the all_reduce's passes through (g): one all_reduce
// in the forward, one in the backward, on the way to in.scale's gradient.
// GRAD-LABEL: func.func @forward_grad(
// GRAD:       lcc.all_reduce %{{.*}} {group = "tp"} : tensor<2x3x4xf32>
// GRAD:       lcc.cross_entropy
// GRAD:       %[[DX:.*]] = lcc.all_reduce %{{.*}} {group = "tp"} : tensor<2x3x4xf32>
// GRAD:       lcc.mul %{{.*}}, %arg5
// GRAD-NOT:   lcc.all_reduce
// GRAD:       return

// ONE-NOT: lcc.parallel_copy
// ONE-NOT: lcc.process_groups
func.func @forward(%w1: tensor<4x24xf32> {lcc.param = "qkv.w"}, %b1: tensor<24xf32> {lcc.param = "qkv.b"},
                   %w2: tensor<8x4xf32> {lcc.param = "proj.w"}, %b2: tensor<4xf32> {lcc.param = "proj.b"},
                   %g: tensor<4xf32> {lcc.param = "in.scale"},
                   %x0: tensor<2x3x4xf32> {lcc.input = "x"}, %y: tensor<2x3xi32> {lcc.input = "y"}) -> tensor<f32> {
  %x = lcc.mul %x0, %g : tensor<2x3x4xf32>, tensor<4xf32> -> tensor<2x3x4xf32>
  %h = lcc.matmul %x, %w1 : tensor<2x3x4xf32>, tensor<4x24xf32> -> tensor<2x3x24xf32>
  %hb = lcc.add %h, %b1 : tensor<2x3x24xf32>, tensor<24xf32> -> tensor<2x3x24xf32>
  %q = lcc.slice %hb {start = array<i64: 0, 0, 0>, limit = array<i64: 2, 3, 8>} : tensor<2x3x24xf32> -> tensor<2x3x8xf32>
  %k = lcc.slice %hb {start = array<i64: 0, 0, 8>, limit = array<i64: 2, 3, 16>} : tensor<2x3x24xf32> -> tensor<2x3x8xf32>
  %v = lcc.slice %hb {start = array<i64: 0, 0, 16>, limit = array<i64: 2, 3, 24>} : tensor<2x3x24xf32> -> tensor<2x3x8xf32>
  %q4 = lcc.reshape %q : tensor<2x3x8xf32> -> tensor<2x3x4x2xf32>
  %k4 = lcc.reshape %k : tensor<2x3x8xf32> -> tensor<2x3x4x2xf32>
  %v4 = lcc.reshape %v : tensor<2x3x8xf32> -> tensor<2x3x4x2xf32>
  %qt = lcc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x3x4x2xf32> -> tensor<2x4x3x2xf32>
  %kt = lcc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x3x4x2xf32> -> tensor<2x4x3x2xf32>
  %vt = lcc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x3x4x2xf32> -> tensor<2x4x3x2xf32>
  %a = lcc.attention %qt, %kt, %vt {causal = true} : tensor<2x4x3x2xf32>, tensor<2x4x3x2xf32>, tensor<2x4x3x2xf32>
  %at = lcc.transpose %a {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x3x2xf32> -> tensor<2x3x4x2xf32>
  %am = lcc.reshape %at : tensor<2x3x4x2xf32> -> tensor<2x3x8xf32>
  %o = lcc.matmul %am, %w2 : tensor<2x3x8xf32>, tensor<8x4xf32> -> tensor<2x3x4xf32>
  %ob = lcc.add %o, %b2 : tensor<2x3x4xf32>, tensor<4xf32> -> tensor<2x3x4xf32>
  %r = lcc.add %x, %ob : tensor<2x3x4xf32>, tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %l = lcc.cross_entropy %r, %y : tensor<2x3x4xf32>, tensor<2x3xi32> -> tensor<f32>
  return %l : tensor<f32>
}
