//===- ElementwiseGradTest.cpp - FD checks of the elementwise VJPs --------===//
//
// Every unary op, every binary op with every broadcasting pattern of the
// forward tests (each operand's gradient summed back to its shape), where
// (condition not differentiable), convert and stop_gradient. Tolerance: GradCheck.h's
// err <= 1e-6 throughout.
//
//===----------------------------------------------------------------------===//
#include "GradCheck.h"

#include "dialects/lcc/LccOps.h"

#include <algorithm>
#include <cmath>
#include <optional>

using namespace lcc;
using namespace lcc::gradcheck;

namespace {

std::string tensorType(const std::vector<int64_t> &shape) {
  return HostTensor(ElementType::F64, shape).typeString();
}

/// The broadcast shape of two test shapes (they always broadcast), by the
/// dialect's own rule: the verifier rejects any other result shape.
std::vector<int64_t> broadcastOut(const std::vector<int64_t> &a, const std::vector<int64_t> &b) {
  auto out = lcc::broadcastShapes(a, b);
  return {out->begin(), out->end()};
}

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

class UnaryGrad : public ::testing::TestWithParam<std::string> {};

TEST_P(UnaryGrad, MatchesFiniteDifferences) {
  const std::string &op = GetParam();
  std::string t = tensorType({2, 3, 5});
  std::string body;
  if (op == "gelu_tanh")
    body = "%out = lcc.gelu %x {approximate = \"tanh\"} : " + t;
  else
    body = "%out = lcc." + op + " %x : " + t;
  GradCheckOptions o;
  if (op == "log" || op == "sqrt" || op == "rsqrt")
    o.lo = 0.2, o.hi = 3.0;
  if (op == "relu")
    o.minAbs = 0.05; // keep the stencil (+-2h) off the kink
  EXPECT_TRUE(checkGradients("%x: " + t, body, t, o));
}

INSTANTIATE_TEST_SUITE_P(Ops, UnaryGrad,
                         ::testing::Values("neg", "exp", "log", "tanh", "erf", "sqrt", "rsqrt",
                                           "relu", "sigmoid", "silu", "gelu", "gelu_tanh"),
                         [](const auto &info) { return info.param; });

TEST(UnaryGradExact, ReluAtZeroIsZero) {
  std::string err;
  auto r = runGradFunction(R"(
    func.func @f(%x: tensor<3xf64> {lcc.param = "x"}) -> tensor<f64> {
      %r = lcc.relu %x : tensor<3xf64>
      %l = lcc.reduce_sum %r {axes = array<i64: 0>} : tensor<3xf64> -> tensor<f64>
      return %l : tensor<f64>
    })", "f", {HostTensor::fromVector<double>({3}, {-1.0, 0.0, 2.0})}, &err);
  ASSERT_EQ(r.size(), 2u) << err;
  EXPECT_EQ(r[1].toVector<double>(), (std::vector<double>{0.0, 0.0, 1.0}));
}

//===----------------------------------------------------------------------===//
// Binary, with broadcasting
//===----------------------------------------------------------------------===//

struct Shapes {
  std::vector<int64_t> lhs, rhs;
  std::string name;
};

const Shapes kShapes[] = {
    {{2, 3, 5}, {2, 3, 5}, "same"},       {{2, 3, 5}, {5}, "trailing"},
    {{3, 1}, {1, 5}, "outer"},            {{2, 1, 5}, {3, 1}, "mixed_rank"},
    {{}, {2, 3}, "scalar_lhs"},           {{4, 6}, {}, "scalar_rhs"},
    {{1, 4, 1}, {2, 1, 3}, "both_ones"},
};

struct BinaryCase {
  std::string op;
  Shapes shapes;
};
// Readable test names in ctest (instead of a byte dump of the struct).
void PrintTo(const BinaryCase &c, std::ostream *os) { *os << c.op << "_" << c.shapes.name; }

class BinaryGrad : public ::testing::TestWithParam<BinaryCase> {};

TEST_P(BinaryGrad, MatchesFiniteDifferences) {
  const BinaryCase &c = GetParam();
  std::string lt = tensorType(c.shapes.lhs), rt = tensorType(c.shapes.rhs);
  std::vector<int64_t> out = broadcastOut(c.shapes.lhs, c.shapes.rhs);
  std::string ot = tensorType(out);
  std::string body = "%out = lcc." + c.op + " %a, %b : " + lt + ", " + rt + " -> " + ot;
  GradCheckOptions o;
  if (c.op == "div")
    o.minAbs = 0.5; // denominators of both signs, |b| in [0.5, 2)
  if (c.op == "pow")
    o.ranges["a"] = {0.3, 2.0}; // a^b and log(a) defined
  if (c.op == "maximum" || c.op == "minimum") {
    // Distinct values on two interleaved grids: no tie within the stencil.
    o.inputs["a"] = separatedValues(c.shapes.lhs, 3, 0.0, 0.1);
    o.inputs["b"] = separatedValues(c.shapes.rhs, 4, 0.05, 0.1);
  }
  EXPECT_TRUE(checkGradients("%a: " + lt + ", %b: " + rt, body, ot, o));
}

std::vector<BinaryCase> binaryCases() {
  std::vector<BinaryCase> cases;
  for (const char *op : {"add", "sub", "mul", "div", "pow", "maximum", "minimum"})
    for (const Shapes &s : kShapes)
      cases.push_back({op, s});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Ops, BinaryGrad, ::testing::ValuesIn(binaryCases()),
                         [](const auto &info) {
                           return info.param.op + "_" + info.param.shapes.name;
                         });

TEST(BinaryGradExact, TiesGoToLhs) {
  std::string err;
  auto r = runGradFunction(R"(
    func.func @f(%a: tensor<3xf64> {lcc.param = "a"}, %b: tensor<3xf64> {lcc.param = "b"}) -> tensor<f64> {
      %m = lcc.maximum %a, %b : tensor<3xf64>, tensor<3xf64> -> tensor<3xf64>
      %n = lcc.minimum %a, %b : tensor<3xf64>, tensor<3xf64> -> tensor<3xf64>
      %s = lcc.add %m, %n : tensor<3xf64>, tensor<3xf64> -> tensor<3xf64>
      %l = lcc.reduce_sum %s {axes = array<i64: 0>} : tensor<3xf64> -> tensor<f64>
      return %l : tensor<f64>
    })", "f",
      {HostTensor::fromVector<double>({3}, {1.0, 2.0, 3.0}),
       HostTensor::fromVector<double>({3}, {0.0, 2.0, 4.0})}, &err);
  ASSERT_EQ(r.size(), 3u) << err;
  // max + min = a + b away from ties; at the tie both go to a.
  EXPECT_EQ(r[1].toVector<double>(), (std::vector<double>{1.0, 2.0, 1.0}));
  EXPECT_EQ(r[2].toVector<double>(), (std::vector<double>{1.0, 0.0, 1.0}));
}

