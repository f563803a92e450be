// RUN: lcc-opt %s --lcc-outline-kernels=gpu=true --lcc-gpu-kernels="lanes=1 max-fused-args=0" | FileCheck %s
// Tests passes/gpu/GpuKernels.cpp and GpuKernelBodies.cpp (and lcc-outline-kernels{gpu}),
// one launch per kernel (horizontal fusion: gpu-kernels-multi.mlir).

// Each loop nest becomes a gpu.func; the host launches it by id with its
// buffers' aligned pointers in a reused stack array.
// CHECK: module attributes {gpu.container_module, lcc.gpu_kernels = ["step_k0", "step_k1", "step_k2", "step_k3", "step_k4", "step_k5", "step_k6"], lcc.gpu_mappings = {rows = 3 : i64, serial = 1 : i64, slices = 1 : i64, threads = 2 : i64}}
// CHECK: func.func private @lcc_cuda_launch(i64, i64, i64, i64, i64)
// CHECK: func.func @step(%[[X:[a-z0-9]+]]: memref<64x256xf32>
// CHECK:   %[[ARGV:.*]] = memref.alloca() : memref<3xi64>
// CHECK:   %[[P0:.*]] = memref.extract_aligned_pointer_as_index %[[X]]
// CHECK:   %[[W0:.*]] = arith.index_cast %[[P0]] : index to i64
// CHECK:   memref.store %[[W0]], %[[ARGV]][%c0]
// CHECK:   %[[AP:.*]] = memref.extract_aligned_pointer_as_index %[[ARGV]]
// CHECK:   %[[A:.*]] = arith.index_cast %[[AP]] : index to i64
// 64 x 256 elements: 64 blocks of 256 threads, 3 buffers.
// CHECK:   call @lcc_cuda_launch(%c0_i64, %c64_i64, %c256_i64, %[[A]], %c3_i64)
// CHECK:   call @lcc_cuda_launch(%c1_i64, %c64_i64_{{[0-9]+}}, %c256_i64_{{[0-9]+}}, %{{.*}}, %c2_i64)
// CHECK:   call @lcc_cuda_launch(%c2_i64_{{[0-9]+}}, %c64_i64_{{[0-9]+}}, %c256_i64_{{[0-9]+}}, %{{.*}}, %c2_i64_{{[0-9]+}})
// The whole reduction of 16 elements: one block of one warp.
// CHECK:   call @lcc_cuda_launch(%c3_i64{{.*}}, %c1_i64{{.*}}, %c32_i64, %{{.*}}, %c2_i64{{.*}})
// Serial: one thread.
// CHECK:   call @lcc_cuda_launch(%c4_i64, %c1_i64{{.*}}, %c1_i64{{.*}}, %{{.*}}, %c3_i64{{.*}})
// Slices: one thread per element of the 64-wide row.
// CHECK:   call @lcc_cuda_launch(%c5_i64, %c1_i64{{.*}}, %c64_i64{{.*}}, %{{.*}}, %c3_i64{{.*}})
// The copy from a constant global passes only its destination.
// CHECK:   call @lcc_cuda_launch(%c6_i64, %c1_i64{{.*}}, %c32_i64{{.*}}, %{{.*}}, %c1_i64{{.*}})
// CHECK-NOT: call @step_k
// CHECK:   return

// CHECK: gpu.module @lcc_kernels {
// CHECK:   memref.global "private" constant @bounds : memref<2xi32> = dense<[1, 2]>

// threads: the flat thread index, guarded, split into row and column
// (the column, the innermost dimension, varies fastest: coalesced).
// CHECK: gpu.func @step_k0(%{{.*}}: memref<64x256xf32>, %{{.*}}: memref<64x256xf32>, %[[Z:.*]]: memref<64x256xf32>) kernel
// CHECK-SAME:    known_block_size = array<i32: 256, 1, 1>, lcc.mapping = "threads"
// Host arguments are device allocations: 256-byte aligned.
// CHECK:     %[[ZA:.*]] = memref.assume_alignment %[[Z]], 256
// CHECK:     %[[T:.*]] = gpu.thread_id x
// CHECK:     %[[B:.*]] = gpu.block_id x
// CHECK:     %[[BASE:.*]] = arith.muli %[[B]], %c256
// CHECK:     %[[G:.*]] = arith.addi %[[BASE]], %[[T]]
// CHECK:     %[[IN:.*]] = arith.cmpi ult, %[[G]], %c16384
// CHECK:     scf.if %[[IN]] {
// CHECK:       %[[COL:.*]] = arith.remui %[[G]], %c256
// CHECK:       %[[ROW:.*]] = arith.divui %[[G]], %c256
// CHECK:       %[[S:.*]] = arith.addf
// CHECK:       memref.store %[[S]], %[[ZA]][%[[ROW]], %[[COL]]]
// CHECK:     gpu.return

