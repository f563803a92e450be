// RUN: lcc-opt %s --lcc-split-stage="stage=0 virtual=2" --lcc-autodiff --lcc-build-train-step="accum=4 optimizer=sgd momentum=0 pipeline-schedule=interleaved" | FileCheck %s --check-prefix=R0
// RUN: lcc-opt %s --lcc-split-stage="stage=0 virtual=2" --lcc-autodiff --lcc-build-train-step="accum=4 optimizer=sgd momentum=0 pipeline-schedule=interleaved" | grep -o 'call @train_step_pp_[a-z0-9_]*' | FileCheck %s --check-prefix=ORDER0
// RUN: lcc-opt %s --lcc-split-stage="stage=1 virtual=2" --lcc-autodiff --lcc-build-train-step="accum=4 optimizer=sgd momentum=0 pipeline-schedule=interleaved" | grep -o 'call @train_step_pp_[a-z0-9_]*' | FileCheck %s --check-prefix=ORDER1
// RUN: lcc-opt %s --lcc-split-stage="stage=1 virtual=2" --lcc-autodiff --lcc-build-train-step="accum=4 optimizer=sgd momentum=0 pipeline-schedule=interleaved" | FileCheck %s --check-prefix=R1
// The errors: a schedule of one stage per rank on a rank holding two, and
// micro-batches that are not a multiple of the ranks (Megatron's rule).
// RUN: not lcc-opt %s --lcc-split-stage="stage=1 virtual=2" --lcc-autodiff --lcc-build-train-step="accum=4 pipeline-schedule=1f1b" 2>&1 | FileCheck %s --check-prefix=ONE
// ONE: error: lcc-build-train-step: only the interleaved schedule runs several stages per rank; 1f1b runs one
// RUN: not lcc-opt %s --lcc-split-stage="stage=1 virtual=2" --lcc-autodiff --lcc-build-train-step="accum=3 pipeline-schedule=interleaved" 2>&1 | FileCheck %s --check-prefix=THREE
// THREE: error: lcc-build-train-step: the interleaved schedule needs the micro-batches (3) to be a multiple of the pipeline ranks (2)
//
// lcc-build-train-step on an interleaved pipeline (passes/pipeline/PipelineStep.cpp):
// four stages marked by hand on two ranks, two each (rank 0: stages 0 and
// 2, rank 1: stages 1 and 3, with the loss). Each of a rank's stages has
// its own part functions (`_c<chunk>`), called per micro-batch in the order
// of Megatron's interleaved 1F1B for the rank.

// R0-LABEL: func.func private @train_step_pp_forward_c0(
// R0-SAME:    lcc.layer = "pipeline.pp_forward_c0"
// R0-LABEL: func.func private @train_step_pp_forward_c1(
// R0-SAME:    lcc.layer = "pipeline.pp_forward_c1"
// Stage 2's backward sends back two gradients: the residual's (its
// gradient times h.2.w) and h's, which stage 2 received again (passed on by
// stage 1) and adds to the residual: the seed itself, so the function
// returns only the other and its running sum of h.2.w's gradient.
// R0-LABEL: func.func private @train_step_pp_backward_c1(
// R0-SAME:    -> (tensor<4xf32>, tensor<4xf32>)
// R0-SAME:    lcc.layer = "pipeline.pp_backward_c1"
// R0-LABEL: func.func private @train_step_pp_backward_c0(
// R0-SAME:    lcc.layer = "pipeline.pp_backward_c0"
// Stage 0 sends h and the residual; stage 2 receives h and stage 1's
// residual: the first exchange posts micro-batch 1's sends with micro-batch
// 0's receives for stage 2 (no rank sends while its peer sends to it).
// R0-LABEL: func.func @train_step(
// R0:         %[[F0:.*]]:2 = call @train_step_pp_forward_c0(
// R0-NEXT:    lcc.exchange %[[F0]]#0, %[[F0]]#1 {group = "pp", recv_peers = array<i64>, send_peers = array<i64: 1, 1>}
// R0:         %[[F1:.*]]:2 = call @train_step_pp_forward_c0(
// R0-NEXT:    %[[IN:.*]]:2 = lcc.exchange %[[F1]]#0, %[[F1]]#1 {group = "pp", recv_peers = array<i64: 1, 1>, send_peers = array<i64: 1, 1>}
// R0-NEXT:    call @train_step_pp_forward_c1(%[[IN]]#1, %arg2, %[[IN]]#0)
// The loss is the last rank's; wte, read by stage 0 here and stage 3 on
// rank 1, is summed over both ranks.
// R0:         lcc.broadcast %{{.*}} {group = "pp", root = 1 : i64} : tensor<f32>
// R0:         %[[T:.*]] = lcc.all_reduce %{{.*}} {group = "pp"} : tensor<4xf32>
// R0-NEXT:    lcc.gradient %[[T]] {param = "wte"}

