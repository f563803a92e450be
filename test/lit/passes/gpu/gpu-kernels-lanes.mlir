// RUN: lcc-opt %s --lcc-outline-kernels=gpu=true --lcc-gpu-kernels=max-fused-args=0 | FileCheck %s
// RUN: lcc-opt %s --lcc-outline-kernels=gpu=true --lcc-gpu-kernels="lanes=2 max-fused-args=0" | FileCheck %s --check-prefix=TWO
// Elementwise CUDA kernels with several neighbouring elements per thread
// (lcc-gpu-kernels' `lanes`), and the pointer alignment the launch sites prove
// (horizontal fusion off: gpu-kernels-multi.mlir tests it).

#id2 = affine_map<(i, j) -> (i, j)>

// CHECK-LABEL: func.func @step(
// 64 x 256 elements, 4 per thread: 4096 threads, 16 blocks of 256.
// CHECK:   call @lcc_cuda_launch(%c0_i64, %c16_i64, %c256_i64,
// 4 x 6: 6 is no multiple of 4, one element per thread (24 threads, a block of 32).
// CHECK:   call @lcc_cuda_launch(%c1_i64, %c1_i64{{.*}}, %c32_i64,
// TWO: call @lcc_cuda_launch(%c0_i64, %c32_i64, %c256_i64,
// TWO: call @lcc_cuda_launch(%c1_i64, %c1_i64{{.*}}, %c32_i64{{.*}},

// Host arguments are device allocations (256-byte aligned); a view of the
// arena at byte 64 is 64-byte aligned, one at byte 8 proves nothing.
// CHECK: gpu.func @step_k0(%[[A:[a-z0-9]+]]: memref<64x256xf32>, %[[B:[a-z0-9]+]]: memref<64x256xf32>, %[[O:[a-z0-9]+]]: memref<64x256xf32>) kernel
// CHECK-SAME:    lcc.lanes = 4 : i64, lcc.mapping = "threads"
// CHECK:     %[[AA:.*]] = memref.assume_alignment %[[A]], 64
// CHECK:     %[[BB:.*]] = memref.assume_alignment %[[B]], 256
// CHECK-NOT: memref.assume_alignment %[[O]]
// CHECK:     scf.if
// CHECK:       %[[COL:.*]] = arith.remui %{{.*}}, %c64
// CHECK:       %[[ROW:.*]] = arith.divui %{{.*}}, %c64
// CHECK:       %[[FIRST:.*]] = arith.muli %[[COL]], %c4
// CHECK:       %[[X0:.*]] = memref.load %[[AA]][%[[ROW]], %[[FIRST]]]
// CHECK:       %[[S0:.*]] = arith.addf %[[X0]]
// CHECK:       %[[C1:.*]] = arith.addi %[[FIRST]], %c1
// CHECK:       memref.load %[[AA]][%[[ROW]], %[[C1]]]
// CHECK:       %[[C2:.*]] = arith.addi %[[FIRST]], %c2
// CHECK:       %[[C3:.*]] = arith.addi %[[FIRST]], %c3
// CHECK:       %[[S3:.*]] = arith.addf
// The stores come after every lane's loads (so the loads can merge).
// CHECK-NEXT:  memref.store %[[S0]], %[[O]][%[[ROW]], %[[FIRST]]]
// CHECK-NEXT:  memref.store %{{.*}}, %[[O]][%[[ROW]], %[[C1]]]
// CHECK-NEXT:  memref.store %{{.*}}, %[[O]][%[[ROW]], %[[C2]]]
// CHECK-NEXT:  memref.store %[[S3]], %[[O]][%[[ROW]], %[[C3]]]
// CHECK-NEXT: }
// CHECK: gpu.func @step_k1(
// CHECK-NOT:   lcc.lanes
// CHECK-SAME:  lcc.mapping = "threads"
func.func @step(%arena: memref<262144xi8>, %y: memref<64x256xf32>,
                %p: memref<4x6xf32>, %q: memref<4x6xf32>) {
  %c64 = arith.constant 64 : index
  %c8 = arith.constant 8 : index
  %x = memref.view %arena[%c64][] : memref<262144xi8> to memref<64x256xf32>
  %z = memref.view %arena[%c8][] : memref<262144xi8> to memref<64x256xf32>
  linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : memref<64x256xf32>, memref<64x256xf32>) outs(%z : memref<64x256xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %0 = arith.addf %a, %b : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%p : memref<4x6xf32>) outs(%q : memref<4x6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %0 = arith.mulf %a, %a : f32
    linalg.yield %0 : f32
  }
  return
}

// The assumed alignment is the first element's (the kernel adds the static
// offset to the bare pointer): a subview starting 4 floats in keeps 16 bytes,
// one starting 1 float in proves only 4 (no assumption).
// CHECK: gpu.func @offsets_k0(%[[IN:[a-z0-9]+]]: memref<8xf32, strided<[1], offset: 4>>, %[[OUT:[a-z0-9]+]]: memref<8xf32, strided<[1], offset: 1>>) kernel
// CHECK:     memref.assume_alignment %[[IN]], 16
// CHECK-NOT: memref.assume_alignment %[[OUT]]
// CHECK:     gpu.return
#id1 = affine_map<(i) -> (i)>
func.func @offsets(%x: memref<16xf32>, %y: memref<16xf32>) {
  %a = memref.subview %x[4] [8] [1] : memref<16xf32> to memref<8xf32, strided<[1], offset: 4>>
  %b = memref.subview %y[1] [8] [1] : memref<16xf32> to memref<8xf32, strided<[1], offset: 1>>
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%a : memref<8xf32, strided<[1], offset: 4>>) outs(%b : memref<8xf32, strided<[1], offset: 1>>) {
  ^bb0(%v: f32, %o: f32):
    %0 = arith.negf %v : f32
    linalg.yield %0 : f32
  }
  return
}
