// RUN: lcc-opt %s --lcc-outline-layers=function=init | FileCheck %s
// RUN: lcc-opt %s --lcc-outline-layers=function=init --inline="default-pipeline=" --symbol-dce | FileCheck %s --check-prefix=BACK
// Tests passes/tensor/OutlineLayers.cpp on @init, where the CPU pipeline
// runs it too: initializers differ per layer only in their seeds.

// @init of two layers, each initializer named after its parameter: the
// layers differ only in their seeds (scalar constants, each right before
// its initializer). They are one function taking the seeds that differ as
// trailing arguments, moved before the call; the std both share and the
// equal scalar (%same) are made again inside. Inlining gives the same ops.
// CHECK-LABEL: func.func @init(
// CHECK-NEXT:    %[[S0:.*]] = arith.constant 11 : i64
// CHECK-NEXT:    %[[L0:.*]]:3 = call @init_layer0(%[[S0]])
// CHECK-NEXT:    %[[S1:.*]] = arith.constant 21 : i64
// CHECK-NEXT:    %[[L1:.*]]:3 = call @init_layer0(%[[S1]])
// CHECK-NEXT:    return %[[L0]]#0, %[[L0]]#1, %[[L0]]#2, %[[L1]]#0, %[[L1]]#1, %[[L1]]#2
// CHECK:       func.func private @init_layer0(%[[SEED:.*]]: i64) -> (tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT:    lcc.random_normal %[[SEED]] {std = 2.000000e-02 : f64}
// CHECK-NEXT:    lcc.fill {value = 0.000000e+00 : f64}
// CHECK-NEXT:    %[[SAME:.*]] = arith.constant 5 : i64
// CHECK-NEXT:    lcc.random_uniform %[[SAME]]
// CHECK-NEXT:    return
// BACK-LABEL: func.func @init(
// BACK:         lcc.random_normal %{{.*}} {std
// BACK:         lcc.random_uniform
// BACK:         lcc.random_normal %{{.*}} {std
// BACK:         lcc.random_uniform
// BACK-NOT:     func.func private @init_layer
func.func @init() -> (tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %s0 = arith.constant 11 : i64 loc("h.0.w")
  %w0 = lcc.random_normal %s0 {std = 0.02} : tensor<4x4xf32> loc("h.0.w")
  %b0 = lcc.fill {value = 0.0} : tensor<4xf32> loc("h.0.b")
  %same0 = arith.constant 5 : i64 loc("h.0.u")
  %u0 = lcc.random_uniform %same0 : tensor<4xf32> loc("h.0.u")
  %s1 = arith.constant 21 : i64 loc("h.1.w")
  %w1 = lcc.random_normal %s1 {std = 0.02} : tensor<4x4xf32> loc("h.1.w")
  %b1 = lcc.fill {value = 0.0} : tensor<4xf32> loc("h.1.b")
  %same1 = arith.constant 5 : i64 loc("h.1.u")
  %u1 = lcc.random_uniform %same1 : tensor<4xf32> loc("h.1.u")
  return %w0, %b0, %u0, %w1, %b1, %u1 : tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32>
}
