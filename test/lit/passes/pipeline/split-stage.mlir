// RUN: lcc-opt %s --lcc-split-stage=stage=0 | FileCheck %s --check-prefix=S0
// RUN: lcc-opt %s --lcc-split-stage=stage=1 | FileCheck %s --check-prefix=S1
// RUN: lcc-opt %s --lcc-split-stage=stage=2 | FileCheck %s --check-prefix=S2
// Tests passes/pipeline/SplitStage.cpp on three stages marked by hand: the
// embedding and h.0 (0), h.1 (1), h.2 and the head (2). The mask depends on
// the input only, so each stage computes it again; the embedding's output
// %h is read by h.2 too, so stage 1 receives it and passes it on; wte,
// read by stages 0 and 2, is tied between the pipeline's ends.

// S0: module attributes {lcc.process_groups = {pp = 3 : i64, pp_ends = 2 : i64}}
// S0:      func.func @init() -> (tensor<4xf32>, tensor<4xf32>) {
// S0-NOT:    %c3_i64
// S0:        return
// S0-LABEL: func.func @forward(
// S0-SAME:    %[[WTE:.*]]: tensor<4xf32> {lcc.param = "wte", lcc.pipeline_tied = array<i64: 0, 2>},
// S0-SAME:    %[[W0:.*]]: tensor<4xf32> {lcc.param = "h.0.w"}, %[[X:.*]]: tensor<4xf32> {lcc.input = "x"})
// S0-SAME:    -> (tensor<4xf32> {lcc.pipeline_send = 0 : i64}, tensor<4xf32> {lcc.pipeline_send = 1 : i64})
// S0-SAME:    attributes {lcc.pipeline = {loss = tensor<f32>, stage = 0 : i64, stages = 3 : i64}}
// S0-NEXT:    %[[M:.*]] = lcc.neg %[[X]]
// S0-NEXT:    %[[H:.*]] = lcc.mul %[[X]], %[[WTE]]
// S0-NEXT:    %[[A:.*]] = lcc.mul %[[H]], %[[W0]]
// S0-NEXT:    %[[R:.*]] = lcc.add %[[A]], %[[M]]
// S0-NEXT:    return %[[H]], %[[R]]

// S1-LABEL: func.func @forward(
// S1-SAME:    %[[W1:.*]]: tensor<4xf32> {lcc.param = "h.1.w"}, %[[X:.*]]: tensor<4xf32> {lcc.input = "x"},
// S1-SAME:    %[[H:.*]]: tensor<4xf32> {lcc.pipeline_recv = 0 : i64}, %[[R0:.*]]: tensor<4xf32> {lcc.pipeline_recv = 1 : i64})
// S1-SAME:    -> (tensor<4xf32> {lcc.pipeline_send = 0 : i64}, tensor<4xf32> {lcc.pipeline_send = 1 : i64})
// S1-NEXT:    %[[M:.*]] = lcc.neg %[[X]]
// S1-NEXT:    %[[A:.*]] = lcc.mul %[[R0]], %[[W1]]
// S1-NEXT:    %[[R:.*]] = lcc.add %[[A]], %[[M]]
// S1-NEXT:    return %[[H]], %[[R]]

// S2:      func.func @init() -> (tensor<4xf32>, tensor<4xf32>) {
// S2:        return
// S2-LABEL: func.func @forward(
// S2-SAME:    {lcc.param = "wte", lcc.pipeline_tied = array<i64: 0, 2>}
// S2-SAME:    {lcc.param = "h.2.w"}
// S2-SAME:    -> tensor<f32> attributes {lcc.pipeline = {loss = tensor<f32>, stage = 2 : i64, stages = 3 : i64}}
// S2:         lcc.reduce_sum
// S2-NEXT:    return
module {
  func.func @init() -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %s1 = arith.constant 1 : i64
    %s2 = arith.constant 2 : i64
    %s3 = arith.constant 3 : i64
    %s4 = arith.constant 4 : i64
    %a = lcc.random_normal %s1 {std = 0.02} : tensor<4xf32>
    %b = lcc.random_normal %s2 {std = 0.02} : tensor<4xf32>
    %c = lcc.random_normal %s3 {std = 0.02} : tensor<4xf32>
    %d = lcc.random_normal %s4 {std = 0.02} : tensor<4xf32>
    return %a, %b, %c, %d : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
  func.func @forward(%e: tensor<4xf32> {lcc.param = "wte"}, %w0: tensor<4xf32> {lcc.param = "h.0.w"},
                     %w1: tensor<4xf32> {lcc.param = "h.1.w"}, %w2: tensor<4xf32> {lcc.param = "h.2.w"},
                     %x: tensor<4xf32> {lcc.input = "x"}) -> tensor<f32> {
    %m = lcc.neg %x {lcc.stage = 0} : tensor<4xf32>
    %h = lcc.mul %x, %e {lcc.stage = 0} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %a0 = lcc.mul %h, %w0 {lcc.stage = 0} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %r0 = lcc.add %a0, %m {lcc.stage = 0} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %a1 = lcc.mul %r0, %w1 {lcc.stage = 1} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %r1 = lcc.add %a1, %m {lcc.stage = 1} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %a2 = lcc.mul %r1, %w2 {lcc.stage = 2} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %r2 = lcc.add %a2, %h {lcc.stage = 2} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %o = lcc.mul %r2, %e {lcc.stage = 2} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %l = lcc.reduce_sum %o {axes = array<i64: 0>, lcc.stage = 2} : tensor<4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
