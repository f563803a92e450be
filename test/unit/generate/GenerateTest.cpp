//===- GenerateTest.cpp - KV-cache decoding against the full forward ------===//
//
// Oracles:
//  - the full forward over the growing sequence: @prefill runs the model's
//    own causal attention over tokens 0..p and gives the logits at p; the
//    decode step, which reads the cache its earlier steps wrote, must give
//    the same logits (relative 1e-5) at every position of the context;
//  - greedy decoding both ways picks the same tokens;
//  - sampling: frequencies against softmax computed here in double.
//
// Weights are not @init's (std 0.02 makes nearly uniform logits, where a
// wrong cache row hardly shows) but uniform in [-0.3, 0.3).
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuProgram.h"
#include "runtime/train/Generator.h"
#include "runtime/train/Trainer.h"
#include "test/unit/common/StatusAssert.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace {

using lcc::test::isOk;

/// A loaded train.bin whose parameters are spread-out random values.
struct Model {
  lcc::Program program;
  lcc::Trainer trainer;
};

void load(const std::string &path, Model &m, uint64_t seed = 7) {
  ASSERT_TRUE(isOk(lcc::Program::load(path, m.program)));
  ASSERT_TRUE(isOk(lcc::Trainer::create(m.program, m.trainer)));
  std::map<std::string, lcc::HostTensor> values;
  std::mt19937_64 rng(seed);
  for (const lcc::Slot &s : m.program.entry("init")->slots) {
    lcc::HostTensor t(lcc::ElementType::F32, s.shape);
    for (int64_t i = 0; i < t.numElements(); ++i)
      t.data<float>()[i] = float((double(rng() >> 11) * 0x1.0p-53 - 0.5) * 0.6);
    values[s.name] = std::move(t);
  }
  ASSERT_TRUE(isOk(m.trainer.initFrom(values)));
}

int32_t argmax(const std::vector<float> &v) {
  return int32_t(std::max_element(v.begin(), v.end()) - v.begin());
}

double relativeError(const std::vector<float> &got, const std::vector<float> &want) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    err = std::max(err, std::fabs(double(got[i]) - double(want[i])));
    scale = std::max(scale, std::fabs(double(want[i])));
  }
  return err / scale;
}

/// Greedy decoding from `prompt` to the end of the context, each step's
/// logits compared with the prefill's over the sequence so far.
void checkAgainstFullForward(const std::string &path) {
  Model m;
  load(path, m);
  lcc::Generator cached, full;
  ASSERT_TRUE(isOk(cached.init(m.trainer)));
  ASSERT_TRUE(isOk(full.init(m.trainer)));
  std::vector<int32_t> seq = {3, 141, 59, 26, 200};
  std::vector<float> logits, want;
  ASSERT_TRUE(isOk(cached.prefill(seq, logits)));
  double worst = 0;
  while (int64_t(seq.size()) < cached.context()) {
    int32_t next = argmax(logits);
    ASSERT_TRUE(isOk(full.prefill(seq, want)));
    // Greedy both ways: the token the full forward picks.
    ASSERT_EQ(next, argmax(want)) << "at position " << seq.size();
    seq.push_back(next);
    ASSERT_TRUE(isOk(cached.decode(next, logits)));
    ASSERT_TRUE(isOk(full.prefill(seq, want)));
    double rel = relativeError(logits, want);
    worst = std::max(worst, rel);
    ASSERT_LE(rel, 1e-5) << "logits after position " << seq.size() - 1;
  }
  EXPECT_EQ(cached.length(), cached.context());
  // A full cache takes no more tokens.
  lcc::Status st = cached.decode(0, logits);
  EXPECT_FALSE(st.ok());
  std::printf("%s: %lld positions, worst relative difference %.2e\n", path.c_str(),
              static_cast<long long>(cached.context()), worst);
}

TEST(Generate, GptTinyDecodeMatchesFullForward) { checkAgainstFullForward(LCC_GEN_GPT_BIN); }
TEST(Generate, LlamaTinyDecodeMatchesFullForward) { checkAgainstFullForward(LCC_GEN_LLAMA_BIN); }

std::vector<int32_t> sample(lcc::Generator &g, uint64_t seed, int n) {
  lcc::SamplingOptions o{1.0, 0, 1.0};
  std::mt19937_64 rng(seed);
  std::vector<float> logits;
  std::vector<int32_t> out;
  if (!g.prefill({10, 20, 30}, logits).ok())
    return out;
  for (int i = 0; i < n; ++i) {
    out.push_back(lcc::sampleToken(logits, o, rng));
    if (!g.decode(out.back(), logits).ok())
      break;
  }
  return out;
}

