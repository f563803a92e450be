// RUN: lcc-opt %s --lcc-sequence-parallel="tp=2" | FileCheck %s
// RUN: lcc-opt %s --lcc-sequence-parallel="tp=2" --lcc-autodiff | FileCheck %s --check-prefix=BWD
// RUN: lcc-opt %s --lcc-sequence-parallel="tp=2" --lcc-autodiff --lcc-build-train-step | FileCheck %s --check-prefix=STEP
// Tests passes/shard/SequenceParallel.cpp on the form lcc-shard-tp leaves: a
// region's input through parallel_copy, its partial result through
// all_reduce, the residual stream [2, 2, 4] (4 tokens of 4 features) whole
// on both ranks between them.

// The norm's weights, read only by the stream's ops, are applied to a rank's
// tokens: each rank's gradient is a share, summed once per step.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME:    %arg2: tensor<4xf32> {lcc.param = "s", lcc.partial_grad = "tp"}, %arg3: tensor<4xf32> {lcc.param = "b", lcc.partial_grad = "tp"}
// The region's sum: each rank keeps its 2 tokens of it.
// CHECK:         %[[F:.*]] = lcc.reshape %{{.*}} : tensor<2x2x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT:    %[[E:.*]] = lcc.reduce_scatter %[[F]] {group = "tp"} : tensor<4x4xf32> -> tensor<2x4xf32>
// A position table has its own tokens: broadcast, flattened, the rank's rows.
// CHECK-NEXT:    %[[PB:.*]] = lcc.broadcast_to %arg1 : tensor<2x4xf32> -> tensor<2x2x4xf32>
// CHECK-NEXT:    %[[PF:.*]] = lcc.reshape %[[PB]] : tensor<2x2x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT:    %[[PS:.*]] = lcc.shard_slice %[[PF]] {group = "tp"} : tensor<4x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    %[[H:.*]] = lcc.add %[[E]], %[[PS]] : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    %[[N:.*]] = lcc.layer_norm %[[H]], %arg2, %arg3 : tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>
// The region's input: every token again.
// CHECK-NEXT:    %[[G:.*]] = lcc.all_gather %[[N]] {group = "tp"} : tensor<2x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT:    %[[C:.*]] = lcc.reshape %[[G]] : tensor<4x4xf32> -> tensor<2x2x4xf32>
// CHECK-NEXT:    lcc.matmul %[[C]], %arg4
// CHECK:         %[[R:.*]] = lcc.reduce_scatter %{{.*}} {group = "tp"} : tensor<4x4xf32> -> tensor<2x4xf32>
// The residual add of two parts; a constant scale stays as it is.
// CHECK-NEXT:    %[[Y:.*]] = lcc.add %[[H]], %[[R]] : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    %[[K:.*]] = lcc.fill
// CHECK-NEXT:    %[[Z:.*]] = lcc.mul %[[Y]], %[[K]] : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
// CHECK-NEXT:    lcc.all_gather %[[Z]] {group = "tp"} : tensor<2x4xf32> -> tensor<4x4xf32>
// CHECK-NOT:     lcc.all_reduce
// CHECK-NOT:     lcc.parallel_copy %{{.*}} : tensor<2x2x4xf32>
// The backward autodiff derives (vjp/Collectives.cpp): the all_gathers'
// gradients are reduce-scattered (the second region's input, then the
// first's), the reduce_scatters' gathered (the second region's sum), and
// the position table's part gathered back to its whole [4, 4] view. The
// norm weights' shares stay per rank here.
// BWD-LABEL:   func.func @forward_grad(
// BWD:           lcc.reduce_sum
// BWD:           lcc.reduce_scatter %{{.*}} {group = "tp"} : tensor<4x4xf32> -> tensor<2x4xf32>
// BWD:           lcc.all_gather %{{.*}} {group = "tp"} : tensor<2x4xf32> -> tensor<4x4xf32>
// BWD:           lcc.reduce_scatter %{{.*}} {group = "tp"} : tensor<4x4xf32> -> tensor<2x4xf32>
// BWD:           lcc.all_gather %{{.*}} {group = "tp"} : tensor<2x4xf32> -> tensor<4x4xf32>
// BWD-NOT:       lcc.all_reduce
// BWD:           return
// The step sums them once, both in one all-reduce, before the optimizer.
// STEP-LABEL:  func.func @train_step(
// STEP:          %[[J:.*]] = lcc.concat %{{.*}}, %{{.*}} {axis = 0 : i64} : tensor<4xf32>, tensor<4xf32> -> tensor<8xf32>
// STEP-NEXT:     lcc.all_reduce %[[J]] {group = "tp"} : tensor<8xf32>
// STEP-NOT:      lcc.all_reduce {{.*}} : tensor<4xf32>
// STEP:          lcc.gradient %{{.*}} {param = "s"}
module attributes {lcc.process_groups = {tp = 2 : i64}} {
  func.func @forward(%x: tensor<2x2x4xf32> {lcc.input = "x"}, %pos: tensor<2x4xf32> {lcc.param = "pos"},
                     %s: tensor<4xf32> {lcc.param = "s"}, %b: tensor<4xf32> {lcc.param = "b"},
                     %w1: tensor<4x2xf32> {lcc.param = "w1"}, %w2: tensor<2x4xf32> {lcc.param = "w2"}) -> tensor<f32> {
    %p = lcc.mul %x, %x : tensor<2x2x4xf32>, tensor<2x2x4xf32> -> tensor<2x2x4xf32>
    %e = lcc.all_reduce %p {group = "tp"} : tensor<2x2x4xf32>
    %h = lcc.add %e, %pos : tensor<2x2x4xf32>, tensor<2x4xf32> -> tensor<2x2x4xf32>
    %n = lcc.layer_norm %h, %s, %b : tensor<2x2x4xf32>, tensor<4xf32>, tensor<4xf32>
    %c = lcc.parallel_copy %n {group = "tp"} : tensor<2x2x4xf32>
    %m = lcc.matmul %c, %w1 : tensor<2x2x4xf32>, tensor<4x2xf32> -> tensor<2x2x2xf32>
    %g = lcc.gelu %m : tensor<2x2x2xf32>
    %o = lcc.matmul %g, %w2 : tensor<2x2x2xf32>, tensor<2x4xf32> -> tensor<2x2x4xf32>
    %r = lcc.all_reduce %o {group = "tp"} : tensor<2x2x4xf32>
    %y = lcc.add %h, %r : tensor<2x2x4xf32>, tensor<2x2x4xf32> -> tensor<2x2x4xf32>
    %k = lcc.fill {value = 0.5 : f64} : tensor<f32>
    %z = lcc.mul %y, %k : tensor<2x2x4xf32>, tensor<f32> -> tensor<2x2x4xf32>
    %c2 = lcc.parallel_copy %z {group = "tp"} : tensor<2x2x4xf32>
    %l = lcc.reduce_sum %c2 {axes = array<i64: 0, 1, 2>} : tensor<2x2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
