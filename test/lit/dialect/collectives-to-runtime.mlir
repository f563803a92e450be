// RUN: lcc-opt %s --split-input-file --lcc-lower-to-linalg --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" | FileCheck %s

// Collectives survive lcc-lower-to-linalg as lcc ops and bufferize into calls
// of the runtime's C ABI (runtime/dist/Collectives.h): group = position of
// the name in lcc.process_groups (sorted: dp = 0, tp = 1), dtype f32 = 0,
// reduction mean = 1, addresses and element counts as i64.

// CHECK-DAG: func.func private @lcc_all_reduce(i64, i64, i64, i64, i64, i64)
// CHECK-DAG: func.func private @lcc_all_gather(i64, i64, i64, i64, i64)
// CHECK-DAG: func.func private @lcc_reduce_scatter(i64, i64, i64, i64, i64, i64)
// CHECK-DAG: func.func private @lcc_broadcast(i64, i64, i64, i64, i64, i64)
// CHECK-DAG: func.func private @lcc_send(i64, i64, i64, i64, i64)
// CHECK-DAG: func.func private @lcc_recv(i64, i64, i64, i64, i64)
// CHECK-DAG: func.func private @lcc_group_start(i64)
// CHECK-DAG: func.func private @lcc_group_end(i64)
// CHECK-DAG: func.func private @lcc_group_rank(i64) -> i64
// CHECK-LABEL: func.func @step(
// all_reduce works in place: input and output are the same address.
// CHECK:       %[[P:.*]] = memref.extract_aligned_pointer_as_index %arg0
// CHECK:       %[[A:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK:       call @lcc_all_reduce(%c1_i64, %c0_i64{{.*}}, %c1_i64{{.*}}, %[[A]], %[[A]], %c8_i64)
// all_gather and reduce_scatter write a new buffer; counts are per rank.
// CHECK:       %[[G:.*]] = memref.alloc() {{.*}}: memref<16xf32>
// CHECK:       call @lcc_all_gather(%c1_i64{{.*}}, %c0_i64{{.*}}, %{{.*}}, %{{.*}}, %c8_i64{{.*}})
// CHECK:       memref.alloc() {{.*}}: memref<2x3xf32>
// CHECK:       call @lcc_reduce_scatter(%c0_i64{{.*}}, %c0_i64{{.*}}, %c0_i64{{.*}}, %{{.*}}, %{{.*}}, %c6_i64)
// CHECK:       call @lcc_broadcast(%c0_i64{{.*}}, %c0_i64{{.*}}, %c2_i64{{.*}}
// CHECK:       call @lcc_send(%c1_i64{{.*}}, %c0_i64{{.*}}, %c1_i64{{.*}}
// CHECK:       call @lcc_recv(%c1_i64{{.*}}, %c0_i64{{.*}}, %c0_i64{{.*}}
// An exchange: its receive's buffer made first (the runtime writes it at
// group_end, the plan must not overlap it with the send's), then its sends
// and receives between group_start and group_end.
// CHECK:       memref.alloc() {{.*}}: memref<8xf32>
// CHECK:       call @lcc_group_start(%c1_i64{{.*}}) : (i64) -> ()
// CHECK-NEXT:  call @lcc_send(%c1_i64{{.*}}, %c0_i64{{.*}}, %c1_i64{{.*}}, %{{.*}}, %c8_i64{{.*}})
// CHECK-NEXT:  call @lcc_recv(%c1_i64{{.*}}, %c0_i64{{.*}}, %c1_i64{{.*}}, %{{.*}}, %c8_i64{{.*}})
// CHECK:       call @lcc_group_end(%c1_i64{{.*}}) : (i64) -> ()
// A posted one (sends only) ends with lcc_group_end_posted.
// CHECK:       call @lcc_group_start(%c1_i64{{.*}}) : (i64) -> ()
// CHECK-NEXT:  call @lcc_send(
// CHECK:       call @lcc_group_end_posted(%c1_i64{{.*}}) : (i64) -> ()
// shard_slice: rank * part size is the offset of a subview.
// CHECK:       %[[R:.*]] = call @lcc_group_rank(%c0_i64{{.*}}) : (i64) -> i64
// CHECK:       arith.index_cast %[[R]] : i64 to index
// CHECK:       memref.subview
module attributes {lcc.process_groups = {tp = 2 : i64, dp = 4 : i64}} {
  func.func @step(%g: tensor<8xf32>, %m: tensor<8x3xf32>) -> (tensor<8xf32>, tensor<16xf32>, tensor<2x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<2x3xf32>) {
    %0 = lcc.all_reduce %g {group = "tp", reduction = "mean"} : tensor<8xf32>
    %1 = lcc.all_gather %0 {group = "tp"} : tensor<8xf32> -> tensor<16xf32>
    %2 = lcc.reduce_scatter %m {group = "dp"} : tensor<8x3xf32> -> tensor<2x3xf32>
    %3 = lcc.broadcast %m {group = "dp", root = 2} : tensor<8x3xf32>
    lcc.send %0 {group = "tp", peer = 1} : tensor<8xf32>
    %4 = lcc.recv {group = "tp", peer = 0} : tensor<8xf32>
    %x = lcc.exchange %0 {group = "tp", send_peers = array<i64: 1>, recv_peers = array<i64: 1>} : (tensor<8xf32>) -> tensor<8xf32>
    lcc.exchange %0 {group = "tp", posted, send_peers = array<i64: 1>, recv_peers = array<i64>} : (tensor<8xf32>) -> ()
    %5 = lcc.shard_slice %m {group = "dp"} : tensor<8x3xf32> -> tensor<2x3xf32>
    return %0, %1, %2, %3, %4, %5 : tensor<8xf32>, tensor<16xf32>, tensor<2x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<2x3xf32>
  }
}

