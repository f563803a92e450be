//===- ReductionTest.cpp - reduce_*, softmax, log_softmax, norms ----------===//
#include "OpTestUtil.h"

using namespace lcc;
using namespace lcc::test;

namespace {

//===----------------------------------------------------------------------===//
// reduce_sum / reduce_mean / reduce_max
//===----------------------------------------------------------------------===//

struct ReduceCase {
  std::string kind; // sum, mean, max
  ElementType type;
  std::vector<int64_t> axes;
  bool keepdim;
  std::string name;
};

class ReduceTest : public ::testing::TestWithParam<ReduceCase> {};

TEST_P(ReduceTest, MatchesReference) {
  const ReduceCase &c = GetParam();
  std::mt19937 rng(21);
  HostTensor x = randomTensor(c.type, {3, 4, 5}, rng);
  ref::Tensor want = ref::reduce(c.kind, toRef(x), c.axes, c.keepdim);
  std::string tx = x.typeString(), tr = tensorType(c.type, want.shape);
  std::string attrs = "{axes = " + i64Array(c.axes) + (c.keepdim ? ", keepdim = true}" : "}");
  std::string src = makeFunc(
      {tx}, {tr}, "  %r = lcc.reduce_" + c.kind + " %a0 " + attrs + " : " + tx + " -> " + tr, "%r");
  EXPECT_TRUE(runAndCompare(src, {x}, want, tolFor(c.type)));
}

std::vector<ReduceCase> reduceCases() {
  struct Axes {
    std::vector<int64_t> axes;
    const char *name;
  } axesSets[] = {{{2}, "last"}, {{0}, "first"}, {{1}, "middle"}, {{0, 2}, "outer_two"},
                  {{-1, -2}, "negative"}, {{0, 1, 2}, "all"}};
  std::vector<ReduceCase> cases;
  for (ElementType t : {ElementType::F32, ElementType::F64})
    for (const char *kind : {"sum", "mean", "max"})
      for (const Axes &a : axesSets)
        for (bool keep : {false, true})
          cases.push_back({kind, t, a.axes, keep,
                           std::string(elementTypeName(t)) + "_" + kind + "_" + a.name +
                               (keep ? "_keepdim" : "")});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Ops, ReduceTest, ::testing::ValuesIn(reduceCases()),
                         [](const auto &info) { return info.param.name; });

// Whole-tensor reductions of at least 16,384 elements go through
// lcc-split-reductions (partials over the leading dimensions, then their
// combination); [3, 4, 5] above is too small for it. [5, 7, 600] takes two
// leading dimensions (35 partials), [200, 90] one.
TEST(Reduce, LargeWholeReductionsInPartials) {
  for (ElementType t : {ElementType::F32, ElementType::F64})
    for (const char *kind : {"sum", "mean", "max"})
      for (std::vector<int64_t> shape : {std::vector<int64_t>{5, 7, 600}, {200, 90}}) {
        std::mt19937 rng(22);
        HostTensor x = randomTensor(t, shape, rng);
        std::vector<int64_t> axes;
        for (size_t d = 0; d < shape.size(); ++d)
          axes.push_back(int64_t(d));
        ref::Tensor want = ref::reduce(kind, toRef(x), axes, false);
        std::string tx = x.typeString(), tr = tensorType(t, {});
        std::string src = makeFunc({tx}, {tr},
                                   "  %r = lcc.reduce_" + std::string(kind) + " %a0 {axes = " +
                                       i64Array(axes) + "} : " + tx + " -> " + tr,
                                   "%r");
        EXPECT_TRUE(runAndCompare(src, {x}, want, tolFor(t)))
            << kind << " of " << tx;
      }
}

// A squared norm, as the optimizer's gradient clipping computes it: the
// square fuses into the reduction, which is then split.
TEST(Reduce, LargeSumOfSquaresInPartials) {
  std::mt19937 rng(23);
  HostTensor x = randomTensor(ElementType::F64, {300, 70}, rng);
  ref::Tensor rx = toRef(x);
  double sum = 0;
  for (double v : rx.data)
    sum += v * v;
  std::string tx = x.typeString();
  std::string src = makeFunc({tx}, {"tensor<f64>"},
                             "  %sq = lcc.mul %a0, %a0 : " + tx + ", " + tx + " -> " + tx +
                                 "\n  %r = lcc.reduce_sum %sq " +
                                 "{axes = array<i64: 0, 1>} : " + tx + " -> tensor<f64>",
                             "%r");
  EXPECT_TRUE(runAndCompare(src, {x}, ref::Tensor({}, {sum}), kTolF64));
}

TEST(Reduce, MaxOfAllNegativeValues) {
  // A max whose init is 0 instead of -inf would give 0 here.
  HostTensor x = HostTensor::fromVector<float>({2, 3}, {-5, -1, -3, -2, -8, -4});
  std::string src = makeFunc({x.typeString()}, {"tensor<2xf32>"},
                             "  %r = lcc.reduce_max %a0 {axes = array<i64: 1>} : " +
                                 x.typeString() + " -> tensor<2xf32>",
                             "%r");
  EXPECT_TRUE(runAndCompare(src, {x}, ref::Tensor({2}, {-1, -2}), 0.0));
}

//===----------------------------------------------------------------------===//
// softmax / log_softmax
//===----------------------------------------------------------------------===//

struct SoftmaxCase {
  std::string op; // softmax, log_softmax
  ElementType type;
  int64_t axis;
  bool defaultAxis;
};

class SoftmaxTest : public ::testing::TestWithParam<SoftmaxCase> {};

TEST_P(SoftmaxTest, MatchesReference) {
  const SoftmaxCase &c = GetParam();
  std::mt19937 rng(31);
  // Large magnitudes check the max subtraction: exp(60) overflows nothing in
  // f32, but exp(90) does.
  HostTensor x = randomTensor(c.type, {2, 5, 7}, rng, -90.0, 90.0);
  std::string tx = x.typeString();
  std::string attrs = c.defaultAxis ? "" : " {axis = " + std::to_string(c.axis) + " : i64}";
  std::string src = makeFunc({tx}, {tx}, "  %r = lcc." + c.op + " %a0" + attrs + " : " + tx, "%r");
  ref::Tensor want = c.op == "softmax" ? ref::softmax(toRef(x), c.axis)
                                       : ref::logSoftmax(toRef(x), c.axis);
  EXPECT_TRUE(runAndCompare(src, {x}, want, tolFor(c.type)));
}

std::vector<SoftmaxCase> softmaxCases() {
  std::vector<SoftmaxCase> cases;
  for (ElementType t : {ElementType::F32, ElementType::F64})
    for (const char *op : {"softmax", "log_softmax"}) {
      cases.push_back({op, t, -1, true});
      cases.push_back({op, t, 0, false});
      cases.push_back({op, t, 1, false});
      cases.push_back({op, t, 2, false});
    }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Ops, SoftmaxTest, ::testing::ValuesIn(softmaxCases()),
                         [](const auto &info) {
                           std::string axis = info.param.defaultAxis
                                                  ? "default"
                                                  : std::to_string(info.param.axis);
                           return std::string(elementTypeName(info.param.type)) + "_" +
                                  info.param.op + "_axis_" + axis;
                         });

//===----------------------------------------------------------------------===//
// layer_norm / rms_norm
//===----------------------------------------------------------------------===//

class NormTest : public ::testing::TestWithParam<ElementType> {};

TEST_P(NormTest, LayerNorm) {
  ElementType type = GetParam();
  std::mt19937 rng(41);
  // An offset mean checks that the variance is taken around the mean.
  HostTensor x = randomTensor(type, {2, 3, 16}, rng, 1.0, 5.0);
  HostTensor w = randomTensor(type, {16}, rng, 0.5, 1.5);
  HostTensor b = randomTensor(type, {16}, rng, -1.0, 1.0);
  std::string tx = x.typeString(), tw = w.typeString();
  for (bool explicitEps : {false, true}) {
    std::string attrs = explicitEps ? " {eps = 1.0e-02 : f64}" : "";
    std::string src = makeFunc({tx, tw, tw}, {tx},
                               "  %r = lcc.layer_norm %a0, %a1, %a2" + attrs + " : " + tx + ", " +
                                   tw + ", " + tw,
                               "%r");
    EXPECT_TRUE(runAndCompare(src, {x, w, b},
                              ref::layerNorm(toRef(x), toRef(w), toRef(b), explicitEps ? 1e-2 : 1e-5),
                              tolFor(type)))
        << (explicitEps ? "eps = 1e-2" : "default eps");
  }
}

TEST_P(NormTest, RmsNorm) {
  ElementType type = GetParam();
  std::mt19937 rng(43);
  HostTensor x = randomTensor(type, {4, 12}, rng, -2.0, 3.0);
  HostTensor w = randomTensor(type, {12}, rng, 0.5, 1.5);
  std::string tx = x.typeString(), tw = w.typeString();
  for (bool explicitEps : {false, true}) {
    std::string attrs = explicitEps ? " {eps = 5.0e-01 : f64}" : "";
    std::string src = makeFunc(
        {tx, tw}, {tx}, "  %r = lcc.rms_norm %a0, %a1" + attrs + " : " + tx + ", " + tw, "%r");
    EXPECT_TRUE(runAndCompare(src, {x, w},
                              ref::rmsNorm(toRef(x), toRef(w), explicitEps ? 0.5 : 1e-6),
                              tolFor(type)))
        << (explicitEps ? "eps = 0.5" : "default eps");
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, NormTest, ::testing::Values(ElementType::F32, ElementType::F64),
                         [](const auto &info) { return std::string(elementTypeName(info.param)); });

} // namespace
