//===- ShapeGradTest.cpp - FD checks of the shape-op VJPs -----------------===//
//
// Each shape op is followed by an elementwise tanh so that a gradient routed
// to the wrong element (a transposed or shifted copy) changes the numbers.
//
//===----------------------------------------------------------------------===//
#include "GradCheck.h"

using namespace lcc;
using namespace lcc::gradcheck;

namespace {

struct ShapeCase {
  std::string name, args, body, outType;
};
void PrintTo(const ShapeCase &c, std::ostream *os) { *os << c.name; }

class ShapeGrad : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(ShapeGrad, MatchesFiniteDifferences) {
  const ShapeCase &c = GetParam();
  std::string body = c.body + "\n%out = lcc.tanh %s : " + c.outType;
  EXPECT_TRUE(checkGradients(c.args, body, c.outType));
}

const ShapeCase kCases[] = {
    {"reshape", "%x: tensor<2x3x4xf64>",
     "%s = lcc.reshape %x : tensor<2x3x4xf64> -> tensor<6x4xf64>", "tensor<6x4xf64>"},
    {"reshape_to_scalar", "%x: tensor<1x1xf64>",
     "%s = lcc.reshape %x : tensor<1x1xf64> -> tensor<f64>", "tensor<f64>"},
    {"transpose", "%x: tensor<2x3x4xf64>",
     "%s = lcc.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf64> -> tensor<4x2x3xf64>",
     "tensor<4x2x3xf64>"},
    {"slice_step1", "%x: tensor<5x6xf64>",
     "%s = lcc.slice %x {start = array<i64: 1, 2>, limit = array<i64: 4, 6>} : tensor<5x6xf64> -> "
     "tensor<3x4xf64>",
     "tensor<3x4xf64>"},
    {"slice_one_dim", "%x: tensor<5x6xf64>",
     "%s = lcc.slice %x {start = array<i64: 0, 0>, limit = array<i64: 5, 3>} : tensor<5x6xf64> -> "
     "tensor<5x3xf64>",
     "tensor<5x3xf64>"},
    {"slice_steps", "%x: tensor<7x6x2xf64>",
     "%s = lcc.slice %x {start = array<i64: 1, 0, 1>, limit = array<i64: 7, 5, 2>, step = "
     "array<i64: 2, 3, 1>} : tensor<7x6x2xf64> -> tensor<3x2x1xf64>",
     "tensor<3x2x1xf64>"},
    {"slice_step_past_end", "%x: tensor<8xf64>",
     "%s = lcc.slice %x {start = array<i64: 2>, limit = array<i64: 8>, step = array<i64: 4>} : "
     "tensor<8xf64> -> tensor<2xf64>",
     "tensor<2xf64>"},
    {"concat", "%a: tensor<2x3xf64>, %b: tensor<2x1xf64>, %c: tensor<2x2xf64>",
     "%s = lcc.concat %a, %b, %c {axis = 1 : i64} : tensor<2x3xf64>, tensor<2x1xf64>, "
     "tensor<2x2xf64> -> tensor<2x6xf64>",
     "tensor<2x6xf64>"},
    {"concat_negative_axis_same_input", "%a: tensor<2x3xf64>, %b: tensor<1x3xf64>",
     "%s = lcc.concat %a, %b, %a {axis = -2 : i64} : tensor<2x3xf64>, tensor<1x3xf64>, "
     "tensor<2x3xf64> -> tensor<5x3xf64>",
     "tensor<5x3xf64>"},
    {"broadcast_to", "%x: tensor<3x1xf64>",
     "%s = lcc.broadcast_to %x : tensor<3x1xf64> -> tensor<2x3x4xf64>", "tensor<2x3x4xf64>"},
    {"broadcast_scalar", "%x: tensor<f64>",
     "%s = lcc.broadcast_to %x : tensor<f64> -> tensor<2x3xf64>", "tensor<2x3xf64>"},
};

INSTANTIATE_TEST_SUITE_P(Ops, ShapeGrad, ::testing::ValuesIn(kCases),
                         [](const auto &info) { return info.param.name; });

} // namespace