TEST(BinaryGradExact, PowExponentGradientAtZeroBase) {
  std::string err;
  auto r = runGradFunction(R"(
    func.func @f(%a: tensor<2xf64> {lcc.param = "a"}, %b: tensor<2xf64> {lcc.param = "b"}) -> tensor<f64> {
      %p = lcc.pow %a, %b : tensor<2xf64>, tensor<2xf64> -> tensor<2xf64>
      %l = lcc.reduce_sum %p {axes = array<i64: 0>} : tensor<2xf64> -> tensor<f64>
      return %l : tensor<f64>
    })", "f",
      {HostTensor::fromVector<double>({2}, {0.0, 2.0}),
       HostTensor::fromVector<double>({2}, {2.0, 3.0})}, &err);
  ASSERT_EQ(r.size(), 3u) << err;
  EXPECT_EQ(r[1].toVector<double>(), (std::vector<double>{0.0, 12.0}));
  EXPECT_EQ(r[2].getDouble(0), 0.0); // not 0 * log(0) = NaN
  EXPECT_NEAR(r[2].getDouble(1), 8.0 * std::log(2.0), 1e-12);
}

//===----------------------------------------------------------------------===//
// where, convert
//===----------------------------------------------------------------------===//

struct WhereCase {
  std::vector<int64_t> cond, lhs, rhs;
  std::string name;
};
void PrintTo(const WhereCase &c, std::ostream *os) { *os << c.name; }

class WhereGrad : public ::testing::TestWithParam<WhereCase> {};

