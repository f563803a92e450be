// RUN: lcc-opt %s --lcc-autodiff --lcc-recompute=mode=none | FileCheck %s --check-prefix=NONE
// RUN: lcc-opt %s --lcc-autodiff --lcc-recompute=mode=full | FileCheck %s --check-prefix=FULL
// RUN: lcc-opt %s --lcc-autodiff --lcc-recompute=mode=selective | FileCheck %s --check-prefix=SEL
// RUN: lcc-opt %s --lcc-autodiff --lcc-recompute="mode=full layers=1" | FileCheck %s --check-prefix=FULL1
// Tests passes/train/Recompute.cpp on two layers (h.0, h.1: a norm-like
// tanh, a GEMM, GELU, a residual add) and a head outside any layer.

// none: the backward reads the forward's values (%[[N1]], %[[N0]]).
// NONE-NOT:    lcc.recompute
// NONE-LABEL:  func.func @forward_grad(
// NONE:          %[[N0:.*]] = lcc.tanh %arg0
// NONE:          %[[N1:.*]] = lcc.tanh %[[R0:[0-9]+]]
// NONE:          lcc.matmul %[[N1]], %{{.*}} {transpose_lhs = true}
// NONE:          lcc.matmul %[[N0]], %{{.*}} {transpose_lhs = true}
// NONE-NOT:      lcc.tanh

// full: each layer's backward makes its forward again from the layer's
// input (h.1's: h.0's output %[[R0]]; h.0's: the argument) right before
// the first op that reads it, GEMM included, and reads only the copies
// (marked {lcc.recomputed}: lcc-outline-layers outlines their runs even alone).
// The head (loc "head") is left alone. Per layer: [ops, FLOPs, bytes].
// FULL:         module attributes {lcc.recompute = {layers = {h.0 = array<i64: 2, 72, 64>, h.1 = array<i64: 2, 72, 64>}, mode = "full"}}
// FULL-LABEL:   func.func @forward_grad(
// FULL:           %[[R0:.*]] = lcc.add %{{.*}}, %arg0
// FULL:           lcc.reduce_sum
// FULL:           %[[C1:.*]] = lcc.tanh %[[R0]] {lcc.recomputed}
// FULL-NEXT:      %[[M1:.*]] = lcc.matmul %[[C1]], %arg2 {lcc.recomputed} :
// FULL-NEXT:      lcc.mul %[[M1]],
// FULL:           lcc.matmul %[[C1]], %{{.*}} {transpose_lhs = true}
// FULL:           %[[C0:.*]] = lcc.tanh %arg0 {lcc.recomputed}
// FULL-NEXT:      %[[M0:.*]] = lcc.matmul %[[C0]], %arg1 {lcc.recomputed} :
// FULL-NEXT:      lcc.mul %[[M0]],
// FULL:           lcc.matmul %[[C0]], %{{.*}} {transpose_lhs = true}
// FULL-NEXT:      return

// selective: only the cheap tanh is made again (its input is kept anyway);
// the GEMM's result stays kept (GELU's backward reads it).
// SEL:          module attributes {lcc.recompute = {layers = {h.0 = array<i64: 1, 8, 32>, h.1 = array<i64: 1, 8, 32>}, mode = "selective"}}
// SEL-LABEL:    func.func @forward_grad(
// SEL:            %[[M1:.*]] = lcc.matmul %{{.*}}, %arg2 :
// SEL:            lcc.mul %[[M1]], %{{.*}} : tensor<2x4xf32>, tensor<f32>
// SEL:            %[[C1:.*]] = lcc.tanh %{{.*}} {lcc.recomputed}
// SEL-NEXT:       lcc.matmul %[[C1]], %{{.*}} {transpose_lhs = true}
// SEL-NOT:        lcc.matmul {{.*}}, %arg
// SEL:            %[[C0:.*]] = lcc.tanh %arg0 {lcc.recomputed}
// SEL-NEXT:       lcc.matmul %[[C0]], %{{.*}} {transpose_lhs = true}

// layers=1 with full: h.0 full, the others (h.1) selective.
// FULL1:        module attributes {lcc.recompute = {layers = {h.0 = array<i64: 2, 72, 64>, h.1 = array<i64: 1, 8, 32>}, mode = "full"}}

func.func @forward(%x: tensor<2x4xf32> {lcc.input = "x"}, %w0: tensor<4x4xf32> {lcc.param = "h.0.w"},
                   %w1: tensor<4x4xf32> {lcc.param = "h.1.w"}) -> tensor<f32> {
  %n0 = lcc.tanh %x : tensor<2x4xf32> loc("h.0.norm")
  %m0 = lcc.matmul %n0, %w0 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32> loc("h.0.fc")
  %g0 = lcc.gelu %m0 : tensor<2x4xf32> loc("h.0.act")
  %r0 = lcc.add %g0, %x : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32> loc("h.0.")
  %n1 = lcc.tanh %r0 : tensor<2x4xf32> loc("h.1.norm")
  %m1 = lcc.matmul %n1, %w1 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32> loc("h.1.fc")
  %g1 = lcc.gelu %m1 : tensor<2x4xf32> loc("h.1.act")
  %r1 = lcc.add %g1, %r0 : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32> loc("h.1.")
  %l = lcc.mul %r1, %r1 : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32> loc("head")
  %s = lcc.reduce_sum %l {axes = array<i64: 0, 1>} : tensor<2x4xf32> -> tensor<f32> loc("head")
  return %s : tensor<f32>
}
