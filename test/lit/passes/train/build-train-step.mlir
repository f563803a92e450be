// RUN: lcc-opt %s --lcc-autodiff --lcc-build-train-step | FileCheck %s
// RUN: lcc-opt %s --lcc-autodiff --lcc-build-train-step="optimizer=sgd nesterov=true clip=0 accum=2 schedule=cosine warmup=2 decay-steps=10" | FileCheck %s --check-prefix=SGD
// RUN: lcc-opt %s --lcc-autodiff --lcc-build-train-step="accum=3 unroll-accum=true" | FileCheck %s --check-prefix=UNROLL
// RUN: lcc-opt %s --lcc-autodiff --lcc-build-train-step="accum=3 peel-last=true" | FileCheck %s --check-prefix=PEEL

// RUN: lcc-opt %s --lcc-autodiff=seed-arg=true --lcc-build-train-step="loss-scale=dynamic loss-scale-window=3" | FileCheck %s --check-prefix=AMP

// A linear model with a rank-2 weight (decayed), a bias (not decayed by the
// rank rule) and a frozen parameter (an argument, but no result and no state).

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:    %[[W:[a-z0-9]+]]: tensor<4x3xf32> {lcc.param = "w"}
// CHECK-SAME:    %[[B:[a-z0-9]+]]: tensor<3xf32> {lcc.param = "b"}
// CHECK-SAME:    %[[S:[a-z0-9]+]]: tensor<3xf32> {lcc.frozen, lcc.param = "s"}
// CHECK-SAME:    %[[MW:[a-z0-9]+]]: tensor<4x3xf32> {lcc.opt_state = "m:w"}
// CHECK-SAME:    %[[MB:[a-z0-9]+]]: tensor<3xf32> {lcc.opt_state = "m:b"}
// CHECK-SAME:    %[[VW:[a-z0-9]+]]: tensor<4x3xf32> {lcc.opt_state = "v:w"}
// CHECK-SAME:    %[[VB:[a-z0-9]+]]: tensor<3xf32> {lcc.opt_state = "v:b"}
// CHECK-SAME:    %[[STEP:[a-z0-9]+]]: tensor<i64> {lcc.step}
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<8x4xf32> {lcc.input = "x"}
// CHECK-SAME:    %[[Y:[a-z0-9]+]]: tensor<8xi32> {lcc.input = "y"}
// CHECK-SAME:    -> (tensor<4x3xf32> {lcc.param = "w"}, tensor<3xf32> {lcc.param = "b"},
// CHECK-SAME:        tensor<4x3xf32> {lcc.opt_state = "m:w"}, tensor<3xf32> {lcc.opt_state = "m:b"},
// CHECK-SAME:        tensor<4x3xf32> {lcc.opt_state = "v:w"}, tensor<3xf32> {lcc.opt_state = "v:b"},
// CHECK-SAME:        tensor<f32> {lcc.output = "loss"}, tensor<f32> {lcc.output = "grad_norm"}, tensor<f32> {lcc.output = "lr"})
// The forward and backward of @forward_grad, inlined:
// CHECK:         lcc.cross_entropy
// Global norm and the clip coefficient min(clip / (norm + 1e-6), 1):
// CHECK:         %[[NORM:.*]] = lcc.sqrt
// CHECK:         lcc.div
// CHECK:         lcc.minimum
// The step counter becomes the float iteration; bias corrections use it.
// CHECK:         %[[T:.*]] = lcc.convert %[[STEP]] : tensor<i64> -> tensor<f32>
// CHECK:         lcc.pow
// Decoupled weight decay on w only (p * (1 - lr * wd)); the bias gets none.
// CHECK:         lcc.mul %[[W]]
// CHECK-NOT:     lcc.mul %[[B]]
// CHECK:         return

// SGD with Nesterov momentum, no clipping, K = 2 micro-batches, cosine:
// SGD-LABEL: func.func @train_step(
// SGD-SAME:    {lcc.opt_state = "momentum:w"}
// SGD-SAME:    {lcc.opt_state = "momentum:b"}
// SGD-SAME:    tensor<i64> {lcc.step}
// SGD-SAME:    tensor<2x8x4xf32> {lcc.input = "x"}
// SGD-SAME:    tensor<2x8xi32> {lcc.input = "y"}
// Two micro-batches: one loop whose body is one copy of the backward on
// row k of each input, carrying the loss and gradient sums from zero.
// SGD:         %[[ZL:.*]] = lcc.fill {{.*}} : tensor<f32>
// SGD:         %[[ZW:.*]] = lcc.fill {{.*}} : tensor<4x3xf32>
// SGD:         %[[ZB:.*]] = lcc.fill {{.*}} : tensor<3xf32>
// SGD:         %[[SUM:.*]]:3 = scf.for %[[K:.*]] = %c0 to %c2 step %c1 iter_args(%[[L:.*]] = %[[ZL]], %[[GW:.*]] = %[[ZW]], %[[GB:.*]] = %[[ZB]])
// SGD:           tensor.extract_slice %{{.*}}[%[[K]], 0, 0] [1, 8, 4] [1, 1, 1] : tensor<2x8x4xf32> to tensor<8x4xf32>
// SGD:           tensor.extract_slice %{{.*}}[%[[K]], 0] [1, 8] [1, 1] : tensor<2x8xi32> to tensor<8xi32>
// SGD:           lcc.cross_entropy
// SGD-NOT:       lcc.cross_entropy
// SGD:           %[[L2:.*]] = lcc.add %[[L]],
// SGD:           %[[GW2:.*]] = lcc.add %[[GW]],
// SGD:           %[[GB2:.*]] = lcc.add %[[GB]],
// SGD:           scf.yield %[[L2]], %[[GW2]], %[[GB2]]
// SGD:         } {lcc.micro_batches}
// The mean over micro-batches:
// SGD:         lcc.mul %[[SUM]]#0
// clip = 0: the norm is computed (it is returned) but nothing clamps it.
// SGD:         lcc.sqrt
// SGD-NOT:     lcc.minimum
// SGD:         lcc.convert %{{.*}} : tensor<i64> -> tensor<f32>
// The warmup select:
// SGD:         lcc.cmp "lt"
// SGD:         lcc.where
// SGD:         return

