//===- ShapeTest.cpp - reshape, transpose, slice, concat, broadcast, gather ===//
//
// Shape ops move values without arithmetic, so every comparison is exact.
//
//===----------------------------------------------------------------------===//
#include "OpTestUtil.h"

using namespace lcc;
using namespace lcc::test;

namespace {

/// Distinct values per element (an off-by-one in any index shows up).
HostTensor distinct(ElementType type, const std::vector<int64_t> &shape) {
  return HostTensor::generate(type, shape, [&](int64_t i) {
    return type == ElementType::I1 ? double(i % 3 == 0) : double(i * 3 - 17);
  });
}

class ShapeTest : public ::testing::TestWithParam<ElementType> {};

TEST_P(ShapeTest, Reshape) {
  ElementType type = GetParam();
  for (auto [from, to] : {std::pair<std::vector<int64_t>, std::vector<int64_t>>{{2, 3, 4}, {6, 4}},
                          {{2, 3, 4}, {4, 3, 2}},
                          {{24}, {2, 1, 3, 4}},
                          {{1, 1}, {}},
                          {{}, {1, 1, 1}}}) {
    HostTensor x = distinct(type, from);
    std::string tx = x.typeString(), tr = tensorType(type, to);
    std::string src = makeFunc({tx}, {tr}, "  %r = lcc.reshape %a0 : " + tx + " -> " + tr, "%r");
    EXPECT_TRUE(runAndCompare(src, {x}, ref::reshape(toRef(x), to), 0.0)) << tx << " -> " << tr;
  }
}

TEST_P(ShapeTest, Transpose) {
  ElementType type = GetParam();
  for (std::vector<int64_t> perm : {std::vector<int64_t>{1, 0, 2}, {2, 0, 1}, {0, 2, 1},
                                    {2, 1, 0}, {0, 1, 2}}) {
    HostTensor x = distinct(type, {2, 3, 4});
    ref::Tensor want = ref::transpose(toRef(x), perm);
    std::string tx = x.typeString(), tr = tensorType(type, want.shape);
    std::string src = makeFunc(
        {tx}, {tr},
        "  %r = lcc.transpose %a0 {perm = " + i64Array(perm) + "} : " + tx + " -> " + tr, "%r");
    EXPECT_TRUE(runAndCompare(src, {x}, want, 0.0)) << i64Array(perm);
  }
  // A rank-4 head split, as attention uses it.
  HostTensor x = distinct(type, {2, 5, 3, 4});
  std::vector<int64_t> perm = {0, 2, 1, 3};
  ref::Tensor want = ref::transpose(toRef(x), perm);
  std::string tx = x.typeString(), tr = tensorType(type, want.shape);
  std::string src = makeFunc(
      {tx}, {tr}, "  %r = lcc.transpose %a0 {perm = " + i64Array(perm) + "} : " + tx + " -> " + tr,
      "%r");
  EXPECT_TRUE(runAndCompare(src, {x}, want, 0.0));
}

TEST_P(ShapeTest, Slice) {
  ElementType type = GetParam();
  struct Case {
    std::vector<int64_t> start, limit;
    std::optional<std::vector<int64_t>> step;
  } cases[] = {
      {{0, 0, 0}, {4, 5, 6}, std::nullopt},          // everything
      {{1, 2, 0}, {3, 5, 6}, std::nullopt},          // a block
      {{0, 1, 1}, {4, 5, 6}, std::vector<int64_t>{2, 3, 2}}, // strided
      {{3, 0, 5}, {4, 5, 6}, std::vector<int64_t>{1, 4, 7}}, // step past the end
      {{1, 1, 1}, {1, 5, 6}, std::nullopt},          // empty
  };
  HostTensor x = distinct(type, {4, 5, 6});
  for (const Case &c : cases) {
    std::vector<int64_t> step = c.step.value_or(std::vector<int64_t>(3, 1));
    ref::Tensor want = ref::slice(toRef(x), c.start, c.limit, step);
    std::string tx = x.typeString(), tr = tensorType(type, want.shape);
    std::string attrs = "{start = " + i64Array(c.start) + ", limit = " + i64Array(c.limit) +
                        (c.step ? ", step = " + i64Array(*c.step) : std::string()) + "}";
    std::string src =
        makeFunc({tx}, {tr}, "  %r = lcc.slice %a0 " + attrs + " : " + tx + " -> " + tr, "%r");
    EXPECT_TRUE(runAndCompare(src, {x}, want, 0.0)) << attrs;
  }
}

TEST_P(ShapeTest, Concat) {
  ElementType type = GetParam();
  for (int64_t axis : {0, 1, 2, -1}) {
    std::vector<HostTensor> parts;
    std::vector<ref::Tensor> refs;
    std::vector<std::string> types;
    int64_t sizes[] = {1, 3, 2};
    for (int p = 0; p < 3; ++p) {
      std::vector<int64_t> shape = {2, 3, 4};
      shape[ref::normalizeAxis(axis, 3)] = sizes[p];
      HostTensor t = HostTensor::generate(type, shape, [&](int64_t i) {
        return type == ElementType::I1 ? double((i + p) % 2) : double(100 * p + i);
      });
      refs.push_back(toRef(t));
      types.push_back(t.typeString());
      parts.push_back(std::move(t));
    }
    ref::Tensor want = ref::concat(refs, axis);
    std::string tr = tensorType(type, want.shape);
    std::string src = makeFunc(types, {tr},
                               "  %r = lcc.concat %a0, %a1, %a2 {axis = " + std::to_string(axis) +
                                   " : i64} : " + types[0] + ", " + types[1] + ", " + types[2] +
                                   " -> " + tr,
                               "%r");
    EXPECT_TRUE(runAndCompare(src, parts, want, 0.0)) << "axis " << axis;
  }
}

TEST_P(ShapeTest, BroadcastTo) {
  ElementType type = GetParam();
  for (auto [from, to] :
       {std::pair<std::vector<int64_t>, std::vector<int64_t>>{{4}, {2, 3, 4}},
        {{3, 1}, {2, 3, 5}},
        {{}, {2, 2}},
        {{1, 1, 4}, {2, 3, 4}},
        {{2, 3}, {2, 3}}}) {
    HostTensor x = distinct(type, from);
    std::string tx = x.typeString(), tr = tensorType(type, to);
    std::string src =
        makeFunc({tx}, {tr}, "  %r = lcc.broadcast_to %a0 : " + tx + " -> " + tr, "%r");
    EXPECT_TRUE(runAndCompare(src, {x}, ref::broadcastTo(toRef(x), to), 0.0)) << tx << " -> " << tr;
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, ShapeTest,
                         ::testing::Values(ElementType::F32, ElementType::F64, ElementType::I32,
                                           ElementType::I64, ElementType::I1),
                         [](const auto &info) { return std::string(elementTypeName(info.param)); });

//===----------------------------------------------------------------------===//
// gather
//===----------------------------------------------------------------------===//

struct GatherCase {
  std::vector<int64_t> input, indices;
  int64_t axis;
  ElementType indexType;
  std::string name;
};

class GatherTest : public ::testing::TestWithParam<std::tuple<GatherCase, ElementType>> {};

TEST_P(GatherTest, InRange) {
  const GatherCase &c = std::get<0>(GetParam());
  ElementType type = std::get<1>(GetParam());
  std::mt19937 rng(91);
  HostTensor x = distinct(type, c.input);
  int64_t dim = c.input[ref::normalizeAxis(c.axis, int64_t(c.input.size()))];
  HostTensor idx = randomInts(c.indexType, c.indices, rng, 0, dim);
  ref::Tensor want = ref::gather(toRef(x), toRef(idx), c.axis);
  std::string tx = x.typeString(), ti = idx.typeString(), tr = tensorType(type, want.shape);
  std::string src = makeFunc({tx, ti}, {tr},
                             "  %r = lcc.gather %a0, %a1 {axis = " + std::to_string(c.axis) +
                                 " : i64} : " + tx + ", " + ti + " -> " + tr,
                             "%r");
  EXPECT_TRUE(runAndCompare(src, {x, idx}, want, 0.0));
}

const GatherCase kGatherCases[] = {
    {{11, 6}, {2, 5}, 0, ElementType::I32, "embedding_i32"},
    {{11, 6}, {7}, 0, ElementType::I64, "embedding_i64"},
    {{3, 7, 4}, {2, 2}, 1, ElementType::I32, "middle_axis"},
    {{3, 4, 7}, {5}, -1, ElementType::I64, "last_axis_negative"},
    {{9}, {}, 0, ElementType::I32, "scalar_index"},
};

INSTANTIATE_TEST_SUITE_P(Ops, GatherTest,
                         ::testing::Combine(::testing::ValuesIn(kGatherCases),
                                            ::testing::Values(ElementType::F32, ElementType::F64,
                                                              ElementType::I32)),
                         [](const auto &info) {
                           return std::string(elementTypeName(std::get<1>(info.param))) + "_" +
                                  std::get<0>(info.param).name;
                         });

TEST(Gather, OutOfRangeIndicesAreClamped) {
  HostTensor table = distinct(ElementType::F32, {5, 3});
  HostTensor idx = HostTensor::fromVector<int32_t>({6}, {0, 4, 5, 100, -1, -100});
  ref::Tensor want = ref::gather(toRef(table), toRef(idx), 0);
  std::string tx = table.typeString(), ti = idx.typeString(), tr = "tensor<6x3xf32>";
  std::string src =
      makeFunc({tx, ti}, {tr}, "  %r = lcc.gather %a0, %a1 : " + tx + ", " + ti + " -> " + tr, "%r");
  EXPECT_TRUE(runAndCompare(src, {table, idx}, want, 0.0));
}

} // namespace
