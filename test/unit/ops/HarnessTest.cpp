//===- HarnessTest.cpp - the comparison itself must be able to fail -------===//
//
// Every op test ends in closeTo(); these cases prove it rejects what it
// should, so a passing op test means something.
//
//===----------------------------------------------------------------------===//
#include "OpTestUtil.h"

#include <cmath>
#include <limits>

using namespace lcc;
using namespace lcc::test;

namespace {

TEST(Harness, AcceptsWithinTolerance) {
  auto got = HostTensor::fromVector<float>({3}, {1.0f, -2.0f, 100.0f});
  EXPECT_TRUE(closeTo(got, ref::Tensor({3}, {1.0, -2.0, 100.0 + 5e-4}), kTolF32));
}

TEST(Harness, RejectsFloatErrorAboveTolerance) {
  auto got = HostTensor::fromVector<float>({3}, {1.0f, -2.0f, 100.0f});
  // 3e-3 / 100 = 3e-5 normalized error > 1e-5.
  EXPECT_FALSE(closeTo(got, ref::Tensor({3}, {1.0, -2.0 + 3e-3, 100.0}), kTolF32));
  auto got64 = HostTensor::fromVector<double>({2}, {1.0, 2.0});
  EXPECT_FALSE(closeTo(got64, ref::Tensor({2}, {1.0, 2.0 + 1e-11}), kTolF64));
}

TEST(Harness, RejectsNaNInfAndShapeMismatches) {
  const double inf = std::numeric_limits<double>::infinity();
  auto nanGot = HostTensor::fromVector<float>({2}, {1.0f, NAN});
  EXPECT_FALSE(closeTo(nanGot, ref::Tensor({2}, {1.0, 2.0}), kTolF32));
  auto finite = HostTensor::fromVector<float>({2}, {1.0f, -1e30f});
  EXPECT_FALSE(closeTo(finite, ref::Tensor({2}, {1.0, -inf}), kTolF32));
  auto infGot = HostTensor::fromVector<float>({2}, {1.0f, -INFINITY});
  EXPECT_TRUE(closeTo(infGot, ref::Tensor({2}, {1.0, -inf}), kTolF32));
  EXPECT_FALSE(closeTo(infGot, ref::Tensor({1, 2}, {1.0, -inf}), kTolF32));
  EXPECT_FALSE(closeTo(finite, ref::Tensor({2}, {1.0, std::nan("")}), kTolF32));
}

TEST(Harness, IntegersAndBooleansAreExact) {
  auto ints = HostTensor::fromVector<int32_t>({2}, {3, 4});
  EXPECT_TRUE(closeTo(ints, ref::Tensor({2}, {3, 4}), kTolF32));
  EXPECT_FALSE(closeTo(ints, ref::Tensor({2}, {3, 4.00001}), kTolF32));
  auto bools = HostTensor::fromVector<bool>({2}, {true, false});
  EXPECT_FALSE(closeTo(bools, ref::Tensor({2}, {1, 1}), kTolF32));
}

TEST(HostTensor, StorageAndConversions) {
  HostTensor t(ElementType::I1, {2, 3});
  EXPECT_EQ(t.byteSize(), 6u); // one byte per boolean
  EXPECT_EQ(t.typeString(), "tensor<2x3xi1>");
  t.setDouble(4, -0.5);
  EXPECT_EQ(t.getInt(4), 1);
  EXPECT_EQ(t.getDouble(0), 0.0);

  auto s = HostTensor::scalar<int64_t>(int64_t(1) << 53);
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.numElements(), 1);
  EXPECT_EQ(s.typeString(), "tensor<i64>");
  EXPECT_EQ(s.getInt(0), int64_t(1) << 53);

  HostTensor f(ElementType::F32, {4});
  f.fill(0.1);
  EXPECT_EQ(f.toVector<float>(), std::vector<float>(4, 0.1f));
  HostTensor i(ElementType::I32, {2});
  i.fill(-2.7);
  EXPECT_EQ(i.toVector<int32_t>(), (std::vector<int32_t>{-2, -2})); // truncation, as a C++ cast
  EXPECT_NE(f, HostTensor(ElementType::F32, {4}));
  EXPECT_EQ(HostTensor(ElementType::F64, {0, 3}).byteSize(), 0u);
}

} // namespace
