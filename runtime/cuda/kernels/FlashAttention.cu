//===- FlashAttention.cu - the fused attention kernels' entry points ------===//
//
// One extern "C" kernel per (operand type, head size, kernel), so the runtime
// finds them by name in the module it loads (runtime/cuda/CudaSession.cpp):
//   lcc_flash_{fwd,bwd_q,bwd_kv}_{bf16,f16}_d{16,32,64,128}
// Built with nvcc into a cubin for the GPU the runtime is built for (and
// compile-checked for sm_90 and sm_80 in CI, test/unit/cuda/CMakeLists.txt).
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/kernels/FlashAttention.cuh"

using lcc::flash::Params;

#define LCC_FLASH_KERNELS(T, NAME, D)                                                           \
  extern "C" __global__ void __launch_bounds__(lcc::flash::kThreads)                            \
      lcc_flash_fwd_##NAME##_d##D(Params p, const T *q, const T *k, const T *v, T *o) {        \
    extern __shared__ __align__(128) unsigned char smem[];                                      \
    lcc::flash::flashForward<T, D>(p, q, k, v, o, smem);                                        \
  }                                                                                             \
  extern "C" __global__ void __launch_bounds__(lcc::flash::kThreads)                            \
      lcc_flash_bwd_q_##NAME##_d##D(Params p, const T *q, const T *k, const T *v, const T *o,   \
                                    const T *dout, T *dq, float *lse, float *delta) {           \
    extern __shared__ __align__(128) unsigned char smem[];                                      \
    lcc::flash::flashBackwardQuery<T, D>(p, q, k, v, o, dout, dq, lse, delta, smem);            \
  }                                                                                             \
  extern "C" __global__ void __launch_bounds__(lcc::flash::kThreads)                            \
      lcc_flash_bwd_kv_##NAME##_d##D(Params p, const T *q, const T *k, const T *v,              \
                                     const T *dout, T *dk, T *dv, const float *lse,             \
                                     const float *delta) {                                      \
    extern __shared__ __align__(128) unsigned char smem[];                                      \
    lcc::flash::flashBackwardKeys<T, D>(p, q, k, v, dout, dk, dv, lse, delta, smem);            \
  }

#define LCC_FLASH_SIZES(T, NAME)                                                                \
  LCC_FLASH_KERNELS(T, NAME, 16)                                                                \
  LCC_FLASH_KERNELS(T, NAME, 32)                                                                \
  LCC_FLASH_KERNELS(T, NAME, 64)                                                                \
  LCC_FLASH_KERNELS(T, NAME, 128)

LCC_FLASH_SIZES(gx::bf16, bf16)
LCC_FLASH_SIZES(gx::f16, f16)