// peel-last: micro-batches 0 and 1 in the loop, the last one after it (its
// row 2 sliced statically), added to the loop's sums.
// PEEL-LABEL: func.func @train_step(
// PEEL:         %[[SUM:.*]]:3 = scf.for %{{.*}} = %c0 to %c2 step %c1
// PEEL-COUNT-1:   lcc.cross_entropy
// PEEL:         } {lcc.micro_batches}
// PEEL:         lcc.slice %{{.*}} {limit = array<i64: 3, 8, 4>, start = array<i64: 2, 0, 0>}
// PEEL:         lcc.cross_entropy
// PEEL-NOT:     lcc.cross_entropy
// PEEL:         lcc.add %[[SUM]]#0,
// PEEL:         return

// unroll-accum: the old form, one copy per micro-batch summed in order.
// UNROLL-LABEL: func.func @train_step(
// UNROLL-NOT:    scf.for
// UNROLL-COUNT-3: lcc.cross_entropy
// UNROLL-NOT:    lcc.cross_entropy
// UNROLL:        return

func.func @forward(%w: tensor<4x3xf32> {lcc.param = "w"}, %b: tensor<3xf32> {lcc.param = "b"},
                   %s: tensor<3xf32> {lcc.param = "s", lcc.frozen},
                   %x: tensor<8x4xf32> {lcc.input = "x"}, %y: tensor<8xi32> {lcc.input = "y"}) -> tensor<f32> {
  %h = lcc.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  %z = lcc.add %h, %b : tensor<8x3xf32>, tensor<3xf32> -> tensor<8x3xf32>
  %z2 = lcc.add %z, %s : tensor<8x3xf32>, tensor<3xf32> -> tensor<8x3xf32>
  %l = lcc.cross_entropy %z2, %y : tensor<8x3xf32>, tensor<8xi32> -> tensor<f32>
  return %l : tensor<f32>
}

// Dynamic loss scaling (fp16): three scalar state values after the optimizer
// state, the scale 65536 * 2^log2_scale as the backward's seed, gradients
// divided by it before the markers, the overflow check on the norm's sum of
// squares, every update and state kept on overflow, GradScaler's update of
// the scale, bias corrections on the steps taken (step - skipped).
// AMP-LABEL: func.func @train_step(
// AMP-SAME:    %[[VB:[a-z0-9]+]]: tensor<3xf32> {lcc.opt_state = "v:b"}
// AMP-SAME:    %[[LOG2:[a-z0-9]+]]: tensor<f32> {lcc.opt_state = "amp:log2_scale"}
// AMP-SAME:    %[[GOOD:[a-z0-9]+]]: tensor<f32> {lcc.opt_state = "amp:good_steps"}
// AMP-SAME:    %[[SKIP:[a-z0-9]+]]: tensor<f32> {lcc.opt_state = "amp:skipped"}
// AMP-SAME:    %[[STEP:[a-z0-9]+]]: tensor<i64> {lcc.step}
// AMP-SAME:    tensor<f32> {lcc.opt_state = "amp:log2_scale"}, tensor<f32> {lcc.opt_state = "amp:good_steps"}, tensor<f32> {lcc.opt_state = "amp:skipped"},
// AMP-SAME:    tensor<f32> {lcc.output = "lr"}, tensor<f32> {lcc.output = "loss_scale"})
// AMP:         %[[TWO:.*]] = lcc.fill {value = 2.000000e+00 : f64} : tensor<f32>
// AMP:         %[[P:.*]] = lcc.pow %[[TWO]], %[[LOG2]]
// AMP:         %[[INIT:.*]] = lcc.fill {value = 6.553600e+04 : f64} : tensor<f32>
// AMP:         %[[SCALE:.*]] = lcc.mul %[[P]], %[[INIT]]
// AMP:         lcc.cross_entropy
// AMP:         lcc.div %[[SCALE]],
// AMP:         %[[INV:.*]] = lcc.div %{{.*}}, %[[SCALE]]
// AMP:         lcc.mul %{{.*}}, %[[INV]]
// AMP:         lcc.gradient
// AMP:         lcc.sqrt %[[SUMSQ:[0-9a-z]+]]
// AMP-NEXT:    %[[INF:.*]] = lcc.fill {value = 0x7FF0000000000000 : f64} : tensor<f32>
// AMP-NEXT:    %[[OK:.*]] = lcc.cmp "lt", %[[SUMSQ]], %[[INF]]
// AMP:         %[[T:.*]] = lcc.convert %[[STEP]]
// AMP:         %[[TOPT:.*]] = lcc.sub %[[T]], %[[SKIP]]
// AMP:         lcc.pow %{{.*}}, %[[TOPT]]
// AMP:         lcc.where %[[OK]], %{{.*}}, %[[VB]] : tensor<i1>, tensor<3xf32>
// AMP:         %[[GROW:.*]] = lcc.cmp "ge"
// AMP:         %[[UP:.*]] = lcc.where %[[GROW]], %{{.*}}, %[[LOG2]]
// AMP:         %[[DOWN:.*]] = lcc.sub %[[LOG2]],
// AMP:         lcc.where %[[OK]], %[[UP]], %[[DOWN]]
// AMP:         return

