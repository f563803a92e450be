//===- InitTest.cpp - fill, iota, constant, random_uniform, random_normal -===//
//
// Random initializers must reproduce the counter-based algorithm bit for bit
// (Reference.h): parameters initialized by lcc must not depend on the target.
// Uniform draws are compared exactly; normal draws go through log/cos, whose
// libm and LLVM-intrinsic versions may differ in the last ulp, so those use a
// normalized error of 1e-14 (f64) and 1e-7 (f32, one ulp of the largest value).
// Statistics of 64k samples are checked as well, independently of the
// reference.
//
//===----------------------------------------------------------------------===//
#include "OpTestUtil.h"

#include <cmath>

using namespace lcc;
using namespace lcc::test;

namespace {

class InitTest : public ::testing::TestWithParam<ElementType> {};

TEST_P(InitTest, Fill) {
  ElementType type = GetParam();
  std::vector<int64_t> shape = {3, 4};
  std::string t = tensorType(type, shape);
  // Only values every element type represents exactly (no rounding rule implied).
  std::vector<double> values = type == ElementType::I1 ? std::vector<double>{0.0, 1.0}
                               : isFloatType(type)     ? std::vector<double>{0.0, 1.0, -2.5, 7.0}
                                                       : std::vector<double>{0.0, 1.0, -3.0, 7.0};
  for (double value : values) {
    char attr[64];
    std::snprintf(attr, sizeof attr, "{value = %.17e : f64}", value);
    std::string src = makeFunc({}, {t}, "  %r = lcc.fill " + std::string(attr) + " : " + t, "%r");
    HostTensor expected = HostTensor::generate(type, shape, [&](int64_t) { return value; });
    EXPECT_TRUE(runAndCompare(src, {}, toRef(expected), 0.0)) << value;
  }
}

TEST_P(InitTest, Iota) {
  ElementType type = GetParam();
  if (type == ElementType::I1)
    GTEST_SKIP() << "iota over i1 is meaningless beyond size 2";
  std::vector<int64_t> shape = {3, 4, 5};
  std::string t = tensorType(type, shape);
  for (int64_t dim : {0, 1, 2, -1}) {
    std::string src = makeFunc(
        {}, {t}, "  %r = lcc.iota {dim = " + std::to_string(dim) + " : i64} : " + t, "%r");
    EXPECT_TRUE(runAndCompare(src, {}, ref::iota(shape, dim), 0.0)) << "dim " << dim;
  }
  std::string src = makeFunc({}, {t}, "  %r = lcc.iota : " + t, "%r");
  EXPECT_TRUE(runAndCompare(src, {}, ref::iota(shape, 0), 0.0)) << "default dim";
}

TEST_P(InitTest, ConstantReturnedAndUsed) {
  ElementType type = GetParam();
  std::vector<double> values = {1, 0, 3, -4, 0, 6};
  std::string elems;
  for (size_t i = 0; i < values.size(); ++i) {
    std::string v = type == ElementType::I1 ? (values[i] != 0 ? "true" : "false")
                    : isFloatType(type)     ? std::to_string(values[i])
                                            : std::to_string(int64_t(values[i]));
    elems += (i % 3 == 0 ? (i ? "], [" : "[") : ", ") + v;
  }
  std::string t = tensorType(type, {2, 3});
  HostTensor expected = HostTensor::generate(type, {2, 3}, [&](int64_t i) { return values[i]; });
  // Returned directly: the result aliases a global, which must not be freed.
  std::string src = makeFunc({}, {t}, "  %r = lcc.constant dense<[" + elems + "]]> : " + t, "%r");
  EXPECT_TRUE(runAndCompare(src, {}, toRef(expected), 0.0));
  if (!isFloatType(type))
    return;
  // Used by arithmetic.
  std::mt19937 rng(5);
  HostTensor x = randomTensor(type, {2, 3}, rng);
  std::string src2 = makeFunc({t}, {t},
                              "  %c = lcc.constant dense<[" + elems + "]]> : " + t +
                                  "\n  %r = lcc.add %a0, %c : " + t + ", " + t + " -> " + t,
                              "%r");
  EXPECT_TRUE(runAndCompare(src2, {x}, ref::binary("add", toRef(x), toRef(expected)),
                            tolFor(type)));
}

INSTANTIATE_TEST_SUITE_P(Ops, InitTest,
                         ::testing::Values(ElementType::F32, ElementType::F64, ElementType::I32,
                                           ElementType::I64, ElementType::I1),
                         [](const auto &info) { return std::string(elementTypeName(info.param)); });

//===----------------------------------------------------------------------===//
// Random initializers
//===----------------------------------------------------------------------===//

TEST(Random, ReferenceGeneratorKnownValues) {
  // splitmix64's published first output for seed 0 (state advanced once).
  EXPECT_EQ(ref::splitmix64(0), 0xE220A8397B1DCDAFull);
  double u = ref::counterUniform(1, 0);
  EXPECT_GT(u, 0.0);
  EXPECT_LT(u, 1.0);
}

struct RandomCase {
  ElementType type;
  int64_t seed;
  std::string name;
};

class RandomTest : public ::testing::TestWithParam<RandomCase> {};

std::string f64Attr(const char *name, double v) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%s = %.17e : f64", name, v);
  return buf;
}

