//===- JitExecutorTest.cpp - the CPU JIT executor itself ------------------===//
//
// These modules use linalg/tensor/arith directly, so they test the executor
// and the linalg -> LLVM half of the pipeline independently of the lcc
// lowering patterns.
//
//===----------------------------------------------------------------------===//
#include "OpTestUtil.h"

#include "dialects/lcc/LccDialect.h"

#include <malloc.h>

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace lcc;
using namespace lcc::test;

namespace {

const char *kThreeResults = R"mlir(
func.func @main(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>)
    -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<f32>) {
  %e0 = tensor.empty() : tensor<2x3xf32>
  %sum = linalg.add ins(%a, %b : tensor<2x3xf32>, tensor<2x3xf32>)
                    outs(%e0 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %e1 = tensor.empty() : tensor<2x3xf32>
  %prod = linalg.mul ins(%a, %b : tensor<2x3xf32>, tensor<2x3xf32>)
                     outs(%e1 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %zero = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zero : f32) outs(%e2 : tensor<f32>) -> tensor<f32>
  %total = linalg.reduce ins(%a : tensor<2x3xf32>) outs(%init : tensor<f32>) dimensions = [0, 1]
    (%x: f32, %acc: f32) {
      %s = arith.addf %x, %acc : f32
      linalg.yield %s : f32
    }
  return %sum, %prod, %total : tensor<2x3xf32>, tensor<2x3xf32>, tensor<f32>
}
)mlir";

TEST(JitExecutor, MultipleResultsAndRankZero) {
  auto a = HostTensor::fromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto b = HostTensor::fromVector<float>({2, 3}, {0.5f, -1, 2, 10, 0, -3});
  std::vector<HostTensor> r = run(kThreeResults, {a, b});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].toVector<float>(), (std::vector<float>{1.5f, 1, 5, 14, 5, 3}));
  EXPECT_EQ(r[1].toVector<float>(), (std::vector<float>{0.5f, -2, 6, 40, 0, -18}));
  EXPECT_EQ(r[2].rank(), 0);
  EXPECT_EQ(r[2].elementType(), ElementType::F32);
  EXPECT_EQ(r[2].toVector<float>(), std::vector<float>{21});
}

TEST(JitExecutor, CallsTwiceAndLeavesArgumentsAlone) {
  auto jit = compile(kThreeResults);
  ASSERT_TRUE(jit);
  auto a = HostTensor::fromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor before = a;
  for (int i = 0; i < 2; ++i) {
    auto r = jit->call("main", {a, a});
    ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
    EXPECT_EQ((*r)[1].toVector<float>(), (std::vector<float>{1, 4, 9, 16, 25, 36}));
  }
  EXPECT_EQ(a, before);
}

TEST(JitExecutor, IntegerInputsAndResults) {
  const char *src = R"mlir(
func.func @main(%a: tensor<4xi32>, %b: tensor<4xi32>, %c: tensor<2x2xi64>)
    -> (tensor<4xi32>, tensor<2x2xi64>) {
  %e = tensor.empty() : tensor<4xi32>
  %s = linalg.add ins(%a, %b : tensor<4xi32>, tensor<4xi32>) outs(%e : tensor<4xi32>) -> tensor<4xi32>
  %e2 = tensor.empty() : tensor<2x2xi64>
  %m = linalg.mul ins(%c, %c : tensor<2x2xi64>, tensor<2x2xi64>) outs(%e2 : tensor<2x2xi64>) -> tensor<2x2xi64>
  return %s, %m : tensor<4xi32>, tensor<2x2xi64>
}
)mlir";
  auto a = HostTensor::fromVector<int32_t>({4}, {1, -2, 2147483000, 7});
  auto b = HostTensor::fromVector<int32_t>({4}, {10, 20, 600, -7});
  auto c = HostTensor::fromVector<int64_t>({2, 2}, {3, -4, int64_t(1) << 31, 0});
  auto r = run(src, {a, b, c});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].toVector<int32_t>(), (std::vector<int32_t>{11, 18, 2147483600, 0}));
  EXPECT_EQ(r[1].toVector<int64_t>(), (std::vector<int64_t>{9, 16, int64_t(1) << 62, 0}));
}

TEST(JitExecutor, BooleanInputsAndResults) {
  const char *src = R"mlir(
func.func @main(%a: tensor<5xi1>, %b: tensor<5xi1>) -> tensor<5xi1> {
  %e = tensor.empty() : tensor<5xi1>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      ins(%a, %b : tensor<5xi1>, tensor<5xi1>) outs(%e : tensor<5xi1>) {
    ^bb0(%x: i1, %y: i1, %o: i1):
      %v = arith.xori %x, %y : i1
      linalg.yield %v : i1
  } -> tensor<5xi1>
  return %r : tensor<5xi1>
}
)mlir";
  auto a = HostTensor::fromVector<bool>({5}, {true, true, false, false, true});
  auto b = HostTensor::fromVector<bool>({5}, {true, false, true, false, false});
  auto r = run(src, {a, b});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].toVector<bool>(), (std::vector<bool>{false, true, true, false, true}));
}

