//===- ScatterTest.cpp - scatter_add against the C++ reference ------------===//
//
// scatter_add is gather's adjoint (the embedding gradient), so the cases
// mirror GatherTest, with fewer rows than indices so that repeated indices
// must accumulate, and the same out-of-range clamping. Sums of up to a few
// terms: f32 is compared at the usual 1e-5, f64 at 1e-12.
//
//===----------------------------------------------------------------------===//
#include "OpTestUtil.h"

using namespace lcc;
using namespace lcc::test;

namespace {

struct ScatterCase {
  std::vector<int64_t> result, indices;
  int64_t axis;
  ElementType indexType;
  std::string name;
};

/// updates.shape = result[:axis] + indices.shape + result[axis+1:].
std::vector<int64_t> updatesShape(const ScatterCase &c) {
  int64_t axis = ref::normalizeAxis(c.axis, int64_t(c.result.size()));
  std::vector<int64_t> s(c.result.begin(), c.result.begin() + axis);
  s.insert(s.end(), c.indices.begin(), c.indices.end());
  s.insert(s.end(), c.result.begin() + axis + 1, c.result.end());
  return s;
}

std::string scatterFunc(const HostTensor &updates, const HostTensor &indices, int64_t axis,
                        const std::string &resultType) {
  std::string tu = updates.typeString(), ti = indices.typeString();
  return makeFunc({tu, ti}, {resultType},
                  "  %r = lcc.scatter_add %a0, %a1 {axis = " + std::to_string(axis) +
                      " : i64} : " + tu + ", " + ti + " -> " + resultType,
                  "%r");
}

class ScatterAddTest : public ::testing::TestWithParam<std::tuple<ScatterCase, ElementType>> {};

TEST_P(ScatterAddTest, RepeatedIndicesAccumulate) {
  const ScatterCase &c = std::get<0>(GetParam());
  ElementType type = std::get<1>(GetParam());
  std::mt19937 rng(17);
  HostTensor updates = randomTensor(type, updatesShape(c), rng);
  int64_t dim = c.result[ref::normalizeAxis(c.axis, int64_t(c.result.size()))];
  HostTensor idx = randomInts(c.indexType, c.indices, rng, 0, dim);
  ref::Tensor want = ref::scatterAdd(toRef(updates), toRef(idx), c.axis, c.result);
  std::string src = scatterFunc(updates, idx, c.axis, tensorType(type, c.result));
  EXPECT_TRUE(runAndCompare(src, {updates, idx}, want, tolFor(type)));
}

const ScatterCase kScatterCases[] = {
    {{4, 6}, {2, 5}, 0, ElementType::I32, "embedding_i32"}, // 10 ids into 4 rows
    {{3, 6}, {7}, 0, ElementType::I64, "embedding_i64"},
    {{3, 2, 4}, {2, 3}, 1, ElementType::I32, "middle_axis"},
    {{3, 4, 2}, {5}, -1, ElementType::I64, "last_axis_negative"},
    {{9}, {}, 0, ElementType::I32, "scalar_index"},
    {{5, 3}, {1}, 0, ElementType::I64, "single_index"},
};

INSTANTIATE_TEST_SUITE_P(Ops, ScatterAddTest,
                         ::testing::Combine(::testing::ValuesIn(kScatterCases),
                                            ::testing::Values(ElementType::F32, ElementType::F64)),
                         [](const auto &info) {
                           return std::string(elementTypeName(std::get<1>(info.param))) + "_" +
                                  std::get<0>(info.param).name;
                         });

TEST(ScatterAdd, OutOfRangeIndicesAreClampedAsGatherClampsThem) {
  HostTensor updates = HostTensor::generate(ElementType::F64, {6, 3},
                                            [](int64_t i) { return double(i * 3 - 17); });
  HostTensor idx = HostTensor::fromVector<int32_t>({6}, {0, 4, 5, 100, -1, -100});
  ref::Tensor want = ref::scatterAdd(toRef(updates), toRef(idx), 0, {5, 3});
  // Rows 0 and 4 collect the clamped ids; rows 1..3 stay zero.
  EXPECT_EQ(want.at({0, 0}), updates.toDoubles()[0] + updates.toDoubles()[12] +
                                 updates.toDoubles()[15]);
  EXPECT_TRUE(runAndCompare(scatterFunc(updates, idx, 0, "tensor<5x3xf64>"), {updates, idx}, want,
                            0.0));
}

/// The defining property: <scatter_add(u, i), x> = <u, gather(x, i)> for
/// every x, which makes scatter_add gather's VJP (checked here against the
/// gather reference, independently of the scatter reference).
TEST(ScatterAdd, IsTheAdjointOfGather) {
  std::mt19937 rng(5);
  std::vector<int64_t> tableShape = {3, 7, 2}, idxShape = {4, 2};
  HostTensor x = randomTensor(ElementType::F64, tableShape, rng);
  HostTensor idx = randomInts(ElementType::I64, idxShape, rng, -2, 9); // some clamp
  ref::Tensor gathered = ref::gather(toRef(x), toRef(idx), 1);
  HostTensor u = randomTensor(ElementType::F64, gathered.shape, rng);
  std::vector<HostTensor> out =
      run(scatterFunc(u, idx, 1, tensorType(ElementType::F64, tableShape)), {u, idx});
  ASSERT_EQ(out.size(), 1u);
  std::vector<double> s = out[0].toDoubles(), xs = x.toDoubles(), us = u.toDoubles();
  double lhs = 0, rhs = 0;
  for (size_t i = 0; i < s.size(); ++i)
    lhs += s[i] * xs[i];
  for (size_t i = 0; i < us.size(); ++i)
    rhs += us[i] * gathered.data[i];
  EXPECT_NEAR(lhs, rhs, 1e-12 * std::max(1.0, std::abs(rhs)));
}

} // namespace
