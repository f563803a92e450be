// RUN: lcc-opt %s --lcc-lora="rank=2 alpha=4 targets=wc,wr" | FileCheck %s
// Tests passes/train/Lora.cpp after lcc-shard-tp: a column-parallel W (out features split in
// 2 blocks of 2 ranks) gets B split as it is and A on every rank, its gradient summed over tp
// (lcc.parallel_copy); a row-parallel W (in features split) gets A split and B on every rank.
// @init makes the whole adapters (the runtime cuts them).

// CHECK-LABEL: func.func @init() -> (tensor<8x12xf32>, tensor<2x8xf32>, tensor<12x2xf32>, tensor<12x8xf32>, tensor<2x12xf32>, tensor<8x2xf32>)
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[WC:[a-z0-9]+]]: tensor<8x6xf32> {lcc.frozen, lcc.param = "wc", lcc.shard = {blocks = 2 : i64, dim = 1 : i64, group = "tp", parts = 2 : i64, shape = array<i64: 8, 12>}}
// CHECK-SAME: %[[AC:[a-z0-9]+]]: tensor<2x8xf32> {lcc.param = "wc.lora_A.weight"}
// CHECK-SAME: %[[BC:[a-z0-9]+]]: tensor<6x2xf32> {lcc.param = "wc.lora_B.weight", lcc.shard = {blocks = 2 : i64, dim = 0 : i64, group = "tp", parts = 2 : i64, shape = array<i64: 12, 2>}}
// CHECK-SAME: %[[WR:[a-z0-9]+]]: tensor<6x8xf32> {lcc.frozen, lcc.param = "wr", lcc.shard = {blocks = 1 : i64, dim = 0 : i64, group = "tp", parts = 2 : i64, shape = array<i64: 12, 8>}}
// CHECK-SAME: %[[AR:[a-z0-9]+]]: tensor<2x6xf32> {lcc.param = "wr.lora_A.weight", lcc.shard = {blocks = 1 : i64, dim = 1 : i64, group = "tp", parts = 2 : i64, shape = array<i64: 2, 12>}}
// CHECK-SAME: %[[BR:[a-z0-9]+]]: tensor<8x2xf32> {lcc.param = "wr.lora_B.weight"}
// CHECK: %[[ACC:.*]] = lcc.parallel_copy %[[AC]] {group = "tp"} : tensor<2x8xf32>
// CHECK: lcc.matmul %{{.*}}, %[[ACC]] {transpose_rhs = true} : tensor<1x4x8xf32>, tensor<2x8xf32> -> tensor<1x4x2xf32>
// CHECK: lcc.matmul %{{.*}}, %[[BC]] {transpose_rhs = true} : tensor<1x4x2xf32>, tensor<6x2xf32> -> tensor<1x4x6xf32>
// CHECK: %[[BRC:.*]] = lcc.parallel_copy %[[BR]] {group = "tp"} : tensor<8x2xf32>
// CHECK: lcc.matmul %{{.*}}, %[[AR]] {transpose_rhs = true} : tensor<1x4x6xf32>, tensor<2x6xf32> -> tensor<1x4x2xf32>
// CHECK: lcc.matmul %{{.*}}, %[[BRC]] {transpose_rhs = true} : tensor<1x4x2xf32>, tensor<8x2xf32> -> tensor<1x4x8xf32>

module attributes {lcc.process_groups = {tp = 2 : i64}} {
func.func @init() -> (tensor<8x12xf32>, tensor<12x8xf32>) {
  %a = lcc.fill {value = 0.5 : f64} : tensor<8x12xf32>
  %b = lcc.fill {value = 0.5 : f64} : tensor<12x8xf32>
  return %a, %b : tensor<8x12xf32>, tensor<12x8xf32>
}

func.func @forward(%wc: tensor<8x6xf32> {lcc.param = "wc", lcc.shard = {blocks = 2 : i64, dim = 1 : i64, group = "tp", parts = 2 : i64, shape = array<i64: 8, 12>}},
                   %wr: tensor<6x8xf32> {lcc.param = "wr", lcc.shard = {blocks = 1 : i64, dim = 0 : i64, group = "tp", parts = 2 : i64, shape = array<i64: 12, 8>}},
                   %x: tensor<1x4x8xf32> {lcc.input = "x"}) -> tensor<f32> {
  %xc = lcc.parallel_copy %x {group = "tp"} : tensor<1x4x8xf32>
  %h = lcc.matmul %xc, %wc : tensor<1x4x8xf32>, tensor<8x6xf32> -> tensor<1x4x6xf32>
  %y = lcc.matmul %h, %wr : tensor<1x4x6xf32>, tensor<6x8xf32> -> tensor<1x4x8xf32>
  %s = lcc.reduce_sum %y {axes = array<i64: 0, 1, 2>} : tensor<1x4x8xf32> -> tensor<f32>
  return %s : tensor<f32>
}
}
