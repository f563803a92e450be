//===- Attention.cpp - fused attention kernels for the CPU target ---------===//
//
// See Attention.h for the ABI and the algorithm.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/Attention.h"

#include "runtime/cpu/CpuKernels.h"
#include "runtime/cpu/Parallel.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

namespace {

/// Storage formats: how an element is read into the compute type and written back.
struct F32 {
  using Elem = float;
  using Acc = float;
  static Acc load(Elem x) { return x; }
  static Elem store(Acc x) { return x; }
};
struct F64 {
  using Elem = double;
  using Acc = double;
  static Acc load(Elem x) { return x; }
  static Elem store(Acc x) { return x; }
};
struct Bf16 {
  using Elem = uint16_t;
  using Acc = float;
  static Acc load(Elem x) { return lcc::widenBfloat16(x); }
  static Elem store(Acc x) { return lcc::roundToBfloat16(x); }
};
struct F16 {
  using Elem = uint16_t;
  using Acc = float;
  static Acc load(Elem x) { return lcc::widenHalf(x); }
  static Elem store(Acc x) { return lcc::roundToHalf(x); }
};

struct Shape {
  int64_t b, h, hkv, tq, tk, d;
  bool causal;
  double scale;
  int64_t groups() const { return h / hkv; }
  /// The last key query row i sees (-1: none).
  int64_t lastKey(int64_t i) const { return causal ? std::min(tk - 1, i + tk - tq) : tk - 1; }
  int64_t blocks() const { return (tq + kBlock - 1) / kBlock; }
  /// Query rows per block: S, P and dP of a block are kBlock x Tk, in cache.
  static constexpr int64_t kBlock = 64;
};

/// e^x for x <= 0 (a softmax's shifted scores). f32: 2^n e^r with
/// n = round(x / ln 2) and a degree-6 polynomial on |r| <= ln 2 / 2 (within
/// 2 ulp of expf, and the loop over a row vectorizes, which a libm call
/// does not); x below -87 gives 0, as expf's result would be subnormal.
/// f64: std::exp.
inline float expOf(float x) {
  x = x < -87.0f ? -87.0f : x;
  float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f; // round to nearest
  float r = x - n * 0.693145751953125f;
  r -= n * 1.42860682030941723212e-6f;
  float p = 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  int32_t bits = (int32_t(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, 4);
  return x <= -87.0f ? 0.0f : p * scale;
}
inline double expOf(double x) { return std::exp(x); }

/// `n` elements at `x` in the compute type: `x` itself when it is stored so,
/// else converted into `buf`.
template <typename F>
const typename F::Acc *widened(const typename F::Elem *x, int64_t n,
                               std::vector<typename F::Acc> &buf) {
  if constexpr (std::is_same_v<typename F::Elem, typename F::Acc>) {
    return x;
  } else {
    buf.resize(n);
    for (int64_t i = 0; i < n; ++i)
      buf[i] = F::load(x[i]);
    return buf.data();
  }
}

/// Per-thread scratch of one block: its scores/probabilities (p), their
/// gradients (dp), its output or dQ (out), and widened tiles.
template <typename F> struct Scratch {
  using A = typename F::Acc;
  std::vector<A> p, dp, out, q, dout, k, v;
};

/// The probabilities of query rows [i0, i0 + rows) against keys [0, len):
/// S = Q K^T (one GEMM), then per row the scaled, masked softmax in place.
/// Rows that see no key are all zero and reported in `dead`.
template <typename F>
void probabilities(const Shape &s, int64_t i0, int64_t rows, int64_t len,
                   const typename F::Acc *q, const typename F::Acc *k,
                   std::vector<typename F::Acc> &p, std::vector<bool> &dead) {
  using A = typename F::Acc;
  p.resize(size_t(rows * len));
  lcc::gemmAccumulate(rows, len, s.d, q, s.d, 1, k, 1, s.d, p.data(), len, 1, /*overwrite=*/true);
  dead.assign(rows, false);
  for (int64_t r = 0; r < rows; ++r) {
    A *row = &p[r * len];
    int64_t last = s.lastKey(i0 + r);
    if (last < 0) {
      dead[r] = true;
      std::fill(row, row + len, A(0));
      continue;
    }
    A max = -std::numeric_limits<A>::infinity();
    for (int64_t j = 0; j <= last; ++j)
      max = std::max(max, row[j] *= A(s.scale));
    A sum = 0;
    for (int64_t j = 0; j <= last; ++j)
      sum += row[j] = expOf(row[j] - max);
    A inverse = A(1) / sum;
    for (int64_t j = 0; j <= last; ++j)
      row[j] *= inverse;
    std::fill(row + last + 1, row + len, A(0));
  }
}

template <typename F> struct FwdArgs {
  Shape s;
  const typename F::Elem *q, *k, *v;
  typename F::Elem *o;
};

/// Query blocks [lo, hi) of the flattened [B, H, blocks].
template <typename F> void forwardBlocks(void *ctx, int64_t lo, int64_t hi) {
  using A = typename F::Acc;
  auto &a = *static_cast<FwdArgs<F> *>(ctx);
  const Shape &s = a.s;
  Scratch<F> t;
  std::vector<bool> dead;
  for (int64_t task = lo; task < hi; ++task) {
    int64_t blk = task % s.blocks(), bh = task / s.blocks();
    int64_t i0 = blk * Shape::kBlock, rows = std::min(Shape::kBlock, s.tq - i0);
    int64_t kvOffset = (bh / s.h * s.hkv + bh % s.h / s.groups()) * s.tk * s.d;
    int64_t len = s.lastKey(i0 + rows - 1) + 1; // keys any row of the block sees
    typename F::Elem *out = a.o + (bh * s.tq + i0) * s.d;
    if (len <= 0) {
      std::fill(out, out + rows * s.d, F::store(std::numeric_limits<A>::quiet_NaN()));
      continue;
    }
    const A *q = widened<F>(a.q + (bh * s.tq + i0) * s.d, rows * s.d, t.q);
    const A *k = widened<F>(a.k + kvOffset, len * s.d, t.k);
    const A *v = widened<F>(a.v + kvOffset, len * s.d, t.v);
    probabilities<F>(s, i0, rows, len, q, k, t.p, dead);
    t.out.resize(size_t(rows * s.d));
    lcc::gemmAccumulate(rows, s.d, len, t.p.data(), len, 1, v, s.d, 1, t.out.data(), s.d, 1,
                        /*overwrite=*/true);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < s.d; ++c)
        out[r * s.d + c] =
            F::store(dead[r] ? std::numeric_limits<A>::quiet_NaN() : t.out[r * s.d + c]);
  }
}

template <typename F> struct BwdArgs {
  Shape s;
  const typename F::Elem *q, *k, *v, *dout;
  typename F::Elem *dq, *dk, *dv;
};

/// Key/value heads [lo, hi) of the flattened [B, Hkv], each with all its
/// query heads, so each dk/dv row has one writer. Per query block, with P
/// recomputed: dP = dO V^T, dS = P (dP - rowsum(P dP)) scale, then
/// dQ = dS K, dK += dS^T Q, dV += P^T dO (GEMMs on the block).
template <typename F> void backwardHeads(void *ctx, int64_t lo, int64_t hi) {
  using A = typename F::Acc;
  auto &a = *static_cast<BwdArgs<F> *>(ctx);
  const Shape &s = a.s;
  Scratch<F> t;
  std::vector<A> dk, dv;
  std::vector<bool> dead;
  for (int64_t kvHead = lo; kvHead < hi; ++kvHead) {
    int64_t batch = kvHead / s.hkv, hk = kvHead % s.hkv;
    int64_t kvOffset = kvHead * s.tk * s.d;
    const A *k = widened<F>(a.k + kvOffset, s.tk * s.d, t.k);
    const A *v = widened<F>(a.v + kvOffset, s.tk * s.d, t.v);
    dk.assign(s.tk * s.d, A(0));
    dv.assign(s.tk * s.d, A(0));
    for (int64_t head = hk * s.groups(); head < (hk + 1) * s.groups(); ++head) {
      for (int64_t blk = 0; blk < s.blocks(); ++blk) {
        int64_t i0 = blk * Shape::kBlock, rows = std::min(Shape::kBlock, s.tq - i0);
        int64_t rowOffset = ((batch * s.h + head) * s.tq + i0) * s.d;
        typename F::Elem *dqOut = a.dq + rowOffset;
        int64_t len = s.lastKey(i0 + rows - 1) + 1;
        if (len <= 0) {
          // The forward gave NaN; so does the query's gradient.
          std::fill(dqOut, dqOut + rows * s.d, F::store(std::numeric_limits<A>::quiet_NaN()));
          continue;
        }
        const A *q = widened<F>(a.q + rowOffset, rows * s.d, t.q);
        const A *dout = widened<F>(a.dout + rowOffset, rows * s.d, t.dout);
        probabilities<F>(s, i0, rows, len, q, k, t.p, dead);
        t.dp.resize(size_t(rows * len));
        lcc::gemmAccumulate(rows, len, s.d, dout, s.d, 1, v, 1, s.d, t.dp.data(), len, 1,
                            /*overwrite=*/true);
        for (int64_t r = 0; r < rows; ++r) {
          A *p = &t.p[r * len], *ds = &t.dp[r * len];
          A rowDot = 0;
          for (int64_t j = 0; j < len; ++j)
            rowDot += p[j] * ds[j];
          for (int64_t j = 0; j < len; ++j)
            ds[j] = p[j] * (ds[j] - rowDot) * A(s.scale);
        }
        t.out.resize(size_t(rows * s.d)); // dQ of the block
        lcc::gemmAccumulate(rows, s.d, len, t.dp.data(), len, 1, k, s.d, 1, t.out.data(), s.d, 1,
                            /*overwrite=*/true);
        lcc::gemmAccumulate(len, s.d, rows, t.dp.data(), 1, len, q, s.d, 1, dk.data(), s.d, 1);
        lcc::gemmAccumulate(len, s.d, rows, t.p.data(), 1, len, dout, s.d, 1, dv.data(), s.d, 1);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < s.d; ++c)
            dqOut[r * s.d + c] =
                F::store(dead[r] ? std::numeric_limits<A>::quiet_NaN() : t.out[r * s.d + c]);
      }
    }
    for (int64_t e = 0; e < s.tk * s.d; ++e) {
      a.dk[kvOffset + e] = F::store(dk[e]);
      a.dv[kvOffset + e] = F::store(dv[e]);
    }
  }
}

