// RUN: lcc-opt %s --allow-unregistered-dialect --lcc-free-unplanned -verify-diagnostics
// Tests passes/buffer/FreeUnplanned.cpp.

// A heap buffer reaching an op whose memory effects are unknown cannot be
// freed safely: the deallocation pipeline's error fails the pass.
func.func @unknown(%out: memref<4xf32>) {
  %a = memref.alloc() : memref<4xf32>
  // expected-error @+1 {{ops with unknown memory side effects are not supported}}
  "test.opaque"(%a) : (memref<4xf32>) -> ()
  memref.copy %a, %out : memref<4xf32> to memref<4xf32>
  return
}
