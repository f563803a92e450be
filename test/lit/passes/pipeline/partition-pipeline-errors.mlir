// RUN: lcc-opt %s --split-input-file --verify-diagnostics --lcc-partition-pipeline=stages=4
// RUN: not lcc-opt %s --split-input-file --lcc-partition-pipeline="stages=4 stage-starts=2,1,3" 2>&1 | FileCheck %s --check-prefix=BOUNDS
// Errors of lcc-partition-pipeline (passes/pipeline/PartitionPipeline.cpp).

// Two layers cannot make four stages.
// expected-error@+1 {{lcc-partition-pipeline: @forward: cannot cut the model into 4 pipeline stages: it has 2 layers, and each stage needs at least one}}
func.func @forward(%x: tensor<4xf32>, %w: tensor<4xf32> {lcc.param = "w"}) -> tensor<4xf32> {
  %a = lcc.mul %x, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.0.")
  %b = lcc.mul %a, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.1.")
  return %b : tensor<4xf32>
}

// -----

// A layer whose ops are split by another layer's cannot be kept on one stage.
func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = lcc.neg %x : tensor<4xf32> loc("h.0.")
  %b = lcc.neg %a : tensor<4xf32> loc("h.1.")
  // expected-error@unknown {{lcc-partition-pipeline: the ops of layer h.0 are not contiguous in @forward (this one follows layer h.1)}}
  %c = lcc.neg %b : tensor<4xf32> loc("h.0.")
  return %c : tensor<4xf32>
}

// -----

// Four layers, four stages: fine with the balanced cut; the user's
// boundaries must increase (BOUNDS).
// BOUNDS: error: lcc-partition-pipeline: @forward: pipeline stage boundaries must be increasing layer numbers in 1..3 (a stage starts at that layer), got 1 after 2
func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = lcc.neg %x : tensor<4xf32> loc("h.0.")
  %b = lcc.neg %a : tensor<4xf32> loc("h.1.")
  %c = lcc.neg %b : tensor<4xf32> loc("h.2.")
  %d = lcc.neg %c : tensor<4xf32> loc("h.3.")
  return %d : tensor<4xf32>
}
