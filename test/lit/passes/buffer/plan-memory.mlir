// RUN: lcc-opt %s --lcc-plan-memory | FileCheck %s
// Tests passes/buffer/PlanMemory.cpp.

// Three temporaries of 64, 128 and 64 bytes. %t0 dies when %t2 is born, so
// they share offset 0... after the largest (%t1) takes the lowest offset:
// t1 [128 B] at 0; t0 (live with t1) at 128; t2 (live with t1, not with t0)
// reuses 128. Peak 192 bytes. Copying %t2 into the out-param is a use, not
// an escape, so it is planned too; the deallocs vanish.
// CHECK-LABEL: func.func @f(
// CHECK-SAME:    %[[ARENA:[a-z0-9]+]]: memref<192xi8> {lcc.arena})
// CHECK-SAME:    attributes {lcc.arena_bytes = 192 : i64}
// CHECK:         %[[O0:.*]] = arith.constant 128 : index
// CHECK-NEXT:    %[[T0:.*]] = memref.view %[[ARENA]][%[[O0]]][] : memref<192xi8> to memref<16xf32>
// CHECK:         %[[O1:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[T1:.*]] = memref.view %[[ARENA]][%[[O1]]][] : memref<192xi8> to memref<32xf32>
// CHECK:         %[[O2:.*]] = arith.constant 128 : index
// CHECK-NEXT:    %[[T2:.*]] = memref.view %[[ARENA]][%[[O2]]][] : memref<192xi8> to memref<16xf32>
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.dealloc
// CHECK:         memref.copy %[[T2]], %arg1
func.func @f(%in: memref<16xf32>, %out: memref<16xf32>) {
  %t0 = memref.alloc() : memref<16xf32>
  memref.copy %in, %t0 : memref<16xf32> to memref<16xf32>
  %t1 = memref.alloc() : memref<32xf32>
  %s = memref.subview %t1[0] [16] [1] : memref<32xf32> to memref<16xf32, strided<[1]>>
  memref.copy %t0, %s : memref<16xf32> to memref<16xf32, strided<[1]>>
  memref.dealloc %t0 : memref<16xf32>
  %t2 = memref.alloc() : memref<16xf32>
  // %t1 is still used here, through its subview.
  memref.copy %s, %t2 : memref<16xf32, strided<[1]>> to memref<16xf32>
  memref.copy %t2, %out : memref<16xf32> to memref<16xf32>
  memref.dealloc %t1 : memref<32xf32>
  memref.dealloc %t2 : memref<16xf32>
  return
}

// A buffer that is returned escapes: it stays a heap allocation, and a
// function without planned buffers gets no arena argument.
// CHECK-LABEL: func.func @escapes() -> memref<4xf32>
// CHECK-SAME:    attributes {lcc.arena_bytes = 0 : i64}
// CHECK:         memref.alloc
func.func @escapes() -> memref<4xf32> {
  %a = memref.alloc() : memref<4xf32>
  return %a : memref<4xf32>
}

// An asynchronous collective's buffer lives until its wait: lcc_wait gets
// the start's address again (dialects/lcc/lowering/Collectives.cpp), and
// the plan follows the address to that use. So %b, born after the start,
// cannot take %a's bytes while the runtime still writes them (without the
// wait, both would be at offset 0 in a 64-byte arena).
// CHECK-LABEL: func.func @async_collective(
// CHECK-SAME:    memref<128xi8> {lcc.arena}
// CHECK:         arith.constant 0 : index
// CHECK:         arith.constant 64 : index
func.func private @lcc_all_reduce_start(i64, i64, i64, i64, i64, i64, i64)
func.func private @lcc_wait(i64, i64, i64)
func.func @async_collective(%in: memref<16xf32>, %out: memref<16xf32>) {
  %a = memref.alloc() : memref<16xf32>
  memref.copy %in, %a : memref<16xf32> to memref<16xf32>
  %p = memref.extract_aligned_pointer_as_index %a : memref<16xf32> -> index
  %i = arith.index_cast %p : index to i64
  %t = arith.constant 0 : i64
  call @lcc_all_reduce_start(%t, %t, %t, %t, %i, %i, %t) : (i64, i64, i64, i64, i64, i64, i64) -> ()
  %b = memref.alloc() : memref<16xf32>
  memref.copy %in, %b : memref<16xf32> to memref<16xf32>
  memref.copy %b, %out : memref<16xf32> to memref<16xf32>
  call @lcc_wait(%t, %i, %i) : (i64, i64, i64) -> ()
  return
}

// A buffer is live from its first use, not its allocation: %late is
// allocated first (as a call's out-param is, before an inlined layer that
// writes it), but first used after %early's last use, so both take offset 0
// and the peak is one buffer.
// CHECK-LABEL: func.func @first_use(
// CHECK-SAME:    %{{.*}}: memref<64xi8> {lcc.arena})
// CHECK-SAME:    attributes {lcc.arena_bytes = 64 : i64}
// CHECK:         arith.constant 0 : index
// CHECK-NEXT:    memref.view
// CHECK:         arith.constant 0 : index
// CHECK-NEXT:    memref.view
func.func @first_use(%in: memref<16xf32>, %out: memref<16xf32>) {
  %late = memref.alloc() : memref<16xf32>
  %early = memref.alloc() : memref<16xf32>
  memref.copy %in, %early : memref<16xf32> to memref<16xf32>
  memref.copy %early, %out : memref<16xf32> to memref<16xf32>
  memref.copy %in, %late : memref<16xf32> to memref<16xf32>
  memref.copy %late, %out : memref<16xf32> to memref<16xf32>
  return
}
