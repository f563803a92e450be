// The collective ops round-trip through the custom and the generic printer.
// RUN: lcc-opt %s | lcc-opt | FileCheck %s
// RUN: lcc-opt --mlir-print-op-generic %s | lcc-opt | FileCheck %s
// RUN: lcc-opt --canonicalize --cse %s | FileCheck %s --check-prefix=KEPT

// CHECK: module attributes {lcc.process_groups = {dp = 4 : i64, tp = 2 : i64}}
module attributes {lcc.process_groups = {dp = 4 : i64, tp = 2 : i64}} {
  // CHECK-LABEL: func.func @collectives
  func.func @collectives(%g: tensor<8x3xf32>, %p: tensor<2x3xf32>, %ids: tensor<5xi32>)
      -> (tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<2x3xf32>, tensor<2x12xf32>,
          tensor<5xi32>, tensor<4x3xf32>) {
    // CHECK: lcc.all_reduce %{{.*}} {group = "dp"} : tensor<8x3xf32>
    %0 = lcc.all_reduce %g {group = "dp"} : tensor<8x3xf32>
    // CHECK: lcc.all_reduce %{{.*}} {group = "dp", reduction = "mean"} : tensor<8x3xf32>
    %1 = lcc.all_reduce %g {group = "dp", reduction = "mean"} : tensor<8x3xf32>
    // CHECK: lcc.all_gather %{{.*}} {group = "dp"} : tensor<2x3xf32> -> tensor<8x3xf32>
    %2 = lcc.all_gather %p {group = "dp"} : tensor<2x3xf32> -> tensor<8x3xf32>
    // CHECK: lcc.reduce_scatter %{{.*}} {group = "dp"} : tensor<8x3xf32> -> tensor<2x3xf32>
    %3 = lcc.reduce_scatter %g {group = "dp"} : tensor<8x3xf32> -> tensor<2x3xf32>
    // CHECK: lcc.all_gather %{{.*}} {axis = 1 : i64, group = "dp"} : tensor<2x3xf32> -> tensor<2x12xf32>
    %4 = lcc.all_gather %p {group = "dp", axis = 1} : tensor<2x3xf32> -> tensor<2x12xf32>
    // CHECK: lcc.broadcast %{{.*}} {group = "tp", root = 1 : i64} : tensor<5xi32>
    %5 = lcc.broadcast %ids {group = "tp", root = 1} : tensor<5xi32>
    // CHECK: lcc.send %{{.*}} {group = "tp", peer = 1 : i64} : tensor<2x3xf32>
    lcc.send %p {group = "tp", peer = 1} : tensor<2x3xf32>
    // CHECK: lcc.recv {group = "tp", peer = 0 : i64} : tensor<4x3xf32>
    %6 = lcc.recv {group = "tp", peer = 0} : tensor<4x3xf32>
    // CHECK: %{{.*}}:2 = lcc.exchange %{{.*}}, %{{.*}} {group = "tp", recv_peers = array<i64: 1, 0>, send_peers = array<i64: 1, 0>} : (tensor<2x3xf32>, tensor<5xi32>) -> (tensor<4x3xf32>, tensor<2xf32>)
    %x:2 = lcc.exchange %p, %ids {group = "tp", send_peers = array<i64: 1, 0>, recv_peers = array<i64: 1, 0>} : (tensor<2x3xf32>, tensor<5xi32>) -> (tensor<4x3xf32>, tensor<2xf32>)
    // CHECK: lcc.exchange {group = "tp", recv_peers = array<i64: 1>, send_peers = array<i64>} : () -> tensor<4x3xf32>
    %y = lcc.exchange {group = "tp", send_peers = array<i64>, recv_peers = array<i64: 1>} : () -> tensor<4x3xf32>
    return %0, %1, %2, %3, %4, %5, %6 : tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>,
        tensor<2x3xf32>, tensor<2x12xf32>, tensor<5xi32>, tensor<4x3xf32>
  }

