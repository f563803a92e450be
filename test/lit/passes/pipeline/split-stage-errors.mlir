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

// -----

// A parameter shared by stages 0 and 1 of three: neither the whole pipeline
// nor its two ends.
// expected-error @+1 {{lcc-split-stage: parameter 'w' is read by stages 0, 1: a parameter is shared by every stage or by the first and the last only}}
func.func @forward(%w: tensor<4xf32> {lcc.param = "w"}, %x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = lcc.mul %x, %w {lcc.stage = 0} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %1 = lcc.mul %0, %w {lcc.stage = 1} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %2 = lcc.neg %1 {lcc.stage = 2} : tensor<4xf32>
  return %2 : tensor<4xf32>
}
