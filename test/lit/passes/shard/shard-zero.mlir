// RUN: lcc-opt %s --lcc-autodiff --lcc-build-train-step --lcc-shard-zero="dp=5 stage=1" | FileCheck %s --check-prefixes=ALL,Z1
// RUN: lcc-opt %s --lcc-autodiff --lcc-build-train-step --lcc-shard-zero="dp=5 stage=2" | FileCheck %s --check-prefixes=ALL,Z2
// RUN: lcc-opt %s --lcc-autodiff --lcc-build-train-step --lcc-shard-zero="dp=5 stage=3" | FileCheck %s --check-prefixes=ALL,Z3
// RUN: lcc-opt %s --lcc-autodiff --lcc-build-train-step --lcc-shard-zero="dp=5 stage=1 bucket-mb=0.00003" | FileCheck %s --check-prefix=LATE
// RUN: lcc-opt %s --lcc-autodiff --lcc-build-train-step --lcc-shard-zero="dp=5 stage=2 bucket-mb=0.00003" | FileCheck %s --check-prefix=EARLY

// One bucket per gradient (30-byte buckets). Stage 2 reduce-scatters b's
// gradient as soon as it exists, before the backward computes w's; stage 1
// waits for the whole backward, then reduce-scatters in the same order.
// EARLY-LABEL: func.func @train_step(
// EARLY:         lcc.reduce_scatter %{{.*}} : tensor<5x1xf32> -> tensor<1x1xf32>
// EARLY:         lcc.matmul %{{.*}} {transpose_lhs = true}
// EARLY:         lcc.reduce_scatter %{{.*}} : tensor<5x3xf32> -> tensor<1x3xf32>
// LATE-LABEL: func.func @train_step(
// LATE:          lcc.matmul %{{.*}} {transpose_lhs = true}
// LATE:          lcc.reduce_scatter %{{.*}} : tensor<5x1xf32> -> tensor<1x1xf32>
// LATE:          lcc.reduce_scatter %{{.*}} : tensor<5x3xf32> -> tensor<1x3xf32>
// With buckets that small, each updated parameter is gathered alone.
// EARLY:         lcc.all_gather %{{.*}} {group = "dp"} : tensor<3xf32> -> tensor<15xf32>
// EARLY:         lcc.all_gather %{{.*}} {group = "dp"} : tensor<1xf32> -> tensor<5xf32>

// w (4x3 = 12 elements) and b (3) over 5 ranks: flattened and zero-padded to
// 15 and 5, parts of 3 and 1 elements. s is frozen and stays whole.

// ALL: module attributes {lcc.process_groups = {dp = 5 : i64}}

// Stage 3: @forward takes the parts and gathers the parameters before use;
// w and b are first used within a few ops of each other (a layer's weights),
// so one all_gather brings both: this rank's parts as one row, [5, 4] back.
// Z3-LABEL: func.func @forward(
// Z3-SAME:    tensor<3xf32> {lcc.param = "w", lcc.shard = {group = "dp", parts = 5 : i64, shape = array<i64: 4, 3>}}
// Z3-SAME:    tensor<1xf32> {lcc.param = "b", lcc.shard = {group = "dp", parts = 5 : i64, shape = array<i64: 3>}}
// Z3-SAME:    tensor<3xf32> {lcc.frozen, lcc.param = "s"}
// Z3:         %[[RW:.*]] = lcc.reshape %arg0 : tensor<3xf32> -> tensor<1x3xf32>
// Z3-NEXT:    %[[RB:.*]] = lcc.reshape %arg1 : tensor<1xf32> -> tensor<1x1xf32>
// Z3-NEXT:    %[[ROW:.*]] = lcc.concat %[[RW]], %[[RB]] {axis = 1 : i64} : tensor<1x3xf32>, tensor<1x1xf32> -> tensor<1x4xf32>
// Z3-NEXT:    %[[G:.*]] = lcc.all_gather %[[ROW]] {group = "dp"} : tensor<1x4xf32> -> tensor<5x4xf32>
// Z3-NEXT:    lcc.slice %[[G]] {limit = array<i64: 5, 3>, start = array<i64: 0, 0>} : tensor<5x4xf32> -> tensor<5x3xf32>
// Z3-NOT:     lcc.all_gather

