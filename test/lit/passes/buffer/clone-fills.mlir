// RUN: lcc-opt %s --lcc-clone-fills | FileCheck %s
// Tests passes/buffer/CloneFills.cpp.

// One zero fill (as CSE leaves it) initializes two matmuls and is read by
// an add: each matmul gets a fill (and tensor.empty) of its own right before
// it; the read-only use keeps the original.
// CHECK-LABEL: func.func @f(
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<4x4xf32>
// CHECK:         %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<4x4xf32>)
// CHECK:         %[[E1:.*]] = tensor.empty() : tensor<4x4xf32>
// CHECK:         %[[Z1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] : tensor<4x4xf32>)
// CHECK:         linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x4xf32>, tensor<4x4xf32>) outs(%[[Z1]] : tensor<4x4xf32>)
// CHECK:         %[[E2:.*]] = tensor.empty() : tensor<4x4xf32>
// CHECK:         %[[Z2:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E2]] : tensor<4x4xf32>)
// CHECK:         linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x4xf32>, tensor<4x4xf32>) outs(%[[Z2]] : tensor<4x4xf32>)
// CHECK:         linalg.add ins(%{{.*}}, %[[Z]] : tensor<4x4xf32>, tensor<4x4xf32>)
func.func @f(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m1 = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m2 = linalg.matmul ins(%b, %a : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  %e2 = tensor.empty() : tensor<4x4xf32>
  %s = linalg.add ins(%m1, %z : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e2 : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %m1, %m2, %s : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// A fill with a single destination use is already private: unchanged.
// CHECK-LABEL: func.func @single(
// CHECK-COUNT-1: linalg.fill
// CHECK-NOT:     linalg.fill
func.func @single(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %m : tensor<4x4xf32>
}

// A single-use fill far from its user (the ops that shared it went into a
// layer function) moves right before it, where lcc-gemm-to-library finds
// the fill it can drop.
// CHECK-LABEL: func.func @far(
// CHECK:         %[[T:.*]] = linalg.transpose
// CHECK-NEXT:    %[[Z:.*]] = linalg.fill
// CHECK-NEXT:    linalg.matmul ins(%[[T]], %{{.*}} : tensor<4x4xf32>, tensor<4x4xf32>) outs(%[[Z]] : tensor<4x4xf32>)
func.func @far(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %e2 = tensor.empty() : tensor<4x4xf32>
  %t = linalg.transpose ins(%a : tensor<4x4xf32>) outs(%e2 : tensor<4x4xf32>) permutation = [1, 0]
  %m = linalg.matmul ins(%t, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %m : tensor<4x4xf32>
}

// One fill stored into two out-params (equal initial parameters: a layer
// function's ones, after CSE) fills each of them: a fill of its own right
// before each store, so each writes its destination in place instead of
// one of them copying the other's (which, in a layer function whose
// out-params are tensors, one-shot bufferization cannot resolve at all).
// CHECK-LABEL: func.func @stored_twice(
// CHECK-SAME:    %[[O0:[a-z0-9]+]]: tensor<4xf32>, %[[O1:[a-z0-9]+]]: tensor<4xf32>)
// CHECK:         %[[F0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4xf32>)
// CHECK-NEXT:    %[[M0:.*]] = bufferization.materialize_in_destination %[[F0]] in %[[O0]]
// CHECK-NEXT:    tensor.empty
// CHECK-NEXT:    %[[F1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4xf32>)
// CHECK-NEXT:    %[[M1:.*]] = bufferization.materialize_in_destination %[[F1]] in %[[O1]]
// CHECK-NEXT:    return %[[M0]], %[[M1]]
func.func @stored_twice(%o0: tensor<4xf32>, %o1: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%one : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %m0 = bufferization.materialize_in_destination %f in %o0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %m1 = bufferization.materialize_in_destination %f in %o1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %m0, %m1 : tensor<4xf32>, tensor<4xf32>
}
