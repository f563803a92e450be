//===- MatmulGradTest.cpp - FD checks of the matmul VJP -------------------===//
//
// Every transpose combination, for plain, batched, broadcast-batch and
// weight (rank-2 rhs under rank-3/4 activations) shapes; both operands are
// checked (fp64, 4-point stencil, err <= 1e-6, see GradCheck.h). Each case
// prints "[gradcheck] <name> max err <e>".
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

struct MatmulCase {
  std::vector<int64_t> lhsBatch, rhsBatch; // batch dims of each operand
  std::string name;
};

/// [batch..., rows, cols], or [batch..., cols, rows] when transposed.
std::vector<int64_t> operand(const std::vector<int64_t> &batch, int64_t rows, int64_t cols,
                             bool transposed) {
  std::vector<int64_t> s = batch;
  s.push_back(transposed ? cols : rows);
  s.push_back(transposed ? rows : cols);
  return s;
}

/// NumPy broadcast of two batch shapes (the test shapes are compatible).
std::vector<int64_t> broadcast(std::vector<int64_t> a, std::vector<int64_t> b) {
  if (a.size() < b.size())
    std::swap(a, b);
  std::vector<int64_t> out = a;
  size_t off = a.size() - b.size();
  for (size_t i = 0; i < b.size(); ++i)
    out[off + i] = std::max(a[off + i], b[i]);
  return out;
}

class MatmulGrad
    : public ::testing::TestWithParam<std::tuple<MatmulCase, bool /*ta*/, bool /*tb*/>> {};

TEST_P(MatmulGrad, MatchesFiniteDifferences) {
  auto [c, ta, tb] = GetParam();
  const int64_t m = 3, k = 4, n = 2;
  std::string a = f64(operand(c.lhsBatch, m, k, ta)), b = f64(operand(c.rhsBatch, k, n, tb));
  std::vector<int64_t> out = broadcast(c.lhsBatch, c.rhsBatch);
  out.push_back(m);
  out.push_back(n);
  std::string attrs = std::string("{transpose_lhs = ") + (ta ? "true" : "false") +
                      ", transpose_rhs = " + (tb ? "true" : "false") + "}";
  std::string body = "%out = lcc.matmul %a, %b " + attrs + " : " + a + ", " + b + " -> " + f64(out);
  GradCheckReport r = runGradCheck("%a: " + a + ", %b: " + b, body, f64(out));
  std::printf("[gradcheck] matmul %s ta=%d tb=%d max err %.3g\n", c.name.c_str(), ta, tb,
              r.maxErr);
  EXPECT_TRUE(toAssertion(r));
}

const MatmulCase kCases[] = {
    {{}, {}, "plain"},
    {{2}, {2}, "batched"},
    {{2}, {}, "weight_rank3"},           // rank-2 rhs: dB sums over the batch
    {{2, 3}, {}, "weight_rank4"},
    {{}, {2}, "lhs_broadcast"},          // rank-2 lhs under a batched rhs
    {{2, 1}, {1, 3}, "both_broadcast"},  // size-1 batch dims on both sides
    {{2, 3}, {3}, "rank4_by_rank3"},
};

INSTANTIATE_TEST_SUITE_P(Ops, MatmulGrad,
                         ::testing::Combine(::testing::ValuesIn(kCases), ::testing::Bool(),
                                            ::testing::Bool()),
                         [](const auto &info) {
                           return std::get<0>(info.param).name +
                                  (std::get<1>(info.param) ? "_ta" : "") +
                                  (std::get<2>(info.param) ? "_tb" : "");
                         });

TEST(MatmulGradShapes, WeightGradientIsOneRank2Matmul) {
  // The rank-2 weight's gradient folds the batch into the contraction: the
  // backward has no [batch, K, N] intermediate and no reduce_sum.
  std::string src = R"(
    func.func @f(%x: tensor<2x3x4xf64> {lcc.input = "x"},
                 %w: tensor<4x5xf64> {lcc.param = "w"}) -> tensor<f64> {
      %y = lcc.matmul %x, %w : tensor<2x3x4xf64>, tensor<4x5xf64> -> tensor<2x3x5xf64>
      %l = lcc.reduce_sum %y {axes = array<i64: 0, 1, 2>} : tensor<2x3x5xf64> -> tensor<f64>
      return %l : tensor<f64>
    })";
  std::string diags;
  std::string out = runAutodiff(src, "f", &diags);
  ASSERT_FALSE(out.empty()) << diags;
  EXPECT_NE(out.find("-> tensor<4x5xf64>"), std::string::npos) << out;
  EXPECT_EQ(out.find("tensor<2x4x5xf64>"), std::string::npos) << out;
}

} // namespace
