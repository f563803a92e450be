// RUN: lcc-opt %s --lcc-lora="rank=2 alpha=4 targets=q_proj,v_proj" | FileCheck %s
// Tests passes/train/Lora.cpp on weights as ONNX exports of nn.Linear hold them:
// the TorchScript exporter's Transpose(W) then MatMul (W [out, in]) becomes
// x @ W^T with adapters, and the dynamo exporter's folded transposed copy
// (lcc.folded_from names the module weight) is matched and its adapters named
// as that weight.

// CHECK: adapters = [{a = "m.layers.0.q_proj.lora_A.weight", b = "m.layers.0.q_proj.lora_B.weight", base = "m.layers.0.q_proj.weight", transposed = true}, {a = "m.layers.0.v_proj.lora_A.weight", b = "m.layers.0.v_proj.lora_B.weight", base = "val_7", transposed = false}]
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<6x8xf32> {lcc.frozen, lcc.param = "m.layers.0.q_proj.weight"}
// CHECK-SAME: %[[QA:[a-z0-9]+]]: tensor<2x8xf32> {lcc.param = "m.layers.0.q_proj.lora_A.weight"}
// CHECK-SAME: %[[QB:[a-z0-9]+]]: tensor<6x2xf32> {lcc.param = "m.layers.0.q_proj.lora_B.weight"}
// CHECK-SAME: %[[V:[a-z0-9]+]]: tensor<8x6xf32> {lcc.folded_from = "m.layers.0.v_proj.weight", lcc.frozen, lcc.param = "val_7"}
// CHECK-SAME: %[[VA:[a-z0-9]+]]: tensor<2x8xf32> {lcc.param = "m.layers.0.v_proj.lora_A.weight"}
// CHECK-SAME: %[[VB:[a-z0-9]+]]: tensor<6x2xf32> {lcc.param = "m.layers.0.v_proj.lora_B.weight"}
// CHECK-NOT: lcc.transpose
// CHECK: %[[Y:.*]] = lcc.matmul %[[X:.*]], %[[Q]] {transpose_rhs = true} : tensor<1x4x8xf32>, tensor<6x8xf32> -> tensor<1x4x6xf32>
// CHECK: lcc.matmul %[[X]], %[[QA]] {transpose_rhs = true}
// CHECK: lcc.matmul %[[X]], %[[V]] : tensor<1x4x8xf32>, tensor<8x6xf32> -> tensor<1x4x6xf32>
// CHECK: lcc.matmul %[[X]], %[[VA]] {transpose_rhs = true}

func.func @init() -> (tensor<6x8xf32>, tensor<8x6xf32>) {
  %s = arith.constant 7 : i64
  %q = lcc.random_normal %s {std = 0.02 : f64} : tensor<6x8xf32>
  %v = lcc.random_normal %s {std = 0.02 : f64} : tensor<8x6xf32>
  return %q, %v : tensor<6x8xf32>, tensor<8x6xf32>
}

func.func @forward(%q: tensor<6x8xf32> {lcc.param = "m.layers.0.q_proj.weight"},
                   %v: tensor<8x6xf32> {lcc.param = "val_7", lcc.folded_from = "m.layers.0.v_proj.weight"},
                   %x: tensor<1x4x8xf32> {lcc.input = "x"}) -> tensor<f32> {
  %qt = lcc.transpose %q {perm = array<i64: 1, 0>} : tensor<6x8xf32> -> tensor<8x6xf32>
  %y = lcc.matmul %x, %qt : tensor<1x4x8xf32>, tensor<8x6xf32> -> tensor<1x4x6xf32>
  %z = lcc.matmul %x, %v : tensor<1x4x8xf32>, tensor<8x6xf32> -> tensor<1x4x6xf32>
  %s = lcc.add %y, %z : tensor<1x4x6xf32>, tensor<1x4x6xf32> -> tensor<1x4x6xf32>
  %r = lcc.reduce_sum %s {axes = array<i64: 0, 1, 2>} : tensor<1x4x6xf32> -> tensor<f32>
  return %r : tensor<f32>
}
