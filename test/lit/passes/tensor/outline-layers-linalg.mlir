// RUN: lcc-opt %s --lcc-outline-layers | FileCheck %s
// RUN: lcc-opt %s --lcc-outline-layers="function=absent if-present=1" | FileCheck %s --check-prefix=ABSENT
// Tests passes/tensor/OutlineLayers.cpp on linalg on tensors, where lcc's
// pipelines run it (after fusion, before bufferization).

// Two layers h.0 and h.1, each a generic whose body captures a constant,
// accumulating into a zero fill shared with the rest of the step. The
// bodies are part of the structure; the constant, the empty tensor and
// the fill are made again inside the function, right before their first
// user (a layer writes its `outs`, and an argument would be read-only
// there), and the step's copies that nothing uses any more go. The collective named after h.1 has effects: it
// stays in the step, between the calls.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<4xf32>, %[[W0:[a-z0-9]+]]: tensor<4xf32>, %[[W1:[a-z0-9]+]]: tensor<4xf32>)
// CHECK-NOT:     arith.constant
// CHECK-NOT:     linalg.fill
// CHECK:    %[[R0:.*]] = call @forward_layer0(%[[X]], %[[W0]])
// CHECK-NEXT:    %[[S:.*]] = lcc.all_reduce %[[R0]]
// CHECK-NEXT:    %[[R1:.*]] = call @forward_layer0(%[[S]], %[[W1]])
// CHECK-NEXT:    return %[[R1]]
// CHECK:       func.func private @forward_layer0(%[[LX:.*]]: tensor<4xf32>, %[[LW:.*]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[C:.*]] = arith.constant 2.0
// CHECK-NEXT:    %[[Z:.*]] = arith.constant 0.0
// CHECK-NEXT:    %[[E:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-NEXT:    %[[F:.*]] = linalg.fill ins(%[[Z]] : f32) outs(%[[E]] : tensor<4xf32>)
// CHECK-NEXT:    %[[G:.*]] = linalg.generic {{.*}} ins(%[[LX]], %[[LW]] : tensor<4xf32>, tensor<4xf32>) outs(%[[F]] : tensor<4xf32>)
// CHECK-NEXT:    ^bb0(
// CHECK-NEXT:      arith.mulf %{{.*}}, %[[C]]
// CHECK:         return %[[G]]
// CHECK-NOT:   func.func private
// ABSENT-NOT:  call

#map = affine_map<(d0) -> (d0)>
module attributes {lcc.process_groups = {dp = 2 : i64}} {
  func.func @forward(%x: tensor<4xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>) -> tensor<4xf32> {
    %two = arith.constant 2.0 : f32
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %r0 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]}
        ins(%x, %w0 : tensor<4xf32>, tensor<4xf32>) outs(%f : tensor<4xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %two : f32
      %p = arith.mulf %m, %b : f32
      %s = arith.addf %p, %acc : f32
      linalg.yield %s : f32
    } -> tensor<4xf32> loc("h.0.")
    %sum = lcc.all_reduce %r0 {group = "dp"} : tensor<4xf32> loc("h.1.")
    %r1 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]}
        ins(%sum, %w1 : tensor<4xf32>, tensor<4xf32>) outs(%f : tensor<4xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %two : f32
      %p = arith.mulf %m, %b : f32
      %s = arith.addf %p, %acc : f32
      linalg.yield %s : f32
    } -> tensor<4xf32> loc("h.1.")
    return %r1 : tensor<4xf32>
  }
}
