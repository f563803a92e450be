// RUN: lcc-opt %s --lcc-plan-memory | FileCheck %s
// Tests passes/buffer/PlanMemory.cpp on a loop over micro-batches
// (lcc-build-train-step's scf.for {lcc.micro_batches}).

// The body is planned on its own: %b (128 B) dies before %c (64 B) is born,
// so both take body offset 0 and the body needs 128 B. Seen from the
// function, that range is one buffer alive at the loop; %a (64 B) lives
// across the loop, so the range (largest first) takes 0 and %a 128: peak
// 192 B, where planning every buffer for the whole loop would need 256.
// CHECK-LABEL: func.func @loop(
// CHECK-SAME:    %[[ARENA:[a-z0-9]+]]: memref<192xi8> {lcc.arena})
// CHECK-SAME:    attributes {lcc.arena_bytes = 192 : i64}
// CHECK:         %[[OA:.*]] = arith.constant 128 : index
// CHECK-NEXT:    %[[A:.*]] = memref.view %[[ARENA]][%[[OA]]][] : memref<192xi8> to memref<16xf32>
// CHECK:         scf.for
// CHECK:           %[[OB:.*]] = arith.constant 0 : index
// CHECK-NEXT:      memref.view %[[ARENA]][%[[OB]]][] : memref<192xi8> to memref<32xf32>
// CHECK:           %[[OC:.*]] = arith.constant 0 : index
// CHECK-NEXT:      memref.view %[[ARENA]][%[[OC]]][] : memref<192xi8> to memref<16xf32>
// CHECK-NOT:       memref.alloc
// CHECK:         } {lcc.micro_batches}
// CHECK:         memref.copy %[[A]], %arg1
func.func @loop(%in: memref<16xf32>, %out: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %a = memref.alloc() : memref<16xf32>
  memref.copy %in, %a : memref<16xf32> to memref<16xf32>
  scf.for %k = %c0 to %c4 step %c1 {
    %b = memref.alloc() : memref<32xf32>
    %s = memref.subview %b[0] [16] [1] : memref<32xf32> to memref<16xf32, strided<[1]>>
    memref.copy %a, %s : memref<16xf32> to memref<16xf32, strided<[1]>>
    %c = memref.alloc() : memref<16xf32>
    memref.copy %in, %c : memref<16xf32> to memref<16xf32>
    memref.copy %c, %a : memref<16xf32> to memref<16xf32>
  } {lcc.micro_batches}
  memref.copy %a, %out : memref<16xf32> to memref<16xf32>
  return
}

// A body buffer that leaves the iteration (yielded) escapes: it stays a heap
// allocation. So does every buffer of a loop that is not over micro-batches
// (its body is not planned; a kernel's loops never allocate).
// CHECK-LABEL: func.func @escapes(
// CHECK-SAME:    attributes {lcc.arena_bytes = 0 : i64}
// CHECK:         scf.for
// CHECK:           memref.alloc() : memref<4xf32>
// CHECK:         } {lcc.micro_batches}
// CHECK:         scf.for
// CHECK:           memref.alloc() : memref<8xf32>
// CHECK-NOT:     lcc.micro_batches
func.func @escapes(%in: memref<4xf32>) -> memref<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r = scf.for %k = %c0 to %c4 step %c1 iter_args(%acc = %in) -> (memref<4xf32>) {
    %n = memref.alloc() : memref<4xf32>
    memref.copy %acc, %n : memref<4xf32> to memref<4xf32>
    scf.yield %n : memref<4xf32>
  } {lcc.micro_batches}
  scf.for %k = %c0 to %c4 step %c1 {
    %t = memref.alloc() : memref<8xf32>
    %s = memref.subview %t[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
    memref.copy %in, %s : memref<4xf32> to memref<4xf32, strided<[1]>>
  }
  return %r : memref<4xf32>
}
