// RUN: lcc-opt %s --lcc-loop-layer-calls | FileCheck %s
// RUN: lcc-opt %s --lcc-loop-layer-calls=explain=true -mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=EXPLAIN
// RUN: lcc-opt %s --lcc-loop-layer-calls=min-calls=4 | FileCheck %s --check-prefix=KEEP
// RUN: lcc-opt %s --lcc-loop-layer-calls --convert-scf-to-cf --expand-strided-metadata --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts | FileCheck %s --check-prefix=LLVM
// Tests passes/buffer/LoopLayerCalls.cpp: consecutive calls of a layer
// function (as lcc-plan-memory leaves them) become one loop.

func.func private @layer(%x: memref<16xf32>, %w: memref<16xf32>, %out: memref<16xf32>,
                         %arena: memref<?xi8>, %off: index) attributes {lcc.layer = "h.*"} {
  %t = memref.view %arena[%off][] : memref<?xi8> to memref<16xf32>
  memref.copy %x, %t : memref<16xf32> to memref<16xf32>
  memref.copy %w, %out : memref<16xf32> to memref<16xf32>
  return
}

// An entry point: each call reads a view of the arena and writes the next
// (a global table of byte offsets), passes a parameter (its argument
// number in the same table; its address from the runtime's table, the
// function's argument) and the offset of the callee's temporary (a constant). The
// arena's casts are equal ops: one is passed as is. Rows: (input view,
// parameter, output view, temporary's offset) per call, in call order.
// Then the function takes the table alone: the arena, the one buffer still
// used outside the loop, is made from its address there (argument 3).
// CHECK-LABEL: func.func @step(
// CHECK-SAME:    %[[TABLE:[a-z0-9]+]]: !llvm.ptr) attributes {lcc.buffer_table}
// CHECK-NEXT:    %[[THREE:.*]] = llvm.mlir.constant(3 : i64) : i64
// CHECK-NEXT:    %[[ASLOT:.*]] = llvm.getelementptr %[[TABLE]][%[[THREE]]]
// CHECK-NEXT:    %[[APTR:.*]] = llvm.load %[[ASLOT]] : !llvm.ptr -> !llvm.ptr
// CHECK:         %[[ARENA:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)> to memref<512xi8>
// CHECK-NOT:     call @layer
// CHECK:         %[[CAST:.*]] = memref.cast %[[ARENA]]
// CHECK:         %[[G:.*]] = memref.get_global @step_calls0 : memref<12xi64>
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %[[N:.*]] step
// CHECK:           %[[ROW:.*]] = arith.muli %[[I]], %{{.*}} : index
// CHECK:           %[[OFF:.*]] = memref.load %[[G]][%[[ROW]]]
// CHECK:           %[[OFFI:.*]] = arith.index_cast %[[OFF]] : i64 to index
// CHECK:           %[[IN:.*]] = memref.view %[[ARENA]][%[[OFFI]]][] : memref<512xi8> to memref<16xf32>
// CHECK:           %[[ARG:.*]] = memref.load %[[G]]
// CHECK:           %[[SLOT:.*]] = llvm.getelementptr %[[TABLE]][%[[ARG]]]
// CHECK:           %[[PTR:.*]] = llvm.load %[[SLOT]] : !llvm.ptr -> !llvm.ptr
// CHECK:           llvm.insertvalue %[[PTR]]
// CHECK:           %[[W:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)> to memref<16xf32>
// CHECK:           %[[OUT:.*]] = memref.view %[[ARENA]]
// CHECK:           %[[TMP:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK:           func.call @layer(%[[IN]], %[[W]], %[[OUT]], %[[CAST]], %[[TMP]])
// CHECK-NEXT:    }
// CHECK-NEXT:    return
func.func @step(%w0: memref<16xf32>, %w1: memref<16xf32>, %w2: memref<16xf32>,
                %arena: memref<512xi8> {lcc.arena}) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c192 = arith.constant 192 : index
  %c256 = arith.constant 256 : index
  %a = memref.view %arena[%c0][] : memref<512xi8> to memref<16xf32>
  %b = memref.view %arena[%c64][] : memref<512xi8> to memref<16xf32>
  %cast0 = memref.cast %arena : memref<512xi8> to memref<?xi8>
  call @layer(%a, %w0, %b, %cast0, %c256) : (memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<?xi8>, index) -> ()
  %c = memref.view %arena[%c128][] : memref<512xi8> to memref<16xf32>
  %cast1 = memref.cast %arena : memref<512xi8> to memref<?xi8>
  call @layer(%b, %w1, %c, %cast1, %c192) : (memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<?xi8>, index) -> ()
  %d = memref.view %arena[%c192][] : memref<512xi8> to memref<16xf32>
  %cast2 = memref.cast %arena : memref<512xi8> to memref<?xi8>
  call @layer(%c, %w2, %d, %cast2, %c256) : (memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<?xi8>, index) -> ()
  return
}

