// RUN: lcc-opt %s --lcc-gemm-to-library=prefix=lcc_cuda_ | FileCheck %s
// RUN: lcc-opt %s --lcc-gemm-to-library | FileCheck %s --check-prefix=CPU
// Tests passes/kernels/GemmToLibrary.cpp: on CUDA the collectives' runtime calls
// (lowering/Collectives.cpp) go to the GPU runtime's stream-ordered ones
// (runtime/cuda/CudaLaunch.h), blocking, started and waited alike;
// lcc_group_rank, a host query, stays; the CPU keeps every call.

// CHECK-NOT: @lcc_all_reduce(
// CHECK-NOT: @lcc_reduce_scatter_start(
// CHECK-NOT: @lcc_wait(
// CHECK-DAG: func.func private @lcc_cuda_all_reduce(i64, i64, i64, i64, i64, i64)
// CHECK-DAG: func.func private @lcc_cuda_reduce_scatter_start(i64, i64, i64, i64, i64, i64, i64)
// CHECK-DAG: func.func private @lcc_cuda_wait(i64, i64, i64)
// CHECK-DAG: func.func private @lcc_group_rank(i64) -> i64
// CHECK-LABEL: func.func @step
// CHECK: call @lcc_group_rank(
// CHECK: call @lcc_cuda_reduce_scatter_start(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[IN:.*]], %[[OUT:.*]], %
// CHECK: call @lcc_cuda_all_reduce(
// CHECK: call @lcc_cuda_wait(%{{.*}}, %[[IN]], %[[OUT]])
// CPU-LABEL: func.func @step
// CPU: call @lcc_group_rank(
// CPU: call @lcc_reduce_scatter_start(
// CPU: call @lcc_all_reduce(
// CPU: call @lcc_wait(
func.func private @lcc_all_reduce(i64, i64, i64, i64, i64, i64)
func.func private @lcc_reduce_scatter_start(i64, i64, i64, i64, i64, i64, i64)
func.func private @lcc_wait(i64, i64, i64)
func.func private @lcc_group_rank(i64) -> i64
func.func @step(%in: i64, %out: i64) {
  %c0 = arith.constant 0 : i64
  %c4 = arith.constant 4 : i64
  %r = call @lcc_group_rank(%c0) : (i64) -> i64
  call @lcc_reduce_scatter_start(%c0, %c0, %c0, %c0, %in, %out, %c4) : (i64, i64, i64, i64, i64, i64, i64) -> ()
  call @lcc_all_reduce(%c0, %c0, %c0, %r, %r, %c4) : (i64, i64, i64, i64, i64, i64) -> ()
  call @lcc_wait(%c0, %in, %out) : (i64, i64, i64) -> ()
  return
}