/// `  <name> = arith.constant <seed> : i64`: a random op's seed operand.
std::string seedConst(const std::string &name, int64_t seed) {
  return "  " + name + " = arith.constant " + std::to_string(seed) + " : i64\n";
}

TEST_P(RandomTest, UniformMatchesAlgorithmExactly) {
  const RandomCase &c = GetParam();
  std::vector<int64_t> shape = {3, 5, 7};
  std::string t = tensorType(c.type, shape);
  std::string attrs = "{" + f64Attr("low", -2.0) + ", " + f64Attr("high", 3.0) + "}";
  std::string src = makeFunc(
      {}, {t}, seedConst("%s", c.seed) + "  %r = lcc.random_uniform %s " + attrs + " : " + t, "%r");
  ref::Tensor want = ref::randomUniform(shape, -2.0, 3.0, c.seed);
  if (c.type == ElementType::F32)
    want = ref::convert(want, ref::Kind::F32);
  EXPECT_TRUE(runAndCompare(src, {}, want, 0.0));
}

TEST_P(RandomTest, NormalMatchesAlgorithm) {
  const RandomCase &c = GetParam();
  std::vector<int64_t> shape = {4, 33};
  std::string t = tensorType(c.type, shape);
  std::string attrs = "{" + f64Attr("mean", 0.5) + ", " + f64Attr("std", 0.02) + "}";
  std::string src = makeFunc(
      {}, {t}, seedConst("%s", c.seed) + "  %r = lcc.random_normal %s " + attrs + " : " + t, "%r");
  ref::Tensor want = ref::randomNormal(shape, 0.5, 0.02, c.seed);
  EXPECT_TRUE(runAndCompare(src, {}, want, c.type == ElementType::F64 ? 1e-14 : 1e-7));
}

// A seed known only at run time (a layer function's argument: repeated
// layers' initializers share one function, lcc-outline-layers) is mixed in
// by the generated code instead of at compile time: the same values.
TEST_P(RandomTest, SeedKnownOnlyAtRunTime) {
  const RandomCase &c = GetParam();
  std::vector<int64_t> shape = {4, 33};
  std::string t = tensorType(c.type, shape);
  std::string src = makeFunc({"tensor<i64>"}, {t, t},
                             "  %s = tensor.extract %a0[] : tensor<i64>\n"
                             "  %u = lcc.random_uniform %s {" +
                                 f64Attr("low", -2.0) + ", " + f64Attr("high", 3.0) + "} : " + t +
                                 "\n  %n = lcc.random_normal %s {" + f64Attr("mean", 0.5) + ", " +
                                 f64Attr("std", 0.02) + "} : " + t,
                             "%u, %n");
  auto r = run(src, {HostTensor::scalar<int64_t>(c.seed)});
  ASSERT_EQ(r.size(), 2u);
  ref::Tensor u = ref::randomUniform(shape, -2.0, 3.0, c.seed);
  if (c.type == ElementType::F32)
    u = ref::convert(u, ref::Kind::F32);
  EXPECT_TRUE(closeTo(r[0], u, 0.0));
  EXPECT_TRUE(closeTo(r[1], ref::randomNormal(shape, 0.5, 0.02, c.seed),
                      c.type == ElementType::F64 ? 1e-14 : 1e-7));
}

