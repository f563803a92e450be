// RUN: lcc-opt %s --split-input-file --lcc-split-stage="stage=0 virtual=2" -verify-diagnostics
// The errors of lcc-split-stage with virtual stages (interleaved).

// Three stages do not spread over ranks of two each.
// expected-error @+1 {{lcc-split-stage: 3 stages cannot be spread as 2 virtual stages per rank}}
func.func @forward(%w: tensor<4xf32> {lcc.param = "w"}, %x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = lcc.mul %x, %w {lcc.stage = 0} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %1 = lcc.neg %0 {lcc.stage = 1} : tensor<4xf32>
  %2 = lcc.neg %1 {lcc.stage = 2} : tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

// Stages 0 and 2 both run on rank 0: one parameter cannot be two stages'
// there (its gradient would be one sum the schedule computes in two parts).
// expected-error @+1 {{lcc-split-stage: parameter 'w' is read by two stages of rank 0: with virtual stages, a parameter is shared by stages of different ranks only}}
func.func @forward(%w: tensor<4xf32> {lcc.param = "w"}, %x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = lcc.mul %x, %w {lcc.stage = 0} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %1 = lcc.neg %0 {lcc.stage = 1} : tensor<4xf32>
  %2 = lcc.mul %1, %w {lcc.stage = 2} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %3 = lcc.neg %2 {lcc.stage = 3} : tensor<4xf32>
  return %3 : tensor<4xf32>
}