  // shard_slice takes this rank's part (no communication); lcc.gradient marks
  // where a gradient meets the optimizer and folds away.
  // CHECK-LABEL: func.func @local_ops
  // CHECK: lcc.shard_slice %{{.*}} {group = "dp"} : tensor<8x3xf32> -> tensor<2x3xf32>
  // CHECK: lcc.shard_slice %{{.*}} {axis = 1 : i64, group = "tp"} : tensor<8x4xf32> -> tensor<8x2xf32>
  // CHECK: lcc.gradient %{{.*}} {param = "w"} : tensor<8x3xf32>
  // CHECK: lcc.parallel_copy %{{.*}} {group = "tp"} : tensor<8x4xf32>
  // KEPT-LABEL: func.func @local_ops
  // KEPT-NOT: lcc.gradient
  // KEPT: return %arg0
  func.func @local_ops(%g: tensor<8x3xf32>, %h: tensor<8x4xf32>)
      -> (tensor<8x3xf32>, tensor<2x3xf32>, tensor<8x2xf32>) {
    %0 = lcc.shard_slice %g {group = "dp"} : tensor<8x3xf32> -> tensor<2x3xf32>
    %1 = lcc.shard_slice %h {group = "tp", axis = 1} : tensor<8x4xf32> -> tensor<8x2xf32>
    %2 = lcc.gradient %g {param = "w"} : tensor<8x3xf32>
    %3 = lcc.parallel_copy %h {group = "tp"} : tensor<8x4xf32>
    return %2, %0, %1 : tensor<8x3xf32>, tensor<2x3xf32>, tensor<8x2xf32>
  }

  // Asynchronous collectives (lcc-overlap-collectives): a ticket on the
  // collective, its result's one use the lcc.wait of that ticket, which keeps
  // an out-of-place collective's input; canonicalization keeps the pair.
  // CHECK-LABEL: func.func @tickets
  // CHECK: %[[R:.*]] = lcc.all_reduce %{{.*}} {group = "dp", ticket = 0 : i64} : tensor<8x3xf32>
  // CHECK: %[[G:.*]] = lcc.all_gather %[[P:.*]] {group = "dp", ticket = 1 : i64} : tensor<2x3xf32> -> tensor<8x3xf32>
  // CHECK: lcc.wait %[[G]] : tensor<8x3xf32> after %[[P]] : tensor<2x3xf32> {ticket = 1 : i64}
  // CHECK: lcc.wait %[[R]] : tensor<8x3xf32> {ticket = 0 : i64}
  // KEPT-LABEL: func.func @tickets
  // KEPT-COUNT-2: lcc.wait
  func.func @tickets(%g: tensor<8x3xf32>, %p: tensor<2x3xf32>) -> (tensor<8x3xf32>, tensor<8x3xf32>) {
    %0 = lcc.all_reduce %g {group = "dp", ticket = 0} : tensor<8x3xf32>
    %1 = lcc.all_gather %p {group = "dp", ticket = 1} : tensor<2x3xf32> -> tensor<8x3xf32>
    %2 = lcc.wait %1 : tensor<8x3xf32> after %p : tensor<2x3xf32> {ticket = 1}
    %3 = lcc.wait %0 : tensor<8x3xf32> {ticket = 0}
    return %2, %3 : tensor<8x3xf32>, tensor<8x3xf32>
  }

  // Collectives communicate: canonicalization and CSE keep both all_reduces
  // and the unused send/recv (every rank must issue the same sequence).
  // KEPT-LABEL: func.func @kept
  // KEPT-COUNT-2: lcc.all_reduce
  // KEPT: lcc.recv
  func.func @kept(%g: tensor<8x3xf32>) -> (tensor<8x3xf32>, tensor<8x3xf32>) {
    %0 = lcc.all_reduce %g {group = "dp"} : tensor<8x3xf32>
    %1 = lcc.all_reduce %g {group = "dp"} : tensor<8x3xf32>
    %2 = lcc.recv {group = "tp", peer = 0} : tensor<4x3xf32>
    return %0, %1 : tensor<8x3xf32>, tensor<8x3xf32>
  }
}
