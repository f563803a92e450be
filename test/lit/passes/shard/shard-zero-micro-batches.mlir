// RUN: lcc-opt %s --lcc-autodiff --lcc-build-train-step="accum=3 peel-last=true" --lcc-shard-zero="dp=5 stage=3" | FileCheck %s
// Tests passes/shard/ShardZero.cpp (stage 3) on a step whose micro-batches are a
// loop (lcc-build-train-step): a parameter is gathered where each block of
// the step uses it, inside the loop's body (once per micro-batch, as K
// unrolled copies did) and again for the last micro-batch after it, never
// once before the loop for all of them (the whole parameter would then live
// through every micro-batch). The gradients are reduce-scattered after the
// last micro-batch.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:    tensor<3xf32> {lcc.param = "w", lcc.shard = {group = "dp", parts = 5 : i64, shape = array<i64: 4, 3>}}
// CHECK-NOT:     lcc.all_gather
// CHECK:         scf.for
// CHECK:           lcc.all_gather %{{.*}} {group = "dp"} : tensor<1x4xf32> -> tensor<5x4xf32>
// CHECK-NOT:       lcc.reduce_scatter
// CHECK:         } {lcc.micro_batches}
// CHECK:         lcc.all_gather %{{.*}} {group = "dp"} : tensor<1x4xf32> -> tensor<5x4xf32>
// CHECK:         lcc.cross_entropy
// CHECK:         lcc.reduce_scatter %{{.*}} {group = "dp", reduction = "mean"} : tensor<5x4xf32> -> tensor<1x4xf32>

func.func @forward(%w: tensor<4x3xf32> {lcc.param = "w"}, %b: tensor<3xf32> {lcc.param = "b"},
                   %s: tensor<3xf32> {lcc.param = "s", lcc.frozen},
                   %x: tensor<8x4xf32> {lcc.input = "x"}, %y: tensor<8xi32> {lcc.input = "y"}) -> tensor<f32> {
  %h = lcc.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  %z = lcc.add %h, %b : tensor<8x3xf32>, tensor<3xf32> -> tensor<8x3xf32>
  %z2 = lcc.add %z, %s : tensor<8x3xf32>, tensor<3xf32> -> tensor<8x3xf32>
  %l = lcc.cross_entropy %z2, %y : tensor<8x3xf32>, tensor<8xi32> -> tensor<f32>
  return %l : tensor<f32>
}
