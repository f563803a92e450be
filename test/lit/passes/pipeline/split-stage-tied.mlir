// RUN: lcc-opt %s --lcc-split-stage=stage=1 | FileCheck %s --check-prefix=S1
// RUN: lcc-opt %s --lcc-split-stage=stage=1 --lcc-autodiff --lcc-build-train-step="accum=2 optimizer=sgd momentum=0" | FileCheck %s --check-prefix=STEP1
// RUN: lcc-opt %s --lcc-split-stage=stage=2 --lcc-autodiff --lcc-build-train-step="accum=2 optimizer=sgd momentum=0" | FileCheck %s --check-prefix=STEP2
// A parameter that two stages of three read, neither all of them nor the
// pipeline's two ends: w, read by stages 0 and 1. Both hold it, its
// gradient is summed over a group of those two ranks of pp (pp_tied_0_1,
// declared by every stage, so that each rank's program knows the same
// groups), and stage 0 counts it in the clipping norm. Stage 2 holds none.

// S1: module attributes {lcc.process_groups = {pp = 3 : i64, pp_tied_0_1 = 2 : i64}}
// S1-LABEL: func.func @forward(
// S1-SAME:    {lcc.param = "w", lcc.pipeline_tied = array<i64: 0, 1>}

// STEP1-LABEL: func.func @train_step(
// STEP1:         %[[T:.*]] = lcc.all_reduce %{{.*}} {group = "pp_tied_0_1"} : tensor<4xf32>
// STEP1-NEXT:    lcc.gradient %[[T]] {param = "w"}
// One sum over the two holders, nothing more on that group (the clipping
// norm's sum of squares goes over pp, and only stage 0 adds w's).
// STEP1-NOT:     lcc.all_reduce %{{.*}} {group = "pp_tied_0_1"}

// STEP2: module attributes {lcc.process_groups = {pp = 3 : i64, pp_tied_0_1 = 2 : i64}}
// STEP2-LABEL: func.func @train_step(
// STEP2-NOT:     pp_tied_0_1
// STEP2:         return
func.func @forward(%w: tensor<4xf32> {lcc.param = "w"}, %v: tensor<4xf32> {lcc.param = "v"},
                   %x: tensor<4xf32> {lcc.input = "x"}) -> tensor<f32> {
  %0 = lcc.mul %x, %w {lcc.stage = 0} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %1 = lcc.mul %0, %w {lcc.stage = 1} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %2 = lcc.mul %1, %v {lcc.stage = 2} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %3 = lcc.reduce_sum %2 {axes = array<i64: 0>, lcc.stage = 2} : tensor<4xf32> -> tensor<f32>
  return %3 : tensor<f32>
}