TEST(Generate, SameSeedSameSample) {
  Model m;
  load(LCC_GEN_LLAMA_BIN, m);
  lcc::Generator g;
  ASSERT_TRUE(isOk(g.init(m.trainer)));
  std::vector<int32_t> a = sample(g, 42, 20), b = sample(g, 42, 20), c = sample(g, 43, 20);
  ASSERT_EQ(a.size(), 20u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(Generate, PromptLongerThanContextIsAnError) {
  Model m;
  load(LCC_GEN_GPT_BIN, m);
  lcc::Generator g;
  ASSERT_TRUE(isOk(g.init(m.trainer)));
  std::vector<float> logits;
  lcc::Status st = g.prefill(std::vector<int32_t>(size_t(g.context() + 1), 65), logits);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "the prompt has 65 tokens, more than the model's context of 64 (lcc "
                          "--context=N sets it)");
  st = g.prefill({}, logits);
  EXPECT_EQ(st.message(), "the prompt is empty");
  st = g.prefill({256}, logits);
  EXPECT_EQ(st.message(), "token 256 of the prompt is outside the vocabulary [0, 256)");
  // The longest prompt fills the cache: logits, then no decode step.
  ASSERT_TRUE(isOk(g.prefill(std::vector<int32_t>(size_t(g.context()), 65), logits)));
  EXPECT_FALSE(g.decode(65, logits).ok());
}

/// Softmax in double: the sampler's reference.
std::vector<double> softmax(const std::vector<float> &logits, double temperature) {
  double top = *std::max_element(logits.begin(), logits.end()) / temperature, sum = 0;
  std::vector<double> p;
  for (float l : logits)
    sum += p.emplace_back(std::exp(double(l) / temperature - top));
  for (double &x : p)
    x /= sum;
  return p;
}

std::vector<double> frequencies(const std::vector<float> &logits, const lcc::SamplingOptions &o,
                                int draws) {
  std::mt19937_64 rng(5);
  std::vector<double> f(logits.size(), 0.0);
  for (int i = 0; i < draws; ++i)
    f[size_t(lcc::sampleToken(logits, o, rng))] += 1.0 / draws;
  return f;
}

TEST(Sampling, FollowsSoftmaxTopKAndTopP) {
  const std::vector<float> logits = {1.0f, 3.0f, 0.5f, 2.5f, -1.0f, 2.0f};
  const int draws = 200000;
  // Temperature 0.7, no cuts: softmax(logits / 0.7). 4 standard deviations
  // of a frequency of 200,000 draws are below 0.0045.
  std::vector<double> p = softmax(logits, 0.7), f = frequencies(logits, {0.7, 0, 1.0}, draws);
  for (size_t i = 0; i < p.size(); ++i)
    EXPECT_NEAR(f[i], p[i], 0.0045) << "token " << i;
  // Top-k 3: tokens 1, 3, 5, renormalized.
  std::vector<double> k = frequencies(logits, {1.0, 3, 1.0}, draws);
  std::vector<double> all = softmax(logits, 1.0);
  double kept = all[1] + all[3] + all[5];
  for (size_t i = 0; i < p.size(); ++i)
    EXPECT_NEAR(k[i], (i == 1 || i == 3 || i == 5) ? all[i] / kept : 0.0, 0.0045) << i;
  // Top-p 0.6: token 1 (0.43 at temperature 1) is short of 0.6, tokens 1 and 3
  // (0.70) reach it.
  std::vector<double> n = frequencies(logits, {1.0, 0, 0.6}, draws);
  double two = all[1] + all[3];
  ASSERT_LT(all[1], 0.6);
  ASSERT_GE(two, 0.6);
  for (size_t i = 0; i < p.size(); ++i)
    EXPECT_NEAR(n[i], (i == 1 || i == 3) ? all[i] / two : 0.0, 0.0045) << i;
  // Temperature 0 and top-k 1 are the likeliest token; ties go to the lower id.
  std::mt19937_64 rng(1);
  EXPECT_EQ(lcc::sampleToken(logits, {0.0, 0, 1.0}, rng), 1);
  EXPECT_EQ(lcc::sampleToken(logits, {1.0, 1, 1.0}, rng), 1);
  EXPECT_EQ(lcc::sampleToken({2.0f, 5.0f, 5.0f}, {0.0, 0, 1.0}, rng), 1);
}

} // namespace