// Not an entry point (private: no runtime table): the buffers' addresses
// are stored into a stack table before the loop. An op that touches memory
// between calls ends a group: the third call has no partner and stays.
// CHECK-LABEL: func.func private @inner(
// CHECK-SAME:    %[[P0:[a-z0-9]+]]: memref<16xf32>, %[[P1:[a-z0-9]+]]: memref<16xf32>, %[[P2:[a-z0-9]+]]: memref<16xf32>, %[[P3:[a-z0-9]+]]: memref<16xf32>,
// CHECK-NOT:     !llvm.ptr
// CHECK:         %[[STACK:.*]] = memref.alloca() : memref<2xindex>
// CHECK:         %[[A0:.*]] = memref.extract_aligned_pointer_as_index %[[P0]]
// CHECK:         memref.store %[[A0]], %[[STACK]][%{{.*}}]
// CHECK:         %[[A1:.*]] = memref.extract_aligned_pointer_as_index %[[P1]]
// CHECK:         memref.store %[[A1]], %[[STACK]][%{{.*}}]
// CHECK:         scf.for
// CHECK:           %[[ADDR:.*]] = memref.load %[[STACK]]
// CHECK:           arith.index_cast %[[ADDR]] : index to i64
// CHECK:           llvm.inttoptr
// CHECK:           func.call @layer(
// CHECK:         }
// CHECK-NEXT:    memref.copy %[[P0]], %[[P3]]
// CHECK-NEXT:    call @layer(%{{.*}}, %[[P2]],
func.func private @inner(%p0: memref<16xf32>, %p1: memref<16xf32>, %p2: memref<16xf32>, %p3: memref<16xf32>,
                         %arena: memref<256xi8>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %a = memref.view %arena[%c0][] : memref<256xi8> to memref<16xf32>
  %b = memref.view %arena[%c64][] : memref<256xi8> to memref<16xf32>
  %cast = memref.cast %arena : memref<256xi8> to memref<?xi8>
  call @layer(%a, %p0, %b, %cast, %c64) : (memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<?xi8>, index) -> ()
  call @layer(%a, %p1, %b, %cast, %c64) : (memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<?xi8>, index) -> ()
  memref.copy %p0, %p3 : memref<16xf32> to memref<16xf32>
  call @layer(%a, %p2, %b, %cast, %c64) : (memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<?xi8>, index) -> ()
  return
}

// A buffer that differs between calls and is none of the forms (a strided
// subview): the calls stay.
// CHECK-LABEL: func.func @strided(
// CHECK-NOT:     scf.for
// CHECK-COUNT-2: call @layer_strided(
func.func private @layer_strided(%x: memref<16xf32, strided<[2], offset: ?>>) attributes {lcc.layer = "s.*"} {
  return
}
func.func @strided(%big: memref<64xf32>) {
  %s0 = memref.subview %big[0] [16] [2] : memref<64xf32> to memref<16xf32, strided<[2]>>
  %c0 = memref.cast %s0 : memref<16xf32, strided<[2]>> to memref<16xf32, strided<[2], offset: ?>>
  %s1 = memref.subview %big[32] [16] [2] : memref<64xf32> to memref<16xf32, strided<[2], offset: 32>>
  %c1 = memref.cast %s1 : memref<16xf32, strided<[2], offset: 32>> to memref<16xf32, strided<[2], offset: ?>>
  call @layer_strided(%c0) : (memref<16xf32, strided<[2], offset: ?>>) -> ()
  call @layer_strided(%c1) : (memref<16xf32, strided<[2], offset: ?>>) -> ()
  return
}

// The table of @step, at the module's end.
// CHECK: memref.global "private" constant @step_calls0 : memref<12xi64> = dense<[0, 0, 64, 256, 64, 1, 128, 192, 128, 2, 192, 256]>

// `explain` says what became a loop, from which tables, and what did not.
// EXPLAIN: remark: 3 calls of @layer become a loop: 1 arguments the same, 2 views and 1 constants from a global table, 1 buffers from the runtime's table, 0 from a table filled here
// EXPLAIN: remark: 2 calls of @layer become a loop: 4 arguments the same, 0 views and 0 constants from a global table, 0 buffers from the runtime's table, 1 from a table filled here
// EXPLAIN: remark: calls of @layer_strided stay unrolled: argument 0 differs between calls and is neither a view of one buffer, a constant nor a static identity-layout buffer

// Fewer calls than min-calls stay as they are.
// KEEP-LABEL: func.func @step(
// KEEP-NOT:     scf.for
// KEEP-COUNT-3: call @layer(

// Lowered: the descriptor built in the loop and the one the call's
// conversion asks for cancel; no cast is left.
// LLVM-LABEL: llvm.func @step(
// LLVM-NOT:   unrealized_conversion_cast
// LLVM:       llvm.call @layer(
// LLVM-NOT:   unrealized_conversion_cast
// LLVM-LABEL: llvm.func @inner(
// LLVM-NOT:   unrealized_conversion_cast
// LLVM:       llvm.call @layer(
// LLVM-NOT:   unrealized_conversion_cast
// LLVM-LABEL: llvm.func @layer_strided(
