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