TEST(JitExecutor, ReturnsItsArgumentTwiceAndAConstant) {
  // Results aliasing an argument, each other, or a global constant must come
  // back intact and must not be freed by the executor (ASan builds catch it).
  const char *src = R"mlir(
func.func @main(%a: tensor<3xf64>) -> (tensor<3xf64>, tensor<3xf64>, tensor<2xf64>) {
  %c = arith.constant dense<[1.5, -2.5]> : tensor<2xf64>
  return %a, %a, %c : tensor<3xf64>, tensor<3xf64>, tensor<2xf64>
}
)mlir";
  auto a = HostTensor::fromVector<double>({3}, {1.0, 2.0, 3.0});
  auto r = run(src, {a});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0], a);
  EXPECT_EQ(r[1], a);
  EXPECT_EQ(r[2].toVector<double>(), (std::vector<double>{1.5, -2.5}));
}

TEST(JitExecutor, FreesResultBuffers) {
  // 50 calls returning 1 MiB each: a leak of the JIT-allocated results would
  // grow the heap by 50 MiB.
  const char *src = R"mlir(
func.func @main(%a: tensor<f32>) -> tensor<256x1024xf32> {
  %e = tensor.empty() : tensor<256x1024xf32>
  %r = linalg.broadcast ins(%a : tensor<f32>) outs(%e : tensor<256x1024xf32>) dimensions = [0, 1]
  return %r : tensor<256x1024xf32>
}
)mlir";
  auto jit = compile(src);
  ASSERT_TRUE(jit);
  auto heapBytes = [] {
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
  };
  auto x = HostTensor::scalar<float>(2.5f);
  ASSERT_TRUE(bool(jit->call("main", {x}))); // warm-up allocations of the JIT itself
  size_t before = heapBytes();
  for (int i = 0; i < 50; ++i) {
    auto r = jit->call("main", {x});
    ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
    ASSERT_EQ((*r)[0].getDouble(256 * 1024 - 1), 2.5);
  }
  size_t after = heapBytes();
  EXPECT_LT(after, before + (8u << 20)) << "heap grew from " << before << " to " << after;
}

TEST(JitExecutor, NoResults) {
  const char *src = R"mlir(
func.func @main(%a: tensor<3xf32>) {
  return
}
)mlir";
  auto r = run(src, {HostTensor(ElementType::F32, {3})});
  EXPECT_TRUE(r.empty());
}

TEST(JitExecutor, ArgumentMismatchesAreErrors) {
  auto jit = compile(kThreeResults);
  ASSERT_TRUE(jit);
  auto good = HostTensor(ElementType::F32, {2, 3});
  struct Case {
    std::vector<HostTensor> args;
    std::string function, needle;
  } cases[] = {
      {{good, HostTensor(ElementType::F64, {2, 3})}, "main", "must be tensor<2x3xf32>, got tensor<2x3xf64>"},
      {{good, HostTensor(ElementType::F32, {3, 2})}, "main", "must be tensor<2x3xf32>, got tensor<3x2xf32>"},
      {{good}, "main", "expected 2 arguments, got 1"},
      {{good, good, good}, "main", "expected 2 arguments, got 3"},
      {{good, good}, "nope", "no public function"},
  };
  for (const Case &c : cases) {
    auto r = jit->call(c.function, c.args);
    ASSERT_FALSE(bool(r)) << c.needle;
    std::string msg = llvm::toString(r.takeError());
    EXPECT_NE(msg.find(c.needle), std::string::npos) << msg;
  }
}

TEST(JitExecutor, DoesNotModifyTheCallersModule) {
  auto module = parse(kThreeResults);
  ASSERT_TRUE(module);
  std::string before;
  llvm::raw_string_ostream(before) << *module;
  auto jit = CpuJit::compile(*module);
  ASSERT_TRUE(bool(jit)) << llvm::toString(jit.takeError());
  std::string after;
  llvm::raw_string_ostream(after) << *module;
  EXPECT_EQ(before, after);
  const FunctionSignature *sig = (*jit)->signature("main");
  ASSERT_NE(sig, nullptr);
  EXPECT_EQ(sig->inputs.size(), 2u);
  EXPECT_EQ(sig->results.size(), 3u);
}

TEST(JitExecutor, PipelineFailureIsAnErrorWithDiagnostics) {
  // lcc lowering supports static shapes only: the pipeline must fail, and the
  // executor must return that failure with the MLIR diagnostic, not crash.
  const char *src = R"mlir(
func.func @main(%a: tensor<?xf32>) -> tensor<?xf32> {
  %r = lcc.exp %a : tensor<?xf32>
  return %r : tensor<?xf32>
}
)mlir";
  auto module = parse(src);
  ASSERT_TRUE(module);
  auto jit = CpuJit::compile(*module);
  ASSERT_FALSE(bool(jit));
  std::string msg = llvm::toString(jit.takeError());
  EXPECT_NE(msg.find("lowering to the LLVM dialect failed"), std::string::npos) << msg;
  EXPECT_NE(msg.find("lcc.exp"), std::string::npos) << msg;
}

TEST(JitExecutor, UnsupportedSignatureIsAnErrorAtCallTime) {
  const char *src = R"mlir(
func.func @main(%a: tensor<4xf16>) -> tensor<4xf16> {
  return %a : tensor<4xf16>
}
)mlir";
  auto jit = compile(src);
  ASSERT_TRUE(jit);
  auto r = jit->call("main", {HostTensor(ElementType::F32, {4})});
  ASSERT_FALSE(bool(r));
  std::string msg = llvm::toString(r.takeError());
  EXPECT_NE(msg.find("tensor<4xf16>, which HostTensor cannot represent"), std::string::npos) << msg;
}

} // namespace
