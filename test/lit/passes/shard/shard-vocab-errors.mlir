// RUN: lcc-opt %s --split-input-file --lcc-shard-vocab="tp=2" -verify-diagnostics
// RUN: not lcc-opt %s --split-input-file --lcc-shard-vocab="tp=0" 2>&1 | FileCheck %s --check-prefix=ZERO
// Tests passes/shard/ShardVocabParallel.cpp.

// ZERO: error: lcc-shard-vocab: tp must be >= 1, got 0

// The vocabulary is split in the forward, before autodiff derives it.
// expected-error @+1 {{lcc-shard-vocab: @forward_grad exists: the vocabulary is split in the forward before lcc-autodiff derives its backward}}
module {
  func.func @forward(%w: tensor<4x2xf32> {lcc.param = "w"}) -> tensor<f32> {
    %0 = lcc.reduce_sum %w {axes = array<i64: 0, 1>} : tensor<4x2xf32> -> tensor<f32>
    return %0 : tensor<f32>
  }
  func.func @forward_grad(%w: tensor<4x2xf32> {lcc.param = "w"}) -> tensor<f32> {
    %0 = lcc.reduce_sum %w {axes = array<i64: 0, 1>} : tensor<4x2xf32> -> tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

// A vocabulary past 2^24 rows stays whole on every rank (its f32 ids would
// not be exact), and the compiler says so: training still works.
module {
  // expected-warning @+1 {{lcc-shard-vocab: parameter 'wte' stays whole on every rank: its 16777218 vocabulary rows exceed 2^24, past which f32 token ids are not exact}}
  func.func @forward(%wte: tensor<16777218x1xf32> {lcc.param = "wte"}, %tok: tensor<3xi32> {lcc.input = "tokens"},
                     %tgt: tensor<3xi32> {lcc.input = "targets"}) -> tensor<f32> {
    %e = lcc.gather %wte, %tok : tensor<16777218x1xf32>, tensor<3xi32> -> tensor<3x1xf32>
    %l = lcc.matmul %e, %wte {transpose_rhs = true} : tensor<3x1xf32>, tensor<16777218x1xf32> -> tensor<3x16777218xf32>
    %loss = lcc.cross_entropy %l, %tgt : tensor<3x16777218xf32>, tensor<3xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// No @forward to split.
// expected-error @+1 {{lcc-shard-vocab: no @forward}}
module {
  func.func @other() {
    return
  }
}
