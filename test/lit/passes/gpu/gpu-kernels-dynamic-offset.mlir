// RUN: lcc-opt %s --lcc-gpu-kernels=lanes=1 | FileCheck %s
// Tests passes/gpu/GpuKernels.cpp: a buffer at an offset known only at run time
// (a ZeRO rank's piece: a multiple of lcc_group_rank) reaches the kernel as
// a bare pointer the host has already moved to the first element, so the
// kernel's argument has offset 0; a static offset stays the kernel's to add.

// CHECK-LABEL: func.func @step(
// CHECK-SAME:    %[[BUF:[a-z0-9]+]]: memref<64xf32>, %[[RANK:[a-z0-9]+]]: index
// CHECK:   %[[PIECE:.*]] = memref.subview %[[BUF]][%[[RANK]]] [16] [1]
// CHECK:   %[[STATIC:.*]] = memref.subview %[[BUF]][32] [16] [1]
// CHECK:   %[[ALIGNED:.*]] = memref.extract_aligned_pointer_as_index %[[PIECE]]
// CHECK:   %{{.*}}, %[[OFFSET:.*]], %{{.*}}, %{{.*}} = memref.extract_strided_metadata %[[PIECE]]
// CHECK:   %[[BYTES:.*]] = arith.muli %[[OFFSET]], %c4
// CHECK:   %[[PTR:.*]] = arith.addi %[[ALIGNED]], %[[BYTES]]
// CHECK:   arith.index_cast %[[PTR]] : index to i64
// The statically placed view passes its buffer's aligned pointer as it is.
// CHECK:   %[[P2:.*]] = memref.extract_aligned_pointer_as_index %[[STATIC]]
// CHECK-NEXT: arith.index_cast %[[P2]] : index to i64
// CHECK:   call @lcc_cuda_launch(

// CHECK: gpu.func @step_k(%[[ARG:.*]]: memref<16xf32, strided<[1]>>, %{{.*}}: memref<16xf32, strided<[1], offset: 32>>) kernel
// CHECK:   %[[CAST:.*]] = memref.cast %[[ARG]] : memref<16xf32, strided<[1]>> to memref<16xf32, strided<[1], offset: ?>>
// CHECK:   memref.store %{{.*}}, %[[CAST]][%{{.*}}]
#id = affine_map<(d0) -> (d0)>
func.func private @step_k(%a: memref<16xf32, strided<[1], offset: ?>>, %b: memref<16xf32, strided<[1], offset: 32>>) attributes {lcc.kernel} {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%b : memref<16xf32, strided<[1], offset: 32>>) outs(%a : memref<16xf32, strided<[1], offset: ?>>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  return
}
func.func @step(%buf: memref<64xf32>, %rank: index) {
  %piece = memref.subview %buf[%rank] [16] [1] : memref<64xf32> to memref<16xf32, strided<[1], offset: ?>>
  %fixed = memref.subview %buf[32] [16] [1] : memref<64xf32> to memref<16xf32, strided<[1], offset: 32>>
  call @step_k(%piece, %fixed) : (memref<16xf32, strided<[1], offset: ?>>, memref<16xf32, strided<[1], offset: 32>>) -> ()
  return
}
