// RUN: lcc-opt %s --split-input-file --lcc-recompute=mode=full -verify-diagnostics
// RUN: not lcc-opt %s --split-input-file --lcc-recompute=mode=some 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not lcc-opt %s --split-input-file --lcc-recompute=mode=auto 2>&1 | FileCheck %s --check-prefix=AUTO
// Tests passes/train/Recompute.cpp: when it cannot apply.

// BAD: lcc-recompute: unknown mode 'some'; expected none, selective or full
// AUTO: lcc-recompute: unknown mode 'auto'; expected none, selective or full (auto is lcc's choice for --mem)

// Before autodiff there is no backward to rewrite.
// expected-error @+1 {{lcc-recompute: needs @forward and @forward_grad (run lcc-autodiff first)}}
module {
  func.func @forward(%w: tensor<2xf32> {lcc.param = "h.0.w"}) -> tensor<f32> {
    %s = lcc.reduce_sum %w {axes = array<i64: 0>} : tensor<2xf32> -> tensor<f32> loc("h.0.")
    return %s : tensor<f32>
  }
}

// -----

// Another pass ran in between: the forward part can no longer be told
// from the backward.
func.func @forward(%w: tensor<2xf32> {lcc.param = "h.0.w"}) -> tensor<f32> {
  %t = lcc.tanh %w : tensor<2xf32> loc("h.0.")
  %s = lcc.reduce_sum %t {axes = array<i64: 0>} : tensor<2xf32> -> tensor<f32> loc("h.0.")
  return %s : tensor<f32>
}
// expected-error @+1 {{lcc-recompute: @forward_grad does not begin with @forward's ops; run it right after lcc-autodiff}}
func.func @forward_grad(%w: tensor<2xf32>) -> (tensor<f32>, tensor<2xf32>) {
  %s = lcc.reduce_sum %w {axes = array<i64: 0>} : tensor<2xf32> -> tensor<f32>
  return %s, %w : tensor<f32>, tensor<2xf32>
}

// -----

// No layer names: a warning, not a silent no-op.
// expected-warning @+1 {{lcc-recompute: @forward has no named layers (a DSL loop's h.0., an ONNX module path); recompute=full changes nothing}}
func.func @forward(%w: tensor<2xf32> {lcc.param = "w"}) -> tensor<f32> {
  %s = lcc.reduce_sum %w {axes = array<i64: 0>} : tensor<2xf32> -> tensor<f32>
  return %s : tensor<f32>
}
func.func @forward_grad(%w: tensor<2xf32>) -> (tensor<f32>, tensor<2xf32>) {
  %s = lcc.reduce_sum %w {axes = array<i64: 0>} : tensor<2xf32> -> tensor<f32>
  return %s, %w : tensor<f32>, tensor<2xf32>
}
