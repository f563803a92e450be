// RUN: lcc-opt %s --lcc-split-reductions -verify-diagnostics
// Tests passes/tensor/SplitReductions.cpp.

// After bufferization the partials would need buffers the memory plan does
// not know; the pass refuses rather than allocating behind its back.
func.func @f(%m: memref<300x128xf32>, %out: memref<f32>) {
  // expected-error @+1 {{lcc-split-reductions: runs before bufferization; this linalg.generic works on memrefs}}
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>],
                  iterator_types = ["reduction", "reduction"]}
      ins(%m : memref<300x128xf32>) outs(%out : memref<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  return
}
