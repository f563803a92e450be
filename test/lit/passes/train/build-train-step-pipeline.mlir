// RUN: lcc-opt %s --lcc-split-stage=stage=0 --lcc-autodiff --lcc-build-train-step="accum=4 optimizer=sgd momentum=0" | FileCheck %s --check-prefix=S0
// RUN: lcc-opt %s --lcc-split-stage=stage=1 --lcc-autodiff --lcc-build-train-step="accum=4 optimizer=sgd momentum=0" | FileCheck %s --check-prefix=S1
// RUN: lcc-opt %s --lcc-split-stage=stage=0 --lcc-autodiff --lcc-build-train-step="accum=4 pipeline-schedule=gpipe" | FileCheck %s --check-prefix=GPIPE
// RUN: lcc-opt %s --lcc-split-stage=stage=1 --lcc-autodiff --lcc-build-train-step="accum=2 pipeline-schedule=zb-h1" | FileCheck %s --check-prefix=ZB
// RUN: not lcc-opt %s --lcc-split-stage=stage=1 --lcc-autodiff --lcc-build-train-step="accum=4 pipeline-schedule=interleaved" 2>&1 | FileCheck %s --check-prefix=INTERLEAVED
// INTERLEAVED: error: lcc-build-train-step: the interleaved schedule needs at least 2 virtual stages per rank
// A hand-made order is proved before anything is built: rank 0 runs each
// micro-batch's backward before the next forward, rank 1 both forwards
// first, so each waits for the other (named with what it waits in); and an
// order whose gradients cross pairs the wrong data.
// RUN: not lcc-opt %s --lcc-split-stage=stage=0 --lcc-autodiff --lcc-build-train-step="accum=2 pipeline-order='F0 B0 F1 B1 | F0 F1 B0 B1'" 2>&1 | FileCheck %s --check-prefix=HANG
// HANG: error: the custom schedule cannot run: the schedule hangs: every rank left waits for a transfer its peer has not posted yet:
// HANG-NEXT: rank 0 waits in {send act 0@s0 to r1 recv grad 0@s1 from r1}
// HANG-NEXT: rank 1 waits in {recv act 1@s0 from r0}
// RUN: not lcc-opt %s --lcc-split-stage=stage=1 --lcc-autodiff --lcc-build-train-step="accum=2 pipeline-order='F0 F1 B1 B0 | F0 B0 F1 B1'" 2>&1 | FileCheck %s --check-prefix=CROSS
// CROSS: error: the custom schedule cannot run: rank 1 sends the gradient of micro-batch 0 from stage 1 to rank 0, which receives it as the gradient of micro-batch 1 from stage 1 (sends and receives between two ranks pair in order)
// RUN: lcc-opt %s --lcc-split-stage=stage=1 --lcc-autodiff --lcc-build-train-step="accum=2 pipeline-order='F0 F1 B0 B1 | F0 B0 F1 B1'" -o /dev/null
// lcc-build-train-step on the two stages of a pipeline (passes/pipeline/PipelineStep.cpp):
// one function per part of the stage (its forward, its backward, or the
// backward's input- and weight-gradient halves), called once per micro-batch
// in the schedule's order for the stage's rank, with the transfers between
// the calls; what a forward keeps for its backward is a result of one call
// read by a later one.

// 1F1B, 2 stages, 4 micro-batches. One forward and one backward function,
// however many micro-batches; the backward adds the parameters' gradients
// to running sums (its last arguments).
// S0-LABEL: func.func private @train_step_pp_forward(
// S0-SAME:    lcc.layer = "pipeline.pp_forward"
// S0-LABEL: func.func private @train_step_pp_backward(
// S0-SAME:    %arg4: tensor<4xf32>, %arg5: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
// S0-SAME:    lcc.layer = "pipeline.pp_backward"
// S0:         %[[ACC0:.*]] = lcc.add %arg4,
// S0-NEXT:    %[[ACC1:.*]] = lcc.add %arg5,
// S0-NEXT:    return %[[ACC0]], %[[ACC1]]
// S0-NOT:     func.func private
// Stage 0: F0, send a0; F1, then send a1 while receiving g0 (one exchange:
// two blocking sends would wait on each other); B0 (from zero sums, with
// F0's saved activation); F2 ...; the last gradient alone.
// S0-LABEL: func.func @train_step(
// S0:         %[[F0:.*]]:2 = call @train_step_pp_forward(
// S0-NEXT:    lcc.exchange %[[F0]]#1 {group = "pp", recv_peers = array<i64>, send_peers = array<i64: 1>} : (tensor<4xf32>) -> ()
// S0:         %[[F1:.*]]:2 = call @train_step_pp_forward(
// S0-NEXT:    %[[G0:.*]] = lcc.exchange %[[F1]]#1 {group = "pp", recv_peers = array<i64: 1>, send_peers = array<i64: 1>}
// S0-NEXT:    %[[Z0:.*]] = lcc.fill {value = 0.000000e+00 : f64} : tensor<4xf32>
// S0-NEXT:    %[[Z1:.*]] = lcc.fill {value = 0.000000e+00 : f64} : tensor<4xf32>
// S0-NEXT:    %[[B0:.*]]:2 = call @train_step_pp_backward(%[[G0]], %arg1, %[[F0]]#0, %{{.*}}, %[[Z0]], %[[Z1]])
// S0:         call @train_step_pp_forward(
// S0:         call @train_step_pp_backward(%{{.*}}, %arg1, %[[F1]]#0, %{{.*}}, %[[B0]]#0, %[[B0]]#1)
// S0:         lcc.exchange %{{.*}} {group = "pp", recv_peers = array<i64: 1>, send_peers = array<i64: 1>}
// S0:         lcc.exchange {group = "pp", recv_peers = array<i64: 1>, send_peers = array<i64>}
// S0-NOT:     lcc.exchange
// The loss comes from the last stage; the tied wte's gradient is summed over
// both stages and counted in the norm here (stage 0), whose sum of squares
// is summed over the stages.
// S0:         lcc.broadcast %{{.*}} {group = "pp", root = 1 : i64} : tensor<f32>
// S0:         %[[T:.*]] = lcc.all_reduce %{{.*}} {group = "pp"} : tensor<4xf32>
// S0-NEXT:    lcc.gradient %[[T]] {param = "wte"}
// S0:         lcc.all_reduce %{{.*}} {group = "pp"} : tensor<f32>
// S0-NEXT:    lcc.sqrt

