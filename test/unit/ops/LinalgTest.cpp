//===- LinalgTest.cpp - matmul, rope, causal_mask, attention, cross_entropy ===//
#include "OpTestUtil.h"

#include <cmath>
#include <limits>

using namespace lcc;
using namespace lcc::test;

namespace {

std::string attrDict(const std::vector<std::string> &attrs) {
  if (attrs.empty())
    return "";
  std::string s = " {";
  for (size_t i = 0; i < attrs.size(); ++i)
    s += (i ? ", " : "") + attrs[i];
  return s + "}";
}

//===----------------------------------------------------------------------===//
// matmul
//===----------------------------------------------------------------------===//

struct MatmulCase {
  std::vector<int64_t> lhs, rhs;
  bool tl, tr;
  std::string name;
};

class MatmulTest : public ::testing::TestWithParam<std::tuple<MatmulCase, ElementType>> {};

TEST_P(MatmulTest, MatchesReference) {
  const MatmulCase &c = std::get<0>(GetParam());
  ElementType type = std::get<1>(GetParam());
  std::mt19937 rng(51);
  HostTensor a = randomTensor(type, c.lhs, rng), b = randomTensor(type, c.rhs, rng);
  ref::Tensor want = ref::matmul(toRef(a), toRef(b), c.tl, c.tr);
  std::vector<std::string> attrs;
  if (c.tl)
    attrs.push_back("transpose_lhs = true");
  if (c.tr)
    attrs.push_back("transpose_rhs = true");
  std::string ta = a.typeString(), tb = b.typeString(), tr = tensorType(type, want.shape);
  std::string src = makeFunc({ta, tb}, {tr},
                             "  %r = lcc.matmul %a0, %a1" + attrDict(attrs) + " : " + ta + ", " +
                                 tb + " -> " + tr,
                             "%r");
  EXPECT_TRUE(runAndCompare(src, {a, b}, want, tolFor(type)));
}

const MatmulCase kMatmulCases[] = {
    {{5, 7}, {7, 3}, false, false, "plain"},
    {{7, 5}, {7, 3}, true, false, "transpose_lhs"},
    {{5, 7}, {3, 7}, false, true, "transpose_rhs"},
    {{7, 5}, {3, 7}, true, true, "transpose_both"},
    {{2, 5, 7}, {2, 7, 3}, false, false, "batched"},
    {{2, 3, 5, 7}, {7, 4}, false, false, "weight_rank2_rhs"},
    {{2, 3, 5, 7}, {4, 7}, false, true, "weight_rank2_rhs_transposed"},
    {{2, 1, 5, 7}, {3, 7, 4}, false, false, "batch_broadcast"},
    {{5, 7}, {2, 7, 3}, false, false, "rank2_lhs"},
    {{2, 3, 5, 8}, {2, 3, 6, 8}, false, true, "scores_qkT"},
    {{2, 3, 8, 5}, {2, 3, 8, 6}, true, false, "batched_transpose_lhs"},
};

INSTANTIATE_TEST_SUITE_P(Ops, MatmulTest,
                         ::testing::Combine(::testing::ValuesIn(kMatmulCases),
                                            ::testing::Values(ElementType::F32, ElementType::F64)),
                         [](const auto &info) {
                           return std::string(elementTypeName(std::get<1>(info.param))) + "_" +
                                  std::get<0>(info.param).name;
                         });

//===----------------------------------------------------------------------===//
// rope, causal_mask
//===----------------------------------------------------------------------===//

class PositionTest : public ::testing::TestWithParam<ElementType> {};

TEST_P(PositionTest, RopeDefaults) {
  ElementType type = GetParam();
  std::mt19937 rng(61);
  HostTensor x = randomTensor(type, {2, 3, 6, 8}, rng);
  std::string t = x.typeString();
  std::string src = makeFunc({t}, {t}, "  %r = lcc.rope %a0 : " + t, "%r");
  EXPECT_TRUE(runAndCompare(src, {x}, ref::rope(toRef(x), 10000.0, 0), tolFor(type)));
}

TEST_P(PositionTest, RopeThetaAndOffset) {
  ElementType type = GetParam();
  std::mt19937 rng(62);
  HostTensor x = randomTensor(type, {5, 12}, rng);
  std::string t = x.typeString();
  std::string src = makeFunc(
      {t}, {t}, "  %r = lcc.rope %a0 {theta = 5.0e+02 : f64, offset = 7 : i64} : " + t, "%r");
  EXPECT_TRUE(runAndCompare(src, {x}, ref::rope(toRef(x), 500.0, 7), tolFor(type)));
}

TEST_P(PositionTest, CausalMaskDefaultFillIsMinusInfinity) {
  ElementType type = GetParam();
  std::mt19937 rng(63);
  HostTensor x = randomTensor(type, {2, 4, 6}, rng); // Tq = 4 < Tk = 6
  std::string t = x.typeString();
  std::string src = makeFunc({t}, {t}, "  %r = lcc.causal_mask %a0 : " + t, "%r");
  EXPECT_TRUE(runAndCompare(src, {x},
                            ref::causalMask(toRef(x), -std::numeric_limits<double>::infinity()),
                            0.0));
}

TEST_P(PositionTest, CausalMaskExplicitFill) {
  ElementType type = GetParam();
  std::mt19937 rng(64);
  for (std::vector<int64_t> shape : {std::vector<int64_t>{5, 5}, std::vector<int64_t>{3, 5, 3}}) {
    HostTensor x = randomTensor(type, shape, rng);
    std::string t = x.typeString();
    std::string src =
        makeFunc({t}, {t}, "  %r = lcc.causal_mask %a0 {fill = -1.0e+09 : f64} : " + t, "%r");
    EXPECT_TRUE(runAndCompare(src, {x}, ref::causalMask(toRef(x), -1e9), 0.0)) << t;
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, PositionTest, ::testing::Values(ElementType::F32, ElementType::F64),
                         [](const auto &info) { return std::string(elementTypeName(info.param)); });

//===----------------------------------------------------------------------===//
// attention
//===----------------------------------------------------------------------===//

struct AttentionCase {
  int64_t b, h, hkv, tq, tk, d;
  bool causal;
  std::optional<double> scale;
  std::string name;
};

class AttentionTest
    : public ::testing::TestWithParam<std::tuple<AttentionCase, ElementType>> {};

TEST_P(AttentionTest, MatchesReference) {
  const AttentionCase &c = std::get<0>(GetParam());
  ElementType type = std::get<1>(GetParam());
  std::mt19937 rng(71);
  HostTensor q = randomTensor(type, {c.b, c.h, c.tq, c.d}, rng);
  HostTensor k = randomTensor(type, {c.b, c.hkv, c.tk, c.d}, rng);
  HostTensor v = randomTensor(type, {c.b, c.hkv, c.tk, c.d}, rng);
  std::vector<std::string> attrs;
  if (c.causal)
    attrs.push_back("causal = true");
  if (c.scale) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "scale = %.17e : f64", *c.scale);
    attrs.push_back(buf);
  }
  std::string tq = q.typeString(), tk = k.typeString();
  std::string src = makeFunc({tq, tk, tk}, {tq},
                             "  %r = lcc.attention %a0, %a1, %a2" + attrDict(attrs) + " : " + tq +
                                 ", " + tk + ", " + tk,
                             "%r");
  EXPECT_TRUE(runAndCompare(src, {q, k, v},
                            ref::attention(toRef(q), toRef(k), toRef(v), c.causal, c.scale),
                            tolFor(type)));
}

