// RUN: lcc-opt %s --lcc-parallel-dispatch | FileCheck %s
// Tests passes/cpu/ParallelDispatch.cpp.

// A call of a splittable kernel (lcc.parallel = 64) becomes a call of the
// runtime's pool with the kernel's task function. The arguments that are
// not the same constant in every call travel through one stack array
// (allocated once, in the entry block); the common constants are rebuilt
// inside the task, so the kernel still sees them.
// The second call of @step_k0 passes another value where the first passed
// 16, and the same 8: both calls share one task, which loads the differing
// argument (stored by each caller) and rebuilds only the common constant.
// CHECK-LABEL: llvm.func @step(
// CHECK-SAME:    %[[P:.*]]: !llvm.ptr, %[[Q:.*]]: !llvm.ptr)
// CHECK:         %[[N:.*]] = llvm.mlir.constant(3 : i64) : i64
// CHECK:         %[[ARR:.*]] = llvm.alloca %[[N]] x i64 {alignment = 8 : i64} : (i64) -> !llvm.ptr
// CHECK:         %[[C16:.*]] = llvm.mlir.constant(16 : i64) : i64
// CHECK:         %[[C32:.*]] = llvm.mlir.constant(32 : i64) : i64
// CHECK:         %[[S0:.*]] = llvm.getelementptr %[[ARR]][0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         llvm.store %[[P]], %[[S0]] : !llvm.ptr, !llvm.ptr
// CHECK:         %[[S1:.*]] = llvm.getelementptr %[[ARR]][1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         llvm.store %[[C16]], %[[S1]] : i64, !llvm.ptr
// CHECK:         %[[S2:.*]] = llvm.getelementptr %[[ARR]][2] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         llvm.store %[[Q]], %[[S2]] : !llvm.ptr, !llvm.ptr
// CHECK:         %[[FN:.*]] = llvm.mlir.addressof @step_k0_task : !llvm.ptr
// CHECK:         %[[R:.*]] = llvm.mlir.constant(64 : i64) : i64
// CHECK:         llvm.call @lcc_parallel_for(%[[FN]], %[[ARR]], %[[R]])
// CHECK:         llvm.store %[[C32]], %{{.*}} : i64, !llvm.ptr
// CHECK:         %[[FN2:.*]] = llvm.mlir.addressof @step_k0_task : !llvm.ptr
// CHECK:         llvm.call @lcc_parallel_for(%[[FN2]], %[[ARR]], %{{.*}})
// CHECK-NOT:     llvm.call @step_k0(
// The serial kernel call is left alone.
// CHECK:         llvm.call @step_k1(%[[P]])
// CHECK:       llvm.func @lcc_parallel_for(!llvm.ptr, !llvm.ptr, i64)
// CHECK:       llvm.func internal @step_k0_task(%[[CTX:.*]]: !llvm.ptr, %[[LO:.*]]: i64, %[[HI:.*]]: i64)
// CHECK:         %[[A:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK:         %[[N16:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i64
// CHECK:         %[[B:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK:         %[[C8:.*]] = llvm.mlir.constant(8 : i64) : i64
// CHECK:         llvm.call @step_k0(%[[A]], %[[N16]], %[[B]], %[[C8]], %[[LO]], %[[HI]])
// CHECK-NOT:   llvm.func internal @step_k0_task
llvm.func @step(%p: !llvm.ptr, %q: !llvm.ptr) {
  %c16 = llvm.mlir.constant(16 : i64) : i64
  %c32 = llvm.mlir.constant(32 : i64) : i64
  %c8 = llvm.mlir.constant(8 : i64) : i64
  %c0 = llvm.mlir.constant(0 : i64) : i64
  %c64 = llvm.mlir.constant(64 : i64) : i64
  llvm.call @step_k0(%p, %c16, %q, %c8, %c0, %c64) : (!llvm.ptr, i64, !llvm.ptr, i64, i64, i64) -> ()
  llvm.call @step_k0(%q, %c32, %p, %c8, %c0, %c64) : (!llvm.ptr, i64, !llvm.ptr, i64, i64, i64) -> ()
  llvm.call @step_k1(%p) : (!llvm.ptr) -> ()
  llvm.return
}
llvm.func internal @step_k0(%a: !llvm.ptr, %n: i64, %b: !llvm.ptr, %m: i64, %lo: i64, %hi: i64)
    attributes {lcc.kernel, lcc.parallel = 64 : i64} {
  llvm.return
}
llvm.func internal @step_k1(%a: !llvm.ptr) attributes {lcc.kernel} {
  llvm.return
}
