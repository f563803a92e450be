// RUN: lcc-opt %s --lcc-split-stage=stage=1 --lcc-autodiff --lcc-build-train-step="accum=2 optimizer=sgd momentum=0" | FileCheck %s
// A stage's part makes a layout value (transpose, reshape) of another part
// again from its root where it reads that root too (StageBody::remakes in
// passes/pipeline/PipelineStep.cpp), so that the step does not keep both
// forms: the backward reads %y (the gradient of y * y) and its transpose %t
// (the gradient of %w2), so the forward returns %y and not %t, and the
// backward transposes %y again.
// CHECK-LABEL: func.func private @train_step_pp_forward(
// CHECK-SAME:    -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<f32>)
// CHECK:         %[[Y:.*]] = lcc.mul
// CHECK-NEXT:    lcc.transpose %[[Y]]
// CHECK:         return %{{.*}}, %[[Y]], %{{.*}} : tensor<2x3xf32>, tensor<2x3xf32>, tensor<f32>
// CHECK-LABEL: func.func private @train_step_pp_backward(
// CHECK-SAME:    %[[BY:arg0]]: tensor<2x3xf32>
// CHECK-NEXT:    lcc.transpose %[[BY]] {perm = array<i64: 1, 0>}
module {
  func.func @init() -> (tensor<2x3xf32>, tensor<2x2xf32>) {
    %s1 = arith.constant 1 : i64
    %s2 = arith.constant 2 : i64
    %a = lcc.random_normal %s1 {std = 0.02} : tensor<2x3xf32>
    %b = lcc.random_normal %s2 {std = 0.02} : tensor<2x2xf32>
    return %a, %b : tensor<2x3xf32>, tensor<2x2xf32>
  }
  func.func @forward(%w: tensor<2x3xf32> {lcc.param = "w"}, %w2: tensor<2x2xf32> {lcc.param = "w2"},
                     %x: tensor<2x3xf32> {lcc.input = "x"}) -> tensor<f32> {
    %x0 = lcc.neg %x {lcc.stage = 0} : tensor<2x3xf32>
    %y = lcc.mul %x0, %w {lcc.stage = 1} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
    %t = lcc.transpose %y {perm = array<i64: 1, 0>, lcc.stage = 1} : tensor<2x3xf32> -> tensor<3x2xf32>
    %z = lcc.matmul %t, %w2 {lcc.stage = 1} : tensor<3x2xf32>, tensor<2x2xf32> -> tensor<3x2xf32>
    %u = lcc.mul %y, %y {lcc.stage = 1} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
    %s1 = lcc.reduce_sum %z {axes = array<i64: 0, 1>, lcc.stage = 1} : tensor<3x2xf32> -> tensor<f32>
    %s2 = lcc.reduce_sum %u {axes = array<i64: 0, 1>, lcc.stage = 1} : tensor<2x3xf32> -> tensor<f32>
    %l = lcc.add %s1, %s2 {lcc.stage = 1} : tensor<f32>, tensor<f32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
