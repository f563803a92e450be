//===- AttentionTest.cpp - the CPU's fused attention kernels --------------===//
//
// runtime/cpu/Attention.h against independent oracles: the forward against a
// plain fp64 implementation that materializes the scores (as the textbook
// formula reads), the backward against fp64 central finite differences of
// the forward itself (sum of dO * O), both with grouped-query heads, causal
// masks with Tq != Tk, and non-causal; f32 and bf16 against f64; and the
// results' independence of the thread count.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/Attention.h"
#include "runtime/cpu/Parallel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {

struct Dims {
  int64_t b, h, hkv, tq, tk, d;
  bool causal;
  int64_t qSize() const { return b * h * tq * d; }
  int64_t kSize() const { return b * hkv * tk * d; }
  double scale() const { return 1.0 / std::sqrt(double(d)); }
};

int64_t bits(double x) {
  int64_t r;
  std::memcpy(&r, &x, 8);
  return r;
}
int64_t addr(const void *p) { return reinterpret_cast<int64_t>(p); }

std::vector<double> randomVec(int64_t n, std::mt19937 &rng, double lo = -1, double hi = 1) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (double &x : v)
    x = dist(rng);
  return v;
}

/// softmax(q k^T scale, masked) v with the scores materialized, in fp64.
std::vector<double> reference(const Dims &s, const std::vector<double> &q,
                              const std::vector<double> &k, const std::vector<double> &v) {
  std::vector<double> o(s.qSize());
  int64_t g = s.h / s.hkv;
  for (int64_t b = 0; b < s.b; ++b)
    for (int64_t h = 0; h < s.h; ++h)
      for (int64_t i = 0; i < s.tq; ++i) {
        const double *qi = &q[((b * s.h + h) * s.tq + i) * s.d];
        const double *kh = &k[(b * s.hkv + h / g) * s.tk * s.d];
        const double *vh = &v[(b * s.hkv + h / g) * s.tk * s.d];
        std::vector<double> scores(s.tk);
        for (int64_t j = 0; j < s.tk; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < s.d; ++c)
            dot += qi[c] * kh[j * s.d + c];
          bool masked = s.causal && j > i + (s.tk - s.tq);
          scores[j] = masked ? -std::numeric_limits<double>::infinity() : dot * s.scale();
        }
        double max = *std::max_element(scores.begin(), scores.end()), sum = 0;
        for (double &x : scores)
          sum += (x = std::exp(x - max));
        double *oi = &o[((b * s.h + h) * s.tq + i) * s.d];
        for (int64_t c = 0; c < s.d; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < s.tk; ++j)
            acc += scores[j] / sum * vh[j * s.d + c];
          oi[c] = acc;
        }
      }
  return o;
}

std::vector<double> forward64(const Dims &s, const std::vector<double> &q,
                              const std::vector<double> &k, const std::vector<double> &v) {
  std::vector<double> o(s.qSize());
  lcc_attention_fwd(1, s.b, s.h, s.hkv, s.tq, s.tk, s.d, s.causal, bits(s.scale()), addr(q.data()),
                    addr(k.data()), addr(v.data()), addr(o.data()));
  return o;
}

/// The fused backward in f64 (the forward's output recomputed for it).
void backward64(const Dims &s, const std::vector<double> &q, const std::vector<double> &k,
                const std::vector<double> &v, const std::vector<double> &dout,
                std::vector<double> &dq, std::vector<double> &dk, std::vector<double> &dv) {
  std::vector<double> o = forward64(s, q, k, v);
  dq.assign(s.qSize(), 0);
  dk.assign(s.kSize(), 0);
  dv.assign(s.kSize(), 0);
  lcc_attention_bwd(1, s.b, s.h, s.hkv, s.tq, s.tk, s.d, s.causal, bits(s.scale()), addr(q.data()),
                    addr(k.data()), addr(v.data()), addr(o.data()), addr(dout.data()),
                    addr(dq.data()), addr(dk.data()), addr(dv.data()));
}

double maxAbsDiff(const std::vector<double> &a, const std::vector<double> &b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i)
    m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

const Dims kCases[] = {
    {2, 4, 2, 5, 7, 3, true},   // grouped heads, causal with more keys than queries
    {2, 4, 2, 5, 7, 3, false},  // the same, no mask
    {1, 3, 3, 6, 6, 8, true},   // one key/value head per query head, square
    {1, 2, 1, 4, 4, 16, false}, // multi-query
    // Several blocks of 64 query rows, the last one partial; a causal block
    // needs fewer keys than the next.
    {1, 2, 1, 150, 150, 4, true},
    {1, 2, 2, 70, 130, 4, true},
};

TEST(Attention, ForwardMatchesMaterializedScoresF64) {
  for (const Dims &s : kCases) {
    std::mt19937 rng(7);
    auto q = randomVec(s.qSize(), rng, -2, 2), k = randomVec(s.kSize(), rng, -2, 2),
         v = randomVec(s.kSize(), rng);
    EXPECT_LT(maxAbsDiff(forward64(s, q, k, v), reference(s, q, k, v)), 1e-13)
        << "H " << s.h << " Hkv " << s.hkv << " causal " << s.causal;
  }
}

