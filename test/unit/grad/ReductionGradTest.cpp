//===- ReductionGradTest.cpp - FD checks of reduce_sum/mean/max VJPs ------===//
#include "GradCheck.h"

using namespace lcc;
using namespace lcc::gradcheck;

namespace {

struct ReduceCase {
  std::string op;
  std::vector<int64_t> axes;
  bool keepdim;
};
void PrintTo(const ReduceCase &c, std::ostream *os) {
  *os << c.op << (c.keepdim ? " keepdim" : "");
}

std::string tensorType(const std::vector<int64_t> &shape) {
  return HostTensor(ElementType::F64, shape).typeString();
}

class ReduceGrad : public ::testing::TestWithParam<ReduceCase> {};

TEST_P(ReduceGrad, MatchesFiniteDifferences) {
  const ReduceCase &c = GetParam();
  std::vector<int64_t> in = {2, 3, 4}, out;
  for (int64_t d = 0; d < 3; ++d) {
    bool reduced = false;
    for (int64_t a : c.axes)
      reduced |= (a < 0 ? a + 3 : a) == d;
    if (!reduced)
      out.push_back(in[d]);
    else if (c.keepdim)
      out.push_back(1);
  }
  std::string axes;
  for (size_t i = 0; i < c.axes.size(); ++i)
    axes += (i ? ", " : "") + std::to_string(c.axes[i]);
  std::string body = "%out = lcc." + c.op + " %x {axes = array<i64: " + axes + ">" +
                     (c.keepdim ? ", keepdim = true" : "") + "} : " + tensorType(in) + " -> " +
                     tensorType(out);
  GradCheckOptions o;
  if (c.op == "reduce_max")
    o.inputs["x"] = separatedValues(in, 11); // the argmax cannot move within the stencil
  EXPECT_TRUE(checkGradients("%x: " + tensorType(in), body, tensorType(out), o));
}

std::vector<ReduceCase> cases() {
  std::vector<ReduceCase> out;
  for (const char *op : {"reduce_sum", "reduce_mean", "reduce_max"})
    for (auto axes : std::vector<std::vector<int64_t>>{{0}, {1}, {-1}, {0, 2}, {0, 1, 2}})
      for (bool keep : {false, true})
        out.push_back({op, axes, keep});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Ops, ReduceGrad, ::testing::ValuesIn(cases()), [](const auto &info) {
  std::string name = info.param.op + "_axes";
  for (int64_t a : info.param.axes)
    name += a < 0 ? "_m" + std::to_string(-a) : "_" + std::to_string(a);
  return name + (info.param.keepdim ? "_keep" : "");
});

TEST(ReduceMaxGradExact, TiesSplitEvenly) {
  std::string err;
  auto r = runGradFunction(R"(
    func.func @f(%x: tensor<2x4xf64> {lcc.param = "x"}) -> tensor<f64> {
      %m = lcc.reduce_max %x {axes = array<i64: 1>} : tensor<2x4xf64> -> tensor<2xf64>
      %l = lcc.reduce_sum %m {axes = array<i64: 0>} : tensor<2xf64> -> tensor<f64>
      return %l : tensor<f64>
    })", "f", {HostTensor::fromVector<double>({2, 4}, {1, 3, 3, 2, 5, 5, 5, 5})}, &err);
  ASSERT_EQ(r.size(), 2u) << err;
  EXPECT_EQ(r[1].toVector<double>(),
            (std::vector<double>{0, 0.5, 0.5, 0, 0.25, 0.25, 0.25, 0.25}));
}

} // namespace
