// RUN: lcc-opt %s --split-input-file --lcc-sequence-parallel="tp=2" -verify-diagnostics
// Tests passes/shard/SequenceParallel.cpp: when the stream cannot be split.

// The stream reaches an op that is not token-wise (a sum over the tokens):
// its result would be a rank's share only.
module attributes {lcc.process_groups = {tp = 2 : i64}} {
  func.func @forward(%x: tensor<2x4xf32> {lcc.input = "x"}) -> tensor<f32> {
    %e = lcc.all_reduce %x {group = "tp"} : tensor<2x4xf32>
    %c = lcc.parallel_copy %x {group = "tp"} : tensor<2x4xf32>
    // expected-error @+1 {{lcc-sequence-parallel: 'lcc.reduce_sum' reads the residual stream, which is split by tokens between tensor-parallel regions; only token-wise ops (elementwise, norms) and the regions' inputs may}}
    %l = lcc.reduce_sum %e {axes = array<i64: 0, 1>} : tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// 3 tokens do not divide over 2 ranks.
module attributes {lcc.process_groups = {tp = 2 : i64}} {
  // expected-error @+1 {{lcc-sequence-parallel: the residual stream 'tensor<1x3x4xf32>' has 3 tokens, not a multiple of tp = 2}}
  func.func @forward(%x: tensor<1x3x4xf32> {lcc.input = "x"}) -> tensor<1x3x4xf32> {
    %e = lcc.all_reduce %x {group = "tp"} : tensor<1x3x4xf32>
    %c = lcc.parallel_copy %e {group = "tp"} : tensor<1x3x4xf32>
    return %c : tensor<1x3x4xf32>
  }
}

// -----

// Nothing tensor-parallel to begin with.
module {
  // expected-error @+1 {{lcc-sequence-parallel: @forward has no tensor-parallel regions (run lcc-shard-tp first); nothing to split by tokens}}
  func.func @forward(%x: tensor<2x4xf32> {lcc.input = "x"}) -> tensor<2x4xf32> {
    return %x : tensor<2x4xf32>
  }
}
