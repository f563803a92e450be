// RUN: lcc-opt %s --split-input-file --lcc-outline-kernels | FileCheck %s
// RUN: lcc-opt %s --split-input-file --lcc-outline-kernels=min-parallel-work=1 | FileCheck %s --check-prefix=SPLIT
// Tests passes/kernels/OutlineKernels.cpp and passes/kernels/LoopNest.cpp: the loop form of kernels.

// A row reduction (softmax's sum): the trailing reduction loop carries the
// accumulator (iter_args) instead of loading and storing the output each
// iteration; the output is read before and written after it, and the
// combiner is reassociable so LLVM can vectorize the sum.
// CHECK-LABEL: func.func private @rowsum_k0(
// CHECK-SAME:    %[[IN:.*]]: memref<8x16xf32>, %[[OUT:.*]]: memref<8xf32>)
// CHECK:         scf.for %[[I:.*]] = %c0 to %c8 step %c1 {
// CHECK:           %[[INIT:.*]] = memref.load %[[OUT]][%[[I]]]
// CHECK:           %[[SUM:.*]] = scf.for %[[J:.*]] = %{{.*}} to %c16 step %{{.*}} iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32) {
// CHECK:             %[[X:.*]] = memref.load %[[IN]][%[[I]], %[[J]]]
// CHECK:             %[[E:.*]] = math.exp %[[X]]
// CHECK:             %[[S:.*]] = arith.addf %[[E]], %[[ACC]] fastmath<reassoc>
// CHECK:             scf.yield %[[S]]
// CHECK:           memref.store %[[SUM]], %[[OUT]][%[[I]]]

// With min-parallel-work=1 the row loop (parallel, indexes the output) runs
// between two trailing index arguments; the call passes the whole range.
// SPLIT-LABEL: func.func @rowsum(
// SPLIT:         %[[LO:.*]] = arith.constant 0 : index
// SPLIT:         %[[HI:.*]] = arith.constant 8 : index
// SPLIT:         call @rowsum_k0(%{{.*}}, %{{.*}}, %[[LO]], %[[HI]])
// SPLIT-LABEL: func.func private @rowsum_k0(
// SPLIT-SAME:    %{{.*}}: memref<8x16xf32>, %{{.*}}: memref<8xf32>, %[[A:.*]]: index, %[[B:.*]]: index)
// SPLIT-SAME:    lcc.parallel = 8 : i64
// SPLIT:         scf.for %{{.*}} = %[[A]] to %[[B]] step
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
func.func @rowsum(%x: memref<8x16xf32>, %s: memref<8xf32>) {
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x16xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %e = math.exp %a : f32
    %r = arith.addf %e, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A column sum: the reduction is the outer loop, so the output is loaded and
// stored per element (the inner loop runs along contiguous memory). The only
// parallel dimension is split.
// CHECK-LABEL: func.func private @colsum_k0(
// CHECK:         scf.for %[[I:.*]] = %c0 to %c8 step %c1 {
// CHECK:           scf.for %[[J:.*]] = %c0{{.*}} to %c16 step %c1{{.*}} {
// CHECK:             memref.load %{{.*}}[%[[J]]]
// CHECK:             arith.addf
// CHECK-NOT:         fastmath
// CHECK:             memref.store %{{.*}}[%[[J]]]
// SPLIT-LABEL: func.func private @colsum_k0(
// SPLIT-SAME:    lcc.parallel = 16 : i64
// SPLIT:         scf.for %{{.*}} = %c0 to %c8 step
// SPLIT:           scf.for %{{.*}} = %arg2 to %arg3 step
#in2 = affine_map<(d0, d1) -> (d0, d1)>
#out2 = affine_map<(d0, d1) -> (d1)>
func.func @colsum(%x: memref<8x16xf32>, %s: memref<16xf32>) {
  linalg.generic {indexing_maps = [#in2, #out2], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<8x16xf32>) outs(%s : memref<16xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A full reduction to a scalar has no parallel dimension: never split, and
// every loop carries the accumulator.
// CHECK-LABEL: func.func private @total_k0(
// CHECK:         %[[INIT:.*]] = memref.load %{{.*}}[] : memref<f32>
// CHECK:         scf.for {{.*}} iter_args(%{{.*}} = %[[INIT]]) -> (f32) {
// CHECK:           scf.for {{.*}} iter_args
// CHECK:         memref.store %{{.*}}[] : memref<f32>
// SPLIT-LABEL: func.func private @total_k0(
// SPLIT-NOT:     lcc.parallel
// SPLIT:         return
#in3 = affine_map<(d0, d1) -> (d0, d1)>
#out3 = affine_map<(d0, d1) -> ()>
func.func @total(%x: memref<8x16xf32>, %s: memref<f32>) {
  linalg.generic {indexing_maps = [#in3, #out3], iterator_types = ["reduction", "reduction"]}
      ins(%x : memref<8x16xf32>) outs(%s : memref<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// The same nest twice (as in two layers) is one kernel called twice; a nest
// that differs only in a constant is a kernel of its own.
// CHECK-LABEL: func.func @twice(
// CHECK:         call @twice_k0(%arg0, %arg1)
// CHECK-NEXT:    call @twice_k0(%arg1, %arg2)
// CHECK-NEXT:    call @twice_k2(%arg2, %arg0)
// CHECK-NOT:   func.func private @twice_k1(
// CHECK:       func.func private @twice_k0(
// CHECK:       func.func private @twice_k2(
// CHECK-NOT:   func.func private @twice_k
#id = affine_map<(d0) -> (d0)>
func.func @twice(%a: memref<4xf32>, %b: memref<4xf32>, %c: memref<4xf32>) {
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.addf %x, %one : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%b : memref<4xf32>) outs(%c : memref<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.addf %x, %one : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%c : memref<4xf32>) outs(%a : memref<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.addf %x, %two : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A copy into a strided view (one part of a concat) becomes a kernel; a
// contiguous copy stays a memref.copy (a memcpy).
// CHECK-LABEL: func.func @copies(
// CHECK:         %[[V:.*]] = memref.subview
// CHECK:         call @copies_k0(%arg0, %[[V]])
// CHECK:         memref.copy %arg0, %arg2 : memref<4x8xf32> to memref<4x8xf32>
// CHECK:       func.func private @copies_k0(%[[S:.*]]: memref<4x8xf32>, %[[D:.*]]: memref<4x8xf32, strided<[16, 1]>>)
// CHECK:         scf.for %[[I:.*]] =
// CHECK:           scf.for %[[J:.*]] =
// CHECK:             %[[X:.*]] = memref.load %[[S]][%[[I]], %[[J]]]
// CHECK:             memref.store %[[X]], %[[D]][%[[I]], %[[J]]]
func.func @copies(%a: memref<4x8xf32>, %b: memref<4x16xf32>, %c: memref<4x8xf32>) {
  %v = memref.subview %b[0, 0] [4, 8] [1, 1] : memref<4x16xf32> to memref<4x8xf32, strided<[16, 1]>>
  memref.copy %a, %v : memref<4x8xf32> to memref<4x8xf32, strided<[16, 1]>>
  memref.copy %a, %c : memref<4x8xf32> to memref<4x8xf32>
  return
}
