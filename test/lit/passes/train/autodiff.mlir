// RUN: lcc-opt %s --lcc-autodiff | FileCheck %s
// RUN: lcc-opt %s --lcc-autodiff=function=mlp | FileCheck %s --check-prefix=MLP
// RUN: lcc-opt %s --lcc-autodiff=seed-arg=true | FileCheck %s --check-prefix=ARGSEED

// seed-arg (loss scaling): the seed is a trailing argument, not a constant 1.
// ARGSEED-LABEL: func.func @forward_grad(
// ARGSEED-SAME:    %[[X:[a-z0-9]+]]: tensor<4xf32> {lcc.input = "x"}, %[[SEED:[a-z0-9]+]]: tensor<f32> {lcc.loss_seed})
// ARGSEED-NOT:     lcc.fill {value = 1.0
// ARGSEED:       lcc.reshape %[[SEED]] : tensor<f32> -> tensor<1xf32>

// loss = sum((w * x) * exp(f)) with f frozen: @forward_grad returns (loss, dw)
// only; the backward multiplies the seed by exp(f) and x and builds nothing
// for f.

// CHECK-LABEL: func.func @forward(
// CHECK-SAME:    -> tensor<f32> {
// CHECK-NOT:     lcc.fill
// CHECK:         return
// CHECK-LABEL: func.func @forward_grad(
// CHECK-SAME:    %[[W:[a-z0-9]+]]: tensor<4xf32> {lcc.param = "w"}
// CHECK-SAME:    %[[F:[a-z0-9]+]]: tensor<4xf32> {lcc.frozen, lcc.param = "f"}
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<4xf32> {lcc.input = "x"}
// CHECK-SAME:    -> (tensor<f32>, tensor<4xf32> {lcc.grad_of = "w"})
// The cloned forward:
// CHECK:         %[[WX:.*]] = lcc.mul %[[W]], %[[X]]
// CHECK:         %[[E:.*]] = lcc.exp %[[F]]
// CHECK:         %[[P:.*]] = lcc.mul %[[WX]], %[[E]]
// CHECK:         %[[L:.*]] = lcc.reduce_sum %[[P]]
// The backward, in reverse order:
// CHECK:         %[[SEED:.*]] = lcc.fill {value = 1.000000e+00 : f64} : tensor<f32>
// CHECK:         %[[R:.*]] = lcc.reshape %[[SEED]] : tensor<f32> -> tensor<1xf32>
// CHECK:         %[[G:.*]] = lcc.broadcast_to %[[R]] : tensor<1xf32> -> tensor<4xf32>
// CHECK:         %[[GWX:.*]] = lcc.mul %[[G]], %[[E]]
// CHECK-NOT:     lcc.exp
// CHECK:         %[[GW:.*]] = lcc.mul %[[GWX]], %[[X]]
// CHECK-NOT:     lcc.
// CHECK:         return %[[L]], %[[GW]] : tensor<f32>, tensor<4xf32>
func.func @forward(%w: tensor<4xf32> {lcc.param = "w"}, %f: tensor<4xf32> {lcc.param = "f", lcc.frozen},
                   %x: tensor<4xf32> {lcc.input = "x"}) -> tensor<f32> {
  %0 = lcc.mul %w, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %1 = lcc.exp %f : tensor<4xf32>
  %2 = lcc.mul %0, %1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %3 = lcc.reduce_sum %2 {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
  return %3 : tensor<f32>
}

// Fan-out (h used twice) accumulates with lcc.add; the broadcast bias is
// summed back to [3]; ids are not differentiated; the unused param gets zeros.

// MLP-LABEL: func.func @mlp_grad(
// MLP-SAME:    -> (tensor<f32>, tensor<2x3xf32> {lcc.grad_of = "w"}, tensor<3xf32> {lcc.grad_of = "b"}, tensor<5xf32> {lcc.grad_of = "unused"})
// MLP:         %[[H:.*]] = lcc.add
// MLP:         %[[T:.*]] = lcc.tanh %[[H]]
// MLP:         lcc.fill {value = 1.000000e+00 : f64}
// The two contributions to dh (through tanh and directly) are summed:
// MLP:         %[[DH:.*]] = lcc.add %{{.*}}, %{{.*}} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// MLP:         %[[DB:.*]] = lcc.reduce_sum %[[DH]] {axes = array<i64: 0>, keepdim = true} : tensor<2x3xf32> -> tensor<1x3xf32>
// MLP:         lcc.reshape %[[DB]] : tensor<1x3xf32> -> tensor<3xf32>
// MLP:         %[[Z:.*]] = lcc.fill {value = 0.000000e+00 : f64} : tensor<5xf32>
// MLP:         return
func.func @mlp(%w: tensor<2x3xf32> {lcc.param = "w"}, %b: tensor<3xf32> {lcc.param = "b"},
               %u: tensor<5xf32> {lcc.param = "unused"}, %ids: tensor<2x3xi32> {lcc.input = "ids"}) -> tensor<f32> {
  %x = lcc.convert %ids : tensor<2x3xi32> -> tensor<2x3xf32>
  %0 = lcc.mul %w, %x : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %h = lcc.add %0, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %t = lcc.tanh %h : tensor<2x3xf32>
  %s = lcc.mul %t, %h : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %l = lcc.reduce_mean %s {axes = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}
