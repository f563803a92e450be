// RUN: lcc-opt %s --lcc-outline-layers="function=prefill*" | FileCheck %s
// RUN: not lcc-opt %s --lcc-outline-layers="function=[" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not lcc-opt %s --lcc-outline-layers="function=decode*" 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: lcc-opt %s --lcc-outline-layers="function=decode* if-present=true" | FileCheck %s --check-prefix=LEFT
// Tests passes/tensor/OutlineLayers.cpp with a glob for `function`: every
// function it matches (the text-generation entries @prefill and
// @prefill_<L>), each its own layer functions; others are left alone.

// CHECK-LABEL: func.func @prefill(
// CHECK-COUNT-2: call @prefill_layer0(
// CHECK-LABEL: func.func @prefill_2(
// CHECK-COUNT-2: call @prefill_2_layer0(
// CHECK-LABEL: func.func @other(
// CHECK-NOT: call
// CHECK: func.func private @prefill_layer0(
// CHECK: func.func private @prefill_2_layer0(
// BAD: error: lcc-outline-layers: bad function pattern '['
// NONE: error: lcc-outline-layers: no @decode* with a body
// LEFT-LABEL: func.func @prefill(
// LEFT-NOT: call

func.func @prefill(%x: tensor<4xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>) -> tensor<4xf32> {
  %a0 = lcc.mul %x, %w0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.0.")
  %r0 = lcc.add %a0, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.0.")
  %a1 = lcc.mul %r0, %w1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.1.")
  %r1 = lcc.add %a1, %r0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.1.")
  return %r1 : tensor<4xf32>
}

func.func @prefill_2(%x: tensor<2xf32>, %w0: tensor<2xf32>, %w1: tensor<2xf32>) -> tensor<2xf32> {
  %a0 = lcc.mul %x, %w0 : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32> loc("h.0.")
  %r0 = lcc.add %a0, %x : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32> loc("h.0.")
  %a1 = lcc.mul %r0, %w1 : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32> loc("h.1.")
  %r1 = lcc.add %a1, %r0 : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32> loc("h.1.")
  return %r1 : tensor<2xf32>
}

func.func @other(%x: tensor<4xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>) -> tensor<4xf32> {
  %a0 = lcc.mul %x, %w0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.0.")
  %r0 = lcc.add %a0, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.0.")
  %a1 = lcc.mul %r0, %w1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.1.")
  %r1 = lcc.add %a1, %r0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.1.")
  return %r1 : tensor<4xf32>
}
