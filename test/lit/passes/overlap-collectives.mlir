// RUN: lcc-opt %s --split-input-file --lcc-overlap-collectives="depth=1" | FileCheck %s --check-prefix=D1
// RUN: lcc-opt %s --split-input-file --lcc-overlap-collectives | FileCheck %s --check-prefix=D2
// RUN: lcc-opt %s --split-input-file --lcc-overlap-collectives="depth=0" | FileCheck %s --check-prefix=D0
// Tests passes/OverlapCollectives.cpp.

// ZeRO-3's pattern: parameter parts (arguments, ready at once) gathered just
// before each layer uses them. With depth 1 the first gather starts at the
// top and each next one where the previous is waited for, i.e. before the
// layer that uses the previous one: the next layer's gather runs while this
// layer computes. Depth 2 keeps two ahead.
// D1-LABEL: func.func @prefetch(
// D1-NEXT:    %[[G0:.*]] = lcc.all_gather %arg0 {group = "dp", ticket = 0 : i64}
// D1-NEXT:    %[[A:.*]] = arith.mulf %arg3, %arg3
// D1-NEXT:    %[[W0:.*]] = lcc.wait %[[G0]] : tensor<8xf32> after %arg0 : tensor<4xf32> {ticket = 0 : i64}
// D1-NEXT:    %[[G1:.*]] = lcc.all_gather %arg1 {group = "dp", ticket = 1 : i64}
// D1-NEXT:    %[[B:.*]] = arith.addf %[[A]], %[[W0]]
// D1-NEXT:    %[[W1:.*]] = lcc.wait %[[G1]] : {{.*}} after %arg1 : {{.*}} {ticket = 1 : i64}
// D1-NEXT:    %[[G2:.*]] = lcc.all_gather %arg2 {group = "dp", ticket = 2 : i64}
// D1-NEXT:    %[[C:.*]] = arith.addf %[[B]], %[[W1]]
// D1-NEXT:    %[[W2:.*]] = lcc.wait %[[G2]] : {{.*}} after %arg2 : {{.*}} {ticket = 2 : i64}
// D1-NEXT:    arith.addf %[[C]], %[[W2]]
// D1-NEXT:    return
// D2-LABEL: func.func @prefetch(
// D2-NEXT:    %[[G0:.*]] = lcc.all_gather %arg0 {group = "dp", ticket = 0 : i64}
// D2-NEXT:    %[[G1:.*]] = lcc.all_gather %arg1 {group = "dp", ticket = 1 : i64}
// D2-NEXT:    arith.mulf
// D2-NEXT:    lcc.wait %[[G0]] : {{.*}} after %arg0 : {{.*}} {ticket = 0 : i64}
// D2-NEXT:    %[[G2:.*]] = lcc.all_gather %arg2 {group = "dp", ticket = 2 : i64}
// D2-NEXT:    arith.addf
// D2-NEXT:    lcc.wait %[[G1]] : {{.*}} after %arg1 : {{.*}} {ticket = 1 : i64}
// D2-NEXT:    arith.addf
// D2-NEXT:    lcc.wait %[[G2]] : {{.*}} after %arg2 : {{.*}} {ticket = 2 : i64}
// D2-NEXT:    arith.addf
// Depth 0: nothing moves, nothing waits.
// D0-LABEL: func.func @prefetch(
// D0-NOT:     ticket
// D0-NOT:     lcc.wait
// D0:         return
module attributes {lcc.process_groups = {dp = 2 : i64}} {
  func.func @prefetch(%p0: tensor<4xf32>, %p1: tensor<4xf32>, %p2: tensor<4xf32>, %x: tensor<8xf32>) -> tensor<8xf32> {
    %a = arith.mulf %x, %x : tensor<8xf32>
    %g0 = lcc.all_gather %p0 {group = "dp"} : tensor<4xf32> -> tensor<8xf32>
    %b = arith.addf %a, %g0 : tensor<8xf32>
    %g1 = lcc.all_gather %p1 {group = "dp"} : tensor<4xf32> -> tensor<8xf32>
    %c = arith.addf %b, %g1 : tensor<8xf32>
    %g2 = lcc.all_gather %p2 {group = "dp"} : tensor<4xf32> -> tensor<8xf32>
    %d = arith.addf %c, %g2 : tensor<8xf32>
    return %d : tensor<8xf32>
  }
}

// -----

