// RUN: lcc-opt %s --lcc-gemm-to-library=prefix=lcc_cuda_ | FileCheck %s
// RUN: lcc-opt %s --lcc-gemm-to-library | FileCheck %s --check-prefix=CPU
// Tests passes/kernels/GemmToLibrary.cpp: the fused attention's runtime calls
// (lcc.attention/attention_grad bufferized, lowering/Attention.cpp) go to the
// target's kernels; the CUDA ones take bf16/f16 (dtype 2, 3) and head sizes
// 16, 32, 64, 128 (argument 6).

// CHECK-NOT: func.func private @lcc_attention_fwd
// CHECK-DAG: func.func private @lcc_cuda_attention_fwd(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64)
// CHECK-DAG: func.func private @lcc_cuda_attention_bwd(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64)
// CHECK-LABEL: func.func @step
// CHECK: call @lcc_cuda_attention_fwd(
// CHECK: call @lcc_cuda_attention_bwd(
// The CPU keeps the calls as they are.
// CPU-LABEL: func.func @step
// CPU: call @lcc_attention_fwd(
// CPU: call @lcc_attention_bwd(
func.func private @lcc_attention_fwd(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64)
func.func private @lcc_attention_bwd(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64)
func.func @step(%p: i64) {
  %bf16 = arith.constant 2 : i64
  %d = arith.constant 64 : i64
  %one = arith.constant 1 : i64
  call @lcc_attention_fwd(%bf16, %one, %one, %one, %one, %one, %d, %one, %one, %p, %p, %p, %p) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64) -> ()
  call @lcc_attention_bwd(%bf16, %one, %one, %one, %one, %one, %d, %one, %one, %p, %p, %p, %p, %p, %p, %p, %p) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64) -> ()
  return
}

