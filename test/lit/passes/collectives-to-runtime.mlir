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
    %5 = lcc.shard_slice %m {group = "dp"} : tensor<8x3xf32> -> tensor<2x3xf32>
    return %0, %1, %2, %3, %4, %5 : tensor<8xf32>, tensor<16xf32>, tensor<2x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<2x3xf32>
  }
}
