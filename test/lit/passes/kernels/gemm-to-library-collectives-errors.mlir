// RUN: lcc-opt %s --lcc-gemm-to-library=prefix=lcc_cuda_ -verify-diagnostics
// Tests passes/kernels/GemmToLibrary.cpp: retargeting the collectives for CUDA
// needs the runtime's entry points free.

// A module that already defines the CUDA entry point differently cannot be
// retargeted.
func.func private @lcc_wait(i64, i64, i64)
// expected-error @+1 {{lcc-gemm-to-library: @lcc_cuda_wait is defined with another signature; expected 3 i64 arguments and no result (runtime/cpu/CpuKernels.h)}}
func.func private @lcc_cuda_wait(i64, i64)
func.func @step(%p: i64) {
  %c0 = arith.constant 0 : i64
  call @lcc_wait(%c0, %p, %p) : (i64, i64, i64) -> ()
  return
}