const AttentionCase kAttentionCases[] = {
    {2, 4, 4, 5, 5, 8, false, std::nullopt, "mha"},
    {2, 4, 4, 5, 5, 8, true, std::nullopt, "mha_causal"},
    {1, 4, 2, 5, 7, 8, false, std::nullopt, "gqa_cross_length"},
    {1, 4, 2, 5, 7, 8, true, std::nullopt, "gqa_causal_tq_lt_tk"},
    {2, 3, 1, 6, 6, 4, true, std::nullopt, "mqa_causal"},
    {1, 2, 2, 4, 4, 6, true, 0.3, "explicit_scale"},
};

INSTANTIATE_TEST_SUITE_P(
    Ops, AttentionTest,
    ::testing::Combine(::testing::ValuesIn(kAttentionCases),
                       ::testing::Values(ElementType::F32, ElementType::F64)),
    [](const auto &info) {
      return std::string(elementTypeName(std::get<1>(info.param))) + "_" +
             std::get<0>(info.param).name;
    });

//===----------------------------------------------------------------------===//
// cross_entropy
//===----------------------------------------------------------------------===//

struct CrossEntropyCase {
  std::vector<int64_t> logits;
  ElementType targetType;
  std::optional<int64_t> ignoreIndex; // nullopt: the default -100
  std::string name;
};

