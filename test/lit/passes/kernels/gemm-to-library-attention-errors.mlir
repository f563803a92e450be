// RUN: lcc-opt %s --lcc-gemm-to-library=prefix=lcc_cuda_ -verify-diagnostics
// Tests passes/kernels/GemmToLibrary.cpp: a fused attention call the CUDA kernels
// cannot run is an error at its location.

// f32 operands have no CUDA kernel (the CPU target takes them).
func.func private @lcc_attention_fwd(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64)
func.func @f32(%p: i64) {
  %f32 = arith.constant 0 : i64
  %d = arith.constant 64 : i64
  %one = arith.constant 1 : i64
  // expected-error @+1 {{lcc-gemm-to-library: the lcc_cuda_ fused attention has kernels for bf16/f16 operands (--precision=bf16|fp16) and head sizes 16, 32, 64 and 128; this one has f32 operands and head size 64 (use --attention=decomposed)}}
  call @lcc_attention_fwd(%f32, %one, %one, %one, %one, %one, %d, %one, %one, %p, %p, %p, %p) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64) -> ()
  return
}
