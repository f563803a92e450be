// RUN: lcc-opt %s --lcc-shard-tp="tp=2" --lcc-autodiff --lcc-build-train-step --lcc-shard-zero="dp=2 stage=3" | FileCheck %s
// RUN: lcc-opt %s --lcc-shard-tp="tp=2" --lcc-autodiff --lcc-build-train-step --lcc-shard-zero="dp=2 stage=2" | FileCheck %s --check-prefix=Z2
// Tests passes/shard/ShardZero.cpp on a dp x tp grid: ZeRO partitions each
// tensor-parallel piece over the data-parallel ranks, and the part's
// lcc.shard keeps how the piece was cut (`within`), for the runtime.

// w1 [4, 8] is column-parallel (each tp rank holds [4, 4]), w2 [8, 4]
// row-parallel ([4, 4]); ZeRO-3 keeps 8 of each piece's 16 elements. The
// scale g stays whole over tp and is partitioned like any tensor.
// CHECK: module attributes {lcc.process_groups = {dp = 2 : i64, tp = 2 : i64}}
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: tensor<8xf32> {lcc.param = "w1", lcc.shard = {group = "dp", parts = 2 : i64, shape = array<i64: 4, 4>, within = {blocks = 1 : i64, dim = 1 : i64, group = "tp", parts = 2 : i64, shape = array<i64: 4, 8>}}}
// CHECK-SAME: tensor<8xf32> {lcc.param = "w2", lcc.shard = {group = "dp", parts = 2 : i64, shape = array<i64: 4, 4>, within = {blocks = 1 : i64, dim = 0 : i64, group = "tp", parts = 2 : i64, shape = array<i64: 8, 4>}}}
// CHECK-SAME: tensor<2xf32> {lcc.param = "g", lcc.shard = {group = "dp", parts = 2 : i64, shape = array<i64: 4>}}
// AdamW's state is split like its parameter, then partitioned the same way.
// CHECK-SAME: tensor<8xf32> {lcc.opt_state = "m:w1", lcc.shard = {group = "dp", parts = 2 : i64, shape = array<i64: 4, 4>, within = {blocks = 1 : i64, dim = 1 : i64, group = "tp", parts = 2 : i64, shape = array<i64: 4, 8>}}}
// Results carry the same composed layout as their arguments.
// CHECK-SAME: -> (tensor<8xf32> {lcc.param = "w1", lcc.shard = {group = "dp", parts = 2 : i64, shape = array<i64: 4, 4>, within = {blocks = 1 : i64, dim = 1 : i64, group = "tp", parts = 2 : i64, shape = array<i64: 4, 8>}}}
// The gathers before use rebuild the tensor-parallel pieces (8 + 8 + 2
// elements in one bucket), not the whole tensors.
// CHECK:      lcc.all_gather %{{.*}} {group = "dp"} : tensor<1x18xf32> -> tensor<2x18xf32>
// CHECK:      lcc.parallel_copy
// CHECK:      lcc.matmul %{{.*}}, %{{.*}} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>

// ZeRO-2 keeps parameters as tensor-parallel pieces (gathered after the
// update), and partitions the state.
// Z2-LABEL: func.func @train_step(
// Z2-SAME: tensor<4x4xf32> {lcc.param = "w1", lcc.shard = {blocks = 1 : i64, dim = 1 : i64, group = "tp", parts = 2 : i64, shape = array<i64: 4, 8>}}
// Z2-SAME: tensor<8xf32> {lcc.opt_state = "m:w1", lcc.shard = {group = "dp", parts = 2 : i64, shape = array<i64: 4, 4>, within = {blocks = 1 : i64, dim = 1 : i64, group = "tp", parts = 2 : i64, shape = array<i64: 4, 8>}}}
// Z2:      lcc.reduce_scatter %{{.*}} {group = "dp", reduction = "mean"} : tensor<2x18xf32> -> tensor<1x18xf32>
func.func @forward(%w1: tensor<4x8xf32> {lcc.param = "w1"}, %w2: tensor<8x4xf32> {lcc.param = "w2"},
                   %g: tensor<4xf32> {lcc.param = "g"},
                   %x: tensor<2x4xf32> {lcc.input = "x"}, %y: tensor<2xi32> {lcc.input = "y"}) -> tensor<f32> {
  %xs = lcc.mul %x, %g : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %h = lcc.matmul %xs, %w1 : tensor<2x4xf32>, tensor<4x8xf32> -> tensor<2x8xf32>
  %a = lcc.tanh %h : tensor<2x8xf32>
  %o = lcc.matmul %a, %w2 : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32>
  %l = lcc.cross_entropy %o, %y : tensor<2x4xf32>, tensor<2xi32> -> tensor<f32>
  return %l : tensor<f32>
}
