// RUN: lcc-opt %s --split-input-file --lcc-gpu-kernels -verify-diagnostics
// RUN: not lcc-opt %s --split-input-file --lcc-gpu-kernels=block-size=48 2>&1 | FileCheck %s --check-prefix=BLOCK
// Tests passes/gpu/GpuKernels.cpp: what a CUDA kernel cannot take.

// BLOCK: lcc-gpu-kernels: block-size must be a multiple of 32 in [32, 1024], got 48
// RUN: not lcc-opt %s --split-input-file --lcc-gpu-kernels=lanes=3 2>&1 | FileCheck %s --check-prefix=LANES
// LANES: lcc-gpu-kernels: lanes must be 1, 2, 4 or 8, got 3

// A buffer with a run-time stride: kernels receive bare pointers and index
// with static strides (a run-time offset the host adds to the pointer).
#id = affine_map<(d0) -> (d0)>
// expected-error @+1 {{lcc-gpu-kernels: argument 0 of kernel @k has type 'memref<4xf32, strided<[?]>>'; CUDA kernels need static shapes and strides (they receive bare pointers)}}
func.func private @k(%a: memref<4xf32, strided<[?]>>) attributes {lcc.kernel} {
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%a : memref<4xf32, strided<[?]>>) {
  ^bb0(%x: f32):
    linalg.yield %x : f32
  }
  return
}

// -----

// A scalar from the host: launches pass buffers only.
#id = affine_map<(d0) -> (d0)>
// expected-error @+1 {{lcc-gpu-kernels: argument 1 of kernel @k is 'f32', not a memref; CUDA kernels take device buffers only}}
func.func private @k(%a: memref<4xf32>, %s: f32) attributes {lcc.kernel} {
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%a : memref<4xf32>) {
  ^bb0(%x: f32):
    %y = arith.mulf %x, %s : f32
    linalg.yield %y : f32
  }
  return
}

// -----

// A mutable global has no device copy.
memref.global "private" @state : memref<4xf32> = dense<0.0>
#id = affine_map<(d0) -> (d0)>
func.func private @k(%a: memref<4xf32>) attributes {lcc.kernel} {
  // expected-error @+1 {{lcc-gpu-kernels: kernel @k reads @state, which is not a constant global; only constants are copied to the device}}
  %g = memref.get_global @state : memref<4xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%g : memref<4xf32>) outs(%a : memref<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  }
  return
}

// -----

// Two loop nests in one kernel: lcc-outline-kernels makes one per kernel.
#id = affine_map<(d0) -> (d0)>
// expected-error @+1 {{lcc-gpu-kernels: kernel @k holds more than one loop nest}}
func.func private @k(%a: memref<4xf32>) attributes {lcc.kernel} {
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%a : memref<4xf32>) {
  ^bb0(%x: f32):
    linalg.yield %x : f32
  }
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%a : memref<4xf32>) {
  ^bb0(%x: f32):
    linalg.yield %x : f32
  }
  return
}
