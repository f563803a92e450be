// RUN: lcc-opt %s -split-input-file --lcc-emulate-gpu-kernels -verify-diagnostics
// RUN: not lcc-opt %s -split-input-file --lcc-emulated-kernel-table 2>&1 | FileCheck %s --check-prefix=TABLE
// Tests passes/gpu/EmulateGpuKernels.cpp and EmulatedKernelTable.cpp: what the
// CPU emulator cannot run is an error at the kernel.

// Only f32 xor shuffles (what lcc's warp reductions use) are emulated.
module attributes {gpu.container_module} {
  gpu.module @lcc_kernels {
    gpu.func @k(%a: memref<32xi32>) kernel {
      %c0 = arith.constant 0 : index
      %v = memref.load %a[%c0] : memref<32xi32>
      %c1 = arith.constant 1 : i32
      %c32 = arith.constant 32 : i32
      // expected-error @+1 {{lcc-emulate-gpu-kernels: only f32 xor shuffles are emulated}}
      %s, %ok = gpu.shuffle down %v, %c1, %c32 : i32
      memref.store %s, %a[%c0] : memref<32xi32>
      gpu.return
    }
  }
}

// -----

// Private (per-thread) memory is not provided.
module attributes {gpu.container_module} {
  gpu.module @lcc_kernels {
    // expected-error @+1 {{lcc-emulate-gpu-kernels: kernel @k has private memory attributions, which the emulator does not provide}}
    gpu.func @k(%a: memref<4xf32>) private(%p: memref<4xf32, #gpu.address_space<private>>) kernel {
      gpu.return
    }
  }
}

// -----

// The table needs each listed kernel lowered from an emulated one.
// TABLE: error: lcc-emulated-kernel-table: kernel @missing is not an emulated kernel lowered to LLVM
module attributes {lcc.gpu_kernels = ["missing"]} {
}