TEST(Attention, ForwardF32AndBf16AgainstF64) {
  const Dims s = kCases[0];
  std::mt19937 rng(8);
  auto q = randomVec(s.qSize(), rng, -2, 2), k = randomVec(s.kSize(), rng, -2, 2),
       v = randomVec(s.kSize(), rng);
  // bf16 inputs first, so both sides see the same (representable) values.
  auto toBf16 = [](double x) {
    float f = float(x);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return uint16_t(u >> 16); // truncation: any bf16 value will do as input
  };
  auto fromBf16 = [](uint16_t h) {
    uint32_t u = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return double(f);
  };
  std::vector<uint16_t> qb, kb, vb;
  for (double &x : q)
    qb.push_back(toBf16(x)), x = fromBf16(qb.back());
  for (double &x : k)
    kb.push_back(toBf16(x)), x = fromBf16(kb.back());
  for (double &x : v)
    vb.push_back(toBf16(x)), x = fromBf16(vb.back());
  std::vector<double> want = reference(s, q, k, v);

  std::vector<float> qf(q.begin(), q.end()), kf(k.begin(), k.end()), vf(v.begin(), v.end()),
      of(s.qSize());
  lcc_attention_fwd(0, s.b, s.h, s.hkv, s.tq, s.tk, s.d, s.causal, bits(s.scale()),
                    addr(qf.data()), addr(kf.data()), addr(vf.data()), addr(of.data()));
  EXPECT_LT(maxAbsDiff(std::vector<double>(of.begin(), of.end()), want), 2e-6);

  std::vector<uint16_t> ob(s.qSize());
  lcc_attention_fwd(2, s.b, s.h, s.hkv, s.tq, s.tk, s.d, s.causal, bits(s.scale()),
                    addr(qb.data()), addr(kb.data()), addr(vb.data()), addr(ob.data()));
  std::vector<double> got;
  for (uint16_t h : ob)
    got.push_back(fromBf16(h));
  // Outputs are at most 1 in magnitude: one bf16 rounding is 2^-9.
  EXPECT_LT(maxAbsDiff(got, want), 1.0 / 512);
}

/// Gradients of L = sum(dO * O) by central differences of the forward.
TEST(Attention, BackwardMatchesFiniteDifferencesF64) {
  for (const Dims &s : kCases) {
    std::mt19937 rng(9);
    auto q = randomVec(s.qSize(), rng, -2, 2), k = randomVec(s.kSize(), rng, -2, 2),
         v = randomVec(s.kSize(), rng), dout = randomVec(s.qSize(), rng);
    std::vector<double> dq, dk, dv;
    backward64(s, q, k, v, dout, dq, dk, dv);
    auto loss = [&] {
      std::vector<double> out = forward64(s, q, k, v);
      double l = 0;
      for (size_t i = 0; i < out.size(); ++i)
        l += out[i] * dout[i];
      return l;
    };
    const double eps = 1e-5;
    for (auto [x, grad, name] : {std::tuple{&q, &dq, "dq"}, {&k, &dk, "dk"}, {&v, &dv, "dv"}}) {
      double worst = 0;
      for (size_t i = 0; i < x->size(); ++i) {
        double saved = (*x)[i];
        (*x)[i] = saved + eps;
        double up = loss();
        (*x)[i] = saved - eps;
        double down = loss();
        (*x)[i] = saved;
        worst = std::max(worst, std::abs((up - down) / (2 * eps) - (*grad)[i]));
      }
      EXPECT_LT(worst, 1e-8) << name << " H " << s.h << " Hkv " << s.hkv << " causal "
                             << s.causal;
    }
  }
}

TEST(Attention, BackwardF32AgainstF64AndThreadCountIndependent) {
  const Dims s = kCases[0];
  std::mt19937 rng(10);
  auto q = randomVec(s.qSize(), rng, -2, 2), k = randomVec(s.kSize(), rng, -2, 2),
       v = randomVec(s.kSize(), rng), dout = randomVec(s.qSize(), rng);
  std::vector<double> o = forward64(s, q, k, v), dq, dk, dv;
  backward64(s, q, k, v, dout, dq, dk, dv);
  auto f32 = [](const std::vector<double> &x) { return std::vector<float>(x.begin(), x.end()); };
  std::vector<float> qf = f32(q), kf = f32(k), vf = f32(v), of = f32(o), df = f32(dout);
  auto run = [&](int threads) {
    lcc::setNumThreads(threads);
    std::vector<float> g(s.qSize() + 2 * s.kSize());
    lcc_attention_bwd(0, s.b, s.h, s.hkv, s.tq, s.tk, s.d, s.causal, bits(s.scale()),
                      addr(qf.data()), addr(kf.data()), addr(vf.data()), addr(of.data()),
                      addr(df.data()), addr(g.data()), addr(g.data() + s.qSize()),
                      addr(g.data() + s.qSize() + s.kSize()));
    return g;
  };
  std::vector<float> one = run(1), two = run(2), three = run(3);
  lcc::setNumThreads(lcc::defaultNumThreads());
  EXPECT_EQ(one, two);
  EXPECT_EQ(one, three);
  std::vector<double> want(dq);
  want.insert(want.end(), dk.begin(), dk.end());
  want.insert(want.end(), dv.begin(), dv.end());
  EXPECT_LT(maxAbsDiff(std::vector<double>(one.begin(), one.end()), want), 1e-5);
}

// With a causal mask and more queries than keys, the first queries see no
// key: NaN, as the decomposed softmax of an all -inf row; the rest are finite.
TEST(Attention, QueryWithoutKeysIsNaN) {
  Dims s{1, 1, 1, 4, 2, 2, true};
  std::mt19937 rng(11);
  auto q = randomVec(s.qSize(), rng), k = randomVec(s.kSize(), rng), v = randomVec(s.kSize(), rng);
  std::vector<double> o = forward64(s, q, k, v);
  for (int64_t i = 0; i < s.tq; ++i)
    for (int64_t c = 0; c < s.d; ++c)
      EXPECT_EQ(std::isnan(o[i * s.d + c]), i < 2) << "query " << i;
}

} // namespace
