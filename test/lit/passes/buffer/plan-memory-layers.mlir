// RUN: lcc-opt %s --lcc-plan-memory | FileCheck %s
// Tests passes/buffer/PlanMemory.cpp on calls of a layer function
// (lcc-outline-layers, bufferized in destination-passing style: it writes
// its out-param; drop-equivalent-buffer-results has removed the result).

// The layer function is planned as a leaf: its temporary %t becomes a view
// of an arena argument at an offset argument, which each call passes.
// CHECK-LABEL: func.func private @layer(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: memref<16xf32>, %[[OUT:[a-z0-9]+]]: memref<16xf32>,
// CHECK-SAME:    %[[ARENA:[a-z0-9]+]]: memref<?xi8> {lcc.arena}, %[[OFF:[a-z0-9]+]]: index {lcc.arena_offset})
// CHECK-NEXT:    %[[T:.*]] = memref.view %[[ARENA]][%[[OFF]]][] : memref<?xi8> to memref<16xf32>
// CHECK-NEXT:    memref.copy %[[X]], %[[T]]
// CHECK-NOT:     memref.alloc
func.func private @layer(%x: memref<16xf32>, %out: memref<16xf32>)
    attributes {lcc.layer = "h.*"} {
  %t = memref.alloc() : memref<16xf32>
  memref.copy %x, %t : memref<16xf32> to memref<16xf32>
  memref.copy %t, %out : memref<16xf32> to memref<16xf32>
  return
}

// A call spans the function's ops, so the caller sees the timeline of the
// inlined call: %a is last read at the function's first copy, the first
// call's %t lives over both copies, %o1 from the second copy (its first
// write) to the second call's first copy.
// Every buffer is 64 B: %a 0, the first %t 64 (it meets %a), %o1 0 (%a is
// dead by then), the second %t 64, %o2 0: peak 128 B. Were a call one
// position, %o1 would meet %a and the first %t: 192 B.
// CHECK-LABEL: func.func @f(
// CHECK-SAME:    %[[FARENA:[a-z0-9]+]]: memref<128xi8> {lcc.arena})
// CHECK-SAME:    attributes {lcc.arena_bytes = 128 : i64}
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[A:.*]] = memref.view %[[FARENA]][%[[C0]]][]
// CHECK:         %[[C0B:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[O1:.*]] = memref.view %[[FARENA]][%[[C0B]]][]
// CHECK-NEXT:    %[[CAST:.*]] = memref.cast %[[FARENA]] : memref<128xi8> to memref<?xi8>
// CHECK-NEXT:    %[[C64:.*]] = arith.constant 64 : index
// CHECK-NEXT:    call @layer(%[[A]], %[[O1]], %[[CAST]], %[[C64]])
// CHECK:         %[[O2:.*]] = memref.view %[[FARENA]][%{{.*}}][]
// CHECK-NEXT:    %[[CAST2:.*]] = memref.cast %[[FARENA]]
// CHECK-NEXT:    %[[C64B:.*]] = arith.constant 64 : index
// CHECK-NEXT:    call @layer(%[[O1]], %[[O2]], %[[CAST2]], %[[C64B]])
// CHECK-NOT:     memref.alloc
func.func @f(%in: memref<16xf32>, %res: memref<16xf32>) {
  %a = memref.alloc() : memref<16xf32>
  memref.copy %in, %a : memref<16xf32> to memref<16xf32>
  %o1 = memref.alloc() : memref<16xf32>
  call @layer(%a, %o1) : (memref<16xf32>, memref<16xf32>) -> ()
  %o2 = memref.alloc() : memref<16xf32>
  call @layer(%o1, %o2) : (memref<16xf32>, memref<16xf32>) -> ()
  memref.copy %o2, %res : memref<16xf32> to memref<16xf32>
  return
}

// A layer function calling layer functions (a pipeline stage's part calling
// its layers, lcc-build-train-step): @inner is summarized first; @part's
// temporaries are its own %u and @inner's %t at each call, placed by its
// callers like the others, and @part passes each call its offset. Timeline
// of @g (@inner spans 4 positions, @part 10): the first call's %t [3, 4],
// %u [4, 7], the second call's %t [7, 8], %o [8, 11]: the two %t share
// offset 0, %u and %o take 64: peak 128 B.
// CHECK-LABEL: func.func private @part(
// CHECK-SAME:    %[[PX:[a-z0-9]+]]: memref<16xf32>, %[[POUT:[a-z0-9]+]]: memref<16xf32>,
// CHECK-SAME:    %[[PA:[a-z0-9]+]]: memref<?xi8> {lcc.arena}, %[[PU:[a-z0-9]+]]: index {lcc.arena_offset}, %[[P1:[a-z0-9]+]]: index {lcc.arena_offset}, %[[P2:[a-z0-9]+]]: index {lcc.arena_offset})
// CHECK-NEXT:    %[[U:.*]] = memref.view %[[PA]][%[[PU]]][]
// CHECK-NEXT:    call @inner(%[[PX]], %[[U]], %[[PA]], %[[P1]])
// CHECK-NEXT:    call @inner(%[[U]], %[[POUT]], %[[PA]], %[[P2]])
// CHECK-LABEL: func.func @g(
// CHECK-SAME:    attributes {lcc.arena_bytes = 128 : i64}
// CHECK:         %[[C64:.*]] = arith.constant 64 : index
// CHECK-NEXT:    %[[O:.*]] = memref.view %{{.*}}[%[[C64]]][]
// CHECK-NEXT:    %[[CAST:.*]] = memref.cast
// CHECK-NEXT:    %[[U64:.*]] = arith.constant 64 : index
// CHECK-NEXT:    %[[T0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[T1:.*]] = arith.constant 0 : index
// CHECK-NEXT:    call @part(%{{.*}}, %[[O]], %[[CAST]], %[[U64]], %[[T0]], %[[T1]])
func.func private @inner(%x: memref<16xf32>, %out: memref<16xf32>)
    attributes {lcc.layer = "h.*"} {
  %t = memref.alloc() : memref<16xf32>
  memref.copy %x, %t : memref<16xf32> to memref<16xf32>
  memref.copy %t, %out : memref<16xf32> to memref<16xf32>
  return
}
func.func private @part(%x: memref<16xf32>, %out: memref<16xf32>)
    attributes {lcc.layer = "pipeline.pp_forward"} {
  %u = memref.alloc() : memref<16xf32>
  call @inner(%x, %u) : (memref<16xf32>, memref<16xf32>) -> ()
  call @inner(%u, %out) : (memref<16xf32>, memref<16xf32>) -> ()
  return
}
func.func @g(%in: memref<16xf32>, %res: memref<16xf32>) {
  %o = memref.alloc() : memref<16xf32>
  call @part(%in, %o) : (memref<16xf32>, memref<16xf32>) -> ()
  memref.copy %o, %res : memref<16xf32> to memref<16xf32>
  return
}
