// RUN: lcc-opt %s --lcc-split-stage="stage=0 virtual=2" | FileCheck %s --check-prefix=R0
// RUN: lcc-opt %s --lcc-split-stage="stage=1 virtual=2" | FileCheck %s --check-prefix=R1
// Tests passes/pipeline/SplitStage.cpp with virtual stages (interleaved
// 1F1B): four stages marked by hand on two ranks, rank 0 running stages 0
// and 2, rank 1 stages 1 and 3. h (the embedding's output) is read by stage
// 2: stage 1 receives it and passes it on, and stage 2 receives it again
// from rank 1 although rank 0 computed it (each stage is computed from its
// own inputs). wte, read by stages 0 and 3, is held by both ranks.

// R0: module attributes {lcc.process_groups = {pp = 2 : i64}}
// R0-LABEL: func.func @forward(
// R0-SAME:    %[[WTE:.*]]: tensor<4xf32> {lcc.param = "wte", lcc.pipeline_tied = array<i64: 0, 1>},
// R0-SAME:    %[[W0:.*]]: tensor<4xf32> {lcc.param = "h.0.w"}, %[[W2:.*]]: tensor<4xf32> {lcc.param = "h.2.w"},
// R0-SAME:    %[[X:.*]]: tensor<4xf32> {lcc.input = "x"},
// R0-SAME:    %[[H:.*]]: tensor<4xf32> {lcc.pipeline_recv = 0 : i64}, %[[RES1:.*]]: tensor<4xf32> {lcc.pipeline_recv = 1 : i64})
// R0-SAME:    -> (tensor<4xf32> {lcc.pipeline_send = 0 : i64}, tensor<4xf32> {lcc.pipeline_send = 1 : i64}, tensor<4xf32> {lcc.pipeline_send = 2 : i64})
// R0-SAME:    attributes {lcc.pipeline = {chunk_recvs = array<i64: 0, 2>, chunk_sends = array<i64: 2, 1>, loss = tensor<f32>, stage = 0 : i64, stages = 4 : i64, virtual = 2 : i64}}
// Stage 0, then stage 2 from what it received.
// R0-NEXT:    %[[M:.*]] = lcc.neg %[[X]]
// R0-NEXT:    %[[H0:.*]] = lcc.mul %[[X]], %[[WTE]]
// R0-NEXT:    %[[A0:.*]] = lcc.mul %[[H0]], %[[W0]]
// R0-NEXT:    %[[S0:.*]] = lcc.add %[[A0]], %[[M]]
// R0-NEXT:    %[[A2:.*]] = lcc.mul %[[RES1]], %[[W2]]
// R0-NEXT:    %[[S2:.*]] = lcc.add %[[A2]], %[[H]]
// R0-NEXT:    return %[[H0]], %[[S0]], %[[S2]]

// Stage 1 computes the mask again and passes h on; stage 3 returns the loss.
// R1-LABEL: func.func @forward(
// R1-SAME:    %[[WTE:.*]]: tensor<4xf32> {lcc.param = "wte", lcc.pipeline_tied = array<i64: 0, 1>},
// R1-SAME:    %[[W1:.*]]: tensor<4xf32> {lcc.param = "h.1.w"}, %[[W3:.*]]: tensor<4xf32> {lcc.param = "h.3.w"},
// R1-SAME:    %[[X:.*]]: tensor<4xf32> {lcc.input = "x"},
// R1-SAME:    %[[H:.*]]: tensor<4xf32> {lcc.pipeline_recv = 0 : i64}, %[[S0:.*]]: tensor<4xf32> {lcc.pipeline_recv = 1 : i64},
// R1-SAME:    %[[S2:.*]]: tensor<4xf32> {lcc.pipeline_recv = 2 : i64})
// R1-SAME:    -> (tensor<4xf32> {lcc.pipeline_send = 0 : i64}, tensor<4xf32> {lcc.pipeline_send = 1 : i64}, tensor<f32>)
// R1-SAME:    attributes {lcc.pipeline = {chunk_recvs = array<i64: 2, 1>, chunk_sends = array<i64: 2, 0>, loss = tensor<f32>, stage = 1 : i64, stages = 4 : i64, virtual = 2 : i64}}
// R1-NEXT:    %[[M:.*]] = lcc.neg %[[X]]
// R1-NEXT:    %[[A1:.*]] = lcc.mul %[[S0]], %[[W1]]
// R1-NEXT:    %[[S1:.*]] = lcc.add %[[A1]], %[[M]]
// R1-NEXT:    %[[A3:.*]] = lcc.mul %[[S2]], %[[W3]]
// R1-NEXT:    %[[O:.*]] = lcc.mul %[[A3]], %[[WTE]]
// R1-NEXT:    %[[L:.*]] = lcc.reduce_sum %[[O]]
// R1-NEXT:    return %[[H]], %[[S1]], %[[L]]
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
