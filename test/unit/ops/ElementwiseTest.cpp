//===- ElementwiseTest.cpp - unary, binary, cmp, where, convert -----------===//
#include "OpTestUtil.h"

using namespace lcc;
using namespace lcc::test;

namespace {

std::string dtypeName(ElementType t) { return elementTypeName(t); }

//===----------------------------------------------------------------------===//
// Unary ops
//===----------------------------------------------------------------------===//

struct UnaryCase {
  std::string op;   // reference name ("gelu_tanh" for the tanh approximation)
  ElementType type;
};

class UnaryTest : public ::testing::TestWithParam<UnaryCase> {};

TEST_P(UnaryTest, MatchesReference) {
  const UnaryCase &c = GetParam();
  std::mt19937 rng(1234);
  std::vector<int64_t> shape = {2, 3, 17};
  bool positive = c.op == "log" || c.op == "sqrt" || c.op == "rsqrt";
  HostTensor x = randomTensor(c.type, shape, rng, positive ? 0.05 : -4.0, positive ? 5.0 : 4.0);
  std::string t = tensorType(c.type, shape);
  std::string body;
  if (c.op == "gelu_tanh")
    body = "  %r = lcc.gelu %a0 {approximate = \"tanh\"} : " + t;
  else if (c.op == "gelu")
    body = "  %r = lcc.gelu %a0 : " + t; // the default is the exact (erf) form
  else
    body = "  %r = lcc." + c.op + " %a0 : " + t;
  std::string src = makeFunc({t}, {t}, body, "%r");
  EXPECT_TRUE(runAndCompare(src, {x}, ref::unary(c.op, toRef(x)), tolFor(c.type)));
}

std::vector<UnaryCase> unaryCases() {
  std::vector<UnaryCase> cases;
  for (ElementType t : {ElementType::F32, ElementType::F64})
    for (const char *op : {"neg", "exp", "log", "tanh", "erf", "sqrt", "rsqrt", "relu", "sigmoid",
                           "silu", "gelu", "gelu_tanh"})
      cases.push_back({op, t});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Ops, UnaryTest, ::testing::ValuesIn(unaryCases()),
                         [](const auto &info) {
                           return dtypeName(info.param.type) + "_" + info.param.op;
                         });

TEST(Unary, GeluExplicitNoneEqualsDefault) {
  std::mt19937 rng(7);
  HostTensor x = randomTensor(ElementType::F32, {9}, rng, -3, 3);
  std::string t = tensorType(ElementType::F32, {9});
  std::string src = makeFunc({t}, {t}, "  %r = lcc.gelu %a0 {approximate = \"none\"} : " + t, "%r");
  EXPECT_TRUE(runAndCompare(src, {x}, ref::unary("gelu", toRef(x)), kTolF32));
}

//===----------------------------------------------------------------------===//
// Binary ops with NumPy broadcasting
//===----------------------------------------------------------------------===//

struct Shapes {
  std::vector<int64_t> lhs, rhs;
  std::string name;
};

const Shapes kBroadcastShapes[] = {
    {{2, 3, 5}, {2, 3, 5}, "same"},
    {{2, 3, 5}, {5}, "trailing"},
    {{3, 1}, {1, 5}, "outer"},
    {{2, 1, 5}, {3, 1}, "mixed_rank"},
    {{}, {2, 3}, "scalar_lhs"},
    {{4, 6}, {}, "scalar_rhs"},
    {{1, 4, 1}, {2, 1, 3}, "both_ones"},
};

struct BinaryCase {
  std::string op;
  ElementType type;
  Shapes shapes;
};

class BinaryTest : public ::testing::TestWithParam<BinaryCase> {};

TEST_P(BinaryTest, MatchesReference) {
  const BinaryCase &c = GetParam();
  std::mt19937 rng(99);
  // Domains where each op is well conditioned: pow wants a positive base,
  // div a divisor away from zero.
  double lo = c.op == "pow" ? 0.1 : -3.0, hi = 3.0;
  HostTensor a = randomTensor(c.type, c.shapes.lhs, rng, lo, hi);
  HostTensor b = c.op == "div" ? randomTensor(c.type, c.shapes.rhs, rng, 0.5, 2.0)
                               : randomTensor(c.type, c.shapes.rhs, rng, -2.0, 2.0);
  if (c.op == "div") // give the divisor both signs
    for (int64_t i = 0; i < b.numElements(); i += 2)
      b.setDouble(i, -b.getDouble(i));
  ref::Tensor want = ref::binary(c.op, toRef(a), toRef(b));
  std::string ta = a.typeString(), tb = b.typeString(), tr = tensorType(c.type, want.shape);
  std::string src = makeFunc({ta, tb}, {tr},
                             "  %r = lcc." + c.op + " %a0, %a1 : " + ta + ", " + tb + " -> " + tr,
                             "%r");
  EXPECT_TRUE(runAndCompare(src, {a, b}, want, tolFor(c.type)));
}

std::vector<BinaryCase> binaryCases() {
  std::vector<BinaryCase> cases;
  for (ElementType t : {ElementType::F32, ElementType::F64})
    for (const char *op : {"add", "sub", "mul", "div", "pow", "maximum", "minimum"})
      for (const Shapes &s : kBroadcastShapes)
        cases.push_back({op, t, s});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Ops, BinaryTest, ::testing::ValuesIn(binaryCases()),
                         [](const auto &info) {
                           return dtypeName(info.param.type) + "_" + info.param.op + "_" +
                                  info.param.shapes.name;
                         });

//===----------------------------------------------------------------------===//
// cmp, where, convert
//===----------------------------------------------------------------------===//

struct CmpCase {
  std::string predicate;
  ElementType type;
};

class CmpTest : public ::testing::TestWithParam<CmpCase> {};

TEST_P(CmpTest, MatchesReference) {
  const CmpCase &c = GetParam();
  std::mt19937 rng(5);
  // Small integer values (also for floats) so that equality actually occurs.
  HostTensor a = randomInts(c.type, {2, 3, 4}, rng, -2, 3);
  HostTensor b = randomInts(c.type, {3, 1}, rng, -2, 3);
  ref::Tensor want = ref::cmp(c.predicate, toRef(a), toRef(b));
  std::string ta = a.typeString(), tb = b.typeString(),
              tr = tensorType(ElementType::I1, want.shape);
  std::string src = makeFunc({ta, tb}, {tr},
                             "  %r = lcc.cmp \"" + c.predicate + "\", %a0, %a1 : " + ta + ", " +
                                 tb + " -> " + tr,
                             "%r");
  EXPECT_TRUE(runAndCompare(src, {a, b}, want, 0.0));
}

std::vector<CmpCase> cmpCases() {
  std::vector<CmpCase> cases;
  for (ElementType t : {ElementType::F32, ElementType::F64, ElementType::I32, ElementType::I64})
    for (const char *p : {"eq", "ne", "lt", "le", "gt", "ge"})
      cases.push_back({p, t});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Ops, CmpTest, ::testing::ValuesIn(cmpCases()), [](const auto &info) {
  return dtypeName(info.param.type) + "_" + info.param.predicate;
});

class WhereTest : public ::testing::TestWithParam<ElementType> {};

TEST_P(WhereTest, BroadcastsAllThree) {
  ElementType type = GetParam();
  std::mt19937 rng(11);
  HostTensor cond = randomInts(ElementType::I1, {2, 1, 4}, rng, 0, 2);
  HostTensor a = randomTensor(type, {3, 1}, rng);
  HostTensor b = randomTensor(type, {4}, rng);
  ref::Tensor want = ref::where(toRef(cond), toRef(a), toRef(b));
  std::string tc = cond.typeString(), ta = a.typeString(), tb = b.typeString(),
              tr = tensorType(type, want.shape);
  std::string src = makeFunc({tc, ta, tb}, {tr},
                             "  %r = lcc.where %a0, %a1, %a2 : " + tc + ", " + ta + ", " + tb +
                                 " -> " + tr,
                             "%r");
  EXPECT_TRUE(runAndCompare(src, {cond, a, b}, want, 0.0)); // a selection is exact
}

INSTANTIATE_TEST_SUITE_P(Ops, WhereTest, ::testing::Values(ElementType::F32, ElementType::F64),
                         [](const auto &info) { return dtypeName(info.param); });

struct ConvertCase {
  ElementType from, to;
};

class ConvertTest : public ::testing::TestWithParam<ConvertCase> {};

ref::Kind kindOf(ElementType t) {
  switch (t) {
  case ElementType::F32: return ref::Kind::F32;
  case ElementType::F64: return ref::Kind::F64;
  case ElementType::I32: return ref::Kind::I32;
  case ElementType::I64: return ref::Kind::I64;
  case ElementType::I1: return ref::Kind::I1;
  }
  return ref::Kind::F32;
}

TEST_P(ConvertTest, MatchesReference) {
  const ConvertCase &c = GetParam();
  std::mt19937 rng(3);
  std::vector<int64_t> shape = {3, 7};
  HostTensor x = c.from == ElementType::I1 ? randomInts(c.from, shape, rng, 0, 2)
                 : isFloatType(c.from)     ? randomTensor(c.from, shape, rng, -1000.0, 1000.0)
                                           : randomInts(c.from, shape, rng, -100000, 100000);
  std::string tx = x.typeString(), tr = tensorType(c.to, shape);
  std::string src = makeFunc({tx}, {tr}, "  %r = lcc.convert %a0 : " + tx + " -> " + tr, "%r");
  // Conversions are exact (f64 -> f32 rounds once, as the reference does).
  EXPECT_TRUE(runAndCompare(src, {x}, ref::convert(toRef(x), kindOf(c.to)), 0.0));
}

INSTANTIATE_TEST_SUITE_P(
    Ops, ConvertTest,
    ::testing::Values(ConvertCase{ElementType::F32, ElementType::F64},
                      ConvertCase{ElementType::F64, ElementType::F32},
                      ConvertCase{ElementType::I32, ElementType::F32},
                      ConvertCase{ElementType::I64, ElementType::F64},
                      ConvertCase{ElementType::I32, ElementType::F64},
                      ConvertCase{ElementType::I1, ElementType::F32},
                      ConvertCase{ElementType::I32, ElementType::I64},
                      ConvertCase{ElementType::I64, ElementType::I32},
                      ConvertCase{ElementType::F32, ElementType::I32},
                      ConvertCase{ElementType::F64, ElementType::I64}),
    [](const auto &info) {
      return dtypeName(info.param.from) + "_to_" + dtypeName(info.param.to);
    });

} // namespace
