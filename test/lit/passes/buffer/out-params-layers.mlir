// RUN: lcc-opt %s --lcc-out-params | FileCheck %s
// RUN: lcc-opt %s --lcc-out-params --eliminate-empty-tensors --empty-tensor-to-alloc-tensor --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --drop-equivalent-buffer-results --canonicalize | FileCheck %s --check-prefix=BUF
// Tests passes/buffer/OutParams.cpp on layer functions (lcc-outline-layers).

// A layer function keeps its results but stores each into a trailing tensor
// argument {lcc.result = i}; its own arguments are read-only.
// CHECK-LABEL: func.func private @step_layer0(
// CHECK-SAME:    %[[X:.*]]: tensor<4xf32> {bufferization.writable = false},
// CHECK-SAME:    %[[O:.*]]: tensor<4xf32> {lcc.result = 0 : i64}) -> tensor<4xf32>
// CHECK:         %[[Y:.*]] = linalg.generic
// CHECK:         %[[S:.*]] = bufferization.materialize_in_destination %[[Y]] in %[[O]]
// CHECK-NEXT:    return %[[S]]
// Each call passes a fresh tensor.empty for the result, but the last, whose
// result the step only stores into its own out-param: that call gets the
// out-param itself.
// CHECK-LABEL: func.func @step(
// CHECK-SAME:    %{{.*}}: tensor<4xf32>, %[[OUTP:.*]]: memref<4xf32> {lcc.result = 0 : i64})
// CHECK:         %[[E0:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-NEXT:    %[[A:.*]] = call @step_layer0(%{{.*}}, %[[E0]])
// CHECK-NEXT:    %[[T:.*]] = bufferization.to_tensor %[[OUTP]] restrict writable
// CHECK-NEXT:    %[[B:.*]] = call @step_layer0(%[[A]], %[[T]])
// CHECK-NEXT:    bufferization.materialize_in_destination %[[B]] in restrict writable %[[OUTP]]

// After bufferization the layer writes its result straight into the buffer
// its caller passes (no copy, no allocation): the caller's allocation, where
// the memory plan sees it, or here the last call's, @step's own out-param;
// with the results the layer returns as they came dropped, nothing is copied.
// BUF-LABEL: func.func private @step_layer0(
// BUF-SAME:    %[[X:.*]]: memref<4xf32>, %[[O:.*]]: memref<4xf32> {lcc.result = 0 : i64})
// BUF-NOT:     memref.alloc
// BUF:         linalg.generic {{.*}} outs(%[[O]] : memref<4xf32>)
// BUF-LABEL: func.func @step(
// BUF-SAME:    %[[IN:.*]]: memref<4xf32>, %[[OUT:.*]]: memref<4xf32> {lcc.result = 0 : i64})
// BUF:         %[[A0:.*]] = memref.alloc() {{.*}} : memref<4xf32>
// BUF-NEXT:    call @step_layer0(%[[IN]], %[[A0]])
// BUF-NEXT:    call @step_layer0(%[[A0]], %[[OUT]])
// BUF-NOT:     memref.copy
// BUF:         return

#map = affine_map<(d0) -> (d0)>
func.func private @step_layer0(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {lcc.layer = "h.*", lcc.layer_phase = 0 : i64} {
  %e = tensor.empty() : tensor<4xf32>
  %y = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func @step(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = func.call @step_layer0(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %b = func.call @step_layer0(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}
