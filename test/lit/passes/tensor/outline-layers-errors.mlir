// RUN: lcc-opt %s --split-input-file --lcc-outline-layers -verify-diagnostics
// RUN: not lcc-opt %s --split-input-file --lcc-outline-layers="function=forward min-repeats=1" 2>&1 | FileCheck %s --check-prefix=MIN
// MIN: error: lcc-outline-layers: min-repeats must be at least 2, got 1
// Tests passes/tensor/OutlineLayers.cpp: what it refuses.

// expected-error @+1 {{lcc-outline-layers: no @forward with a body}}
module {
  func.func private @forward(tensor<4xf32>) -> tensor<4xf32>
}

// -----

// expected-error @+1 {{lcc-outline-layers: @forward has control flow; layers are found in one straight-line block}}
func.func @forward(%x: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  cf.cond_br %c, ^a, ^b
^a:
  return %x : tensor<4xf32>
^b:
  return %x : tensor<4xf32>
}
