// RUN: lcc-opt %s --lcc-outline-kernels | FileCheck %s
// Tests passes/kernels/OutlineKernels.cpp on a loop over micro-batches
// (lcc-build-train-step's scf.for {lcc.micro_batches}): the loop stays in
// the step and the loop nests of its body become kernels like the
// function's own, taking the iteration's view (a dynamic offset) as an
// argument. A strided copy in the body is a kernel too.
// CHECK-LABEL: func.func @step(
// CHECK:         call @step_k0(
// CHECK:         scf.for %[[K:.*]] = {{.*}} {
// CHECK:           %[[ROW:.*]] = memref.subview %arg0[%[[K]], 0] [1, 4] [1, 1]
// CHECK-NEXT:      call @step_k1(%[[ROW]], %arg1)
// CHECK:           call @step_k2(
// CHECK-NEXT:    } {lcc.micro_batches}
// CHECK-NEXT:    return
// CHECK:       func.func private @step_k0(
// CHECK:       func.func private @step_k1(%{{.*}}: memref<4xf32, strided<[1], offset: ?>>, %{{.*}}: memref<4xf32>)
// CHECK:       func.func private @step_k2(
// CHECK-SAME:    memref<2xf32, strided<[2]>>
#map = affine_map<(d0) -> (d0)>
func.func @step(%in: memref<3x4xf32>, %acc: memref<4xf32>, %t: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%acc : memref<4xf32>)
  scf.for %k = %c0 to %c3 step %c1 {
    %row = memref.subview %in[%k, 0] [1, 4] [1, 1] : memref<3x4xf32> to memref<4xf32, strided<[1], offset: ?>>
    linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
        ins(%row : memref<4xf32, strided<[1], offset: ?>>) outs(%acc : memref<4xf32>) {
    ^bb0(%x: f32, %y: f32):
      %s = arith.addf %x, %y : f32
      linalg.yield %s : f32
    }
    %even = memref.subview %acc[0] [2] [2] : memref<4xf32> to memref<2xf32, strided<[2]>>
    %first = memref.subview %t[0] [2] [1] : memref<4xf32> to memref<2xf32, strided<[1]>>
    memref.copy %even, %first : memref<2xf32, strided<[2]>> to memref<2xf32, strided<[1]>>
  } {lcc.micro_batches}
  return
}
