// RUN: lcc-opt %s --split-input-file --lcc-outline-layers | FileCheck %s
// RUN: lcc-opt %s --split-input-file --lcc-outline-layers --inline="default-pipeline=" --symbol-dce | FileCheck %s --check-prefix=BACK
// Tests passes/tensor/OutlineLayers.cpp.

// Four layers named by the DSL's loop ("h.i."). h.0, h.1 and h.3 are the
// same computation on different weights: one function, three calls, each
// with its own live-ins (the residual stream and its weight). h.2 has one
// more op (a bias), a near-twin: it stays inline, as does h.4, whose
// residual adds the product to itself (same ops, other wiring). Ops not
// named after a layer (the head) are not in any run.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<4xf32>, %[[W0:[a-z0-9]+]]: tensor<4xf32>, %[[W1:[a-z0-9]+]]: tensor<4xf32>, %[[W2:[a-z0-9]+]]: tensor<4xf32>, %[[W3:[a-z0-9]+]]: tensor<4xf32>, %[[B:[a-z0-9]+]]: tensor<4xf32>)
// CHECK-NEXT:    %[[R0:.*]] = call @forward_layer0(%[[X]], %[[W0]])
// CHECK-NEXT:    %[[R1:.*]] = call @forward_layer0(%[[R0]], %[[W1]])
// CHECK-NEXT:    %[[A2:.*]] = lcc.mul %[[R1]], %[[W2]]
// CHECK-NEXT:    %[[C2:.*]] = lcc.add %[[A2]], %[[B]]
// CHECK-NEXT:    %[[R2:.*]] = lcc.add %[[C2]], %[[R1]]
// CHECK-NEXT:    %[[R3:.*]] = call @forward_layer0(%[[R2]], %[[W3]])
// CHECK-NEXT:    %[[A4:.*]] = lcc.mul %[[R3]], %[[W0]]
// CHECK-NEXT:    %[[R4:.*]] = lcc.add %[[A4]], %[[A4]]
// CHECK-NEXT:    lcc.mul %[[R4]], %[[R4]]
// CHECK-NEXT:    return
// CHECK:       func.func private @forward_layer0(%[[LX:.*]]: tensor<4xf32>, %[[LW:.*]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK-SAME:    attributes {lcc.layer = "h.*", lcc.layer_phase = 0 : i64}
// CHECK-NEXT:    %[[LA:.*]] = lcc.mul %[[LX]], %[[LW]]
// CHECK-NEXT:    %[[LR:.*]] = lcc.add %[[LA]], %[[LX]]
// CHECK-NEXT:    return %[[LR]]
// CHECK-NOT:   func.func private
// inline and symbol-dce undo it: the ops again, in their order.
// BACK-LABEL: func.func @forward(
// BACK-NOT:     call
// BACK-COUNT-4: lcc.mul
// BACK-NOT:     func.func private @forward_layer
func.func @forward(%x: tensor<4xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>, %w2: tensor<4xf32>,
                   %w3: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %a0 = lcc.mul %x, %w0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.0.")
  %r0 = lcc.add %a0, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.0.")
  %a1 = lcc.mul %r0, %w1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.1.mlp.")
  %r1 = lcc.add %a1, %r0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.1.")
  %a2 = lcc.mul %r1, %w2 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.2.")
  %c2 = lcc.add %a2, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.2.")
  %r2 = lcc.add %c2, %r1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.2.")
  %a3 = lcc.mul %r2, %w3 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.3.")
  %r3 = lcc.add %a3, %r2 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.3.")
  %a4 = lcc.mul %r3, %w0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.4.")
  %r4 = lcc.add %a4, %a4 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.4.")
  %o = lcc.mul %r4, %r4 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("head")
  return %o : tensor<4xf32>
}

// -----

