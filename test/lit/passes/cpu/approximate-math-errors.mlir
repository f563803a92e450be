// RUN: lcc-opt %s --lcc-approximate-math=functions=exp,cos -verify-diagnostics
// Tests passes/cpu/ApproximateMath.cpp.

// A function without a tested polynomial is refused by name rather than
// silently left to libm.
// expected-error @+1 {{lcc-approximate-math: no polynomial for 'cos'; known: exp, expm1, tanh, erf, log, log1p, log2}}
module {
  func.func @f(%x: f32) -> f32 {
    %a = math.cos %x : f32
    return %a : f32
  }
}
