// One-shot analysis of func.call with lcc's cheaper queries (passes/buffer/CallAnalysis.h): the
// in-place decisions and argument accesses follow from what each callee reads, writes and
// returns. Each CHECK would change if a query gave another answer (read, written, aliasing).
// RUN: lcc-opt %s --one-shot-bufferize="bufferize-function-boundaries test-analysis-only" | FileCheck %s

// Writes its argument (in place) and returns it.
func.func private @writes(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c = arith.constant 1.0 : f32
  %i = arith.constant 0 : index
  %r = tensor.insert %c into %a[%i] : tensor<4xf32>
  return %r : tensor<4xf32>
}

// Only reads its argument.
func.func private @reads(%a: tensor<4xf32>) -> f32 {
  %i = arith.constant 0 : index
  %e = tensor.extract %a[%i] : tensor<4xf32>
  return %e : f32
}

// Overwrites all of its argument without reading it.
func.func private @fills(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c = arith.constant 2.0 : f32
  %r = linalg.fill ins(%c : f32) outs(%a : tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// Returns its argument: the result is the same buffer.
func.func private @identity(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}

// A written operand still read afterwards gets a copy; a read-only one does not.
// CHECK-LABEL: func.func @written_then_read
// CHECK-SAME: {bufferization.access = "read"}
// CHECK: call @writes(%{{.*}}) {__inplace_operands_attr__ = ["false"]}
// CHECK: call @reads(%{{.*}}) {__inplace_operands_attr__ = ["true"]}
func.func @written_then_read(%t: tensor<4xf32>) -> (tensor<4xf32>, f32, f32) {
  %i = arith.constant 0 : index
  %w = call @writes(%t) : (tensor<4xf32>) -> tensor<4xf32>
  %later = tensor.extract %t[%i] : tensor<4xf32>
  %r = call @reads(%t) : (tensor<4xf32>) -> f32
  return %w, %later, %r : tensor<4xf32>, f32, f32
}

// A callee that writes without reading makes the caller's argument write-only.
// CHECK-LABEL: func.func @filled
// CHECK-SAME: {bufferization.access = "write"}
// CHECK: call @fills(%{{.*}}) {__inplace_operands_attr__ = ["true"]}
func.func @filled(%t: tensor<4xf32>) -> tensor<4xf32> {
  %f = call @fills(%t) : (tensor<4xf32>) -> tensor<4xf32>
  return %f : tensor<4xf32>
}

// The result is the argument's buffer (equivalent), so writing it while the
// argument is read later needs a copy: the analysis makes it at the call.
// CHECK-LABEL: func.func @aliased
// CHECK-SAME: {bufferization.access = "read"}
// CHECK: call @identity(%{{.*}}) {__inplace_operands_attr__ = ["false"]}
// CHECK: tensor.insert {{.*}} {__inplace_operands_attr__ = ["none", "true", "none"]}
func.func @aliased(%t: tensor<4xf32>) -> (tensor<4xf32>, f32) {
  %c = arith.constant 3.0 : f32
  %i = arith.constant 0 : index
  %v = call @identity(%t) : (tensor<4xf32>) -> tensor<4xf32>
  %u = tensor.insert %c into %v[%i] : tensor<4xf32>
  %x = tensor.extract %t[%i] : tensor<4xf32>
  return %u, %x : tensor<4xf32>, f32
}

// Returns its second argument.
func.func private @second(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  return %b : tensor<4xf32>
}

// The result aliases the second operand only (the operand a result aliases is
// found from the callee's analysis, not by asking each operand): the second
// operand, read after the call, is copied; the first is not.
// CHECK-LABEL: func.func @second_aliased
// CHECK: call @second(%{{.*}}, %{{.*}}) {__inplace_operands_attr__ = ["true", "false"]}
// CHECK: tensor.insert {{.*}} {__inplace_operands_attr__ = ["none", "true", "none"]}
func.func @second_aliased(%s: tensor<4xf32>, %t: tensor<4xf32>) -> (tensor<4xf32>, f32, f32) {
  %c = arith.constant 3.0 : f32
  %i = arith.constant 0 : index
  %v = call @second(%s, %t) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %u = tensor.insert %c into %v[%i] : tensor<4xf32>
  %x = tensor.extract %t[%i] : tensor<4xf32>
  %y = tensor.extract %s[%i] : tensor<4xf32>
  return %u, %x, %y : tensor<4xf32>, f32, f32
}

// A loop result aliases its own init only (lcc's answer for scf.for, as
// cheap as one operand). The second result is the second init's buffer (the
// loop passes it on): writing it while that init is read later needs a copy,
// made at the loop. The first init is updated in place.
// CHECK-LABEL: func.func @loop_aliased
// CHECK: } {__inplace_operands_attr__ = ["none", "none", "none", "true", "false"]}
// CHECK: tensor.insert {{.*}} {__inplace_operands_attr__ = ["none", "true", "none"]}
func.func @loop_aliased(%s: tensor<4xf32>, %t: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, f32) {
  %c = arith.constant 3.0 : f32
  %i = arith.constant 0 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r:2 = scf.for %k = %c0 to %c4 step %c1 iter_args(%a = %s, %b = %t) -> (tensor<4xf32>, tensor<4xf32>) {
    %a2 = tensor.insert %c into %a[%i] : tensor<4xf32>
    scf.yield %a2, %b : tensor<4xf32>, tensor<4xf32>
  }
  %u = tensor.insert %c into %r#1[%i] : tensor<4xf32>
  %x = tensor.extract %t[%i] : tensor<4xf32>
  return %r#0, %u, %x : tensor<4xf32>, tensor<4xf32>, f32
}