// Rank 0 (warm-up of 4 forwards) and rank 1 (2): micro-batches go through
// a rank's stages in groups of P = 2, forwards by chunk, backwards in
// reverse.
// ORDER0:      call @train_step_pp_forward_c0
// ORDER0-NEXT: call @train_step_pp_forward_c0
// ORDER0-NEXT: call @train_step_pp_forward_c1
// ORDER0-NEXT: call @train_step_pp_forward_c1
// ORDER0-NEXT: call @train_step_pp_forward_c0
// ORDER0-NEXT: call @train_step_pp_backward_c1
// ORDER0-NEXT: call @train_step_pp_forward_c0
// ORDER0-NEXT: call @train_step_pp_backward_c1
// ORDER0-NEXT: call @train_step_pp_forward_c1
// ORDER0-NEXT: call @train_step_pp_backward_c0
// ORDER0-NEXT: call @train_step_pp_forward_c1
// ORDER0-NEXT: call @train_step_pp_backward_c0
// ORDER0-NEXT: call @train_step_pp_backward_c1
// ORDER0-NEXT: call @train_step_pp_backward_c1
// ORDER0-NEXT: call @train_step_pp_backward_c0
// ORDER0-NEXT: call @train_step_pp_backward_c0
// ORDER0-NOT:  call

// ORDER1:      call @train_step_pp_forward_c0
// ORDER1-NEXT: call @train_step_pp_forward_c0
// ORDER1-NEXT: call @train_step_pp_forward_c1
// ORDER1-NEXT: call @train_step_pp_backward_c1
// ORDER1-NEXT: call @train_step_pp_forward_c1
// ORDER1-NEXT: call @train_step_pp_backward_c1
// ORDER1-NEXT: call @train_step_pp_forward_c0
// ORDER1-NEXT: call @train_step_pp_backward_c0
// ORDER1-NEXT: call @train_step_pp_forward_c0
// ORDER1-NEXT: call @train_step_pp_backward_c0
// ORDER1-NEXT: call @train_step_pp_forward_c1
// ORDER1-NEXT: call @train_step_pp_backward_c1
// ORDER1-NEXT: call @train_step_pp_forward_c1
// ORDER1-NEXT: call @train_step_pp_backward_c1
// ORDER1-NEXT: call @train_step_pp_backward_c0
// ORDER1-NEXT: call @train_step_pp_backward_c0
// ORDER1-NOT:  call

// Rank 1's last stage returns the loss from its forward; its running sum is
// the step's, averaged and broadcast.
// R1-LABEL: func.func private @train_step_pp_forward_c1(
// R1-SAME:    -> (tensor<4xf32>, tensor<f32>)
// R1-LABEL: func.func @train_step(
// R1:         lcc.broadcast %{{.*}} {group = "pp", root = 1 : i64} : tensor<f32>
module {
  func.func @init() -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %s1 = arith.constant 1 : i64
    %s2 = arith.constant 2 : i64
    %s3 = arith.constant 3 : i64
    %s4 = arith.constant 4 : i64
    %s5 = arith.constant 5 : i64
    %a = lcc.random_normal %s1 {std = 0.02} : tensor<4xf32>
    %b = lcc.random_normal %s2 {std = 0.02} : tensor<4xf32>
    %c = lcc.random_normal %s3 {std = 0.02} : tensor<4xf32>
    %d = lcc.random_normal %s4 {std = 0.02} : tensor<4xf32>
    %e = lcc.random_normal %s5 {std = 0.02} : tensor<4xf32>
    return %a, %b, %c, %d, %e : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
  func.func @forward(%e: tensor<4xf32> {lcc.param = "wte"}, %w0: tensor<4xf32> {lcc.param = "h.0.w"},
                     %w1: tensor<4xf32> {lcc.param = "h.1.w"}, %w2: tensor<4xf32> {lcc.param = "h.2.w"},
                     %w3: tensor<4xf32> {lcc.param = "h.3.w"},
                     %x: tensor<4xf32> {lcc.input = "x"}) -> tensor<f32> {
    %m = lcc.neg %x {lcc.stage = 0} : tensor<4xf32>
    %h = lcc.mul %x, %e {lcc.stage = 0} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %a0 = lcc.mul %h, %w0 {lcc.stage = 0} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %r0 = lcc.add %a0, %m {lcc.stage = 0} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %a1 = lcc.mul %r0, %w1 {lcc.stage = 1} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %r1 = lcc.add %a1, %m {lcc.stage = 1} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %a2 = lcc.mul %r1, %w2 {lcc.stage = 2} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %r2 = lcc.add %a2, %h {lcc.stage = 2} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %a3 = lcc.mul %r2, %w3 {lcc.stage = 3} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %o = lcc.mul %a3, %e {lcc.stage = 3} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %l = lcc.reduce_sum %o {axes = array<i64: 0>, lcc.stage = 3} : tensor<4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
