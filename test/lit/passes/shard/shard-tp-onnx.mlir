// RUN: lcc-opt %s --lcc-shard-tp="tp=2" | FileCheck %s
// RUN: lcc-opt %s --lcc-shard-tp="tp=2" --lcc-autodiff | FileCheck %s --check-prefix=GRAD
// Tests passes/shard/ShardTensorParallel.cpp on attention as PyTorch's ONNX export
// writes it: linear layers as x @ transpose(W[out, in]) with the bias added
// first, attention as matmuls with a constant scale, a constant causal mask
// (lcc.where) and a softmax; 2 heads of 2 over 2 ranks.

// The parameters split along their [out, in] rows (per q/k/v block) and
// columns; the transposes' results along the matmuls' dimensions.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: tensor<6x4xf32> {lcc.param = "c_attn.weight", lcc.shard = {blocks = 3 : i64, dim = 0 : i64, group = "tp", parts = 2 : i64, shape = array<i64: 12, 4>}}
// CHECK-SAME: tensor<6xf32> {lcc.param = "c_attn.bias", lcc.shard = {blocks = 3 : i64, dim = 0 : i64, group = "tp", parts = 2 : i64, shape = array<i64: 12>}}
// CHECK-SAME: tensor<4x2xf32> {lcc.param = "c_proj.weight", lcc.shard = {blocks = 1 : i64, dim = 1 : i64, group = "tp", parts = 2 : i64, shape = array<i64: 4, 4>}}
// CHECK:      %[[IN:.*]] = lcc.parallel_copy %arg3 {group = "tp"} : tensor<2x3x4xf32>
// CHECK:      %[[WT:.*]] = lcc.transpose %arg0 {perm = array<i64: 1, 0>} : tensor<6x4xf32> -> tensor<4x6xf32>
// CHECK:      %[[WOT:.*]] = lcc.transpose %arg2 {perm = array<i64: 1, 0>} : tensor<4x2xf32> -> tensor<2x4xf32>
// CHECK:      lcc.matmul %[[IN]], %[[WT]] : tensor<2x3x4xf32>, tensor<4x6xf32> -> tensor<2x3x6xf32>
// CHECK:      lcc.add %arg1, %{{.*}} : tensor<6xf32>, tensor<2x3x6xf32> -> tensor<2x3x6xf32>
// One head per rank: scores, the scale, the mask, the softmax, p @ v.
// CHECK:      lcc.matmul %{{.*}}, %{{.*}} : tensor<2x1x3x2xf32>, tensor<2x1x2x3xf32> -> tensor<2x1x3x3xf32>
// CHECK:      lcc.mul %{{.*}}, %{{.*}} : tensor<2x1x3x3xf32>, tensor<f32> -> tensor<2x1x3x3xf32>
// CHECK:      lcc.where %{{.*}}, %{{.*}}, %{{.*}} : tensor<3x3xi1>, tensor<f32>, tensor<2x1x3x3xf32> -> tensor<2x1x3x3xf32>
// CHECK:      lcc.softmax %{{.*}} {axis = 3 : i64} : tensor<2x1x3x3xf32>
// CHECK:      lcc.matmul %{{.*}}, %{{.*}} : tensor<2x1x3x3xf32>, tensor<2x1x3x2xf32> -> tensor<2x1x3x2xf32>
// CHECK:      %[[P:.*]] = lcc.matmul %{{.*}}, %[[WOT]] : tensor<2x3x2xf32>, tensor<2x4xf32> -> tensor<2x3x4xf32>
// CHECK-NEXT: lcc.all_reduce %[[P]] {group = "tp"} : tensor<2x3x4xf32>

