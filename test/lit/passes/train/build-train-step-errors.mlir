// RUN: lcc-opt %s --split-input-file --lcc-build-train-step -verify-diagnostics
// RUN: sh -c 'lcc-opt %s --split-input-file --lcc-autodiff --lcc-build-train-step="schedule=cosine warmup=100 decay-steps=50"; test $? -ne 0' 2>&1 | FileCheck %s --check-prefix=COS
// COS: error: lcc-build-train-step: the cosine schedule needs decay-steps (50) > warmup (100): decay-steps is the step at which lr reaches min-lr
// Loss scaling needs the seed as an argument (lcc-autodiff{seed-arg}), and sane settings.
// RUN: sh -c 'lcc-opt %s --split-input-file --lcc-autodiff --lcc-build-train-step="loss-scale=dynamic"; test $? -ne 0' 2>&1 | FileCheck %s --check-prefix=SEEDARG
// SEEDARG: error: lcc-build-train-step: loss-scale=dynamic needs the backward's seed as an argument of @forward_grad (lcc-autodiff{seed-arg=true})
// RUN: sh -c 'lcc-opt %s --split-input-file --lcc-autodiff=seed-arg=true --lcc-build-train-step="loss-scale=static"; test $? -ne 0' 2>&1 | FileCheck %s --check-prefix=KIND
// KIND: error: lcc-build-train-step: unknown loss-scale 'static'; expected none or dynamic
// RUN: sh -c 'lcc-opt %s --split-input-file --lcc-autodiff=seed-arg=true --lcc-build-train-step="loss-scale=dynamic loss-scale-window=0"; test $? -ne 0' 2>&1 | FileCheck %s --check-prefix=WINDOW
// WINDOW: error: lcc-build-train-step: dynamic loss scaling needs loss-scale-init > 0 and loss-scale-window >= 1

// Without lcc-autodiff there is no gradient function to build on.
// expected-error @+1 {{lcc-build-train-step: no @forward_grad (run lcc-autodiff on @forward first)}}
module {
  func.func @forward(%w: tensor<3xf32> {lcc.param = "w"}) -> tensor<f32> {
    %0 = lcc.reduce_sum %w {axes = array<i64: 0>} : tensor<3xf32> -> tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

// A @forward_grad that does not return one gradient per trainable parameter.
module {
  func.func @forward(%w: tensor<3xf32> {lcc.param = "w"}) -> tensor<f32> {
    %0 = lcc.reduce_sum %w {axes = array<i64: 0>} : tensor<3xf32> -> tensor<f32>
    return %0 : tensor<f32>
  }
  // expected-error @+1 {{lcc-build-train-step: @forward_grad returns 1 values; expected the loss and 1 gradients (one per trainable parameter)}}
  func.func @forward_grad(%w: tensor<3xf32> {lcc.param = "w"}) -> tensor<f32> {
    %0 = lcc.reduce_sum %w {axes = array<i64: 0>} : tensor<3xf32> -> tensor<f32>
    return %0 : tensor<f32>
  }
}
