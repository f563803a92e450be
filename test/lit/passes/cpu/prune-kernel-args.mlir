// RUN: lcc-opt %s --lcc-prune-kernel-args | FileCheck %s
// Tests passes/cpu/PruneKernelArgs.cpp.

// A kernel given a whole descriptor (allocated and aligned pointer, offset,
// size, stride) reads only the aligned pointer once its body is folded: the
// other four arguments go, from the kernel and from both calls, and the
// descriptor the caller built only to pass them is erased.
// CHECK-LABEL: llvm.func @step(
// CHECK-SAME:    %[[BASE:.*]]: !llvm.ptr, %[[DATA:.*]]: !llvm.ptr, %[[OFF:.*]]: i64)
// CHECK-NOT:     llvm.insertvalue
// CHECK-NOT:     llvm.extractvalue
// CHECK:         llvm.call @step_k0(%[[DATA]]) : (!llvm.ptr) -> ()
// CHECK:         llvm.call @step_k0(%[[BASE]]) : (!llvm.ptr) -> ()
// The trailing loop bounds of a parallel kernel stay, even unread; so does
// an argument the kernel reads.
// CHECK:         llvm.call @step_k1(%[[DATA]], %[[OFF]], %{{.*}}, %{{.*}}) : (!llvm.ptr, i64, i64, i64) -> ()
// A kernel whose arguments are all read is left alone.
// CHECK:         llvm.call @step_k2(%[[DATA]], %[[OFF]]) : (!llvm.ptr, i64) -> ()
// CHECK:       llvm.func internal @step_k0(%[[P:.*]]: !llvm.ptr) attributes {lcc.kernel}
// CHECK:         %[[V:.*]] = llvm.load %[[P]] : !llvm.ptr -> f32
// CHECK:         llvm.store %[[V]], %[[P]] : f32, !llvm.ptr
// CHECK:       llvm.func internal @step_k1(%{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64)
// CHECK:       llvm.func internal @step_k2(%{{.*}}: !llvm.ptr, %{{.*}}: i64)
!desc = !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
llvm.func @step(%base: !llvm.ptr, %data: !llvm.ptr, %off: i64) {
  %c0 = llvm.mlir.constant(0 : i64) : i64
  %c1 = llvm.mlir.constant(1 : i64) : i64
  %c16 = llvm.mlir.constant(16 : i64) : i64
  %c4 = llvm.mlir.constant(4 : i64) : i64
  %u = llvm.mlir.poison : !desc
  %d0 = llvm.insertvalue %base, %u[0] : !desc
  %d1 = llvm.insertvalue %data, %d0[1] : !desc
  %d2 = llvm.insertvalue %c0, %d1[2] : !desc
  %d3 = llvm.insertvalue %c16, %d2[3, 0] : !desc
  %d4 = llvm.insertvalue %c1, %d3[4, 0] : !desc
  %a = llvm.extractvalue %d4[0] : !desc
  %b = llvm.extractvalue %d4[1] : !desc
  %o = llvm.extractvalue %d4[2] : !desc
  %s = llvm.extractvalue %d4[3, 0] : !desc
  %t = llvm.extractvalue %d4[4, 0] : !desc
  llvm.call @step_k0(%a, %b, %o, %s, %t) : (!llvm.ptr, !llvm.ptr, i64, i64, i64) -> ()
  llvm.call @step_k0(%data, %base, %off, %c16, %c1) : (!llvm.ptr, !llvm.ptr, i64, i64, i64) -> ()
  llvm.call @step_k1(%base, %data, %off, %c0, %c4) : (!llvm.ptr, !llvm.ptr, i64, i64, i64) -> ()
  llvm.call @step_k2(%data, %off) : (!llvm.ptr, i64) -> ()
  llvm.return
}
llvm.func internal @step_k0(%a: !llvm.ptr, %b: !llvm.ptr, %o: i64, %s: i64, %t: i64)
    attributes {lcc.kernel} {
  %u = llvm.mlir.poison : !desc
  %d0 = llvm.insertvalue %a, %u[0] : !desc
  %d1 = llvm.insertvalue %b, %d0[1] : !desc
  %d2 = llvm.insertvalue %o, %d1[2] : !desc
  %d3 = llvm.insertvalue %s, %d2[3, 0] : !desc
  %d4 = llvm.insertvalue %t, %d3[4, 0] : !desc
  %p = llvm.extractvalue %d4[1] : !desc
  %v = llvm.load %p : !llvm.ptr -> f32
  llvm.store %v, %p : f32, !llvm.ptr
  llvm.return
}
llvm.func internal @step_k1(%a: !llvm.ptr, %b: !llvm.ptr, %o: i64, %lo: i64, %hi: i64)
    attributes {lcc.kernel, lcc.parallel = 4 : i64} {
  %p = llvm.getelementptr %b[%o] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p : !llvm.ptr -> f32
  llvm.store %v, %p : f32, !llvm.ptr
  llvm.return
}
llvm.func internal @step_k2(%b: !llvm.ptr, %o: i64) attributes {lcc.kernel} {
  %p = llvm.getelementptr %b[%o] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p : !llvm.ptr -> f32
  llvm.store %v, %p : f32, !llvm.ptr
  llvm.return
}