// The backward needs no communication here (x is an input, so the copy's
// gradient is not built): each rank's gradients are those of its pieces.
// GRAD-LABEL: func.func @forward_grad(
// GRAD:       lcc.all_reduce
// GRAD:       lcc.cross_entropy
// GRAD-NOT:   lcc.all_reduce
// GRAD:       return {{.*}} : tensor<f32>, tensor<6x4xf32>, tensor<6xf32>, tensor<4x2xf32>
func.func @forward(%w: tensor<12x4xf32> {lcc.param = "c_attn.weight"}, %b: tensor<12xf32> {lcc.param = "c_attn.bias"},
                   %wo: tensor<4x4xf32> {lcc.param = "c_proj.weight"},
                   %x: tensor<2x3x4xf32> {lcc.input = "x"}, %y: tensor<2x3xi32> {lcc.input = "y"}) -> tensor<f32> {
  %wt = lcc.transpose %w {perm = array<i64: 1, 0>} : tensor<12x4xf32> -> tensor<4x12xf32>
  %wot = lcc.transpose %wo {perm = array<i64: 1, 0>} : tensor<4x4xf32> -> tensor<4x4xf32>
  %h = lcc.matmul %x, %wt : tensor<2x3x4xf32>, tensor<4x12xf32> -> tensor<2x3x12xf32>
  %hb = lcc.add %b, %h : tensor<12xf32>, tensor<2x3x12xf32> -> tensor<2x3x12xf32>
  %q = lcc.slice %hb {limit = array<i64: 2, 3, 4>, start = array<i64: 0, 0, 0>} : tensor<2x3x12xf32> -> tensor<2x3x4xf32>
  %k = lcc.slice %hb {limit = array<i64: 2, 3, 8>, start = array<i64: 0, 0, 4>} : tensor<2x3x12xf32> -> tensor<2x3x4xf32>
  %v = lcc.slice %hb {limit = array<i64: 2, 3, 12>, start = array<i64: 0, 0, 8>} : tensor<2x3x12xf32> -> tensor<2x3x4xf32>
  %q4 = lcc.reshape %q : tensor<2x3x4xf32> -> tensor<2x3x2x2xf32>
  %k4 = lcc.reshape %k : tensor<2x3x4xf32> -> tensor<2x3x2x2xf32>
  %v4 = lcc.reshape %v : tensor<2x3x4xf32> -> tensor<2x3x2x2xf32>
  %qt = lcc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x3x2x2xf32> -> tensor<2x2x3x2xf32>
  %kt = lcc.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : tensor<2x3x2x2xf32> -> tensor<2x2x2x3xf32>
  %vt = lcc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x3x2x2xf32> -> tensor<2x2x3x2xf32>
  %s = lcc.matmul %qt, %kt : tensor<2x2x3x2xf32>, tensor<2x2x2x3xf32> -> tensor<2x2x3x3xf32>
  %c = lcc.constant dense<0.5> : tensor<f32>
  %ss = lcc.mul %s, %c : tensor<2x2x3x3xf32>, tensor<f32> -> tensor<2x2x3x3xf32>
  %m = lcc.constant dense<[[false, true, true], [false, false, true], [false, false, false]]> : tensor<3x3xi1>
  %ninf = lcc.constant dense<-1.0e9> : tensor<f32>
  %sm = lcc.where %m, %ninf, %ss : tensor<3x3xi1>, tensor<f32>, tensor<2x2x3x3xf32> -> tensor<2x2x3x3xf32>
  %p = lcc.softmax %sm {axis = 3 : i64} : tensor<2x2x3x3xf32>
  %o = lcc.matmul %p, %vt : tensor<2x2x3x3xf32>, tensor<2x2x3x2xf32> -> tensor<2x2x3x2xf32>
  %ot = lcc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : tensor<2x2x3x2xf32> -> tensor<2x3x2x2xf32>
  %o3 = lcc.reshape %ot : tensor<2x3x2x2xf32> -> tensor<2x3x4xf32>
  %r = lcc.matmul %o3, %wot : tensor<2x3x4xf32>, tensor<4x4xf32> -> tensor<2x3x4xf32>
  %l = lcc.cross_entropy %r, %y : tensor<2x3x4xf32>, tensor<2x3xi32> -> tensor<f32>
  return %l : tensor<f32>
}