Shape shapeOf(int64_t b, int64_t h, int64_t hkv, int64_t tq, int64_t tk, int64_t d,
              int64_t causal, int64_t scaleBits) {
  double scale;
  std::memcpy(&scale, &scaleBits, 8);
  return Shape{b, h, hkv, tq, tk, d, causal != 0, scale};
}

template <typename F> typename F::Elem *ptr(int64_t address) {
  return reinterpret_cast<typename F::Elem *>(address);
}

template <typename F>
void forward(const Shape &s, int64_t q, int64_t k, int64_t v, int64_t o) {
  FwdArgs<F> args{s, ptr<F>(q), ptr<F>(k), ptr<F>(v), ptr<F>(o)};
  lcc_parallel_for(&forwardBlocks<F>, &args, s.b * s.h * s.blocks());
}

template <typename F>
void backward(const Shape &s, int64_t q, int64_t k, int64_t v, int64_t dout, int64_t dq,
              int64_t dk, int64_t dv) {
  BwdArgs<F> args{s, ptr<F>(q), ptr<F>(k), ptr<F>(v), ptr<F>(dout),
                  ptr<F>(dq), ptr<F>(dk), ptr<F>(dv)};
  lcc_parallel_for(&backwardHeads<F>, &args, s.b * s.hkv);
}

} // namespace