// ONNX names nodes by module path; a layer instance has several runs when
// something else comes between (here a step's forward, then its backward
// in reverse order): runs of one phase are compared with each other only.
// "Add_1" is ONNX's numbering of nodes, not a layer.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME:    %arg0: tensor<4xf32>, %arg1: tensor<4xf32>, %arg2: tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[F0:.*]] = call @forward_layer0(%arg0, %arg1)
// CHECK-NEXT:    %[[F1:.*]] = call @forward_layer0(%[[F0]], %arg2)
// CHECK-NEXT:    %[[M:.*]] = lcc.mul %[[F1]], %[[F1]]
// CHECK-NEXT:    %[[N:.*]] = lcc.mul %[[M]], %[[M]]
// CHECK-NEXT:    %[[B1:.*]] = call @forward_layer1(%[[N]], %arg2)
// CHECK-NEXT:    %[[B0:.*]] = call @forward_layer1(%[[B1]], %arg1)
// CHECK-NEXT:    return %[[B0]]
// CHECK:       func.func private @forward_layer0(
// CHECK-SAME:    lcc.layer = "/model/layers.*", lcc.layer_phase = 0
// CHECK:       func.func private @forward_layer1(
// CHECK-SAME:    lcc.layer = "/model/layers.*", lcc.layer_phase = 1
// CHECK-NEXT:    lcc.add
// CHECK-NEXT:    lcc.mul
// CHECK-NEXT:    return
func.func @forward(%x: tensor<4xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>) -> tensor<4xf32> {
  %f0 = lcc.mul %x, %w0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("/model/layers.0/mlp/MatMul")
  %f1 = lcc.mul %f0, %w1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("/model/layers.1/mlp/MatMul")
  %m = lcc.mul %f1, %f1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("/Add_1")
  %n = lcc.mul %m, %m : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("/Add_2")
  %s1 = lcc.add %n, %w1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("/model/layers.1/mlp/MatMul")
  %b1 = lcc.mul %s1, %n : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("/model/layers.1/mlp/MatMul")
  %s0 = lcc.add %b1, %w0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("/model/layers.0/mlp/MatMul")
  %b0 = lcc.mul %s0, %b1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("/model/layers.0/mlp/MatMul")
  return %b0 : tensor<4xf32>
}

// -----

