// RUN: lcc-opt %s --split-input-file --lcc-autodiff | FileCheck %s
// lcc-autodiff on pipeline stages (lcc-split-stage's functions): the values
// a stage receives are differentiated like parameters and their gradients
// returned last; a stage that sends values on takes their gradients as
// seeds (integers have none).

// A first stage: y = x * w sent on (with an integer mask beside it);
// dL/dw = seed * x.
// CHECK-LABEL: func.func @forward_grad(
// CHECK-SAME:    %[[W:.*]]: tensor<4xf32> {lcc.param = "w"}, %[[X:.*]]: tensor<4xf32> {lcc.input = "x"},
// CHECK-SAME:    %[[I:.*]]: tensor<4xi32> {lcc.input = "ids"},
// CHECK-SAME:    %[[SEED:.*]]: tensor<4xf32> {lcc.pipeline_seed = 0 : i64})
// CHECK-SAME:    -> (tensor<4xf32> {lcc.pipeline_send = 0 : i64}, tensor<4xi32> {lcc.pipeline_send = 1 : i64}, tensor<4xf32> {lcc.grad_of = "w"})
// CHECK:         %[[Y:.*]] = lcc.mul %[[X]], %[[W]]
// CHECK:         %[[G:.*]] = lcc.mul %[[SEED]], %[[X]]
// CHECK:         return %[[Y]], %[[I]], %[[G]]
func.func @forward(%w: tensor<4xf32> {lcc.param = "w"}, %x: tensor<4xf32> {lcc.input = "x"},
                   %ids: tensor<4xi32> {lcc.input = "ids"})
    -> (tensor<4xf32> {lcc.pipeline_send = 0 : i64}, tensor<4xi32> {lcc.pipeline_send = 1 : i64}) {
  %y = lcc.mul %x, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %y, %ids : tensor<4xf32>, tensor<4xi32>
}

// -----

// A last stage: L = sum(r * w); dL/dw = r, dL/dr = w (sent back).
// CHECK-LABEL: func.func @forward_grad(
// CHECK-SAME:    %[[W:.*]]: tensor<4xf32> {lcc.param = "w"}, %[[R:.*]]: tensor<4xf32> {lcc.pipeline_recv = 0 : i64})
// CHECK-SAME:    -> (tensor<f32>, tensor<4xf32> {lcc.grad_of = "w"}, tensor<4xf32> {lcc.grad_of_recv = 0 : i64})
// CHECK:         %[[ONES:.*]] = lcc.broadcast_to
// CHECK-DAG:     %[[GR:.*]] = lcc.mul %[[ONES]], %[[W]]
// CHECK-DAG:     %[[GW:.*]] = lcc.mul %[[ONES]], %[[R]]
// CHECK:         return %{{.*}}, %[[GW]], %[[GR]]
func.func @forward(%w: tensor<4xf32> {lcc.param = "w"}, %r: tensor<4xf32> {lcc.pipeline_recv = 0 : i64})
    -> tensor<f32> {
  %p = lcc.mul %r, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %l = lcc.reduce_sum %p {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// The last rank of an interleaved pipeline (two stages on it): its first
// stage's send y = r0 * v, seeded by its gradient; then the last stage's
// loss L = sum(r1 * w), seeded by 1 (not by an argument). Each stage's
// received value gets its own gradient: dL/dr0 = seed * v, dL/dr1 = w.
// CHECK-LABEL: func.func @forward_grad(
// CHECK-SAME:    %[[V:.*]]: tensor<4xf32> {lcc.param = "v"}, %[[W:.*]]: tensor<4xf32> {lcc.param = "w"},
// CHECK-SAME:    %[[R0:.*]]: tensor<4xf32> {lcc.pipeline_recv = 0 : i64}, %[[R1:.*]]: tensor<4xf32> {lcc.pipeline_recv = 1 : i64},
// CHECK-SAME:    %[[SEED:.*]]: tensor<4xf32> {lcc.pipeline_seed = 0 : i64})
// CHECK-SAME:    -> (tensor<4xf32> {lcc.pipeline_send = 0 : i64}, tensor<f32>, tensor<4xf32> {lcc.grad_of = "v"}, tensor<4xf32> {lcc.grad_of = "w"},
// CHECK-SAME:        tensor<4xf32> {lcc.grad_of_recv = 0 : i64}, tensor<4xf32> {lcc.grad_of_recv = 1 : i64})
// CHECK:         %[[Y:.*]] = lcc.mul %[[R0]], %[[V]]
// CHECK:         %[[ONES:.*]] = lcc.broadcast_to
// CHECK-DAG:     %[[GR1:.*]] = lcc.mul %[[ONES]], %[[W]]
// CHECK-DAG:     %[[GW:.*]] = lcc.mul %[[ONES]], %[[R1]]
// CHECK-DAG:     %[[GR0:.*]] = lcc.mul %[[SEED]], %[[V]]
// CHECK-DAG:     %[[GV:.*]] = lcc.mul %[[SEED]], %[[R0]]
// CHECK:         return %[[Y]], %{{.*}}, %[[GV]], %[[GW]], %[[GR0]], %[[GR1]]
func.func @forward(%v: tensor<4xf32> {lcc.param = "v"}, %w: tensor<4xf32> {lcc.param = "w"},
                   %r0: tensor<4xf32> {lcc.pipeline_recv = 0 : i64},
                   %r1: tensor<4xf32> {lcc.pipeline_recv = 1 : i64})
    -> (tensor<4xf32> {lcc.pipeline_send = 0 : i64}, tensor<f32>) {
  %y = lcc.mul %r0, %v : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %p = lcc.mul %r1, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %l = lcc.reduce_sum %p {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
  return %y, %l : tensor<4xf32>, tensor<f32>
}
