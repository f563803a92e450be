// RUN: lcc-opt %s --lcc-clone-fills -verify-diagnostics
// Tests passes/buffer/CloneFills.cpp.

// After bufferization the shared buffer and its copies exist already; the
// pass refuses rather than doing nothing useful.
func.func @f(%m: memref<4xf32>) {
  %zero = arith.constant 0.0 : f32
  // expected-error @+1 {{lcc-clone-fills: runs before bufferization; this linalg.fill writes a memref}}
  linalg.fill ins(%zero : f32) outs(%m : memref<4xf32>)
  return
}
