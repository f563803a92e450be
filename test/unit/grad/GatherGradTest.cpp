//===- GatherGradTest.cpp - FD checks of the gather / scatter_add VJPs ----===//
//
// gather's VJP is scatter_add and vice versa. The id tensors have more
// entries than the table has rows, so repeated ids (accumulation) always
// occur; axis 0, a middle axis, a negative axis, a scalar index and clamped
// out-of-range ids are covered (fp64, 4-point stencil, err <= 1e-6, see
// GradCheck.h). Each case prints "[gradcheck] <name> max err <e>".
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

/// table.shape[:axis] + ids.shape + table.shape[axis+1:].
std::vector<int64_t> gatheredShape(const std::vector<int64_t> &table,
                                   const std::vector<int64_t> &ids, int64_t axis) {
  if (axis < 0)
    axis += int64_t(table.size());
  std::vector<int64_t> s(table.begin(), table.begin() + axis);
  s.insert(s.end(), ids.begin(), ids.end());
  s.insert(s.end(), table.begin() + axis + 1, table.end());
  return s;
}

struct GatherCase {
  std::vector<int64_t> table, ids;
  int64_t axis;
  std::string idType;
  std::string name;
};

class GatherGrad : public ::testing::TestWithParam<GatherCase> {};

TEST_P(GatherGrad, MatchesFiniteDifferences) {
  const GatherCase &c = GetParam();
  std::string t = f64(c.table);
  std::string ids = "tensor<" + [&] {
    std::string s;
    for (int64_t d : c.ids)
      s += std::to_string(d) + "x";
    return s;
  }() + c.idType + ">";
  std::string out = f64(gatheredShape(c.table, c.ids, c.axis));
  GradCheckOptions o;
  o.intLo = 0;
  o.intHi = c.table[c.axis < 0 ? c.axis + int64_t(c.table.size()) : c.axis];
  std::string body = "%out = lcc.gather %x, %ids {axis = " + std::to_string(c.axis) +
                     " : i64} : " + t + ", " + ids + " -> " + out;
  GradCheckReport r = runGradCheck("%x: " + t + ", %ids: " + ids, body, out, o);
  std::printf("[gradcheck] gather %s max err %.3g\n", c.name.c_str(), r.maxErr);
  EXPECT_TRUE(toAssertion(r));
}

INSTANTIATE_TEST_SUITE_P(
    Ops, GatherGrad,
    ::testing::Values(GatherCase{{5, 3}, {2, 4}, 0, "i64", "embedding"},
                      GatherCase{{4, 2}, {3, 3}, 0, "i32", "embedding_i32"},
                      GatherCase{{3, 4, 2}, {6}, 1, "i64", "middle_axis"},
                      GatherCase{{2, 3, 3}, {2, 4}, -1, "i32", "last_axis_negative"},
                      GatherCase{{6, 2}, {}, 0, "i64", "scalar_index"}),
    [](const auto &info) { return info.param.name; });

TEST(GatherGradClamp, OutOfRangeIdsGetTheEdgeRowsGradient) {
  GradCheckOptions o;
  o.inputs["ids"] = HostTensor::fromVector<int64_t>({7}, {0, 4, 9, -3, 4, 2, 100});
  std::string body =
      "%out = lcc.gather %x, %ids : tensor<5x3xf64>, tensor<7xi64> -> tensor<7x3xf64>";
  GradCheckReport r =
      runGradCheck("%x: tensor<5x3xf64>, %ids: tensor<7xi64>", body, "tensor<7x3xf64>", o);
  std::printf("[gradcheck] gather clamped ids max err %.3g\n", r.maxErr);
  EXPECT_TRUE(toAssertion(r));
}

TEST(GatherGradScatter, ScatterAddUpdatesGetAGather) {
  // scatter_add's own VJP (a gather), with repeated and clamped indices.
  GradCheckOptions o;
  o.inputs["ids"] = HostTensor::fromVector<int32_t>({2, 3}, {1, 1, 3, -1, 1, 7});
  std::string body = "%out = lcc.scatter_add %u, %ids {axis = 1 : i64} : tensor<2x2x3x2xf64>, "
                     "tensor<2x3xi32> -> tensor<2x4x2xf64>";
  GradCheckReport r = runGradCheck("%u: tensor<2x2x3x2xf64>, %ids: tensor<2x3xi32>", body,
                                   "tensor<2x4x2xf64>", o);
  std::printf("[gradcheck] scatter_add max err %.3g\n", r.maxErr);
  EXPECT_TRUE(toAssertion(r));
}

TEST(GatherGradEmbedding, TableFeedsTwoLookups) {
  // An embedding used twice (tied input/output style): the two scatter_adds
  // accumulate into one gradient.
  GradCheckOptions o;
  o.intLo = 0;
  o.intHi = 4;
  std::string body =
      "%e1 = lcc.gather %x, %a : tensor<4x3xf64>, tensor<5xi64> -> tensor<5x3xf64>\n"
      "  %e2 = lcc.gather %x, %b : tensor<4x3xf64>, tensor<5xi64> -> tensor<5x3xf64>\n"
      "  %out = lcc.mul %e1, %e2 : tensor<5x3xf64>, tensor<5x3xf64> -> tensor<5x3xf64>";
  GradCheckReport r = runGradCheck(
      "%x: tensor<4x3xf64>, %a: tensor<5xi64>, %b: tensor<5xi64>", body, "tensor<5x3xf64>", o);
  std::printf("[gradcheck] gather twice max err %.3g\n", r.maxErr);
  EXPECT_TRUE(toAssertion(r));
}

} // namespace
