//===- Attention.h - fused attention kernels for the CPU target -*- C++ -*-===//
//
// What lcc.attention and lcc.attention_grad become when lcc-decompose keeps
// them whole (`lcc --attention=fused`): one call each, on contiguous
// row-major buffers, never materializing the [Tq, Tk] scores (the
// decomposition stores them, and P and dS besides, for every head: 400 MB
// per layer for GPT-2 at batch 8, context 1024).
//
//   lcc_attention_fwd(dtype, B, H, Hkv, Tq, Tk, D, causal, scale, q, k, v, o)
//   lcc_attention_bwd(dtype, B, H, Hkv, Tq, Tk, D, causal, scale,
//                     q, k, v, o, dO, dq, dk, dv)
//
// q, o, dO, dq: [B, H, Tq, D]; k, v, dk, dv: [B, Hkv, Tk, D]; query head h
// reads key/value head h / (H / Hkv). Every argument is an int64 (the
// lowering passes addresses as integers): `scale` is the bit pattern of an
// f64, `dtype` 0 f32, 1 f64, 2 bf16, 3 f16 (bf16/f16 compute in f32, as the
// GPU's tensor cores accumulate). With `causal`, query i sees keys
// j <= i + (Tk - Tq); a query that sees no key gets NaN, as the decomposed
// softmax of an all -inf row does (its dK and dV get nothing from it, where
// the decomposition would spread the NaN).
//
// Both work on blocks of 64 query rows, so the scores are only ever a
// 64 x Tk tile (in cache) and every product is a GEMM on the BLAS
// (gemmAccumulate, runtime/cpu/CpuKernels.h); a causal block stops at the last
// key its last row sees. Forward, per (batch, head, block): S = Q K^T, the
// scaled, masked softmax per row, O = P V. Backward, per key/value head (all
// its query heads and blocks, so dK and dV are accumulated by one thread:
// deterministic, no atomics), with P recomputed:
//   dP = dO V^T,  dS = P (dP - rowsum(P dP)) scale,
//   dQ = dS K,  dK += dS^T Q,  dV += P^T dO.
// Both split their loop over the runtime's thread pool in fixed parts.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_ATTENTION_H
#define LCC_RUNTIME_ATTENTION_H

#include <cstdint>

extern "C" {
void lcc_attention_fwd(int64_t dtype, int64_t b, int64_t h, int64_t hkv, int64_t tq, int64_t tk,
                       int64_t d, int64_t causal, int64_t scaleBits, int64_t q, int64_t k,
                       int64_t v, int64_t o);
void lcc_attention_bwd(int64_t dtype, int64_t b, int64_t h, int64_t hkv, int64_t tq, int64_t tk,
                       int64_t d, int64_t causal, int64_t scaleBits, int64_t q, int64_t k,
                       int64_t v, int64_t o, int64_t dout, int64_t dq, int64_t dk, int64_t dv);
}

#endif
