// RUN: lcc-opt %s --lcc-plan-memory -split-input-file -verify-diagnostics
// Tests passes/buffer/PlanMemory.cpp.

// Liveness by position needs one straight-line block.
// expected-error @+1 {{lcc-plan-memory: @branchy has control flow; plans need one straight-line block}}
func.func @branchy(%c: i1) {
  cf.cond_br %c, ^a, ^b
^a:
  return
^b:
  return
}

// -----

// A layer function's temporaries are placed by its callers' plans, which
// are made for public functions only.
func.func private @leaf(%x: memref<4xf32>) attributes {lcc.layer = "h.*"} {
  %t = memref.alloc() : memref<4xf32>
  memref.copy %x, %t : memref<4xf32> to memref<4xf32>
  return
}
func.func private @helper(%x: memref<4xf32>) {
  // expected-error @+1 {{lcc-plan-memory: this call of layer function @leaf is not in the straight-line body of a public function (or its micro-batch loop), so its temporaries have no place}}
  call @leaf(%x) : (memref<4xf32>) -> ()
  return
}

// -----

// A layer function calling itself, through another: its temporaries would
// have no bound, so it is not planned.
// expected-error @+1 {{lcc-plan-memory: layer function @ping calls itself, directly or through others}}
func.func private @ping(%x: memref<4xf32>) attributes {lcc.layer = "h.*"} {
  call @pong(%x) : (memref<4xf32>) -> ()
  return
}
func.func private @pong(%x: memref<4xf32>) attributes {lcc.layer = "h.*"} {
  call @ping(%x) : (memref<4xf32>) -> ()
  return
}
