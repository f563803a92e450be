//===- FlashAttention.cuh - fused attention on tensor cores ---------------===//
//
// The CUDA side of lcc.attention / lcc.attention_grad kept whole
// (--attention=fused), with runtime/cpu/Attention.h's semantics: q, o, dO, dq
// [B, H, Tq, D]; k, v, dk, dv [B, Hkv, Tk, D]; query head h reads key/value
// head h / (H / Hkv); causal query i sees keys j <= i + (Tk - Tq); a query
// that sees no key gets NaN. bf16 or f16 operands, f32 softmax statistics and
// accumulators (FlashAttention-2's scheme, written for WMMA 16x16x16 tiles).
// Written against GxDevice.cuh, so that test/unit/cuda runs the very same
// code on the CPU (GpuEmulator.h: real threads, real barriers).
//
// Every kernel: 128 threads (4 warps), tiles of 64 rows; the grid's x is the
// (batch, head) pair (x allows 2^31 - 1 blocks, y only 65535), its y the
// tile of rows; each warp owns 16 rows of the block's tile; in the softmax steps two neighbouring lanes
// share a row (32 columns each, combined with one shuffle).
//
//  - flashForward: block = 64 query rows of one (batch, head). Per tile of
//    64 keys: S = Q K^T (tensor cores, f32), scaled and masked; online
//    softmax (running max m and sum l per row, the running output O in
//    shared memory rescaled by exp(m_old - m_new)); O += P V with P rounded
//    to the operand type. O / l at the end. A causal block stops at the last
//    key its last row sees.
//  - flashBackwardQuery: block = 64 query rows. delta = rowsum(dO * O);
//    pass 1 over the keys gives lse = m + log l (stored, with delta, in the
//    runtime's scratch for the next kernel); pass 2 recomputes
//    P = exp(S - lse), dP = dO V^T, dS = P (dP - delta) scale and
//    accumulates dQ = dS K.
//  - flashBackwardKeys: block = 64 key rows of one (batch, kv head), over
//    every query head of its group and every query tile that sees them:
//    P^T = exp(K Q^T scale - lse), dV += P^T dO, dP^T = V dO^T,
//    dS^T = P^T (dP^T - delta) scale, dK += dS^T Q. One block owns each
//    dK/dV row and one each dQ row: no atomics, deterministic.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_CUDA_KERNELS_FLASHATTENTION_CUH
#define LCC_RUNTIME_CUDA_KERNELS_FLASHATTENTION_CUH

#ifndef LCC_GX_DEFINED
#include "runtime/cuda/kernels/GxDevice.cuh"
#endif
#include "runtime/cuda/kernels/FlashParams.h"

