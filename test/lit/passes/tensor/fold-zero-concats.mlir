// RUN: lcc-opt %s --lcc-fold-zero-concats | FileCheck %s
// Tests passes/tensor/FoldZeroConcats.cpp.

// The gradient of a tensor sliced three ways along axis 2 (a fused q/k/v
// projection): the slices' zero-padded gradients add up to one concat.
// CHECK-LABEL: func.func @qkv
// CHECK-SAME: (%[[Q:.*]]: tensor<2x3x4xf32>, %[[K:.*]]: tensor<2x3x4xf32>, %[[V:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[G:.*]] = lcc.concat %[[Q]], %[[K]], %[[V]] {axis = 2 : i64}
// CHECK-NEXT: return %[[G]]
func.func @qkv(%q: tensor<2x3x4xf32>, %k: tensor<2x3x4xf32>, %v: tensor<2x3x4xf32>) -> tensor<2x3x12xf32> {
  %z8 = lcc.fill {value = 0.0 : f64} : tensor<2x3x8xf32>
  %z4 = lcc.fill {value = 0.0 : f64} : tensor<2x3x4xf32>
  %gq = lcc.concat %q, %z8 {axis = 2 : i64} : tensor<2x3x4xf32>, tensor<2x3x8xf32> -> tensor<2x3x12xf32>
  %gk = lcc.concat %z4, %k, %z4 {axis = 2 : i64} : tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32> -> tensor<2x3x12xf32>
  %gv = lcc.concat %z8, %v {axis = 2 : i64} : tensor<2x3x8xf32>, tensor<2x3x4xf32> -> tensor<2x3x12xf32>
  %s = lcc.add %gq, %gk : tensor<2x3x12xf32>, tensor<2x3x12xf32> -> tensor<2x3x12xf32>
  %t = lcc.add %s, %gv : tensor<2x3x12xf32>, tensor<2x3x12xf32> -> tensor<2x3x12xf32>
  return %t : tensor<2x3x12xf32>
}

// Overlapping values add only where both sides have them; a segment zero on
// both sides becomes one smaller fill.
// CHECK-LABEL: func.func @overlap
// CHECK-SAME: (%[[A:.*]]: tensor<5x2xf32>, %[[B:.*]]: tensor<5x2xf32>)
// CHECK: %[[SUM:.*]] = lcc.add %[[A]], %[[B]] : tensor<5x2xf32>, tensor<5x2xf32> -> tensor<5x2xf32>
// CHECK: %[[Z:.*]] = lcc.fill {value = 0.000000e+00 : f64} : tensor<5x6xf32>
// CHECK: %[[R:.*]] = lcc.concat %[[SUM]], %[[Z]] {axis = 1 : i64}
// CHECK: return %[[R]]
func.func @overlap(%a: tensor<5x2xf32>, %b: tensor<5x2xf32>) -> tensor<5x8xf32> {
  %z6 = lcc.fill {value = 0.0 : f64} : tensor<5x6xf32>
  %x = lcc.concat %a, %z6 {axis = 1 : i64} : tensor<5x2xf32>, tensor<5x6xf32> -> tensor<5x8xf32>
  %y = lcc.concat %b, %z6 {axis = 1 : i64} : tensor<5x2xf32>, tensor<5x6xf32> -> tensor<5x8xf32>
  %s = lcc.add %x, %y : tensor<5x8xf32>, tensor<5x8xf32> -> tensor<5x8xf32>
  return %s : tensor<5x8xf32>
}

// Left alone: a fill of ones is not zero; concats along different axes.
// CHECK-LABEL: func.func @kept
// CHECK: lcc.add
// CHECK: lcc.add
func.func @kept(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>, %c: tensor<4x8xf32>, %d: tensor<8x4xf32>)
    -> (tensor<4x8xf32>, tensor<8x8xf32>) {
  %ones = lcc.fill {value = 1.0 : f64} : tensor<4x4xf32>
  %x = lcc.concat %a, %ones {axis = 1 : i64} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x8xf32>
  %y = lcc.concat %ones, %b {axis = 1 : i64} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x8xf32>
  %s = lcc.add %x, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %z48 = lcc.fill {value = 0.0 : f64} : tensor<4x8xf32>
  %z84 = lcc.fill {value = 0.0 : f64} : tensor<8x4xf32>
  %u = lcc.concat %c, %z48 {axis = 0 : i64} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %w = lcc.concat %z84, %d {axis = 1 : i64} : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x8xf32>
  %t = lcc.add %u, %w : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  return %s, %t : tensor<4x8xf32>, tensor<8x8xf32>
}