// Gradient buckets: each reduce_scatter starts right after its bucket's last
// gradient; the results are needed only at the end (the optimizer). With
// depth 1 the first is waited for where the second starts; with depth 2 both
// are waited for at the end.
// D1-LABEL: func.func @buckets(
// D1-NEXT:    %[[X:.*]] = arith.mulf %arg0, %arg1
// D1-NEXT:    %[[R1:.*]] = lcc.reduce_scatter %[[X]] {group = "dp", ticket = 0 : i64}
// D1-NEXT:    %[[Y:.*]] = arith.addf %arg0, %arg1
// D1-NEXT:    %[[H:.*]] = arith.mulf %[[Y]], %[[Y]]
// D1-NEXT:    %[[W1:.*]] = lcc.wait %[[R1]] : {{.*}} after %[[X]] : {{.*}} {ticket = 0 : i64}
// D1-NEXT:    %[[R2:.*]] = lcc.reduce_scatter %[[H]] {group = "dp", ticket = 1 : i64}
// D1-NEXT:    arith.subf
// D1-NEXT:    %[[W2:.*]] = lcc.wait %[[R2]] : {{.*}} after %[[H]] : {{.*}} {ticket = 1 : i64}
// D1-NEXT:    arith.addf %[[W1]], %[[W2]]
// D2-LABEL: func.func @buckets(
// D2-NEXT:    arith.mulf
// D2-NEXT:    lcc.reduce_scatter {{.*}}ticket = 0
// D2-NEXT:    arith.addf
// D2-NEXT:    arith.mulf
// D2-NEXT:    lcc.reduce_scatter {{.*}}ticket = 1
// D2-NEXT:    arith.subf
// D2-NEXT:    lcc.wait {{.*}}ticket = 0
// D2-NEXT:    lcc.wait {{.*}}ticket = 1
// D2-NEXT:    arith.addf
module attributes {lcc.process_groups = {dp = 2 : i64}} {
  func.func @buckets(%x: tensor<8xf32>, %w: tensor<8xf32>) -> (tensor<4xf32>, tensor<8xf32>) {
    %g1 = arith.mulf %x, %w : tensor<8xf32>
    %r1 = lcc.reduce_scatter %g1 {group = "dp"} : tensor<8xf32> -> tensor<4xf32>
    %g2 = arith.addf %x, %w : tensor<8xf32>
    %h = arith.mulf %g2, %g2 : tensor<8xf32>
    %r2 = lcc.reduce_scatter %h {group = "dp"} : tensor<8xf32> -> tensor<4xf32>
    %u = arith.subf %x, %w : tensor<8xf32>
    %s = arith.addf %r1, %r2 : tensor<4xf32>
    return %s, %u : tensor<4xf32>, tensor<8xf32>
  }
}

// -----

// A collective whose result feeds another stays synchronous (the consumer
// still overlaps), as do broadcast, send and recv; all_reduce keeps nothing
// (it works in place).
// D2-LABEL: func.func @synchronous(
// D2:         %[[S:.*]] = lcc.all_reduce %arg0 {group = "dp"} : tensor<4xf32>
// D2-NEXT:    %[[G:.*]] = lcc.all_gather %[[S]] {group = "dp", ticket = 1 : i64}
// D2-NEXT:    %[[B:.*]] = lcc.broadcast %arg1 {group = "dp"} : tensor<4xf32>
// D2-NEXT:    %[[M:.*]] = lcc.all_reduce %[[B]] {group = "dp", reduction = "max", ticket = 3 : i64}
// D2-NEXT:    arith.mulf
// D2-NEXT:    lcc.wait %[[G]] : {{.*}} after %[[S]] : {{.*}} {ticket = 1 : i64}
// D2-NEXT:    lcc.wait %[[M]] : tensor<4xf32> {ticket = 3 : i64}
module attributes {lcc.process_groups = {dp = 2 : i64}} {
  func.func @synchronous(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<8xf32>, tensor<4xf32>, tensor<4xf32>) {
    %s = lcc.all_reduce %x {group = "dp"} : tensor<4xf32>
    %g = lcc.all_gather %s {group = "dp"} : tensor<4xf32> -> tensor<8xf32>
    %b = lcc.broadcast %y {group = "dp"} : tensor<4xf32>
    %m = lcc.all_reduce %b {group = "dp", reduction = "max"} : tensor<4xf32>
    %z = arith.mulf %y, %y : tensor<4xf32>
    return %g, %m, %z : tensor<8xf32>, tensor<4xf32>, tensor<4xf32>
  }
}