// rows: a block per row, threads striding over it, a butterfly in each
// warp, the 8 warps' partials through shared memory, then warp 0 again.
// CHECK: gpu.func @step_k1(%[[R:.*]]: memref<64x512xf32>, %[[RS:.*]]: memref<64xf32>) workgroup(%[[SH:.*]] : memref<8xf32, #gpu.address_space<workgroup>>) kernel
// CHECK-SAME:    lcc.mapping = "rows"
// CHECK:     %[[RA:.*]] = memref.assume_alignment %[[R]], 256
// CHECK:     %[[RSA:.*]] = memref.assume_alignment %[[RS]], 256
// CHECK:     %[[T1:.*]] = gpu.thread_id x
// CHECK:     %[[B1:.*]] = gpu.block_id x
// CHECK:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:     %[[P:.*]] = scf.for %[[I:.*]] = %[[T1]] to %c512 step %c256 iter_args(%[[ACC:.*]] = %[[ZERO]])
// CHECK:       memref.load %[[RA]][%[[B1]], %[[I]]]
// CHECK:       arith.mulf
// CHECK:       arith.addf %[[ACC]]
// CHECK:     gpu.shuffle xor %[[P]], %c16_i32, %c32_i32 : f32
// CHECK-COUNT-4: gpu.shuffle xor
// CHECK:     memref.store %{{.*}}, %[[SH]]
// CHECK:     gpu.barrier
// CHECK:       memref.load %[[SH]]
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK:         %[[OLD:.*]] = memref.load %[[RSA]][%[[B1]]]
// CHECK:         %[[NEW:.*]] = arith.addf %[[OLD]],
// CHECK:         memref.store %[[NEW]], %[[RSA]][%[[B1]]]

// The bias gradient's dimensions are interchanged: a block per column.
// CHECK: gpu.func @step_k2(%[[G2:.*]]: memref<512x64xf32>, %{{.*}}: memref<64xf32>)
// CHECK-SAME:    lcc.mapping = "rows"
// CHECK:     %[[G2A:.*]] = memref.assume_alignment %[[G2]], 256
// CHECK:     %[[T2:.*]] = gpu.thread_id x
// CHECK:     %[[B2:.*]] = gpu.block_id x
// CHECK:     scf.for %[[I2:.*]] = %[[T2]] to %c512 step %c256
// CHECK:       memref.load %[[G2A]][%[[I2]], %[[B2]]]

// A max reduction starts each thread at -inf; one warp, no shared memory.
// CHECK: gpu.func @step_k3(
// CHECK-SAME:    known_block_size = array<i32: 32, 1, 1>, lcc.mapping = "rows"
// CHECK:     arith.constant 0xFF800000 : f32
// CHECK-COUNT-5: arith.maximumf
// CHECK-NOT: gpu.barrier
// CHECK:     gpu.return

// CHECK: gpu.func @step_k4(
// CHECK-SAME:    known_block_size = array<i32: 1, 1, 1>, lcc.mapping = "serial"
// CHECK:     scf.for {{.*}} -> (f32, f32)

// slices: each thread owns one element of the row and walks the rows in
// order; the self-copy after the update is gone.
// CHECK: gpu.func @step_k5(%[[IDS:.*]]: memref<8xi32>, %{{.*}}: memref<1x8x64xf32>, %[[TABLE:.*]]: memref<1x32x64xf32>)
// CHECK-SAME:    known_block_size = array<i32: 64, 1, 1>, lcc.mapping = "slices"
// CHECK:     %[[IDSA:.*]] = memref.assume_alignment %[[IDS]], 256
// CHECK:     %[[TABLEA:.*]] = memref.assume_alignment %[[TABLE]], 256
// CHECK:     scf.if
// CHECK:       %[[E:.*]] = arith.remui %{{.*}}, %c64
// CHECK:       scf.for %[[TOK:.*]] = %c0 to %c8 step %c1 {
// CHECK:         memref.load %[[IDSA]][%[[TOK]]]
// CHECK:         %[[ROWV:.*]] = memref.subview %[[TABLEA]][0, %{{.*}}, 0] [1, 1, 64]
// CHECK:         %[[ADD:.*]] = arith.addf
// CHECK:         memref.store %[[ADD]], %[[ROWV]][%{{.*}}, %{{.*}}, %[[E]]]
// CHECK-NOT:     memref.copy
// CHECK:     gpu.return

