// RUN: lcc-opt %s --lcc-loop-layer-calls=min-calls=1 -verify-diagnostics
// Tests passes/buffer/LoopLayerCalls.cpp: what it refuses. A loop of one
// call is no loop.

// expected-error @+1 {{lcc-loop-layer-calls: min-calls must be at least 2, got 1}}
module {
  func.func private @layer(%x: memref<4xf32>) attributes {lcc.layer = "h.*"} {
    return
  }
  func.func @f(%a: memref<4xf32>, %b: memref<4xf32>) {
    call @layer(%a) : (memref<4xf32>) -> ()
    call @layer(%b) : (memref<4xf32>) -> ()
    return
  }
}
