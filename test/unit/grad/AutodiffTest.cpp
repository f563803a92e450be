//===- AutodiffTest.cpp - the lcc-autodiff pass: structure and values -----===//
//
// The per-op checks live beside this file; these cover what the pass itself
// decides: fan-out accumulation, frozen parameters, integer inputs, unused
// parameters, dead branches and the diagnostics.
//
//===----------------------------------------------------------------------===//
#include "GradCheck.h"

#include "gmock/gmock.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

using namespace lcc;
using namespace lcc::gradcheck;
using ::testing::HasSubstr;

namespace {

/// Occurrences of `needle` in `text`.
int count(const std::string &text, const std::string &needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++n;
  return n;
}

/// The text of function @name in a printed module.
std::string function(const std::string &module, const std::string &name) {
  size_t at = module.find("func.func @" + name + "(");
  if (at == std::string::npos)
    return "";
  size_t end = module.find("\n  }", at);
  return module.substr(at, end - at);
}

TEST(Autodiff, FanOutAccumulates) {
  // x feeds mul (twice), exp and tanh: four contributions summed.
  EXPECT_TRUE(checkGradients(
      "%x: tensor<2x3xf64>",
      "%a = lcc.mul %x, %x : tensor<2x3xf64>, tensor<2x3xf64> -> tensor<2x3xf64>\n"
      "%b = lcc.exp %x : tensor<2x3xf64>\n"
      "%c = lcc.tanh %x : tensor<2x3xf64>\n"
      "%d = lcc.add %a, %b : tensor<2x3xf64>, tensor<2x3xf64> -> tensor<2x3xf64>\n"
      "%out = lcc.mul %d, %c : tensor<2x3xf64>, tensor<2x3xf64> -> tensor<2x3xf64>",
      "tensor<2x3xf64>"));
}

TEST(Autodiff, ChainOfOpsAndBroadcastParams) {
  // A small MLP-like function: broadcast bias, relu-free smooth activations.
  EXPECT_TRUE(checkGradients(
      "%x: tensor<4x3xf64> {lcc.input = \"x\"}, %w: tensor<3xf64>, %b: tensor<1xf64>",
      "%h = lcc.mul %x, %w : tensor<4x3xf64>, tensor<3xf64> -> tensor<4x3xf64>\n"
      "%s = lcc.reduce_sum %h {axes = array<i64: 1>, keepdim = true} : tensor<4x3xf64> -> "
      "tensor<4x1xf64>\n"
      "%z = lcc.add %s, %b : tensor<4x1xf64>, tensor<1xf64> -> tensor<4x1xf64>\n"
      "%g = lcc.gelu %z {approximate = \"tanh\"} : tensor<4x1xf64>\n"
      "%m = lcc.reduce_mean %g {axes = array<i64: 0>} : tensor<4x1xf64> -> tensor<1xf64>\n"
      "%out = lcc.sigmoid %m : tensor<1xf64>",
      "tensor<1xf64>"));
}

const char *kFrozen = R"(
func.func @forward(%w: tensor<4xf64> {lcc.param = "w"},
                   %f: tensor<4xf64> {lcc.param = "f", lcc.frozen},
                   %x: tensor<4xf64> {lcc.input = "x"}) -> tensor<f64> {
  %0 = lcc.mul %w, %x : tensor<4xf64>, tensor<4xf64> -> tensor<4xf64>
  %1 = lcc.exp %f : tensor<4xf64>
  %2 = lcc.mul %0, %1 : tensor<4xf64>, tensor<4xf64> -> tensor<4xf64>
  %3 = lcc.reduce_sum %2 {axes = array<i64: 0>} : tensor<4xf64> -> tensor<f64>
  return %3 : tensor<f64>
}
)";

