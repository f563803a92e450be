//===- FlashParams.h - what launching the fused attention takes -*- C++ -*-===//
//
// Shared by the kernels (FlashAttention.cuh) and the runtime that launches
// them (runtime/cuda/CudaSession.cpp): plain C++, no CUDA headers.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_CUDA_KERNELS_FLASHPARAMS_H
#define LCC_RUNTIME_CUDA_KERNELS_FLASHPARAMS_H

#ifndef GX_HD
#ifdef __CUDACC__
#define GX_HD __host__ __device__
#else
#define GX_HD
#endif
#endif

namespace lcc::flash {

/// The launch's scalars (passed by value as the kernels' first parameter).
struct Params {
  int b, h, hkv, tq, tk;
  int causal;
  float scale;
};

/// The head sizes FlashAttention.cu instantiates kernels for (what the
/// compiler accepts for --attention=fused on CUDA, and the runtime checks).
GX_HD constexpr bool hasKernelFor(long long headSize) {
  return headSize == 16 || headSize == 32 || headSize == 64 || headSize == 128;
}

constexpr int kThreads = 128;
constexpr int kRows = 64; // rows of a tile, query or key

/// Shared-memory regions start at multiples of 128 bytes (WMMA needs 32).
GX_HD constexpr unsigned long long region(unsigned long long elements, unsigned long long bytes) {
  return (elements * bytes + 127) / 128 * 128;
}
/// Dynamic shared memory of each kernel, in the order they carve it.
GX_HD constexpr unsigned long long forwardSmem(int d, int elemBytes) {
  return 3 * region(kRows * d, elemBytes) + region(4 * 16 * kRows, 4) +
         region(4 * 16 * kRows, elemBytes) + region(4 * 16 * d, 4);
}
GX_HD constexpr unsigned long long backwardQuerySmem(int d, int elemBytes) {
  return 4 * region(kRows * d, elemBytes) + 2 * region(4 * 16 * kRows, 4) +
         region(4 * 16 * kRows, elemBytes) + region(4 * 16 * d, 4);
}
GX_HD constexpr unsigned long long backwardKeysSmem(int d, int elemBytes) {
  return 4 * region(kRows * d, elemBytes) + 2 * region(kRows, 4) +
         2 * region(4 * 16 * kRows, 4) + 2 * region(4 * 16 * kRows, elemBytes) +
         2 * region(4 * 16 * d, 4);
}

} // namespace lcc::flash

#endif
