// RUN: lcc-opt %s --lcc-fuse -verify-diagnostics
// Tests passes/tensor/Fuse.cpp.

// Fusion runs on linalg; an lcc op left means lcc-lower-to-linalg did not run.
func.func @not_lowered(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{lcc-fuse: 'lcc.exp' is not lowered yet; run lcc-lower-to-linalg first}}
  %0 = lcc.exp %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