TEST_P(WhereGrad, MatchesFiniteDifferences) {
  const WhereCase &c = GetParam();
  std::vector<int64_t> out = broadcastOut(broadcastOut(c.lhs, c.rhs), c.cond);
  std::string ct = HostTensor(ElementType::I1, c.cond).typeString();
  std::string lt = tensorType(c.lhs), rt = tensorType(c.rhs), ot = tensorType(out);
  std::string body = "%out = lcc.where %c, %a, %b : " + ct + ", " + lt + ", " + rt + " -> " + ot;
  EXPECT_TRUE(checkGradients("%c: " + ct + ", %a: " + lt + ", %b: " + rt, body, ot));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, WhereGrad,
    ::testing::Values(WhereCase{{2, 3}, {2, 3}, {2, 3}, "same"},
                      WhereCase{{2, 3}, {3}, {}, "broadcast_branches"},
                      WhereCase{{3}, {2, 3}, {2, 1}, "broadcast_cond"},
                      WhereCase{{2, 1, 4}, {3, 1}, {1, 4}, "all_broadcast"}),
    [](const auto &info) { return info.param.name; });

TEST(ConvertGrad, FloatRoundTripAndIntInput) {
  // x goes f64 -> f32 -> f64 (values and steps are multiples of 1/8, exact in
  // f32, so the FD is exact too); ids (i64 -> f64) are not differentiable.
  GradCheckOptions o;
  o.h = 0.125;
  HostTensor x(ElementType::F64, {2, 3});
  for (int64_t i = 0; i < 6; ++i)
    x.setDouble(i, 0.125 * double(i * 5 % 11) - 0.5);
  o.inputs["x"] = x;
  o.intLo = -3, o.intHi = 4;
  EXPECT_TRUE(checkGradients(
      "%x: tensor<2x3xf64>, %y: tensor<2x3xf64>, %ids: tensor<3xi64>",
      "%c = lcc.convert %x : tensor<2x3xf64> -> tensor<2x3xf32>\n"
      "%d = lcc.convert %c : tensor<2x3xf32> -> tensor<2x3xf64>\n"
      "%i = lcc.convert %ids : tensor<3xi64> -> tensor<3xf64>\n"
      "%e = lcc.mul %d, %y : tensor<2x3xf64>, tensor<2x3xf64> -> tensor<2x3xf64>\n"
      "%out = lcc.mul %e, %i : tensor<2x3xf64>, tensor<3xf64> -> tensor<2x3xf64>",
      "tensor<2x3xf64>", o));
}

TEST(StopGradientGrad, ShiftedLogSumExpMatchesFiniteDifferences) {
  // The use vocab-parallel cross-entropy makes of it: a shift that changes
  // no value. log(sum(exp(x - m))) + m with m = stop_gradient(max(x)) is
  // logsumexp(x), so the FD of the function is the true gradient (softmax),
  // and autodiff must reach it through the exp alone.
  EXPECT_TRUE(checkGradients(
      "%x: tensor<3x5xf64>",
      "%m = lcc.reduce_max %x {axes = array<i64: 1>, keepdim = true} : tensor<3x5xf64> -> "
      "tensor<3x1xf64>\n"
      "%c = lcc.stop_gradient %m : tensor<3x1xf64>\n"
      "%z = lcc.sub %x, %c : tensor<3x5xf64>, tensor<3x1xf64> -> tensor<3x5xf64>\n"
      "%e = lcc.exp %z : tensor<3x5xf64>\n"
      "%s = lcc.reduce_sum %e {axes = array<i64: 1>, keepdim = true} : tensor<3x5xf64> -> "
      "tensor<3x1xf64>\n"
      "%l = lcc.log %s : tensor<3x1xf64>\n"
      "%out = lcc.add %l, %c : tensor<3x1xf64>, tensor<3x1xf64> -> tensor<3x1xf64>",
      "tensor<3x1xf64>"));
}

TEST(StopGradientGrad, IsAConstantToAutodiff) {
  // x * stop_gradient(x): autodiff sees c * x with c = x, gradient w * x,
  // where finite differences (which move both factors) see 2 w x. So the
  // check must fail, with every autodiff entry half its FD.
  GradCheckReport r = runGradCheck("%x: tensor<2x3xf64>",
                                   "%c = lcc.stop_gradient %x : tensor<2x3xf64>\n"
                                   "%out = lcc.mul %x, %c : tensor<2x3xf64>, tensor<2x3xf64> -> "
                                   "tensor<2x3xf64>",
                                   "tensor<2x3xf64>");
  ASSERT_FALSE(r.ok);
  ASSERT_EQ(r.params.size(), 1u);
  EXPECT_NEAR(2.0 * r.params[0].worstAd, r.params[0].worstFd,
              1e-9 * std::max(1.0, std::abs(r.params[0].worstFd)));
  EXPECT_NE(r.params[0].worstAd, 0.0);
}

} // namespace
