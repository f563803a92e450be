// RUN: lcc-opt %s --split-input-file --lcc-split-stage=stage=1 -verify-diagnostics
// The errors of lcc-split-stage.

func.func @forward(%w: tensor<4xf32> {lcc.param = "w"}, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{lcc-split-stage: op without lcc.stage in @forward (run lcc-partition-pipeline first)}}
  %0 = lcc.mul %x, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{lcc-split-stage: stage 1 does not exist: @forward has 1 stages}}
func.func @forward(%w: tensor<4xf32> {lcc.param = "w"}, %x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = lcc.mul %x, %w {lcc.stage = 0} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