class CrossEntropyTest
    : public ::testing::TestWithParam<std::tuple<CrossEntropyCase, ElementType>> {};

TEST_P(CrossEntropyTest, MatchesReference) {
  const CrossEntropyCase &c = std::get<0>(GetParam());
  ElementType type = std::get<1>(GetParam());
  std::mt19937 rng(81);
  HostTensor logits = randomTensor(type, c.logits, rng, -6.0, 6.0);
  std::vector<int64_t> tshape(c.logits.begin(), c.logits.end() - 1);
  int64_t vocab = c.logits.back();
  HostTensor targets = randomInts(c.targetType, tshape, rng, 0, vocab);
  int64_t ignore = c.ignoreIndex.value_or(-100);
  // Every third target is ignored (the first one never, so the mean is defined).
  for (int64_t i = 2; i < targets.numElements(); i += 3)
    targets.setDouble(i, double(ignore));
  std::string tl = logits.typeString(), tt = targets.typeString(), tr = tensorType(type, {});
  std::string attrs =
      c.ignoreIndex ? " {ignore_index = " + std::to_string(*c.ignoreIndex) + " : i64}" : "";
  std::string src = makeFunc({tl, tt}, {tr},
                             "  %r = lcc.cross_entropy %a0, %a1" + attrs + " : " + tl + ", " + tt +
                                 " -> " + tr,
                             "%r");
  EXPECT_TRUE(runAndCompare(src, {logits, targets},
                            ref::crossEntropy(toRef(logits), toRef(targets), ignore),
                            tolFor(type)));
}

const CrossEntropyCase kCrossEntropyCases[] = {
    {{4, 9}, ElementType::I32, std::nullopt, "rank2_i32"},
    {{3, 5, 11}, ElementType::I32, std::nullopt, "rank3_i32"},
    {{3, 5, 11}, ElementType::I64, 4, "rank3_i64_ignore_4"},
    {{13}, ElementType::I64, std::nullopt, "single_row"},
    // 16,640 positions: lcc-split-reductions sums the loss and its count in
    // 128 partials first (two outputs, a body reading linalg.index).
    {{128, 130, 3}, ElementType::I32, std::nullopt, "split_in_partials"},
};

INSTANTIATE_TEST_SUITE_P(
    Ops, CrossEntropyTest,
    ::testing::Combine(::testing::ValuesIn(kCrossEntropyCases),
                       ::testing::Values(ElementType::F32, ElementType::F64)),
    [](const auto &info) {
      return std::string(elementTypeName(std::get<1>(info.param))) + "_" +
             std::get<0>(info.param).name;
    });

TEST(CrossEntropy, AllIgnoredIsNaN) {
  HostTensor logits = HostTensor::fromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor targets = HostTensor::fromVector<int32_t>({2}, {-100, -100});
  std::string src = makeFunc({logits.typeString(), targets.typeString()}, {"tensor<f32>"},
                             "  %r = lcc.cross_entropy %a0, %a1 : " + logits.typeString() + ", " +
                                 targets.typeString() + " -> tensor<f32>",
                             "%r");
  EXPECT_TRUE(runAndCompare(src, {logits, targets}, ref::Tensor({}, {std::nan("")}), kTolF32));
}

} // namespace
