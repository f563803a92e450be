//===- GxDevice.cuh - the GPU primitives lcc's CUDA C++ kernels use -------===//
//
// The hand-written kernels (FlashAttention.cuh) are written against this
// small layer instead of CUDA's names, so the same source also compiles as
// plain C++ against test/unit/cuda/GpuEmulator.h, which runs each block as
// real threads with real barriers on the CPU: the tests exercise the
// kernels' indexing, masking, synchronization and arithmetic without a GPU.
// This file is the CUDA side: tensor-core tiles through WMMA (16x16x16,
// bf16/f16 operands, f32 accumulators).
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_CUDA_KERNELS_GXDEVICE_CUH
#define LCC_RUNTIME_CUDA_KERNELS_GXDEVICE_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#define GX_FN __device__ __forceinline__
#define GX_HD __host__ __device__
#define LCC_GX_DEFINED 1

namespace gx {

using bf16 = __nv_bfloat16;
using f16 = __half;

GX_FN int threadId() { return int(threadIdx.x); }
GX_FN int blockX() { return int(blockIdx.x); }
GX_FN int blockY() { return int(blockIdx.y); }
GX_FN void syncThreads() { __syncthreads(); }
GX_FN void syncWarp() { __syncwarp(); }
GX_FN float shflXor(float v, int laneMask) { return __shfl_xor_sync(0xffffffffu, v, laneMask); }
GX_FN float exp(float x) { return expf(x); }
GX_FN float log(float x) { return logf(x); }

template <typename T> GX_FN float toFloat(T x);
template <> GX_FN float toFloat<bf16>(bf16 x) { return __bfloat162float(x); }
template <> GX_FN float toFloat<f16>(f16 x) { return __half2float(x); }
template <typename T> GX_FN T fromFloat(float x);
template <> GX_FN bf16 fromFloat<bf16>(float x) { return __float2bfloat16_rn(x); }
template <> GX_FN f16 fromFloat<f16>(float x) { return __float2half_rn(x); }

namespace w = nvcuda::wmma;
/// A 16x16 operand tile read row-major (A), B read row-major or column-major
/// (a transposed operand), and the f32 accumulator.
template <typename T> using FragA = w::fragment<w::matrix_a, 16, 16, 16, T, w::row_major>;
template <typename T> using FragBRow = w::fragment<w::matrix_b, 16, 16, 16, T, w::row_major>;
template <typename T> using FragBCol = w::fragment<w::matrix_b, 16, 16, 16, T, w::col_major>;
using FragC = w::fragment<w::accumulator, 16, 16, 16, float>;

template <typename Frag, typename T> GX_FN void load(Frag &f, const T *p, int ldm) {
  w::load_matrix_sync(f, p, unsigned(ldm));
}
GX_FN void loadAcc(FragC &f, const float *p, int ldm) {
  w::load_matrix_sync(f, p, unsigned(ldm), w::mem_row_major);
}
GX_FN void storeAcc(float *p, const FragC &f, int ldm) {
  w::store_matrix_sync(p, f, unsigned(ldm), w::mem_row_major);
}
GX_FN void zero(FragC &f) { w::fill_fragment(f, 0.0f); }
template <typename A, typename B> GX_FN void mma(FragC &d, const A &a, const B &b, const FragC &c) {
  w::mma_sync(d, a, b, c);
}

} // namespace gx

#endif
