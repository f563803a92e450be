// RUN: lcc-opt %s --split-input-file --verify-diagnostics --lcc-lora="targets=emb"
// Tests passes/train/Lora.cpp's errors: a target that is no matmul weight.

func.func @init() -> tensor<6x8xf32> {
  %e = lcc.fill {value = 0.5 : f64} : tensor<6x8xf32>
  return %e : tensor<6x8xf32>
}
func.func @forward(%e: tensor<6x8xf32> {lcc.param = "emb"}, %ids: tensor<1x4xi32> {lcc.input = "ids"}) -> tensor<f32> {
  // expected-error @+1 {{lcc-lora: target 'emb' is used by lcc.gather; adapters go on weights used only as the right side of lcc.matmul (x @ W)}}
  %r = lcc.gather %e, %ids : tensor<6x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
  %s = lcc.reduce_sum %r {axes = array<i64: 0, 1, 2>} : tensor<1x4x8xf32> -> tensor<f32>
  return %s : tensor<f32>
}

// -----

func.func @init() -> tensor<8x6xf32> {
  %w = lcc.fill {value = 0.5 : f64} : tensor<8x6xf32>
  return %w : tensor<8x6xf32>
}
// expected-error @+1 {{lcc-lora: target pattern 'emb' matches no parameter}}
func.func @forward(%w: tensor<8x6xf32> {lcc.param = "w"}, %x: tensor<1x4x8xf32> {lcc.input = "x"}) -> tensor<f32> {
  %y = lcc.matmul %x, %w : tensor<1x4x8xf32>, tensor<8x6xf32> -> tensor<1x4x6xf32>
  %s = lcc.reduce_sum %y {axes = array<i64: 0, 1, 2>} : tensor<1x4x6xf32> -> tensor<f32>
  return %s : tensor<f32>
}