// The optimizer state is partitioned in every stage.
// ALL-LABEL: func.func @train_step(
// Z1-SAME:    tensor<4x3xf32> {lcc.param = "w"}
// Z2-SAME:    tensor<4x3xf32> {lcc.param = "w"}
// Z3-SAME:    tensor<3xf32> {lcc.param = "w", lcc.shard = {group = "dp", parts = 5 : i64, shape = array<i64: 4, 3>}}
// ALL-SAME:   tensor<3xf32> {lcc.opt_state = "m:w", lcc.shard = {group = "dp", parts = 5 : i64, shape = array<i64: 4, 3>}}
// ALL-SAME:   tensor<1xf32> {lcc.opt_state = "m:b", lcc.shard = {group = "dp", parts = 5 : i64, shape = array<i64: 3>}}
// ALL-SAME:   tensor<3xf32> {lcc.opt_state = "v:w", lcc.shard = {group = "dp", parts = 5 : i64, shape = array<i64: 4, 3>}}
// ALL-SAME:   tensor<1xf32> {lcc.opt_state = "v:b", lcc.shard = {group = "dp", parts = 5 : i64, shape = array<i64: 3>}}
// Z1-SAME:    -> (tensor<4x3xf32> {lcc.param = "w"}, tensor<3xf32> {lcc.param = "b"},
// Z3-SAME:    -> (tensor<3xf32> {lcc.param = "w", lcc.shard = {{.*}}}, tensor<1xf32> {lcc.param = "b", lcc.shard = {{.*}}},

// Stage 3 gathers w and b for the forward, together.
// Z3:         lcc.all_gather %{{.*}} {group = "dp"} : tensor<1x4xf32> -> tensor<5x4xf32>

