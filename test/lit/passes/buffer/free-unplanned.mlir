// RUN: lcc-opt %s --split-input-file --lcc-free-unplanned | FileCheck %s
// Tests passes/buffer/FreeUnplanned.cpp.

// Everything planned (arena views, stack buffers): nothing to free, and the
// module is left exactly as it was (no ownership bookkeeping).
// CHECK-LABEL: func.func @planned(
// CHECK-NOT:     bufferization.dealloc
// CHECK-NOT:     memref.dealloc
// CHECK:         memref.view
// CHECK:         memref.alloca
// CHECK:         return
func.func @planned(%arena: memref<1024xi8>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %v = memref.view %arena[%c0][] : memref<1024xi8> to memref<4xf32>
  %s = memref.alloca() : memref<4xf32>
  memref.copy %v, %s : memref<4xf32> to memref<4xf32>
  memref.copy %s, %out : memref<4xf32> to memref<4xf32>
  return
}

// -----

// A buffer left to the heap is freed after its last use.
// CHECK-LABEL: func.func @unplanned(
// CHECK:         %[[A:.*]] = memref.alloc() : memref<4xf32>
// CHECK:         memref.copy %[[A]], %{{.*}}
// CHECK:         memref.dealloc %[[A]] : memref<4xf32>
// CHECK:         return
func.func @unplanned(%in: memref<4xf32>, %out: memref<4xf32>) {
  %a = memref.alloc() : memref<4xf32>
  memref.copy %in, %a : memref<4xf32> to memref<4xf32>
  memref.copy %a, %out : memref<4xf32> to memref<4xf32>
  return
}
