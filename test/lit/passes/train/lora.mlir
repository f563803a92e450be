// RUN: lcc-opt %s --lcc-lora="rank=2 alpha=4 targets=c_attn" | FileCheck %s
// RUN: lcc-opt %s --lcc-lora="rank=2 alpha=4 targets=h.*.weight rslora=true" | FileCheck %s --check-prefix=GLOB
// RUN: lcc-opt %s --lcc-lora="rank=2 alpha=4 targets=c_attn" --lcc-autodiff | FileCheck %s --check-prefix=GRAD
// Tests passes/train/Lora.cpp: adapters on a matmul weight, the base frozen.

// W [in 8, out 6] used as x @ W gets A [2, 8] and B [6, 2] right after it;
// y = x @ W + (alpha / rank) * ((x @ A^T) @ B^T); every base parameter is frozen.
// CHECK: module attributes {lcc.lora = {adapters = [{a = "h.0.c_attn.lora_A.weight", b = "h.0.c_attn.lora_B.weight", base = "h.0.c_attn.weight", transposed = false}], alpha = 4.000000e+00 : f64, rank = 2 : i64, rslora = false, scale = 2.000000e+00 : f64}}
// CHECK-LABEL: func.func @init() -> (tensor<8x6xf32>, tensor<8x6xf32>, tensor<2x8xf32>, tensor<6x2xf32>)
// CHECK: lcc.random_uniform %{{.*}} {high = 0.35355339059327373 : f64, low = -0.35355339059327373 : f64} : tensor<2x8xf32>
// CHECK: lcc.fill {value = 0.000000e+00 : f64} : tensor<6x2xf32>
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[E:[a-z0-9]+]]: tensor<8x6xf32> {lcc.frozen, lcc.param = "emb"}
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<8x6xf32> {lcc.frozen, lcc.param = "h.0.c_attn.weight"}
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<2x8xf32> {lcc.param = "h.0.c_attn.lora_A.weight"}
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<6x2xf32> {lcc.param = "h.0.c_attn.lora_B.weight"}
// CHECK: %[[Y:.*]] = lcc.matmul %[[X:.*]], %[[W]] : tensor<1x4x8xf32>, tensor<8x6xf32> -> tensor<1x4x6xf32>
// CHECK: %[[D:.*]] = lcc.matmul %[[X]], %[[A]] {transpose_rhs = true} : tensor<1x4x8xf32>, tensor<2x8xf32> -> tensor<1x4x2xf32>
// CHECK: %[[S:.*]] = lcc.fill {value = 2.000000e+00 : f64} : tensor<f32>
// CHECK: %[[DS:.*]] = lcc.mul %[[D]], %[[S]]
// CHECK: %[[U:.*]] = lcc.matmul %[[DS]], %[[B]] {transpose_rhs = true} : tensor<1x4x2xf32>, tensor<6x2xf32> -> tensor<1x4x6xf32>
// CHECK: %[[SUM:.*]] = lcc.add %[[Y]], %[[U]]
// CHECK: lcc.matmul %[[SUM]], %[[E]] {transpose_rhs = true}

// A glob: rsLoRA's scale alpha / sqrt(rank).
// GLOB: rslora = true, scale = 2.82842712474618{{[0-9]*}} : f64

// Autodiff returns gradients of the adapters only.
// GRAD-LABEL: func.func @forward_grad(
// GRAD-SAME: -> (tensor<f32>, tensor<2x8xf32> {lcc.grad_of = "h.0.c_attn.lora_A.weight"}, tensor<6x2xf32> {lcc.grad_of = "h.0.c_attn.lora_B.weight"})

func.func @init() -> (tensor<8x6xf32>, tensor<8x6xf32>) {
  %s = arith.constant 7 : i64
  %e = lcc.random_normal %s {std = 0.02 : f64} : tensor<8x6xf32>
  %w = lcc.random_normal %s {std = 0.02 : f64} : tensor<8x6xf32>
  return %e, %w : tensor<8x6xf32>, tensor<8x6xf32>
}

func.func @forward(%e: tensor<8x6xf32> {lcc.param = "emb"}, %w: tensor<8x6xf32> {lcc.param = "h.0.c_attn.weight"},
                   %x: tensor<1x4x8xf32> {lcc.input = "x"}, %t: tensor<1x4xi32> {lcc.input = "t"}) -> tensor<f32> {
  %y = lcc.matmul %x, %w : tensor<1x4x8xf32>, tensor<8x6xf32> -> tensor<1x4x6xf32>
  %l = lcc.matmul %y, %e {transpose_rhs = true} : tensor<1x4x6xf32>, tensor<8x6xf32> -> tensor<1x4x8xf32>
  %c = lcc.cross_entropy %l, %t : tensor<1x4x8xf32>, tensor<1x4xi32> -> tensor<f32>
  return %c : tensor<f32>
}
