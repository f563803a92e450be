// RUN: lcc-opt %s --lcc-approximate-math | FileCheck %s
// RUN: lcc-opt %s --lcc-approximate-math=functions=tanh | FileCheck %s --check-prefix=TANH
// Tests passes/cpu/ApproximateMath.cpp.

// f32 exp, tanh, log and erf become arithmetic (no call left to lower to
// libm); f64 stays a math op for libm's accuracy.
// CHECK-LABEL: func.func @f(
// CHECK-NOT:     math.exp %{{.*}} : f32
// CHECK-NOT:     math.tanh %{{.*}} : f32
// CHECK-NOT:     math.log %{{.*}} : f32
// CHECK-NOT:     math.erf %{{.*}} : f32
// CHECK:         math.exp %{{.*}} : f64
// CHECK:         return
// Only the functions asked for are replaced.
// TANH-LABEL: func.func @f(
// TANH:         math.exp %{{.*}} : f32
// TANH-NOT:     math.tanh
// TANH:         math.log %{{.*}} : f32
func.func @f(%x: f32, %y: f64) -> (f32, f32, f32, f32, f64) {
  %a = math.exp %x : f32
  %b = math.tanh %x : f32
  %c = math.log %x : f32
  %d = math.erf %x : f32
  %e = math.exp %y : f64
  return %a, %b, %c, %d, %e : f32, f32, f32, f32, f64
}
