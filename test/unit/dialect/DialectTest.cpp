//===- DialectTest.cpp - broadcasting rules and op costs ------------------===//
#include "dialects/lcc/LccDialect.h"
#include "dialects/lcc/LccOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include <gtest/gtest.h>

using namespace mlir;

TEST(Broadcast, NumpyRules) {
  using V = llvm::SmallVector<int64_t>;
  EXPECT_EQ(*lcc::broadcastShapes({4, 3}, {3}), (V{4, 3}));
  EXPECT_EQ(*lcc::broadcastShapes({2, 1, 5}, {4, 1}), (V{2, 4, 5}));
  EXPECT_EQ(*lcc::broadcastShapes({}, {7}), (V{7}));
  EXPECT_FALSE(lcc::broadcastShapes({4, 3}, {5}).has_value());
  EXPECT_FALSE(lcc::broadcastShapes({2, 3}, {3, 3}).has_value());
}

TEST(Broadcast, NormalizeAxis) {
  EXPECT_EQ(lcc::normalizeAxis(-1, 3), 2);
  EXPECT_EQ(lcc::normalizeAxis(0, 3), 0);
  EXPECT_EQ(lcc::normalizeAxis(3, 3), -1);
  EXPECT_EQ(lcc::normalizeAxis(-4, 3), -1);
}

class CostTest : public ::testing::Test {
protected:
  CostTest() { context.loadDialect<lcc::LccDialect, func::FuncDialect>(); }
  /// Parses `body` (ops over the given arguments) and returns its first op.
  Operation *firstOp(const std::string &args, const std::string &body) {
    std::string src = "func.func @f(" + args + ") {\n" + body + "\n return\n}";
    module = parseSourceString<ModuleOp>(src, &context);
    EXPECT_TRUE(module);
    auto f = module->lookupSymbol<func::FuncOp>("f");
    return &f.getBody().front().front();
  }
  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(CostTest, MatmulCountsTwoFlopsPerMultiplyAdd) {
  Operation *op = firstOp("%a: tensor<2x4x8xf32>, %b: tensor<16x8xf32>",
                          "%0 = lcc.matmul %a, %b {transpose_rhs = true} : tensor<2x4x8xf32>, "
                          "tensor<16x8xf32> -> tensor<2x4x16xf32>");
  auto cost = llvm::cast<lcc::CostOpInterface>(op);
  EXPECT_EQ(cost.getFlops(), 2 * 2 * 4 * 16 * 8);
  EXPECT_EQ(cost.getBytesAccessed(), 4 * (2 * 4 * 8 + 16 * 8 + 2 * 4 * 16));
}

TEST_F(CostTest, TransposedLhsContractsOverRows) {
  Operation *op = firstOp("%a: tensor<8x4xf32>, %b: tensor<8x16xf32>",
                          "%0 = lcc.matmul %a, %b {transpose_lhs = true} : tensor<8x4xf32>, "
                          "tensor<8x16xf32> -> tensor<4x16xf32>");
  EXPECT_EQ(llvm::cast<lcc::CostOpInterface>(op).getFlops(), 2 * 4 * 16 * 8);
}

TEST_F(CostTest, AttentionCountsBothMatmulsAndSoftmax) {
  Operation *op =
      firstOp("%q: tensor<1x4x6x8xf32>, %k: tensor<1x2x5x8xf32>",
              "%0 = lcc.attention %q, %k, %k : tensor<1x4x6x8xf32>, tensor<1x2x5x8xf32>, "
              "tensor<1x2x5x8xf32>");
  int64_t scores = 1 * 4 * 6 * 5;
  EXPECT_EQ(llvm::cast<lcc::CostOpInterface>(op).getFlops(), 4 * scores * 8 + 5 * scores);
}

TEST_F(CostTest, ElementwiseDefaultsToOneFlopPerElement) {
  Operation *op = firstOp("%a: tensor<4x3xf32>, %b: tensor<3xf32>",
                          "%0 = lcc.add %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>");
  auto cost = llvm::cast<lcc::CostOpInterface>(op);
  EXPECT_EQ(cost.getFlops(), 12);
  EXPECT_EQ(cost.getBytesAccessed(), 4 * (12 + 3 + 12));
}

TEST_F(CostTest, ReductionsReadEveryInputElement) {
  Operation *op = firstOp("%a: tensor<4x3xf64>",
                          "%0 = lcc.reduce_sum %a {axes = array<i64: 1>} : tensor<4x3xf64> -> "
                          "tensor<4xf64>");
  auto cost = llvm::cast<lcc::CostOpInterface>(op);
  EXPECT_EQ(cost.getFlops(), 12);
  EXPECT_EQ(cost.getBytesAccessed(), 8 * (12 + 4));
}

TEST(CostScatter, ScatterAddCountsOneAddPerUpdate) {
  // Not the result size: an embedding gradient touches only the looked-up rows.
  MLIRContext context;
  context.loadDialect<lcc::LccDialect, func::FuncDialect>();
  auto module = parseSourceString<ModuleOp>(
      "func.func @f(%g: tensor<2x3x4xf32>, %i: tensor<2x3xi32>) {\n"
      "  %0 = lcc.scatter_add %g, %i : tensor<2x3x4xf32>, tensor<2x3xi32> -> tensor<50x4xf32>\n"
      "  return\n}",
      &context);
  ASSERT_TRUE(module);
  Operation *op = &module->lookupSymbol<func::FuncOp>("f").getBody().front().front();
  auto cost = llvm::cast<lcc::CostOpInterface>(op);
  EXPECT_EQ(cost.getFlops(), 24);
  EXPECT_EQ(cost.getBytesAccessed(), 4 * (24 + 50 * 4) + 4 * 6);
}
