// RUN: lcc-opt %s --lcc-outline-kernels -verify-diagnostics
// Tests passes/kernels/OutlineKernels.cpp.

// The kernel's name is taken: an error rather than a silently renamed symbol.
#id = affine_map<(d0) -> (d0)>
func.func @f(%a: memref<4xf32>) {
  // expected-error @+1 {{lcc-outline-kernels: cannot outline into @f_k0, a symbol of that name exists}}
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%a : memref<4xf32>) {
  ^bb0(%x: f32):
    linalg.yield %x : f32
  }
  return
}
func.func @f_k0() {
  return
}