extern "C" __attribute__((visibility("default"))) void
lcc_attention_fwd(int64_t dtype, int64_t b, int64_t h, int64_t hkv, int64_t tq, int64_t tk,
                  int64_t d, int64_t causal, int64_t scaleBits, int64_t q, int64_t k, int64_t v,
                  int64_t o) {
  Shape s = shapeOf(b, h, hkv, tq, tk, d, causal, scaleBits);
  switch (dtype) {
  case 0: return forward<F32>(s, q, k, v, o);
  case 1: return forward<F64>(s, q, k, v, o);
  case 2: return forward<Bf16>(s, q, k, v, o);
  default: return forward<F16>(s, q, k, v, o);
  }
}

extern "C" __attribute__((visibility("default"))) void
lcc_attention_bwd(int64_t dtype, int64_t b, int64_t h, int64_t hkv, int64_t tq, int64_t tk,
                  int64_t d, int64_t causal, int64_t scaleBits, int64_t q, int64_t k, int64_t v,
                  int64_t o, int64_t dout, int64_t dq, int64_t dk, int64_t dv) {
  (void)o; // for the GPU kernel's D = rowsum(dO * O); here D comes from P and dP
  Shape s = shapeOf(b, h, hkv, tq, tk, d, causal, scaleBits);
  switch (dtype) {
  case 0: return backward<F32>(s, q, k, v, dout, dq, dk, dv);
  case 1: return backward<F64>(s, q, k, v, dout, dq, dk, dv);
  case 2: return backward<Bf16>(s, q, k, v, dout, dq, dk, dv);
  default: return backward<F16>(s, q, k, v, dout, dq, dk, dv);
  }
}