// -----

// Asynchronous collectives (a ticket) call the _start variants, the ticket
// first; the wait hands the start's very addresses over again, which keeps
// both buffers alive in the memory plan until then. An in-place all_reduce of
// a non-contiguous view runs synchronously on a contiguous copy (copied back
// right after), and its wait lowers to nothing.
// CHECK-DAG: func.func private @lcc_all_gather_start(i64, i64, i64, i64, i64, i64)
// CHECK-DAG: func.func private @lcc_all_reduce_start(i64, i64, i64, i64, i64, i64, i64)
// CHECK-DAG: func.func private @lcc_wait(i64, i64, i64)
// CHECK-LABEL: func.func @async(
// CHECK:       %[[IN:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK:       %[[OUT:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK:       call @lcc_all_gather_start(%c3_i64{{.*}}, %c0_i64{{.*}}, %c0_i64{{.*}}, %[[IN]], %[[OUT]], %c8_i64{{.*}}) :
// CHECK:       %[[A:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK:       call @lcc_all_reduce_start(%c5_i64{{.*}}, %c0_i64{{.*}}, %c0_i64{{.*}}, %c0_i64{{.*}}, %[[A]], %[[A]], %c8_i64{{.*}}) :
// CHECK:       call @lcc_all_reduce(
// CHECK:       memref.copy
// CHECK:       linalg.generic
// CHECK:       call @lcc_wait(%c3_i64{{.*}}, %[[IN]], %[[OUT]])
// CHECK:       call @lcc_wait(%c5_i64{{.*}}, %[[A]], %[[A]])
// CHECK-NOT:   call @lcc_wait
// CHECK-NOT:   lcc.ticket
// CHECK:       return
module attributes {lcc.process_groups = {dp = 2 : i64}} {
  func.func @async(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8x3xf32>) -> (tensor<16xf32>, tensor<8xf32>, tensor<8x1xf32>, tensor<8xf32>) {
    %0 = lcc.all_gather %p {group = "dp", ticket = 3} : tensor<8xf32> -> tensor<16xf32>
    %1 = lcc.all_reduce %g {group = "dp", ticket = 5} : tensor<8xf32>
    %col = tensor.extract_slice %m[0, 0] [8, 1] [1, 1] : tensor<8x3xf32> to tensor<8x1xf32>
    %2 = lcc.all_reduce %col {group = "dp", ticket = 6} : tensor<8x1xf32>
    %sq = lcc.mul %p, %p : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
    %3 = lcc.wait %0 : tensor<16xf32> after %p : tensor<8xf32> {ticket = 3}
    %4 = lcc.wait %1 : tensor<8xf32> {ticket = 5}
    %5 = lcc.wait %2 : tensor<8x1xf32> {ticket = 6}
    return %3, %4, %5, %sq : tensor<16xf32>, tensor<8xf32>, tensor<8x1xf32>, tensor<8xf32>
  }
}
