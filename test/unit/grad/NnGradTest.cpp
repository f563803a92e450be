//===- NnGradTest.cpp - FD checks of the nn-op VJPs -----------------------===//
//
// fp64 finite-difference checks (GradCheck.h: 4-point stencil, h = 1e-3,
// err = |ad - fd| / max(|ad|, |fd|, 1e-3) <= 1e-6) of softmax, log_softmax,
// layer_norm, rms_norm, rope, causal_mask, cross_entropy and attention
// (grouped-query and causal included). Each test prints its max error as
// "[gradcheck] <name> max err <e>" so the achieved tolerance can be quoted.
//
//===----------------------------------------------------------------------===//
#include "GradCheck.h"

#include <cstdio>

using namespace lcc;
using namespace lcc::gradcheck;

namespace {

std::string f64(const std::vector<int64_t> &shape) {
  return HostTensor(ElementType::F64, shape).typeString();
}

/// runGradCheck + the printed max error + the gtest verdict.
::testing::AssertionResult check(const std::string &name, const std::string &args,
                                 const std::string &body, const std::string &outType,
                                 const GradCheckOptions &options = {}) {
  GradCheckReport r = runGradCheck(args, body, outType, options);
  std::printf("[gradcheck] %s max err %.3g\n", name.c_str(), r.maxErr);
  return toAssertion(r);
}

//===----------------------------------------------------------------------===//
// softmax, log_softmax
//===----------------------------------------------------------------------===//

TEST(NnGrad, SoftmaxEveryAxis) {
  std::string t = f64({2, 3, 4});
  for (int64_t axis : {-1, 0, 1}) {
    std::string body = "%out = lcc.softmax %x {axis = " + std::to_string(axis) + "} : " + t;
    EXPECT_TRUE(check("softmax axis " + std::to_string(axis), "%x: " + t, body, t));
  }
}

TEST(NnGrad, LogSoftmaxEveryAxis) {
  std::string t = f64({2, 3, 4});
  for (int64_t axis : {-1, 0, 1}) {
    std::string body = "%out = lcc.log_softmax %x {axis = " + std::to_string(axis) + "} : " + t;
    EXPECT_TRUE(check("log_softmax axis " + std::to_string(axis), "%x: " + t, body, t));
  }
}

TEST(NnGrad, SoftmaxOfLargeLogitsStaysFinite) {
  // Logits around 500: exp would overflow without the max subtraction; the
  // VJP goes through the op's result and must be as accurate as elsewhere.
  std::string t = f64({3, 5});
  GradCheckOptions o;
  o.lo = 498.0;
  o.hi = 502.0;
  EXPECT_TRUE(check("softmax large logits", "%x: " + t,
                    "%out = lcc.softmax %x : " + t, t, o));
  EXPECT_TRUE(check("log_softmax large logits", "%x: " + t,
                    "%out = lcc.log_softmax %x : " + t, t, o));
}

//===----------------------------------------------------------------------===//
// layer_norm, rms_norm
//===----------------------------------------------------------------------===//

TEST(NnGrad, LayerNorm) {
  for (auto shape : {std::vector<int64_t>{2, 3, 5}, {7}, {4, 6}}) {
    std::string t = f64(shape), p = f64({shape.back()});
    std::string body = "%out = lcc.layer_norm %x, %w, %b : " + t + ", " + p + ", " + p;
    EXPECT_TRUE(check("layer_norm " + t, "%x: " + t + ", %w: " + p + ", %b: " + p, body, t));
  }
}

TEST(NnGrad, LayerNormLargeEpsAndOffsetInput) {
  // A large mean (x in [10, 12)) checks the centred (two-pass) statistics;
  // a large eps checks that eps enters rstd where the forward puts it.
  std::string t = f64({3, 4}), p = f64({4});
  GradCheckOptions o;
  o.ranges["x"] = {10.0, 12.0};
  std::string body =
      "%out = lcc.layer_norm %x, %w, %b {eps = 0.5} : " + t + ", " + p + ", " + p;
  EXPECT_TRUE(check("layer_norm eps 0.5", "%x: " + t + ", %w: " + p + ", %b: " + p, body, t, o));
}

TEST(NnGrad, LayerNormFrozenAffine) {
  // Only dx is needed: the VJP must not depend on building dw/db.
  std::string t = f64({2, 5}), p = f64({5});
  std::string body = "%out = lcc.layer_norm %x, %w, %b : " + t + ", " + p + ", " + p;
  EXPECT_TRUE(check("layer_norm frozen w,b",
                    "%x: " + t + ", %w: " + p + " {lcc.frozen}, %b: " + p + " {lcc.frozen}", body,
                    t));
}

TEST(NnGrad, RmsNorm) {
  for (auto shape : {std::vector<int64_t>{2, 3, 6}, {5}, {4, 4}}) {
    std::string t = f64(shape), p = f64({shape.back()});
    std::string body = "%out = lcc.rms_norm %x, %w : " + t + ", " + p;
    EXPECT_TRUE(check("rms_norm " + t, "%x: " + t + ", %w: " + p, body, t));
  }
  std::string t = f64({3, 4}), p = f64({4});
  EXPECT_TRUE(check("rms_norm eps 0.25", "%x: " + t + ", %w: " + p,
                    "%out = lcc.rms_norm %x, %w {eps = 0.25} : " + t + ", " + p, t));
}

//===----------------------------------------------------------------------===//
// rope, causal_mask
//===----------------------------------------------------------------------===//

TEST(NnGrad, Rope) {
  struct Case {
    std::vector<int64_t> shape;
    std::string attrs;
  } cases[] = {{{2, 4, 6}, ""},
               {{1, 2, 5, 8}, "{theta = 500000.0}"},
               {{3, 4}, "{offset = 7}"},
               {{2, 3, 2}, "{theta = 100.0, offset = 2}"}};
  for (const Case &c : cases) {
    std::string t = f64(c.shape);
    std::string body = "%out = lcc.rope %x " + c.attrs + " : " + t;
    EXPECT_TRUE(check("rope " + t + " " + c.attrs, "%x: " + t, body, t));
  }
}

TEST(NnGrad, CausalMask) {
  // A finite fill keeps the loss finite; the masked entries get no gradient.
  for (auto shape : {std::vector<int64_t>{2, 3, 5}, {4, 4}, {2, 1, 5, 3}}) {
    std::string t = f64(shape);
    EXPECT_TRUE(check("causal_mask " + t, "%x: " + t,
                      "%out = lcc.causal_mask %x {fill = -2.5} : " + t, t));
  }
  // The attention form: -inf fill followed by softmax.
  std::string t = f64({2, 4, 6});
  std::string body = "%m = lcc.causal_mask %x : " + t + "\n  %out = lcc.softmax %m : " + t;
  EXPECT_TRUE(check("causal_mask -inf + softmax", "%x: " + t, body, t));
}

//===----------------------------------------------------------------------===//
// cross_entropy
//===----------------------------------------------------------------------===//

std::string crossEntropy(const std::string &logits, const std::string &targets,
                         const std::string &attrs = "") {
  return "%out = lcc.cross_entropy %x, %t " + attrs + " : " + logits + ", " + targets +
         " -> tensor<f64>";
}

TEST(NnGrad, CrossEntropy) {
  std::string l = f64({2, 3, 7});
  std::string t = "tensor<2x3xi64>";
  GradCheckOptions o;
  o.intLo = 0;
  o.intHi = 7;
  EXPECT_TRUE(check("cross_entropy", "%x: " + l + ", %t: " + t, crossEntropy(l, t), "tensor<f64>",
                    o));
}

TEST(NnGrad, CrossEntropyIgnoreIndex) {
  std::string l = f64({2, 4, 5});
  // Default ignore_index -100: three of eight rows are not counted.
  GradCheckOptions o;
  o.inputs["t"] = HostTensor::fromVector<int64_t>({2, 4}, {1, -100, 4, 0, -100, 2, -100, 3});
  EXPECT_TRUE(check("cross_entropy ignore -100", "%x: " + l + ", %t: tensor<2x4xi64>",
                    crossEntropy(l, "tensor<2x4xi64>"), "tensor<f64>", o));
  // A custom ignore_index inside the vocabulary (i32 targets).
  GradCheckOptions o2;
  o2.inputs["t"] = HostTensor::fromVector<int32_t>({2, 4}, {1, 2, 4, 0, 2, 2, 3, 3});
  EXPECT_TRUE(check("cross_entropy ignore 2 i32", "%x: " + l + ", %t: tensor<2x4xi32>",
                    crossEntropy(l, "tensor<2x4xi32>", "{ignore_index = 2}"), "tensor<f64>", o2));
}

TEST(NnGrad, CrossEntropyClampsOutOfRangeTargetsAsTheForward) {
  // 9 and -5 are not the ignore index: the forward clamps them to 4 and 0,
  // so the gradient's one-hot must sit there too.
  std::string l = f64({6, 5});
  GradCheckOptions o;
  o.inputs["t"] = HostTensor::fromVector<int64_t>({6}, {9, -5, 4, 0, 2, 100});
  EXPECT_TRUE(check("cross_entropy clamped targets", "%x: " + l + ", %t: tensor<6xi64>",
                    crossEntropy(l, "tensor<6xi64>"), "tensor<f64>", o));
}

TEST(NnGrad, CrossEntropySingleRowAndLargeLogits) {
  std::string l = f64({9});
  GradCheckOptions o;
  o.inputs["t"] = HostTensor::fromVector<int64_t>({}, {3});
  EXPECT_TRUE(check("cross_entropy rank-0 target", "%x: " + l + ", %t: tensor<i64>",
                    crossEntropy(l, "tensor<i64>"), "tensor<f64>", o));
  GradCheckOptions big;
  big.lo = 700.0; // exp(700+) overflows without the max subtraction
  big.hi = 704.0;
  big.intLo = 0;
  big.intHi = 6;
  std::string l2 = f64({4, 6});
  EXPECT_TRUE(check("cross_entropy large logits", "%x: " + l2 + ", %t: tensor<4xi64>",
                    crossEntropy(l2, "tensor<4xi64>"), "tensor<f64>", big));
}

//===----------------------------------------------------------------------===//
// attention
//===----------------------------------------------------------------------===//

struct AttentionCase {
  int64_t b, h, hkv, tq, tk, d;
  std::string attrs;
  std::string name;
};

class AttentionGrad : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(AttentionGrad, MatchesFiniteDifferences) {
  const AttentionCase &c = GetParam();
  std::string q = f64({c.b, c.h, c.tq, c.d}), kv = f64({c.b, c.hkv, c.tk, c.d});
  std::string body = "%out = lcc.attention %q, %k, %v " + c.attrs + " : " + q + ", " + kv + ", " +
                     kv;
  EXPECT_TRUE(check("attention " + c.name, "%q: " + q + ", %k: " + kv + ", %v: " + kv, body, q));
}

// The same through the fused kernels (lcc-decompose{keep-attention}: one
// runtime call for the forward, one for lcc.attention_grad).
TEST_P(AttentionGrad, FusedMatchesFiniteDifferences) {
  const AttentionCase &c = GetParam();
  std::string q = f64({c.b, c.h, c.tq, c.d}), kv = f64({c.b, c.hkv, c.tk, c.d});
  std::string body = "%out = lcc.attention %q, %k, %v " + c.attrs + " : " + q + ", " + kv + ", " +
                     kv;
  GradCheckOptions options;
  options.fusedAttention = true;
  EXPECT_TRUE(check("fused attention " + c.name, "%q: " + q + ", %k: " + kv + ", %v: " + kv, body,
                    q, options));
}

INSTANTIATE_TEST_SUITE_P(
    Ops, AttentionGrad,
    ::testing::Values(AttentionCase{2, 2, 2, 3, 3, 4, "", "mha"},
                      AttentionCase{1, 4, 2, 3, 5, 4, "", "gqa_tq_lt_tk"},
                      AttentionCase{2, 4, 2, 4, 4, 3, "{causal = true}", "gqa_causal"},
                      AttentionCase{1, 3, 1, 3, 5, 2, "{causal = true}", "mqa_causal_tq_lt_tk"},
                      AttentionCase{1, 2, 2, 3, 3, 4, "{causal = true, scale = 0.7}",
                                    "causal_scale"},
                      AttentionCase{1, 6, 2, 2, 4, 2, "{scale = 1.3}", "gqa3_scale"}),
    [](const auto &info) { return info.param.name; });

TEST(NnGrad, AttentionSharedKeyValue) {
  // The same tensor as key and value: both VJP contributions must add up.
  std::string q = f64({1, 4, 3, 2}), kv = f64({1, 2, 3, 2});
  std::string body = "%out = lcc.attention %q, %kv, %kv {causal = true} : " + q + ", " + kv +
                     ", " + kv;
  EXPECT_TRUE(check("attention shared k=v", "%q: " + q + ", %kv: " + kv, body, q));
}

TEST(NnGrad, AttentionOnlyValueNeeded) {
  std::string q = f64({1, 4, 3, 2}), kv = f64({1, 2, 4, 2});
  std::string body = "%out = lcc.attention %q, %k, %v {causal = true} : " + q + ", " + kv + ", " +
                     kv;
  EXPECT_TRUE(check("attention only dv",
                    "%q: " + q + " {lcc.frozen}, %k: " + kv + " {lcc.frozen}, %v: " + kv, body,
                    q));
}

} // namespace
