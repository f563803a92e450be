// RUN: lcc-opt %s --split-input-file --lcc-overlap-collectives="depth=1" | FileCheck %s --check-prefix=D1
// RUN: lcc-opt %s --split-input-file --lcc-overlap-collectives | FileCheck %s --check-prefix=D2
// RUN: lcc-opt %s --split-input-file --lcc-overlap-collectives="depth=0" | FileCheck %s --check-prefix=D0
// Tests passes/shard/OverlapCollectives.cpp.

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

// A collective whose result feeds another (here through an expand_shape)
// stays synchronous; the consumer still overlaps, as do broadcast, send and
// recv; all_reduce keeps nothing (it works in place).
// D2-LABEL: func.func @synchronous(
// D2:         %[[S:.*]] = lcc.all_reduce %arg0 {group = "dp"} : tensor<4xf32>
// D2-NEXT:    %[[E:.*]] = tensor.expand_shape %[[S]]
// D2-NEXT:    %[[G:.*]] = lcc.all_gather %[[E]] {group = "dp", ticket = 1 : i64}
// D2-NEXT:    %[[B:.*]] = lcc.broadcast %arg1 {group = "dp"} : tensor<4xf32>
// D2-NEXT:    %[[M:.*]] = lcc.all_reduce %[[B]] {group = "dp", reduction = "max", ticket = 3 : i64}
// D2-NEXT:    arith.mulf
// D2-NEXT:    lcc.wait %[[G]] : {{.*}} after %[[E]] : {{.*}} {ticket = 1 : i64}
// D2-NEXT:    lcc.wait %[[M]] : tensor<4xf32> {ticket = 3 : i64}
module attributes {lcc.process_groups = {dp = 2 : i64}} {
  func.func @synchronous(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %s = lcc.all_reduce %x {group = "dp"} : tensor<4xf32>
    %e = tensor.expand_shape %s [[0, 1]] output_shape [1, 4] : tensor<4xf32> into tensor<1x4xf32>
    %g = lcc.all_gather %e {group = "dp"} : tensor<1x4xf32> -> tensor<2x4xf32>
    %b = lcc.broadcast %y {group = "dp"} : tensor<4xf32>
    %m = lcc.all_reduce %b {group = "dp", reduction = "max"} : tensor<4xf32>
    %z = arith.mulf %y, %y : tensor<4xf32>
    return %g, %m, %z : tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}

// -----

// The data movement that only assembles a gather's input (ZeRO-3 puts a
// layer's parameter parts side by side in one row) moves up with the start,
// so the gather can prefetch; computation (the mulf) stays where it is.
// D1-LABEL: func.func @assembled(
// D1-NEXT:    tensor.empty
// D1-NEXT:    tensor.insert_slice %arg0
// D1-NEXT:    %[[R0:.*]] = tensor.insert_slice %arg1
// D1-NEXT:    lcc.all_gather %[[R0]] {group = "dp", ticket = 0 : i64}
// D1-NEXT:    arith.mulf
// D1-NEXT:    lcc.wait {{.*}}ticket = 0
// D1-NEXT:    tensor.empty
// D1-NEXT:    tensor.insert_slice %arg2
// D1-NEXT:    %[[R1:.*]] = tensor.insert_slice %arg2
// D1-NEXT:    lcc.all_gather %[[R1]] {group = "dp", ticket = 1 : i64}
// D1-NEXT:    arith.addf
// D1-NEXT:    lcc.wait {{.*}}ticket = 1
// D1-NEXT:    arith.addf
// D1-NEXT:    return
module attributes {lcc.process_groups = {dp = 2 : i64}} {
  func.func @assembled(%p0: tensor<4xf32>, %p1: tensor<4xf32>, %q: tensor<4xf32>, %x: tensor<16xf32>) -> tensor<16xf32> {
    %a = arith.mulf %x, %x : tensor<16xf32>
    %e0 = tensor.empty() : tensor<8xf32>
    %r0 = tensor.insert_slice %p0 into %e0[0] [4] [1] : tensor<4xf32> into tensor<8xf32>
    %r0b = tensor.insert_slice %p1 into %r0[4] [4] [1] : tensor<4xf32> into tensor<8xf32>
    %g0 = lcc.all_gather %r0b {group = "dp"} : tensor<8xf32> -> tensor<16xf32>
    %b = arith.addf %a, %g0 : tensor<16xf32>
    %e1 = tensor.empty() : tensor<8xf32>
    %r1 = tensor.insert_slice %q into %e1[0] [4] [1] : tensor<4xf32> into tensor<8xf32>
    %r1b = tensor.insert_slice %q into %r1[4] [4] [1] : tensor<4xf32> into tensor<8xf32>
    %g1 = lcc.all_gather %r1b {group = "dp"} : tensor<8xf32> -> tensor<16xf32>
    %c = arith.addf %b, %g1 : tensor<16xf32>
    return %c : tensor<16xf32>
  }
}

// -----

// The data movement that takes a result apart (a bucket's slices) moves down
// with the wait, which therefore goes before the first computation that uses
// the data: the bucket's all_reduce overlaps the mulf.
// D2-LABEL: func.func @drained(
// D2-NEXT:    %[[B:.*]] = arith.mulf %arg0, %arg0
// D2-NEXT:    %[[R:.*]] = lcc.all_reduce %[[B]] {group = "dp", reduction = "mean", ticket = 0 : i64}
// D2-NEXT:    %[[Y:.*]] = arith.mulf %arg1, %arg1
// D2-NEXT:    %[[W:.*]] = lcc.wait %[[R]] : tensor<8xf32> {ticket = 0 : i64}
// D2-NEXT:    %[[S0:.*]] = tensor.extract_slice %[[W]][0] [4] [1]
// D2-NEXT:    %[[S1:.*]] = tensor.extract_slice %[[W]][4] [4] [1]
// D2-NEXT:    %[[Z:.*]] = arith.addf %[[Y]], %[[S0]]
// D2-NEXT:    arith.addf %[[Z]], %[[S1]]
// D2-NEXT:    return
module attributes {lcc.process_groups = {dp = 2 : i64}} {
  func.func @drained(%g: tensor<8xf32>, %x: tensor<4xf32>) -> tensor<4xf32> {
    %b = arith.mulf %g, %g : tensor<8xf32>
    %r = lcc.all_reduce %b {group = "dp", reduction = "mean"} : tensor<8xf32>
    %s0 = tensor.extract_slice %r[0] [4] [1] : tensor<8xf32> to tensor<4xf32>
    %s1 = tensor.extract_slice %r[4] [4] [1] : tensor<8xf32> to tensor<4xf32>
    %y = arith.mulf %x, %x : tensor<4xf32>
    %z = arith.addf %y, %s0 : tensor<4xf32>
    %w = arith.addf %z, %s1 : tensor<4xf32>
    return %w : tensor<4xf32>
  }
}

// -----

// A loop over micro-batches (lcc-build-train-step): its body is scheduled on
// its own, so each iteration starts and waits for its gathers (tickets go
// on from the function's). A collective of the function's block is not in
// flight across the loop: %q's gather, needed only after it, is waited for
// before it.
// D1-LABEL: func.func @micro_batches(
// D1-NEXT:    %[[H:.*]] = lcc.all_gather %arg2 {group = "dp", ticket = 0 : i64}
// D1:         %[[WH:.*]] = lcc.wait %[[H]] : {{.*}} {ticket = 0 : i64}
// D1-NEXT:    %[[R:.*]] = scf.for
// D1-NEXT:      %[[G0:.*]] = lcc.all_gather %arg0 {group = "dp", ticket = 1 : i64}
// D1-NEXT:      arith.mulf
// D1-NEXT:      lcc.wait %[[G0]] : {{.*}} {ticket = 1 : i64}
// D1-NEXT:      %[[G1:.*]] = lcc.all_gather %arg1 {group = "dp", ticket = 2 : i64}
// D1-NEXT:      arith.addf
// D1-NEXT:      lcc.wait %[[G1]] : {{.*}} {ticket = 2 : i64}
// D1-NEXT:      arith.addf
// D1-NEXT:      scf.yield
// D1-NEXT:    } {lcc.micro_batches}
// D1-NEXT:    arith.addf %[[R]], %[[WH]]
module attributes {lcc.process_groups = {dp = 2 : i64}} {
  func.func @micro_batches(%p0: tensor<4xf32>, %p1: tensor<4xf32>, %q: tensor<4xf32>, %x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %h = lcc.all_gather %q {group = "dp"} : tensor<4xf32> -> tensor<8xf32>
    %r = scf.for %k = %c0 to %c2 step %c1 iter_args(%acc = %x) -> (tensor<8xf32>) {
      %a = arith.mulf %acc, %acc : tensor<8xf32>
      %g0 = lcc.all_gather %p0 {group = "dp"} : tensor<4xf32> -> tensor<8xf32>
      %b = arith.addf %a, %g0 : tensor<8xf32>
      %g1 = lcc.all_gather %p1 {group = "dp"} : tensor<4xf32> -> tensor<8xf32>
      %c = arith.addf %b, %g1 : tensor<8xf32>
      scf.yield %c : tensor<8xf32>
    } {lcc.micro_batches}
    %d = arith.addf %r, %h : tensor<8xf32>
    return %d, %r : tensor<8xf32>, tensor<8xf32>
  }
}