// Two layers that differ only in an inherent attribute (kept in the op's
// properties, here the parameter a gradient belongs to) are not the same
// layer: nothing is outlined.
// CHECK-LABEL: func.func @forward(
// CHECK-NOT:     call
// CHECK:         lcc.gradient %{{.*}} {param = "h.0.w"}
// CHECK-NEXT:    lcc.gradient %{{.*}} {param = "h.1.w"}
// CHECK-NEXT:    return
func.func @forward(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %g0 = lcc.gradient %x {param = "h.0.w"} : tensor<4xf32> loc("h.0.w")
  %g1 = lcc.gradient %x {param = "h.1.w"} : tensor<4xf32> loc("h.1.w")
  return %g0, %g1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// Layout ops are made again. Each layer's backward (phase 1) reads both a
// forward value (%o) and the transposed, flattened form the forward made of
// it (%r): the backward's function makes %r again from %o, so the forward
// returns (and the step keeps) %o only.
// CHECK-LABEL: func.func @forward(
// CHECK:       func.func private @forward_layer0(
// CHECK-SAME:    -> (tensor<2x3xf32>, tensor<2x3xf32>)
// CHECK-SAME:    lcc.layer_phase = 0
// CHECK:       func.func private @forward_layer1(%[[O:[a-z0-9]+]]: tensor<2x3xf32>, %[[G:[a-z0-9]+]]: tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-SAME:    lcc.layer_phase = 1
// CHECK-NEXT:    %[[T:.*]] = lcc.transpose %[[O]]
// CHECK-NEXT:    %[[R:.*]] = lcc.reshape %[[T]]
// CHECK-NEXT:    %[[B:.*]] = lcc.mul %[[G]], %[[O]]
// CHECK-NEXT:    %[[S:.*]] = lcc.reshape %[[B]]
// CHECK-NEXT:    lcc.mul %[[S]], %[[R]]
func.func @forward(%x: tensor<2x3xf32>, %w0: tensor<2x3xf32>, %w1: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %o0 = lcc.mul %x, %w0 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32> loc("h.0.")
  %t0 = lcc.transpose %o0 {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32> loc("h.0.")
  %r0 = lcc.reshape %t0 : tensor<3x2xf32> -> tensor<6xf32> loc("h.0.")
  %y0 = lcc.reshape %r0 : tensor<6xf32> -> tensor<2x3xf32> loc("h.0.")
  %x1 = lcc.add %y0, %o0 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32> loc("h.0.")
  %o1 = lcc.mul %x1, %w1 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32> loc("h.1.")
  %t1 = lcc.transpose %o1 {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32> loc("h.1.")
  %r1 = lcc.reshape %t1 : tensor<3x2xf32> -> tensor<6xf32> loc("h.1.")
  %y1 = lcc.reshape %r1 : tensor<6xf32> -> tensor<2x3xf32> loc("h.1.")
  %x2 = lcc.add %y1, %o1 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32> loc("h.1.")
  %g2 = lcc.mul %x2, %x2 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32> loc("head")
  %b1 = lcc.mul %g2, %o1 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32> loc("h.1.")
  %s1 = lcc.reshape %b1 : tensor<2x3xf32> -> tensor<6xf32> loc("h.1.")
  %d1 = lcc.mul %s1, %r1 : tensor<6xf32>, tensor<6xf32> -> tensor<6xf32> loc("h.1.")
  %g1 = lcc.reshape %d1 : tensor<6xf32> -> tensor<2x3xf32> loc("h.1.")
  %b0 = lcc.mul %g1, %o0 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32> loc("h.0.")
  %s0 = lcc.reshape %b0 : tensor<2x3xf32> -> tensor<6xf32> loc("h.0.")
  %d0 = lcc.mul %s0, %r0 : tensor<6xf32>, tensor<6xf32> -> tensor<6xf32> loc("h.0.")
  %g0 = lcc.reshape %d0 : tensor<6xf32> -> tensor<2x3xf32> loc("h.0.")
  return %g0 : tensor<2x3xf32>
}

// -----

// Only when the later run reads the root too: a backward reading the
// flattened form alone takes it from the forward, which returns it.
// CHECK-LABEL: func.func @forward(
// CHECK:       func.func private @forward_layer0(
// CHECK-SAME:    -> (tensor<6xf32>, tensor<2x3xf32>)
// CHECK:       func.func private @forward_layer1(%{{.*}}: tensor<2x3xf32>, %{{.*}}: tensor<6xf32>) -> tensor<2x3xf32>
// CHECK-NOT:     lcc.transpose
// CHECK:         return
func.func @forward(%x: tensor<2x3xf32>, %w0: tensor<2x3xf32>, %w1: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %o0 = lcc.mul %x, %w0 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32> loc("h.0.")
  %t0 = lcc.transpose %o0 {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32> loc("h.0.")
  %r0 = lcc.reshape %t0 : tensor<3x2xf32> -> tensor<6xf32> loc("h.0.")
  %y0 = lcc.reshape %r0 : tensor<6xf32> -> tensor<2x3xf32> loc("h.0.")
  %x1 = lcc.add %y0, %o0 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32> loc("h.0.")
  %o1 = lcc.mul %x1, %w1 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32> loc("h.1.")
  %t1 = lcc.transpose %o1 {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32> loc("h.1.")
  %r1 = lcc.reshape %t1 : tensor<3x2xf32> -> tensor<6xf32> loc("h.1.")
  %y1 = lcc.reshape %r1 : tensor<6xf32> -> tensor<2x3xf32> loc("h.1.")
  %x2 = lcc.add %y1, %o1 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32> loc("h.1.")
  %g2 = lcc.mul %x2, %x2 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32> loc("head")
  %s1 = lcc.reshape %g2 : tensor<2x3xf32> -> tensor<6xf32> loc("h.1.")
  %d1 = lcc.mul %s1, %r1 : tensor<6xf32>, tensor<6xf32> -> tensor<6xf32> loc("h.1.")
  %g1 = lcc.reshape %d1 : tensor<6xf32> -> tensor<2x3xf32> loc("h.1.")
  %s0 = lcc.reshape %g1 : tensor<2x3xf32> -> tensor<6xf32> loc("h.0.")
  %d0 = lcc.mul %s0, %r0 : tensor<6xf32>, tensor<6xf32> -> tensor<6xf32> loc("h.0.")
  %g0 = lcc.reshape %d0 : tensor<6xf32> -> tensor<2x3xf32> loc("h.0.")
  return %g0 : tensor<2x3xf32>
}

// -----

// A tensor constant is part of the structure (made again inside, compared
// by value): layers whose constants differ are near-twins, nothing is
// outlined.
// CHECK-LABEL: func.func @forward(
// CHECK-NOT:     call
// CHECK:         return
func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant dense<1.0> : tensor<4xf32>
  %a0 = lcc.mul %x, %c0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.0.")
  %c1 = arith.constant dense<2.0> : tensor<4xf32>
  %a1 = lcc.mul %a0, %c1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.1.")
  return %a1 : tensor<4xf32>
}

// -----

// A run holding copies lcc-recompute made ({lcc.recomputed}) becomes a
// function even alone: inline, CSE would merge the copy (%c) with the
// forward value it copies (%a0). h.1's lone run has none and stays inline.
// CHECK-LABEL: func.func @forward(
// CHECK:         lcc.mul %{{.*}}, %{{.*}} : tensor<4xf32>
// CHECK:         call @forward_layer0(
// CHECK-NOT:     call
// CHECK:         return
// CHECK:       func.func private @forward_layer0(
// CHECK-NEXT:    lcc.mul {{.*}} {lcc.recomputed}
func.func @forward(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
  %a0 = lcc.mul %x, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.0.")
  %g = lcc.add %a0, %a0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("head")
  %c = lcc.mul %x, %w {lcc.recomputed} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.0.")
  %d = lcc.mul %c, %g : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.0.")
  %e = lcc.sub %d, %g : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.1.")
  return %e : tensor<4xf32>
}
