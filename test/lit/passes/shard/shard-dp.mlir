// RUN: lcc-opt %s --lcc-autodiff --lcc-build-train-step --lcc-shard-dp="dp=4" | FileCheck %s
// RUN: lcc-opt %s --lcc-autodiff --lcc-build-train-step --lcc-shard-dp="dp=4 bucket-mb=0.00003" | FileCheck %s --check-prefix=SMALL
// RUN: lcc-opt %s --lcc-autodiff --lcc-build-train-step --lcc-shard-dp="dp=1" | FileCheck %s --check-prefix=ONE

// A linear model: w (4x3, 48 bytes) and b (3, 12 bytes) are trainable, s is frozen.

// CHECK: module attributes {lcc.process_groups = {dp = 4 : i64}}
// Evaluation reports the mean loss over the ranks too.
// CHECK-LABEL: func.func @forward(
// CHECK:         %[[L:.*]] = lcc.cross_entropy
// CHECK:         %[[M:.*]] = lcc.all_reduce %[[L]] {group = "dp", reduction = "mean"} : tensor<f32>
// CHECK:         return %[[M]]
// One 25 MiB bucket holds both gradients: flattened (b is ready first in the
// backward), concatenated, averaged once, cut again.
// CHECK-LABEL: func.func @train_step(
// CHECK:         %[[GB:.*]] = lcc.reshape %{{.*}} : tensor<1x3xf32> -> tensor<3xf32>
// CHECK:         %[[FW:.*]] = lcc.reshape %{{.*}} : tensor<4x3xf32> -> tensor<12xf32>
// CHECK:         %[[ALL:.*]] = lcc.concat %{{.*}}, %[[FW]] {axis = 0 : i64} : tensor<3xf32>, tensor<12xf32> -> tensor<15xf32>
// CHECK:         %[[AVG:.*]] = lcc.all_reduce %[[ALL]] {group = "dp", reduction = "mean"} : tensor<15xf32>
// CHECK:         lcc.slice %[[AVG]] {limit = array<i64: 3>, start = array<i64: 0>}
// CHECK:         lcc.slice %[[AVG]] {limit = array<i64: 15>, start = array<i64: 3>}
// The markers are gone; the norm and the optimizer use the averaged gradients.
// CHECK-NOT:     lcc.gradient
// CHECK:         lcc.sqrt
// CHECK:         %[[LOSS:.*]] = lcc.all_reduce %{{.*}} {group = "dp", reduction = "mean"} : tensor<f32>
// CHECK:         return {{.*}}, %[[LOSS]], %{{.*}}, %{{.*}} :

// A 30-byte bucket limit: each gradient gets its own all_reduce, in the
// order the backward produces them.
// SMALL-LABEL: func.func @train_step(
// SMALL:         lcc.all_reduce %{{.*}} {group = "dp", reduction = "mean"} : tensor<3xf32>
// SMALL:         lcc.all_reduce %{{.*}} {group = "dp", reduction = "mean"} : tensor<4x3xf32>
// SMALL-NOT:     lcc.concat

// One rank: nothing to communicate.
// ONE-NOT: lcc.all_reduce
// ONE-NOT: lcc.process_groups

func.func @forward(%w: tensor<4x3xf32> {lcc.param = "w"}, %b: tensor<3xf32> {lcc.param = "b"},
                   %s: tensor<3xf32> {lcc.param = "s", lcc.frozen},
                   %x: tensor<8x4xf32> {lcc.input = "x"}, %y: tensor<8xi32> {lcc.input = "y"}) -> tensor<f32> {
  %h = lcc.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  %z = lcc.add %h, %b : tensor<8x3xf32>, tensor<3xf32> -> tensor<8x3xf32>
  %z2 = lcc.add %z, %s : tensor<8x3xf32>, tensor<3xf32> -> tensor<8x3xf32>
  %l = lcc.cross_entropy %z2, %y : tensor<8x3xf32>, tensor<8xi32> -> tensor<f32>
  return %l : tensor<f32>
}