TEST_P(RandomTest, DefaultsAreUnitRanges) {
  const RandomCase &c = GetParam();
  std::vector<int64_t> shape = {16};
  std::string t = tensorType(c.type, shape);
  std::string src = makeFunc({}, {t, t},
                             seedConst("%s", c.seed) + "  %u = lcc.random_uniform %s : " + t +
                                 "\n  %n = lcc.random_normal %s : " + t,
                             "%u, %n");
  auto r = run(src, {});
  ASSERT_EQ(r.size(), 2u);
  ref::Tensor u = ref::randomUniform(shape, 0.0, 1.0, c.seed);
  ref::Tensor n = ref::randomNormal(shape, 0.0, 1.0, c.seed);
  if (c.type == ElementType::F32)
    u = ref::convert(u, ref::Kind::F32);
  EXPECT_TRUE(closeTo(r[0], u, 0.0));
  EXPECT_TRUE(closeTo(r[1], n, c.type == ElementType::F64 ? 1e-14 : 1e-7));
}

TEST_P(RandomTest, Statistics) {
  const RandomCase &c = GetParam();
  std::vector<int64_t> shape = {64, 1024};
  std::string t = tensorType(c.type, shape);
  std::string src =
      makeFunc({}, {t, t},
               seedConst("%s", c.seed) + "  %u = lcc.random_uniform %s {" + f64Attr("low", -1.0) +
                   ", " + f64Attr("high", 3.0) + "} : " + t + "\n  %n = lcc.random_normal %s {" +
                   f64Attr("mean", 2.0) + ", " + f64Attr("std", 0.5) + "} : " + t,
               "%u, %n");
  auto r = run(src, {});
  ASSERT_EQ(r.size(), 2u);
  auto stats = [](const HostTensor &x, double &mean, double &sd, double &lo, double &hi) {
    double s = 0, s2 = 0;
    lo = INFINITY;
    hi = -INFINITY;
    for (int64_t i = 0; i < x.numElements(); ++i) {
      double v = x.getDouble(i);
      s += v;
      s2 += v * v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    double n = double(x.numElements());
    mean = s / n;
    sd = std::sqrt(s2 / n - mean * mean);
  };
  double mean, sd, lo, hi;
  // 65536 samples: the standard error of the mean is sd / 256; allow 5 of them.
  stats(r[0], mean, sd, lo, hi);
  double usd = 4.0 / std::sqrt(12.0);
  EXPECT_NEAR(mean, 1.0, 5 * usd / 256) << "uniform mean";
  EXPECT_NEAR(sd, usd, 0.02 * usd) << "uniform std";
  EXPECT_GE(lo, -1.0);
  EXPECT_LT(hi, 3.0);
  EXPECT_LT(lo, -0.99);
  EXPECT_GT(hi, 2.99);
  stats(r[1], mean, sd, lo, hi);
  EXPECT_NEAR(mean, 2.0, 5 * 0.5 / 256) << "normal mean";
  EXPECT_NEAR(sd, 0.5, 0.02 * 0.5) << "normal std";
  EXPECT_LT(lo, 2.0 - 3.5 * 0.5) << "normal tails";
  EXPECT_GT(hi, 2.0 + 3.5 * 0.5) << "normal tails";
}

TEST(Random, SeedsGiveDifferentStreams) {
  std::string t = "tensor<64xf32>";
  std::string src =
      makeFunc({}, {t, t},
               seedConst("%s1", 1) + seedConst("%s2", 2) + "  %a = lcc.random_normal %s1 : " + t +
                   "\n  %b = lcc.random_normal %s2 : " + t,
               "%a, %b");
  auto r = run(src, {});
  ASSERT_EQ(r.size(), 2u);
  int same = 0;
  for (int64_t i = 0; i < 64; ++i)
    same += r[0].getDouble(i) == r[1].getDouble(i);
  EXPECT_LT(same, 2);
}

INSTANTIATE_TEST_SUITE_P(Ops, RandomTest,
                         ::testing::Values(RandomCase{ElementType::F32, 1234, "f32_seed1234"},
                                           RandomCase{ElementType::F64, 1234, "f64_seed1234"},
                                           RandomCase{ElementType::F32, 0, "f32_seed0"},
                                           RandomCase{ElementType::F64, -7, "f64_seed_negative"},
                                           RandomCase{ElementType::F32, 9007199254740993,
                                                      "f32_seed_large"}),
                         [](const auto &info) { return info.param.name; });

} // namespace
