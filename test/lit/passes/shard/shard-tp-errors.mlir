// RUN: lcc-opt %s --split-input-file --lcc-shard-tp="tp=2" -verify-diagnostics
// Tests passes/shard/ShardTensorParallel.cpp.

// Nothing to split: the only matmul's output (3 features) does not divide
// over 2 ranks.
module {
  // expected-error @+1 {{lcc-shard-tp: no matmul pair of @forward can be split over 2 ranks (Megatron column/row-parallel regions: a parameter [in, out] whose output features divide by tp, then a parameter [out, d])}}
  func.func @forward(%w: tensor<4x3xf32> {lcc.param = "w"}, %x: tensor<2x4xf32> {lcc.input = "x"},
                     %y: tensor<2xi32> {lcc.input = "y"}) -> tensor<f32> {
    %h = lcc.matmul %x, %w : tensor<2x4xf32>, tensor<4x3xf32> -> tensor<2x3xf32>
    %l = lcc.cross_entropy %h, %y : tensor<2x3xf32>, tensor<2xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A split value that reaches a normalization over the split features cannot
// stay split: the region is left whole, and then nothing is split.
module {
  // expected-error @+1 {{lcc-shard-tp: no matmul pair of @forward can be split}}
  func.func @forward(%w: tensor<4x8xf32> {lcc.param = "w"}, %s: tensor<8xf32> {lcc.param = "s"},
                     %b: tensor<8xf32> {lcc.param = "b"}, %x: tensor<2x4xf32> {lcc.input = "x"},
                     %y: tensor<2xi32> {lcc.input = "y"}) -> tensor<f32> {
    %h = lcc.matmul %x, %w : tensor<2x4xf32>, tensor<4x8xf32> -> tensor<2x8xf32>
    %n = lcc.layer_norm %h, %s, %b : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>
    %l = lcc.cross_entropy %n, %y : tensor<2x8xf32>, tensor<2xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Tensor parallelism splits the forward before autodiff derives it.
// expected-error @+1 {{lcc-shard-tp: @forward_grad exists: tensor parallelism splits the forward before lcc-autodiff derives its backward}}
module {
  func.func @forward(%w: tensor<4xf32> {lcc.param = "w"}) -> tensor<f32> {
    %0 = lcc.reduce_sum %w {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
    return %0 : tensor<f32>
  }
  func.func @forward_grad(%w: tensor<4xf32> {lcc.param = "w"}) -> (tensor<f32>, tensor<4xf32>) {
    %0 = lcc.reduce_sum %w {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
    return %0, %w : tensor<f32>, tensor<4xf32>
  }
}

// -----

// A split value scaled by something computed from a parameter (not a
// constant or an input) cannot stay split: that parameter's gradient would
// be a partial sum on each rank.
module {
  // expected-error @+1 {{lcc-shard-tp: no matmul pair of @forward can be split}}
  func.func @forward(%w1: tensor<4x8xf32> {lcc.param = "w1"}, %w2: tensor<8x4xf32> {lcc.param = "w2"},
                     %s: tensor<f32> {lcc.param = "s"}, %x: tensor<2x4xf32> {lcc.input = "x"},
                     %y: tensor<2xi32> {lcc.input = "y"}) -> tensor<f32> {
    %h = lcc.matmul %x, %w1 : tensor<2x4xf32>, tensor<4x8xf32> -> tensor<2x8xf32>
    %e = lcc.exp %s : tensor<f32>
    %hs = lcc.mul %h, %e : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
    %o = lcc.matmul %hs, %w2 : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32>
    %l = lcc.cross_entropy %o, %y : tensor<2x4xf32>, tensor<2xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
