// RUN: lcc-opt %s --lcc-out-params | FileCheck %s
// Tests passes/buffer/OutParams.cpp.
// RUN: lcc-opt %s --lcc-out-params --eliminate-empty-tensors --empty-tensor-to-alloc-tensor --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" | FileCheck %s --check-prefix=BUF

// Results become trailing memref out-params carrying the result attributes
// and {lcc.result = i}; the function returns nothing.
// CHECK-LABEL: func.func @step(
// CHECK-SAME:    %[[X:.*]]: tensor<4xf32> {lcc.param = "w"},
// CHECK-SAME:    %[[O0:.*]]: memref<4xf32> {lcc.param = "w", lcc.result = 0 : i64},
// CHECK-SAME:    %[[O1:.*]]: memref<f32> {lcc.output = "loss", lcc.result = 1 : i64}) {
// CHECK:         %[[E:.*]] = linalg.generic
// CHECK:         bufferization.materialize_in_destination %[[E]] in restrict writable %[[O0]]
// CHECK:         bufferization.materialize_in_destination %{{.*}} in restrict writable %[[O1]]
// CHECK-NEXT:    return{{$}}
// Private helpers keep their signature.
// CHECK-LABEL: func.func private @helper(%{{.*}}: tensor<2xf32>) -> tensor<2xf32>

// After bufferization the last op of each result writes into the out-param
// itself: no allocation, no copy for @step's results.
// BUF-LABEL: func.func @step(
// BUF-NOT:     memref.alloc
// BUF-NOT:     memref.copy
// BUF:         linalg.generic {{.*}} outs(%arg1 : memref<4xf32>)
// BUF:         return

#map = affine_map<(d0) -> (d0)>
#red = affine_map<(d0) -> ()>
func.func @step(%x: tensor<4xf32> {lcc.param = "w"})
    -> (tensor<4xf32> {lcc.param = "w"}, tensor<f32> {lcc.output = "loss"}) {
  %e = tensor.empty() : tensor<4xf32>
  %0 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<f32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<f32>) -> tensor<f32>
  %1 = linalg.generic {indexing_maps = [#map, #red], iterator_types = ["reduction"]}
      ins(%0 : tensor<4xf32>) outs(%s1 : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %0, %1 : tensor<4xf32>, tensor<f32>
}

func.func private @helper(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}

