// RUN: lcc-opt %s --split-input-file --lcc-shard-dp="dp=2" -verify-diagnostics

// Data parallelism rewrites the training step: without it there is nothing to do.
// expected-error @+1 {{lcc-shard-dp: no @train_step (run lcc-build-train-step first)}}
module {
  func.func @forward(%w: tensor<3xf32> {lcc.param = "w"}) -> tensor<f32> {
    %0 = lcc.reduce_sum %w {axes = array<i64: 0>} : tensor<3xf32> -> tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

// The module already runs on a dp group of another size.
// expected-error @+1 {{lcc-shard-dp: process group 'dp' is already declared with 4 ranks; this pass needs 2}}
module attributes {lcc.process_groups = {dp = 4 : i64}} {
  func.func @train_step(%w: tensor<3xf32> {lcc.param = "w"}) -> tensor<3xf32> {
    %g = lcc.gradient %w {param = "w"} : tensor<3xf32>
    return %g : tensor<3xf32>
  }
}

// -----

module {
  // expected-error @+1 {{lcc-shard-dp: @train_step has no lcc.gradient markers (built by lcc-build-train-step); nothing to all-reduce}}
  func.func @train_step(%w: tensor<3xf32> {lcc.param = "w"}) -> tensor<3xf32> {
    return %w : tensor<3xf32>
  }
}