// All stages: the padded gradients as [5, part] rows side by side, one
// reduce_scatter of the bucket; row r is rank r's part of both. (Stage 1
// issues it after the whole backward, stages 2-3 as soon as the bucket is
// ready; with one bucket the two places coincide here.)
// Z1:         lcc.concat %{{.*}}, %{{.*}} {axis = 1 : i64} : tensor<5x1xf32>, tensor<5x3xf32> -> tensor<5x4xf32>
// Z1:         lcc.reduce_scatter %{{.*}} {group = "dp", reduction = "mean"} : tensor<5x4xf32> -> tensor<1x4xf32>
// Z2:         lcc.concat %{{.*}}, %{{.*}} {axis = 1 : i64} : tensor<5x1xf32>, tensor<5x3xf32> -> tensor<5x4xf32>
// Z2:         lcc.reduce_scatter %{{.*}} {group = "dp", reduction = "mean"} : tensor<5x4xf32> -> tensor<1x4xf32>
// Z3:         lcc.reduce_scatter %{{.*}} {group = "dp", reduction = "mean"} : tensor<5x4xf32> -> tensor<1x4xf32>
// ALL-NOT:    lcc.all_reduce %{{.*}} : tensor<15xf32>
// The global norm: local sums of squares of the parts, added, then one
// all_reduce(sum) over the ranks for all parameters.
// ALL:        %[[SW:.*]] = lcc.reduce_sum %{{.*}} {axes = array<i64: 0>} : tensor<3xf32> -> tensor<f32>
// ALL:        %[[SB:.*]] = lcc.reduce_sum %{{.*}} {axes = array<i64: 0>} : tensor<1xf32> -> tensor<f32>
// ALL-NEXT:   %[[SUM:.*]] = lcc.add %[[SW]], %[[SB]] : tensor<f32>, tensor<f32> -> tensor<f32>
// ALL-NEXT:   %[[TOT:.*]] = lcc.all_reduce %[[SUM]] {group = "dp"} : tensor<f32>
// ALL-NEXT:   lcc.sqrt %[[TOT]]
// ALL-NOT:    lcc.all_reduce %{{.*}} {group = "dp"} : tensor<f32>
// The update runs on parts: stages 1-2 take the part of the whole parameter
// for weight decay and gather the updated parts into the new parameters, one
// all_gather per bucket: this rank's parts of w (3) and b (1) as one row, the
// gathered rows [5, 4] cut into column blocks, rank by rank, then unpadded.
// Z1:         lcc.shard_slice %{{.*}} {group = "dp"} : tensor<15xf32> -> tensor<3xf32>
// Z1:         %[[ROW:.*]] = lcc.concat %{{.*}}, %{{.*}} {axis = 1 : i64} : tensor<1x3xf32>, tensor<1x1xf32> -> tensor<1x4xf32>
// Z1-NEXT:    %[[G:.*]] = lcc.all_gather %[[ROW]] {group = "dp"} : tensor<1x4xf32> -> tensor<5x4xf32>
// Z1-NEXT:    %[[WC:.*]] = lcc.slice %[[G]] {limit = array<i64: 5, 3>, start = array<i64: 0, 0>} : tensor<5x4xf32> -> tensor<5x3xf32>
// Z1-NEXT:    %[[WF:.*]] = lcc.reshape %[[WC]] : tensor<5x3xf32> -> tensor<15xf32>
// Z1-NEXT:    %[[WU:.*]] = lcc.slice %[[WF]] {limit = array<i64: 12>, start = array<i64: 0>} : tensor<15xf32> -> tensor<12xf32>
// Z1-NEXT:    %[[W:.*]] = lcc.reshape %[[WU]] : tensor<12xf32> -> tensor<4x3xf32>
// Z1-NEXT:    %[[BC:.*]] = lcc.slice %[[G]] {limit = array<i64: 5, 4>, start = array<i64: 0, 3>} : tensor<5x4xf32> -> tensor<5x1xf32>
// Z1-NEXT:    %[[BF:.*]] = lcc.reshape %[[BC]] : tensor<5x1xf32> -> tensor<5xf32>
// Z1-NEXT:    %[[B:.*]] = lcc.slice %[[BF]] {limit = array<i64: 3>, start = array<i64: 0>} : tensor<5xf32> -> tensor<3xf32>
// Z1-NOT:     lcc.all_gather
// Z2:         lcc.all_gather %{{.*}} {group = "dp"} : tensor<1x4xf32> -> tensor<5x4xf32>
// Z2-NOT:     lcc.all_gather
// Z3-NOT:     lcc.shard_slice
// ALL:        lcc.all_reduce %{{.*}} {group = "dp", reduction = "mean"} : tensor<f32>
// ALL-NOT:    lcc.gradient
// ALL:        return
// Z1-SAME:    %[[W]], %[[B]],

func.func @forward(%w: tensor<4x3xf32> {lcc.param = "w"}, %b: tensor<3xf32> {lcc.param = "b"},
                   %s: tensor<3xf32> {lcc.param = "s", lcc.frozen},
                   %x: tensor<8x4xf32> {lcc.input = "x"}, %y: tensor<8xi32> {lcc.input = "y"}) -> tensor<f32> {
  %h = lcc.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  %z = lcc.add %h, %b : tensor<8x3xf32>, tensor<3xf32> -> tensor<8x3xf32>
  %z2 = lcc.add %z, %s : tensor<8x3xf32>, tensor<3xf32> -> tensor<8x3xf32>
  %l = lcc.cross_entropy %z2, %y : tensor<8x3xf32>, tensor<8xi32> -> tensor<f32>
  return %l : tensor<f32>
}