// The constant global is read on the device.
// CHECK: gpu.func @step_k6(%[[C:.*]]: memref<2xi32>)
// CHECK:     %[[K:.*]] = memref.get_global @bounds
// CHECK:     memref.load %[[K]]

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#id1 = affine_map<(d0) -> (d0)>
#scalar = affine_map<(d0) -> ()>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
memref.global "private" constant @bounds : memref<2xi32> = dense<[1, 2]>
func.func @step(%x: memref<64x256xf32>, %y: memref<64x256xf32>, %z: memref<64x256xf32>,
                %r: memref<64x512xf32>, %rs: memref<64xf32>,
                %g: memref<512x64xf32>, %bias: memref<64xf32>,
                %v: memref<16xf32>, %s: memref<f32>, %m: memref<f32>,
                %ids: memref<8xi32>, %src: memref<1x8x64xf32>, %table: memref<1x32x64xf32>,
                %c: memref<2xi32>) {
  // threads: elementwise
  linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : memref<64x256xf32>, memref<64x256xf32>) outs(%z : memref<64x256xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %0 = arith.addf %a, %b : f32
    linalg.yield %0 : f32
  }
  // rows: a contiguous row sum
  linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%r : memref<64x512xf32>) outs(%rs : memref<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %0 = arith.mulf %a, %a : f32
    %1 = arith.addf %o, %0 : f32
    linalg.yield %1 : f32
  }
  // rows after interchange: a bias gradient (sum over the leading dimension)
  linalg.generic {indexing_maps = [#id2, #col], iterator_types = ["reduction", "parallel"]}
      ins(%g : memref<512x64xf32>) outs(%bias : memref<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %0 = arith.addf %a, %o : f32
    linalg.yield %0 : f32
  }
  // rows with one block: a whole reduction to a scalar (max)
  linalg.generic {indexing_maps = [#id1, #scalar], iterator_types = ["reduction"]}
      ins(%v : memref<16xf32>) outs(%s : memref<f32>) {
  ^bb0(%a: f32, %o: f32):
    %0 = arith.maximumf %o, %a : f32
    linalg.yield %0 : f32
  }
  // serial: two accumulators
  linalg.generic {indexing_maps = [#id1, #scalar, #scalar], iterator_types = ["reduction"]}
      ins(%v : memref<16xf32>) outs(%s, %m : memref<f32>, memref<f32>) {
  ^bb0(%a: f32, %o: f32, %p: f32):
    %0 = arith.addf %o, %a : f32
    %1 = arith.mulf %p, %a : f32
    linalg.yield %0, %1 : f32, f32
  }
  // slices: the embedding gradient's row updates
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c31 = arith.constant 31 : index
  scf.for %i = %c0 to %c8 step %c1 {
    %t = memref.load %ids[%i] : memref<8xi32>
    %ti = arith.index_cast %t : i32 to index
    %lo = arith.maxsi %ti, %c0 : index
    %row = arith.minsi %lo, %c31 : index
    %from = memref.subview %src[0, %i, 0] [1, 1, 64] [1, 1, 1] : memref<1x8x64xf32> to memref<1x1x64xf32, strided<[512, 64, 1], offset: ?>>
    %to = memref.subview %table[0, %row, 0] [1, 1, 64] [1, 1, 1] : memref<1x32x64xf32> to memref<1x1x64xf32, strided<[2048, 64, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%from : memref<1x1x64xf32, strided<[512, 64, 1], offset: ?>>) outs(%to : memref<1x1x64xf32, strided<[2048, 64, 1], offset: ?>>) {
    ^bb0(%a: f32, %o: f32):
      %0 = arith.addf %o, %a : f32
      linalg.yield %0 : f32
    }
    %again = memref.subview %table[0, %row, 0] [1, 1, 64] [1, 1, 1] : memref<1x32x64xf32> to memref<1x1x64xf32, strided<[2048, 64, 1], offset: ?>>
    memref.copy %to, %again : memref<1x1x64xf32, strided<[2048, 64, 1], offset: ?>> to memref<1x1x64xf32, strided<[2048, 64, 1], offset: ?>>
  }
  // a copy from a constant global: a kernel that reads the device's copy
  %k = memref.get_global @bounds : memref<2xi32>
  memref.copy %k, %c : memref<2xi32> to memref<2xi32>
  return
}