TEST(Autodiff, FrozenParamGetsNoGradientAndNoWork) {
  std::string diags;
  std::string out = runAutodiff(kFrozen, "forward", &diags);
  ASSERT_FALSE(out.empty()) << diags;
  std::string grad = function(out, "forward_grad");
  // One gradient result, for w only.
  EXPECT_THAT(grad, HasSubstr("-> (tensor<f64>, tensor<4xf64> {lcc.grad_of = \"w\"})"));
  EXPECT_EQ(count(grad, "lcc.grad_of"), 1);
  // No backward op for f: exp's VJP (a mul by its result) is never built, so
  // the only exp is the cloned forward one, and the backward is exactly
  // broadcast of the seed, mul by exp(f), mul by x.
  EXPECT_EQ(count(grad, "lcc.exp"), 1);
  EXPECT_EQ(count(grad, "lcc.mul"), 2 + 2) << grad;
  // @forward is unchanged.
  EXPECT_EQ(count(function(out, "forward"), "= lcc."), 4);

  // Values: dL/dw = x * exp(f).
  std::string err;
  auto r = runGradFunction(kFrozen, "forward",
                           {HostTensor::fromVector<double>({4}, {1, 2, 3, 4}),
                            HostTensor::fromVector<double>({4}, {0, 0, 1, 0}),
                            HostTensor::fromVector<double>({4}, {1, -1, 2, 0.5})},
                           &err);
  ASSERT_EQ(r.size(), 2u) << err;
  std::vector<double> want = {1, -1, 2 * std::exp(1.0), 0.5};
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(r[1].getDouble(i), want[i], 1e-15);
}

TEST(Autodiff, FrozenParamsAreNotChecked) {
  // Through the harness: the frozen argument is an input of both functions.
  GradCheckReport r = runGradCheck(
      "%w: tensor<3xf64>, %f: tensor<3xf64> {lcc.param = \"f\", lcc.frozen}",
      "%out = lcc.mul %w, %f : tensor<3xf64>, tensor<3xf64> -> tensor<3xf64>", "tensor<3xf64>");
  ASSERT_TRUE(r.ok) << toAssertion(r).message();
  ASSERT_EQ(r.params.size(), 1u);
  EXPECT_EQ(r.params[0].name, "w");
}

TEST(Autodiff, IntegerInputsAndMasksAreNotDifferentiated) {
  // ids -> float scale, a mask from comparing the parameter itself: the
  // mask is a constant of the backward (cmp has no float result).
  GradCheckOptions o;
  o.minAbs = 0.05;
  o.intLo = -2, o.intHi = 3;
  EXPECT_TRUE(checkGradients(
      "%w: tensor<2x3xf64>, %ids: tensor<3xi32>",
      "%z = lcc.fill {value = 0.0 : f64} : tensor<f64>\n"
      "%m = lcc.cmp \"gt\", %w, %z : tensor<2x3xf64>, tensor<f64> -> tensor<2x3xi1>\n"
      "%e = lcc.exp %w : tensor<2x3xf64>\n"
      "%s = lcc.where %m, %w, %e : tensor<2x3xi1>, tensor<2x3xf64>, tensor<2x3xf64> -> "
      "tensor<2x3xf64>\n"
      "%i = lcc.convert %ids : tensor<3xi32> -> tensor<3xf64>\n"
      "%out = lcc.mul %s, %i : tensor<2x3xf64>, tensor<3xf64> -> tensor<2x3xf64>",
      "tensor<2x3xf64>", o));
}

const char *kUnused = R"(
func.func @forward(%w: tensor<3xf64> {lcc.param = "w"}, %u: tensor<2x2xf64> {lcc.param = "u"},
                   %d: tensor<3xf64> {lcc.param = "dead"}) -> tensor<f64> {
  // %d feeds a value that never reaches the loss: no backward work for it.
  %side = lcc.exp %d : tensor<3xf64>
  %0 = lcc.tanh %w : tensor<3xf64>
  %1 = lcc.reduce_sum %0 {axes = array<i64: 0>} : tensor<3xf64> -> tensor<f64>
  return %1 : tensor<f64>
}
)";

