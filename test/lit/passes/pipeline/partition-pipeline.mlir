// RUN: lcc-opt %s --split-input-file --lcc-partition-pipeline=stages=2 | FileCheck %s
// RUN: lcc-opt %s --split-input-file --lcc-partition-pipeline="stages=2 stage-starts=1" | FileCheck %s --check-prefix=USER
// RUN: lcc-opt %s --split-input-file --lcc-partition-pipeline="stages=2 explain=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=EXPLAIN
// Tests passes/pipeline/PartitionPipeline.cpp: the pieces of a model
// function (before the first layer, each layer, after the last) and their
// stages.

// Four equal layers (a mul and an add over 4 elements: 8 FLOPs, 24 with
// the backward), an embedding-like op before them (12) and a head after
// (12); the unnamed op between h.1 and h.2 belongs to h.1 (36). The cut
// after h.1 gives 72 and 60, either other one 96.
// Memory: stage 0 owns wte, h.0.w and h.1.w (16 bytes each, four times:
// 192) and keeps its 6 ops' results (96 bytes) for 2 micro-batches under
// 1F1B: 384; stage 1 owns h.2.w, h.3.w (128) and keeps 5 results for 1: 208.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME:    attributes {lcc.stage_bytes = [384, 208], lcc.stage_costs = [72, 60],
// CHECK-SAME:    lcc.stage_in_flight = [2, 1], lcc.stage_layers = ["h.0, h.1", "h.2, h.3"]}
// CHECK-NEXT:    lcc.mul %arg0, %arg1 {lcc.stage = 0 : i64}
// CHECK-COUNT-5: {lcc.stage = 0 : i64}
// CHECK-COUNT-5: {lcc.stage = 1 : i64}
// CHECK-NEXT:    return
// The user's cut before h.1: 36 and 96.
// USER-LABEL: func.func @forward(
// USER-SAME:    lcc.stage_costs = [36, 96]
// USER-COUNT-3: {lcc.stage = 0 : i64}
// USER-COUNT-8: {lcc.stage = 1 : i64}
// USER-NEXT:    return
// EXPLAIN: remark: stage 0: layers h.0, h.1; cost 72 FLOPs, {{[0-9]+}} bytes with 2 micro-batches in flight
// EXPLAIN: remark: stage 1: layers h.2, h.3; cost 60 FLOPs, {{[0-9]+}} bytes with 1 micro-batches in flight
func.func @forward(%x: tensor<4xf32> loc("x"), %e: tensor<4xf32> {lcc.param = "wte"} loc("wte"),
                   %w0: tensor<4xf32> {lcc.param = "h.0.w"}, %w1: tensor<4xf32> {lcc.param = "h.1.w"},
                   %w2: tensor<4xf32> {lcc.param = "h.2.w"}, %w3: tensor<4xf32> {lcc.param = "h.3.w"})
    -> tensor<4xf32> {
  %h = lcc.mul %x, %e : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("wte")
  %a0 = lcc.mul %h, %w0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.0.")
  %r0 = lcc.add %a0, %h : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.0.")
  %a1 = lcc.mul %r0, %w1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.1.")
  %r1 = lcc.add %a1, %r0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.1.")
  %n1 = lcc.neg %r1 : tensor<4xf32> loc("between")
  %a2 = lcc.mul %n1, %w2 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.2.")
  %r2 = lcc.add %a2, %n1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.2.")
  %a3 = lcc.mul %r2, %w3 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.3.")
  %r3 = lcc.add %a3, %r2 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.3.")
  %o = lcc.mul %r3, %r3 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("head")
  return %o : tensor<4xf32>
}

// -----

// A heavy head (its op over 32 elements: 96 with the backward) takes the
// last stage's share: stage 1 gets one layer.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME:    lcc.stage_costs = [72, 120]
// CHECK-COUNT-6: {lcc.stage = 0 : i64}
// CHECK-NEXT:    lcc.mul {{.*}} {lcc.stage = 1 : i64}
// CHECK-NEXT:    lcc.add {{.*}} {lcc.stage = 1 : i64}
// CHECK-NEXT:    lcc.broadcast_to {{.*}} {lcc.stage = 1 : i64}
func.func @forward(%x: tensor<4xf32>, %w0: tensor<4xf32> {lcc.param = "h.0.w"},
                   %w1: tensor<4xf32> {lcc.param = "h.1.w"}, %w2: tensor<4xf32> {lcc.param = "h.2.w"},
                   %w3: tensor<4xf32> {lcc.param = "h.3.w"}) -> tensor<8x4xf32> {
  %a0 = lcc.mul %x, %w0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.0.")
  %r0 = lcc.add %a0, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.0.")
  %a1 = lcc.mul %r0, %w1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.1.")
  %r1 = lcc.add %a1, %r0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.1.")
  %a2 = lcc.mul %r1, %w2 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.2.")
  %r2 = lcc.add %a2, %r1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.2.")
  %a3 = lcc.mul %r2, %w3 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.3.")
  %r3 = lcc.add %a3, %r2 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.3.")
  %o = lcc.broadcast_to %r3 : tensor<4xf32> -> tensor<8x4xf32> loc("head")
  return %o : tensor<8x4xf32>
}