// Stage 1: receive a0; F0 B0; send g0 while receiving a1; ... send g3.
// S1-LABEL: func.func @train_step(
// S1-NEXT:    lcc.exchange {group = "pp", recv_peers = array<i64: 0>, send_peers = array<i64>}
// S1-COUNT-3: lcc.exchange %{{.*}} {group = "pp", recv_peers = array<i64: 0>, send_peers = array<i64: 0>}
// S1:         lcc.exchange %{{.*}} {group = "pp", recv_peers = array<i64>, send_peers = array<i64: 0>}
// S1-NOT:     lcc.exchange
// S1:         lcc.broadcast %{{.*}} {group = "pp", root = 1 : i64} : tensor<f32>
// Not counted again in the norm here: one sum of squares (h.1.w's) only.
// S1:         lcc.gradient %{{.*}} {param = "h.1.w"}
// S1:         lcc.mul
// S1-NEXT:    lcc.reduce_sum
// S1-NOT:     lcc.reduce_sum
// S1:         lcc.all_reduce %{{.*}} {group = "pp"} : tensor<f32>

// GPipe: all four forwards (four sends, the last with the first gradient's
// receive), then the backwards.
// GPIPE-LABEL: func.func @train_step(
// GPIPE-COUNT-3: lcc.exchange %{{.*}} {group = "pp", recv_peers = array<i64>, send_peers = array<i64: 1>}
// GPIPE:         lcc.exchange %{{.*}} {group = "pp", recv_peers = array<i64: 1>, send_peers = array<i64: 1>}
// GPIPE-COUNT-3: lcc.exchange {group = "pp", recv_peers = array<i64: 1>, send_peers = array<i64>}
// GPIPE-NOT:     lcc.exchange

// ZB-H1 on the last stage: both input gradients are sent before the weight
// gradients (h.1.w's: micro-batch 0's received activation times its seed)
// are computed; the second send is posted (it completes while they run).
// ZB-LABEL: func.func private @train_step_pp_weight_grad(
// ZB-SAME:    lcc.layer = "pipeline.pp_weight_grad"
// ZB-LABEL: func.func @train_step(
// ZB:         %[[R:.*]] = lcc.exchange {group = "pp", recv_peers = array<i64: 0>, send_peers = array<i64>}
// ZB:         %[[F0:.*]]:2 = call @train_step_pp_forward(
// ZB:         lcc.exchange %{{.*}} {group = "pp", recv_peers = array<i64: 0>, send_peers = array<i64: 0>}
// ZB:         lcc.exchange %{{.*}} {group = "pp", posted, recv_peers = array<i64>, send_peers = array<i64: 0>}
// ZB-COUNT-2: lcc.fill
// ZB-NEXT:    call @train_step_pp_weight_grad(%{{.*}}, %[[F0]]#0, %{{.*}}, %[[R]],
module {
  func.func @init() -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %s1 = arith.constant 1 : i64
    %s2 = arith.constant 2 : i64
    %s3 = arith.constant 3 : i64
    %a = lcc.random_normal %s1 {std = 0.02} : tensor<4xf32>
    %b = lcc.random_normal %s2 {std = 0.02} : tensor<4xf32>
    %c = lcc.random_normal %s3 {std = 0.02} : tensor<4xf32>
    return %a, %b, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
  func.func @forward(%e: tensor<4xf32> {lcc.param = "wte"}, %w0: tensor<4xf32> {lcc.param = "h.0.w"},
                     %w1: tensor<4xf32> {lcc.param = "h.1.w"}, %x: tensor<4xf32> {lcc.input = "x"})
      -> tensor<f32> {
    %m = lcc.neg %x {lcc.stage = 0} : tensor<4xf32>
    %h = lcc.mul %x, %e {lcc.stage = 0} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %a0 = lcc.mul %h, %w0 {lcc.stage = 0} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %r0 = lcc.add %a0, %m {lcc.stage = 0} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %a1 = lcc.mul %r0, %w1 {lcc.stage = 1} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %r1 = lcc.add %a1, %m {lcc.stage = 1} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %o = lcc.mul %r1, %e {lcc.stage = 1} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %l = lcc.reduce_sum %o {axes = array<i64: 0>, lcc.stage = 1} : tensor<4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