TEST(Autodiff, UnusedAndDeadParamsGetZeroGradients) {
  std::string diags;
  std::string out = runAutodiff(kUnused, "forward", &diags);
  ASSERT_FALSE(out.empty()) << diags;
  std::string grad = function(out, "forward_grad");
  EXPECT_EQ(count(grad, "lcc.grad_of"), 3);
  EXPECT_EQ(count(grad, "lcc.exp"), 1) << grad; // only the cloned forward one
  EXPECT_THAT(grad, HasSubstr("lcc.fill {value = 0.000000e+00 : f64} : tensor<2x2xf64>"));

  std::string err;
  auto r = runGradFunction(kUnused, "forward",
                           {HostTensor::fromVector<double>({3}, {0.1, -0.2, 0.3}),
                            HostTensor::fromVector<double>({2, 2}, {1, 2, 3, 4}),
                            HostTensor::fromVector<double>({3}, {1, 2, 3})},
                           &err);
  ASSERT_EQ(r.size(), 4u) << err;
  EXPECT_EQ(r[2].toVector<double>(), std::vector<double>(4, 0.0));
  EXPECT_EQ(r[3].toVector<double>(), std::vector<double>(3, 0.0));
  EXPECT_NEAR(r[1].getDouble(1), 1 - std::tanh(-0.2) * std::tanh(-0.2), 1e-15);
}

TEST(Autodiff, RejectsOpWithoutVjpNamingIt) {
  std::string diags;
  std::string out = runAutodiff(R"(
    func.func @forward(%w: tensor<3xf32> {lcc.param = "w"}) -> tensor<f32> {
      %0 = arith.addf %w, %w : tensor<3xf32>
      %1 = lcc.reduce_sum %0 {axes = array<i64: 0>} : tensor<3xf32> -> tensor<f32>
      return %1 : tensor<f32>
    })", "forward", &diags);
  EXPECT_EQ(out, "");
  EXPECT_THAT(diags,
              HasSubstr("'arith.addf' has no VJP: autodiff cannot differentiate through it"));
}

TEST(Autodiff, OpWithoutVjpOffThePathIsFine) {
  // math.exp only touches an input: not on a parameter's path.
  std::string diags;
  std::string out = runAutodiff(R"(
    func.func @forward(%w: tensor<3xf32> {lcc.param = "w"}, %x: tensor<3xf32> {lcc.input = "x"}) -> tensor<f32> {
      %e = math.exp %x : tensor<3xf32>
      %0 = lcc.mul %w, %e : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
      %1 = lcc.reduce_sum %0 {axes = array<i64: 0>} : tensor<3xf32> -> tensor<f32>
      return %1 : tensor<f32>
    })", "forward", &diags);
  EXPECT_NE(out, "") << diags;
}

TEST(Autodiff, RejectsNonScalarLossAndMissingFunction) {
  std::string diags;
  EXPECT_EQ(runAutodiff(R"(
    func.func @forward(%w: tensor<3xf32> {lcc.param = "w"}) -> tensor<3xf32> {
      return %w : tensor<3xf32>
    })", "forward", &diags), "");
  EXPECT_THAT(diags, HasSubstr("must return a single rank-0 float loss; it returns (tensor<3xf32>)"));
  diags.clear();
  EXPECT_EQ(runAutodiff("func.func @g() { return }", "forward", &diags), "");
  EXPECT_THAT(diags, HasSubstr("no function @forward"));
}

TEST(Autodiff, LossIndependentOfParams) {
  std::string err;
  auto r = runGradFunction(R"(
    func.func @forward(%w: tensor<2xf64> {lcc.param = "w"}, %x: tensor<2xf64> {lcc.input = "x"}) -> tensor<f64> {
      %1 = lcc.reduce_sum %x {axes = array<i64: 0>} : tensor<2xf64> -> tensor<f64>
      return %1 : tensor<f64>
    })", "forward",
      {HostTensor::fromVector<double>({2}, {1, 2}), HostTensor::fromVector<double>({2}, {3, 4})},
      &err);
  ASSERT_EQ(r.size(), 2u) << err;
  EXPECT_EQ(r[0].getDouble(0), 7.0);
  EXPECT_EQ(r[1].toVector<double>(), (std::vector<double>{0, 0}));
}

} // namespace

namespace {

// A developer hook for whole-model checks (issue 3 asks for gpt-tiny and
// llama-tiny in fp64): LCC_GRAD_MODULE=<file.mlir> [LCC_GRAD_FUNCTION=forward]
// [LCC_GRAD_ENTRIES=3] [LCC_GRAD_INT_HI=256] runs runModuleGradCheck on the
// file, parameters uniform in [-0.5, 0.5). Skipped when unset.
} // namespace
