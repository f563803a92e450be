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

// Layer functions are leaves: one calling another is not planned.
func.func private @inner(%x: memref<4xf32>) attributes {lcc.layer = "h.*"} {
  return
}
func.func private @outer(%x: memref<4xf32>) attributes {lcc.layer = "h.*"} {
  // expected-error @+1 {{lcc-plan-memory: layer function @outer calls layer function @inner; layer functions are planned as leaves}}
  call @inner(%x) : (memref<4xf32>) -> ()
  return
}
