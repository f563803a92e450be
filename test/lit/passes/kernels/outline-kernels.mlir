// RUN: lcc-opt %s --lcc-outline-kernels | FileCheck %s
// Tests passes/kernels/OutlineKernels.cpp.
// RUN: lcc-opt %s --lcc-outline-kernels --lcc-outline-kernels | FileCheck %s --check-prefix=TWICE

// Each loop nest of a public function becomes a private kernel called in its
// place; memrefs it uses are arguments, constants are cloned inside; ops
// without regions (alloc, dealloc, copy) stay in the caller. Linalg ops are
// lowered to loops in the kernel (passes/kernels/LoopNest.cpp).
// CHECK:       func.func @step(%[[A:.*]]: memref<4xf32>, %[[B:.*]]: memref<4xf32>, %[[S:.*]]: f32)
// CHECK:         %[[T:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT:    call @step_k0(%[[A]], %[[T]], %[[S]]) : (memref<4xf32>, memref<4xf32>, f32) -> ()
// CHECK-NEXT:    call @step_k1(%[[T]], %[[B]]) : (memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT:    memref.dealloc %[[T]]
// CHECK-NEXT:    return
// CHECK:       func.func private @step_k0(%[[KA:.*]]: memref<4xf32>, %[[KT:.*]]: memref<4xf32>, %[[KS:.*]]: f32)
// CHECK-SAME:    attributes {lcc.kernel, passthrough = ["noinline"]}
// CHECK:         scf.for %[[I:.*]] = %c0 to %c4 step %c1 {
// CHECK:           %[[X:.*]] = memref.load %[[KA]][%[[I]]]
// CHECK:           %[[M:.*]] = arith.mulf %[[X]], %[[KS]]
// CHECK:           memref.store %[[M]], %[[KT]][%[[I]]]
// CHECK:         return
// CHECK:       func.func private @step_k1(
// CHECK-NEXT:    %[[C:.*]] = arith.constant 2.000000e+00 : f32
// CHECK:           arith.addf %{{.*}}, %[[C]]

// Kernels are private, so a second run outlines nothing more.
// TWICE-COUNT-2: func.func private @step_k
// TWICE-NOT: @step_k0_k

#map = affine_map<(d0) -> (d0)>
func.func @step(%a: memref<4xf32>, %b: memref<4xf32>, %s: f32) {
  %two = arith.constant 2.0 : f32
  %t = memref.alloc() : memref<4xf32>
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%a : memref<4xf32>) outs(%t : memref<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %s : f32
    linalg.yield %m : f32
  }
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%t : memref<4xf32>) outs(%b : memref<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    %p = arith.addf %x, %two : f32
    linalg.yield %p : f32
  }
  memref.dealloc %t : memref<4xf32>
  return
}

