// RUN: lcc-opt %s --lcc-outline-kernels=gpu=true --lcc-gpu-kernels=lanes=1 --lcc-emulate-gpu-kernels | FileCheck %s
// RUN: lcc-opt %s --lcc-outline-kernels=gpu=true --lcc-gpu-kernels=lanes=1 --lcc-emulate-gpu-kernels --convert-scf-to-cf --convert-math-to-llvm --expand-strided-metadata --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts --lcc-emulated-kernel-table | FileCheck %s --check-prefix=TABLE
// Tests passes/gpu/EmulateGpuKernels.cpp and EmulatedKernelTable.cpp (lcc
// --target=cuda --arch=emulated): the CUDA kernels become host functions
// that call the runtime's emulator for what only a GPU has, and a table
// gives the runtime each kernel by launch id.

// The gpu.module is gone; each kernel is a host function of its name.
// CHECK: module attributes {lcc.gpu_kernels = ["step_k0", "step_k1"], lcc.gpu_mappings = {rows = 1 : i64, threads = 1 : i64}, lcc.gpu_synchronizing = ["step_k1"]}
// CHECK-NOT: gpu.
// CHECK-DAG: memref.global "private" @step_k1_workgroup0 : memref<8xf32>
// CHECK-DAG: func.func private @lcc_emu_thread_id() -> index
// CHECK-DAG: func.func private @lcc_emu_block_id() -> index
// CHECK-DAG: func.func private @lcc_emu_barrier()
// CHECK-DAG: func.func private @lcc_emu_shuffle_xor(f32, i32) -> f32
// The host code still launches by id.
// CHECK-LABEL: func.func @step(
// CHECK: call @lcc_cuda_launch(
// The elementwise kernel: thread and block ids from the emulator.
// CHECK-LABEL: func.func @step_k0(%{{.*}}: memref<64x256xf32>, %{{.*}}: memref<64x256xf32>, %{{.*}}: memref<64x256xf32>) attributes {lcc.emulated_kernel, lcc.kernel_args = [memref<64x256xf32>, memref<64x256xf32>, memref<64x256xf32>]
// CHECK: call @lcc_emu_thread_id()
// CHECK: call @lcc_emu_block_id()
// CHECK: return
// The row sum: warp shuffles, the workgroup memory as a global, a barrier.
// CHECK-LABEL: func.func @step_k1(
// CHECK: %[[SHARED:.*]] = memref.get_global @step_k1_workgroup0 : memref<8xf32>
// CHECK: %[[S:.*]] = call @lcc_emu_shuffle_xor(%{{.*}}, %c16_i32) : (f32, i32) -> f32
// CHECK: arith.addf %{{.*}}, %[[S]]
// CHECK: memref.store %{{.*}}, %[[SHARED]][%{{.*}}] : memref<8xf32>
// CHECK: call @lcc_emu_barrier()
// CHECK: memref.load %[[SHARED]]

// The table: each kernel behind an argv wrapper that expands each bare
// pointer into the descriptor of its static layout.
// TABLE: llvm.func internal @lcc_emu_argv_0(%[[ARGV:.*]]: !llvm.ptr)
// TABLE: %[[P:.*]] = llvm.getelementptr %[[ARGV]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// TABLE: %[[X:.*]] = llvm.load %[[P]] : !llvm.ptr -> !llvm.ptr
// offset 0, sizes 64 x 256, strides 256, 1
// TABLE-NEXT: %[[OFF:.*]] = llvm.mlir.constant(0 : i64) : i64
// TABLE-NEXT: %[[R:.*]] = llvm.mlir.constant(64 : i64) : i64
// TABLE-NEXT: %[[C:.*]] = llvm.mlir.constant(256 : i64) : i64
// TABLE-NEXT: %[[S0:.*]] = llvm.mlir.constant(256 : i64) : i64
// TABLE-NEXT: %[[S1:.*]] = llvm.mlir.constant(1 : i64) : i64
// TABLE: llvm.call @step_k0(%[[X]], %[[X]], %[[OFF]], %[[R]], %[[C]], %[[S0]], %[[S1]],
// TABLE: llvm.mlir.global external constant @lcc_emu_kernels() {{.*}} : !llvm.array<2 x ptr>
// TABLE: llvm.mlir.addressof @lcc_emu_argv_0
// TABLE: llvm.mlir.addressof @lcc_emu_argv_1
// TABLE: llvm.mlir.global external constant @lcc_emu_kernel_sync(dense<[0, 1]> : tensor<2xi8>)
// TABLE: llvm.mlir.global external constant @lcc_emu_kernel_count(2 : i64)

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @step(%x: memref<64x256xf32>, %y: memref<64x256xf32>, %z: memref<64x256xf32>,
                %r: memref<64x512xf32>, %rs: memref<64xf32>) {
  linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : memref<64x256xf32>, memref<64x256xf32>) outs(%z : memref<64x256xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %0 = arith.addf %a, %b : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%r : memref<64x512xf32>) outs(%rs : memref<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %0 = arith.mulf %a, %a : f32
    %1 = arith.addf %o, %0 : f32
    linalg.yield %1 : f32
  }
  return
}
