// RUN: lcc-opt %s --lcc-cpu-pipeline | FileCheck %s
//
// Results that alias an argument, a view of one or a global constant are
// copied by buffer-deallocation-pipeline with `bufferization.clone`, which
// only `convert-bufferization-to-memref` lowers: Pipelines.cpp must run it
// right after buffer-deallocation-pipeline, or a clone and its
// unrealized_conversion_casts survive into the LLVM dialect and translation
// to LLVM IR fails.

// CHECK-LABEL: llvm.func @returns_views
// CHECK-NOT:   bufferization.
// CHECK-NOT:   unrealized_conversion_cast
func.func @returns_views(%a: tensor<2x3x4xf32>) -> (tensor<6x4xf32>, tensor<2x3x2xf32>, tensor<2xf32>, tensor<2x3x4xf32>) {
  %r = lcc.reshape %a : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %s = lcc.slice %a {start = array<i64: 0, 0, 0>, limit = array<i64: 2, 3, 4>, step = array<i64: 1, 1, 2>} : tensor<2x3x4xf32> -> tensor<2x3x2xf32>
  %c = lcc.constant dense<[1.5, -2.5]> : tensor<2xf32>
  return %r, %s, %c, %a : tensor<6x4xf32>, tensor<2x3x2xf32>, tensor<2xf32>, tensor<2x3x4xf32>
}