namespace lcc::flash {

struct Carve {
  unsigned char *base;
  unsigned long long used = 0;
  template <typename E> GX_FN E *take(unsigned long long n) {
    E *p = reinterpret_cast<E *>(base + used);
    used += region(n, sizeof(E));
    return p;
  }
};

GX_FN int imin(int a, int b) { return a < b ? a : b; }
GX_FN int imax(int a, int b) { return a > b ? a : b; }
GX_FN float fmax2(float a, float b) { return a > b ? a : b; }
GX_FN float negInf() { return -__builtin_huge_valf(); }

/// Whether query i sees key j.
GX_FN bool visible(const Params &p, int i, int j) {
  return j < p.tk && (!p.causal || j <= i + p.tk - p.tq);
}

/// rows x D of a [T, D] matrix from row r0 into shared memory, zero past `limit`.
template <typename T, int D>
GX_FN void loadTile(T *dst, const T *src, int r0, int limit) {
  for (int e = gx::threadId(); e < kRows * D; e += kThreads) {
    int r = r0 + e / D;
    dst[e] = r < limit ? src[(long long)r * D + e % D] : gx::fromFloat<T>(0.0f);
  }
}

/// out[16 x 64] (f32, row stride 64) = a[16 x D] b^T where b is 64 x D
/// (both row-major with stride D): every 16 x 16 block on the tensor cores.
template <typename T, int D>
GX_FN void productTransposed(float *out, const T *a, const T *b) {
  for (int n = 0; n < kRows / 16; ++n) {
    gx::FragC acc;
    gx::zero(acc);
    for (int kk = 0; kk < D / 16; ++kk) {
      gx::FragA<T> fa;
      gx::FragBCol<T> fb;
      gx::load(fa, a + kk * 16, D);
      gx::load(fb, b + n * 16 * D + kk * 16, D);
      gx::mma(acc, fa, fb, acc);
    }
    gx::storeAcc(out + n * 16, acc, kRows);
  }
}

/// acc[16 x D] (f32, stride D) += a[16 x 64] (stride 64) b[64 x D] (stride D).
template <typename T, int D>
GX_FN void accumulateProduct(float *acc, const T *a, const T *b) {
  for (int dn = 0; dn < D / 16; ++dn) {
    gx::FragC c;
    gx::loadAcc(c, acc + dn * 16, D);
    for (int kk = 0; kk < kRows / 16; ++kk) {
      gx::FragA<T> fa;
      gx::FragBRow<T> fb;
      gx::load(fa, a + kk * 16, kRows);
      gx::load(fb, b + kk * 16 * D + dn * 16, D);
      gx::mma(c, fa, fb, c);
    }
    gx::storeAcc(acc + dn * 16, c, D);
  }
}

template <typename T, int D>
GX_FN void flashForward(const Params &p, const T *q, const T *k, const T *v, T *o,
                        unsigned char *smem) {
  const int tid = gx::threadId(), warp = tid / 32, lane = tid % 32;
  const int bh = gx::blockX(), batch = bh / p.h, kvHead = bh % p.h / (p.h / p.hkv);
  const int i0 = gx::blockY() * kRows;
  const long long kvOffset = (long long)(batch * p.hkv + kvHead) * p.tk * D;
  const T *qg = q + (long long)bh * p.tq * D;
  T *og = o + (long long)bh * p.tq * D;

  Carve c{smem};
  T *qs = c.take<T>(kRows * D), *ks = c.take<T>(kRows * D), *vs = c.take<T>(kRows * D);
  float *sw = c.take<float>(4 * 16 * kRows) + warp * 16 * kRows;
  T *pw = c.take<T>(4 * 16 * kRows) + warp * 16 * kRows;
  float *ow = c.take<float>(4 * 16 * D) + warp * 16 * D;

  loadTile<T, D>(qs, qg, i0, p.tq);
  for (int e = lane; e < 16 * D; e += 32)
    ow[e] = 0.0f;
  const int row = lane / 2, half = lane % 2, i = i0 + warp * 16 + row;
  float m = negInf(), l = 0.0f;
  const int lastRow = imin(i0 + kRows, p.tq) - 1;
  const int keys = p.causal ? imin(p.tk, lastRow + p.tk - p.tq + 1) : p.tk;
  gx::syncThreads();
  for (int j0 = 0; j0 < keys; j0 += kRows) {
    loadTile<T, D>(ks, k + kvOffset, j0, p.tk);
    loadTile<T, D>(vs, v + kvOffset, j0, p.tk);
    gx::syncThreads();
    productTransposed<T, D>(sw, qs + warp * 16 * D, ks);
    gx::syncWarp();
    float *srow = sw + row * kRows;
    float rowMax = negInf();
    for (int cc = half * 32; cc < half * 32 + 32; ++cc) {
      float s = visible(p, i, j0 + cc) ? srow[cc] * p.scale : negInf();
      srow[cc] = s;
      rowMax = fmax2(rowMax, s);
    }
    rowMax = fmax2(rowMax, gx::shflXor(rowMax, 1));
    const float mNew = fmax2(m, rowMax);
    float sum = 0.0f;
    for (int cc = half * 32; cc < half * 32 + 32; ++cc) {
      float e = gx::exp(srow[cc] - mNew);
      pw[row * kRows + cc] = gx::fromFloat<T>(e);
      sum += e;
    }
    sum += gx::shflXor(sum, 1);
    const float alpha = gx::exp(m - mNew);
    l = l * alpha + sum;
    m = mNew;
    for (int d = half * (D / 2); d < (half + 1) * (D / 2); ++d)
      ow[row * D + d] *= alpha;
    gx::syncWarp();
    accumulateProduct<T, D>(ow, pw, vs);
    gx::syncThreads(); // the next tile overwrites ks and vs; ow is complete
  }
  if (i < p.tq)
    for (int d = half * (D / 2); d < (half + 1) * (D / 2); ++d)
      og[(long long)i * D + d] = gx::fromFloat<T>(ow[row * D + d] / l);
}

template <typename T, int D>
GX_FN void flashBackwardQuery(const Params &p, const T *q, const T *k, const T *v, const T *o,
                              const T *dout, T *dq, float *lse, float *delta,
                              unsigned char *smem) {
  const int tid = gx::threadId(), warp = tid / 32, lane = tid % 32;
  const int bh = gx::blockX(), batch = bh / p.h, kvHead = bh % p.h / (p.h / p.hkv);
  const int i0 = gx::blockY() * kRows;
  const long long kvOffset = (long long)(batch * p.hkv + kvHead) * p.tk * D;
  const long long rowsOffset = (long long)bh * p.tq * D;

  Carve c{smem};
  T *qs = c.take<T>(kRows * D), *dos = c.take<T>(kRows * D);
  T *ks = c.take<T>(kRows * D), *vs = c.take<T>(kRows * D);
  float *sw = c.take<float>(4 * 16 * kRows) + warp * 16 * kRows;
  float *dpw = c.take<float>(4 * 16 * kRows) + warp * 16 * kRows;
  T *dsw = c.take<T>(4 * 16 * kRows) + warp * 16 * kRows;
  float *dqw = c.take<float>(4 * 16 * D) + warp * 16 * D;

  loadTile<T, D>(qs, q + rowsOffset, i0, p.tq);
  loadTile<T, D>(dos, dout + rowsOffset, i0, p.tq);
  for (int e = lane; e < 16 * D; e += 32)
    dqw[e] = 0.0f;
  const int row = lane / 2, half = lane % 2, i = i0 + warp * 16 + row;
  float dlt = 0.0f;
  if (i < p.tq)
    for (int d = half * (D / 2); d < (half + 1) * (D / 2); ++d)
      dlt += gx::toFloat(dout[rowsOffset + (long long)i * D + d]) *
             gx::toFloat(o[rowsOffset + (long long)i * D + d]);
  dlt += gx::shflXor(dlt, 1);
  const int lastRow = imin(i0 + kRows, p.tq) - 1;
  const int keys = p.causal ? imin(p.tk, lastRow + p.tk - p.tq + 1) : p.tk;
  gx::syncThreads();

  // Pass 1: each row's log-sum-exp.
  float m = negInf(), l = 0.0f;
  for (int j0 = 0; j0 < keys; j0 += kRows) {
    loadTile<T, D>(ks, k + kvOffset, j0, p.tk);
    gx::syncThreads();
    productTransposed<T, D>(sw, qs + warp * 16 * D, ks);
    gx::syncWarp();
    const float *srow = sw + row * kRows;
    float rowMax = negInf();
    for (int cc = half * 32; cc < half * 32 + 32; ++cc)
      rowMax = fmax2(rowMax, visible(p, i, j0 + cc) ? srow[cc] * p.scale : negInf());
    rowMax = fmax2(rowMax, gx::shflXor(rowMax, 1));
    const float mNew = fmax2(m, rowMax);
    float sum = 0.0f;
    for (int cc = half * 32; cc < half * 32 + 32; ++cc)
      sum += visible(p, i, j0 + cc) ? gx::exp(srow[cc] * p.scale - mNew) : 0.0f;
    sum += gx::shflXor(sum, 1);
    l = l * gx::exp(m - mNew) + sum;
    m = mNew;
    gx::syncThreads();
  }
  // A query that sees no key: -inf, or NaN when other rows of its block see
  // keys (its running max stays -inf, and exp(-inf - -inf) is NaN); both
  // fail the `> negInf()` tests below.
  const float rowLse = m + gx::log(l);
  if (i < p.tq && half == 0) {
    lse[(long long)bh * p.tq + i] = rowLse;
    delta[(long long)bh * p.tq + i] = dlt;
  }

  // Pass 2: dQ = dS K with the probabilities recomputed.
  for (int j0 = 0; j0 < keys; j0 += kRows) {
    loadTile<T, D>(ks, k + kvOffset, j0, p.tk);
    loadTile<T, D>(vs, v + kvOffset, j0, p.tk);
    gx::syncThreads();
    productTransposed<T, D>(sw, qs + warp * 16 * D, ks);
    productTransposed<T, D>(dpw, dos + warp * 16 * D, vs);
    gx::syncWarp();
    for (int cc = half * 32; cc < half * 32 + 32; ++cc) {
      int e = row * kRows + cc;
      // A dead row's lse is -inf: its P is garbage, its dQ NaN below.
      float pr = visible(p, i, j0 + cc) ? gx::exp(sw[e] * p.scale - rowLse) : 0.0f;
      float ds = rowLse > negInf() ? pr * (dpw[e] - dlt) * p.scale : 0.0f;
      dsw[e] = gx::fromFloat<T>(ds);
    }
    gx::syncWarp();
    accumulateProduct<T, D>(dqw, dsw, ks);
    gx::syncThreads();
  }
  // A query that sees no key (also when its whole block sees none) gets NaN.
  const bool dead = !(rowLse > negInf()); // false for NaN too
  if (i < p.tq)
    for (int d = half * (D / 2); d < (half + 1) * (D / 2); ++d)
      dq[rowsOffset + (long long)i * D + d] =
          gx::fromFloat<T>(dead ? __builtin_nanf("") : dqw[row * D + d]);
}

template <typename T, int D>
GX_FN void flashBackwardKeys(const Params &p, const T *q, const T *k, const T *v,
                             const T *dout, T *dk, T *dv, const float *lse,
                             const float *delta, unsigned char *smem) {
  const int tid = gx::threadId(), warp = tid / 32, lane = tid % 32;
  const int bkv = gx::blockX(), batch = bkv / p.hkv, kvHead = bkv % p.hkv;
  const int groups = p.h / p.hkv;
  const int j0 = gx::blockY() * kRows;
  const long long kvOffset = (long long)bkv * p.tk * D;

  Carve c{smem};
  T *ks = c.take<T>(kRows * D), *vs = c.take<T>(kRows * D);
  T *qs = c.take<T>(kRows * D), *dos = c.take<T>(kRows * D);
  float *lses = c.take<float>(kRows), *deltas = c.take<float>(kRows);
  float *stw = c.take<float>(4 * 16 * kRows) + warp * 16 * kRows;
  float *dptw = c.take<float>(4 * 16 * kRows) + warp * 16 * kRows;
  T *ptw = c.take<T>(4 * 16 * kRows) + warp * 16 * kRows;
  T *dstw = c.take<T>(4 * 16 * kRows) + warp * 16 * kRows;
  float *dkw = c.take<float>(4 * 16 * D) + warp * 16 * D;
  float *dvw = c.take<float>(4 * 16 * D) + warp * 16 * D;

  loadTile<T, D>(ks, k + kvOffset, j0, p.tk);
  loadTile<T, D>(vs, v + kvOffset, j0, p.tk);
  for (int e = lane; e < 16 * D; e += 32)
    dkw[e] = dvw[e] = 0.0f;
  const int row = lane / 2, half = lane % 2, j = j0 + warp * 16 + row;
  // The first query tile that sees any of this block's keys.
  const int firstQuery = p.causal ? imax(0, j0 - (p.tk - p.tq)) : 0;
  for (int head = kvHead * groups; head < (kvHead + 1) * groups; ++head) {
    const int bh = batch * p.h + head;
    const long long rowsOffset = (long long)bh * p.tq * D;
    for (int i0 = firstQuery / kRows * kRows; i0 < p.tq; i0 += kRows) {
      gx::syncThreads(); // the previous tile's readers are done
      loadTile<T, D>(qs, q + rowsOffset, i0, p.tq);
      loadTile<T, D>(dos, dout + rowsOffset, i0, p.tq);
      for (int r = tid; r < kRows; r += kThreads) {
        bool in = i0 + r < p.tq;
        lses[r] = in ? lse[(long long)bh * p.tq + i0 + r] : 0.0f;
        deltas[r] = in ? delta[(long long)bh * p.tq + i0 + r] : 0.0f;
      }
      gx::syncThreads();
      productTransposed<T, D>(stw, ks + warp * 16 * D, qs);
      productTransposed<T, D>(dptw, vs + warp * 16 * D, dos);
      gx::syncWarp();
      for (int cc = half * 32; cc < half * 32 + 32; ++cc) {
        int e = row * kRows + cc, iq = i0 + cc;
        // A query that sees no key (lse -inf) contributes nothing.
        bool live = iq < p.tq && visible(p, iq, j) && lses[cc] > negInf();
        float pr = live ? gx::exp(stw[e] * p.scale - lses[cc]) : 0.0f;
        ptw[e] = gx::fromFloat<T>(pr);
        dstw[e] = gx::fromFloat<T>(live ? pr * (dptw[e] - deltas[cc]) * p.scale : 0.0f);
      }
      gx::syncWarp();
      accumulateProduct<T, D>(dvw, ptw, dos);
      accumulateProduct<T, D>(dkw, dstw, qs);
    }
  }
  gx::syncThreads();
  if (j < p.tk)
    for (int d = half * (D / 2); d < (half + 1) * (D / 2); ++d) {
      dk[kvOffset + (long long)j * D + d] = gx::fromFloat<T>(dkw[row * D + d]);
      dv[kvOffset + (long long)j * D + d] = gx::fromFloat<T>(dvw[row * D + d]);
    }
}

} // namespace lcc::flash

#endif
