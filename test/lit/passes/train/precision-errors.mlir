// RUN: lcc-opt %s --split-input-file --lcc-precision -verify-diagnostics
// RUN: not lcc-opt %s --split-input-file --lcc-precision=precision=int8 2>&1 | FileCheck %s --check-prefix=BAD
// Tests passes/train/Precision.cpp: when the policy cannot apply.

// BAD: lcc-precision: unknown precision 'int8'; expected fp32, bf16 or fp16

// After autodiff the backward would keep f32 matmuls: refused.
// expected-error @+1 {{lcc-precision: @forward_grad exists; the precision policy must be applied before lcc-autodiff (the backward inherits it)}}
func.func @forward(%w: tensor<2x2xf32> {lcc.param = "w"}) -> tensor<f32> {
  %s = lcc.reduce_sum %w {axes = array<i64: 0, 1>} : tensor<2x2xf32> -> tensor<f32>
  return %s : tensor<f32>
}
func.func @forward_grad(%w: tensor<2x2xf32>) -> (tensor<f32>, tensor<2x2xf32>) {
  %s = lcc.reduce_sum %w {axes = array<i64: 0, 1>} : tensor<2x2xf32> -> tensor<f32>
  return %s, %w : tensor<f32>, tensor<2x2xf32>
}

// -----

// Nothing to lower: a warning, not a silent no-op.
// expected-warning @+1 {{lcc-precision: @forward has no f32 matmul or attention; --precision=bf16 changes nothing}}
func.func @forward(%w: tensor<2x2xf32> {lcc.param = "w"}) -> tensor<f32> {
  %s = lcc.reduce_sum %w {axes = array<i64: 0, 1>} : tensor<2x2xf32> -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// expected-error @+1 {{lcc-precision: no function @forward}}
module {
  func.func @loss(%w: tensor<2x2xf32>) -> tensor<f32> {
    %s = lcc.reduce_sum %w {axes = array<i64: 0, 1>} : tensor<2x2xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}
