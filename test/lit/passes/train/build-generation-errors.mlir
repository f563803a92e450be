// RUN: lcc-opt %s --split-input-file --verify-diagnostics --lcc-build-generation="entry=decode_step context=8"
// Tests passes/train/BuildGeneration.cpp's errors: what the decode step
// cannot be made from.

// expected-error @+1 {{lcc-build-generation: @forward must return cross_entropy(logits, targets) to generate text}}
func.func @forward(%w: tensor<8x6xf32> {lcc.param = "w"}, %x: tensor<1x1x8xf32> {lcc.input = "x"}) -> tensor<f32> {
  %y = lcc.matmul %x, %w : tensor<1x1x8xf32>, tensor<8x6xf32> -> tensor<1x1x6xf32>
  %s = lcc.reduce_sum %y {axes = array<i64: 0, 1, 2>} : tensor<1x1x6xf32> -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A position table shorter than the cache would be read past its end.
func.func @forward(%wte: tensor<16x8xf32> {lcc.param = "wte"}, %wpe: tensor<4x8xf32> {lcc.param = "wpe"},
                   %tok: tensor<1x1xi32> {lcc.input = "tokens"}, %t: tensor<1x1xi32> {lcc.input = "targets"}) -> tensor<f32> {
  %e = lcc.gather %wte, %tok : tensor<16x8xf32>, tensor<1x1xi32> -> tensor<1x1x8xf32>
  // expected-error @+1 {{lcc-build-generation: the position table has 4 rows, fewer than the context (8)}}
  %p = lcc.slice %wpe {limit = array<i64: 1, 8>, start = array<i64: 0, 0>} : tensor<4x8xf32> -> tensor<1x8xf32>
  %x = lcc.add %e, %p : tensor<1x1x8xf32>, tensor<1x8xf32> -> tensor<1x1x8xf32>
  %l = lcc.matmul %x, %wte {transpose_rhs = true} : tensor<1x1x8xf32>, tensor<16x8xf32> -> tensor<1x1x16xf32>
  %loss = lcc.cross_entropy %l, %t : tensor<1x1x16xf32>, tensor<1x1xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Attention that sees later tokens cannot generate one token at a time.
func.func @forward(%wte: tensor<16x4xf32> {lcc.param = "wte"},
                   %tok: tensor<1x1xi32> {lcc.input = "tokens"}, %t: tensor<1x1xi32> {lcc.input = "targets"}) -> tensor<f32> {
  %e = lcc.gather %wte, %tok : tensor<16x4xf32>, tensor<1x1xi32> -> tensor<1x1x4xf32>
  %h = lcc.reshape %e : tensor<1x1x4xf32> -> tensor<1x1x1x4xf32>
  // expected-error @+1 {{lcc-build-generation: generation needs causal attention}}
  %y = lcc.attention %h, %h, %h : tensor<1x1x1x4xf32>, tensor<1x1x1x4xf32>, tensor<1x1x1x4xf32>
  %yf = lcc.reshape %y : tensor<1x1x1x4xf32> -> tensor<1x1x4xf32>
  %l = lcc.matmul %yf, %wte {transpose_rhs = true} : tensor<1x1x4xf32>, tensor<16x4xf32> -> tensor<1x1x16xf32>
  %loss = lcc.cross_entropy %l, %t : tensor<1x1x16xf32>, tensor<1x1xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Positions made inside the model (an iota) are not the decode step's.
func.func @forward(%wte: tensor<16x4xf32> {lcc.param = "wte"},
                   %tok: tensor<1x1xi32> {lcc.input = "tokens"}, %t: tensor<1x1xi32> {lcc.input = "targets"}) -> tensor<f32> {
  %e = lcc.gather %wte, %tok : tensor<16x4xf32>, tensor<1x1xi32> -> tensor<1x1x4xf32>
  // expected-error @+1 {{lcc-build-generation: lcc.iota depends on positions in a way the decode step cannot rewrite}}
  %i = lcc.iota {dim = 1 : i64} : tensor<1x1x4xf32>
  %x = lcc.add %e, %i : tensor<1x1x4xf32>, tensor<1x1x4xf32> -> tensor<1x1x4xf32>
  %l = lcc.matmul %x, %wte {transpose_rhs = true} : tensor<1x1x4xf32>, tensor<16x4xf32> -> tensor<1x1x16xf32>
  %loss = lcc.cross_entropy %l, %t : tensor<1x1x16xf32>, tensor<1x1xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
