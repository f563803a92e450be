// RUN: lcc-opt %s --split-input-file --lcc-autodiff -verify-diagnostics

// An op from another dialect on the path from a parameter to the loss.
func.func @forward(%w: tensor<3xf32> {lcc.param = "w"}) -> tensor<f32> {
  // expected-error @+1 {{'math.exp' has no VJP: autodiff cannot differentiate through it}}
  %0 = math.exp %w : tensor<3xf32>
  %1 = lcc.reduce_sum %0 {axes = array<i64: 0>} : tensor<3xf32> -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// Every offending op is reported, not only the first.
func.func @forward(%w: tensor<3xf32> {lcc.param = "w"}) -> tensor<f32> {
  // expected-error @+1 {{'arith.addf' has no VJP: autodiff cannot differentiate through it}}
  %0 = arith.addf %w, %w : tensor<3xf32>
  // expected-error @+1 {{'arith.mulf' has no VJP: autodiff cannot differentiate through it}}
  %1 = arith.mulf %0, %w : tensor<3xf32>
  %2 = lcc.reduce_sum %1 {axes = array<i64: 0>} : tensor<3xf32> -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// expected-error @+1 {{lcc-autodiff: @forward must return a single rank-0 float loss; it returns (tensor<3xf32>)}}
func.func @forward(%w: tensor<3xf32> {lcc.param = "w"}) -> tensor<3xf32> {
  %0 = lcc.exp %w : tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// expected-error @+1 {{lcc-autodiff: parameter 'ids' has type 'tensor<3xi32>'; expected a float tensor}}
func.func @forward(%ids: tensor<3xi32> {lcc.param = "ids"}) -> tensor<f32> {
  %0 = lcc.fill {value = 0.0 : f64} : tensor<f32>
  return %0 : tensor<f32>
}

// -----

// expected-error @+1 {{lcc-autodiff: no function @forward to differentiate (set the pass option function=...)}}
module {
  func.func @main() {
    return
  }
}
