//===- HarnessTest.cpp - the gradient check itself can fail ---------------===//
//
// A check that cannot fail proves nothing: these plant wrong gradients after
// lcc-autodiff (options.afterAutodiff) and expect the harness to catch them,
// down to a relative error of 1e-4 on a single parameter.
//
//===----------------------------------------------------------------------===//
#include "GradCheck.h"

#include "dialects/lcc/LccOps.h"
#include "dialects/lcc/vjp/VjpUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

using namespace lcc;
using namespace lcc::gradcheck;

namespace {

const char *kArgs = "%x: tensor<3x4xf64>, %y: tensor<4xf64>";
const char *kBody = "%out = lcc.mul %x, %y : tensor<3x4xf64>, tensor<4xf64> -> tensor<3x4xf64>";
const char *kOut = "tensor<3x4xf64>";

/// Replaces gradient result `index` (1-based: 0 is the loss) of @f_grad by
/// `rewrite(builder, grad)`.
std::function<void(mlir::ModuleOp)>
plant(unsigned index, std::function<mlir::Value(mlir::OpBuilder &, mlir::Value)> rewrite) {
  return [=](mlir::ModuleOp m) {
    auto fn = m.lookupSymbol<mlir::func::FuncOp>("f_grad");
    auto ret = llvm::cast<mlir::func::ReturnOp>(fn.getBody().front().getTerminator());
    mlir::OpBuilder b(ret);
    ret->setOperand(index, rewrite(b, ret->getOperand(index)));
  };
}

TEST(GradCheckHarness, CorrectGradientPasses) {
  GradCheckReport r = runGradCheck(kArgs, kBody, kOut);
  ASSERT_TRUE(r.ok) << toAssertion(r).message();
  ASSERT_EQ(r.params.size(), 2u);
  EXPECT_EQ(r.params[0].name, "x");
  EXPECT_EQ(r.params[0].checked, 12);
  EXPECT_LT(r.maxErr, 1e-9);
}

TEST(GradCheckHarness, SlightlyScaledGradientFails) {
  GradCheckOptions o;
  o.afterAutodiff = plant(2, [](mlir::OpBuilder &b, mlir::Value g) {
    return vjp::scale(b, b.getUnknownLoc(), g, 1.0 + 1e-4);
  });
  GradCheckReport r = runGradCheck(kArgs, kBody, kOut, o);
  EXPECT_FALSE(r.ok);
  ASSERT_EQ(r.params.size(), 2u);
  EXPECT_LT(r.params[0].maxErr, 1e-9); // x is untouched
  EXPECT_GT(r.params[1].maxErr, 5e-5);
}

TEST(GradCheckHarness, OneWrongEntryFails) {
  // Only element 2 of dy is off (by 1e-3 absolute): the per-entry metric sees it.
  GradCheckOptions o;
  o.afterAutodiff = plant(2, [](mlir::OpBuilder &b, mlir::Value g) {
    auto loc = b.getUnknownLoc();
    auto type = llvm::cast<mlir::RankedTensorType>(g.getType());
    auto bump = lcc::ConstantOp::create(
        b, loc, type,
        mlir::DenseElementsAttr::get(type, llvm::ArrayRef<double>{0.0, 0.0, 1e-3, 0.0}));
    return vjp::add(b, loc, g, bump);
  });
  GradCheckReport r = runGradCheck(kArgs, kBody, kOut, o);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.params[1].worstIndex, 2);
}

TEST(GradCheckHarness, SwappedGradientsFail) {
  // d/dx of x*x*y (2xy) replaced by x*y: the classic forgotten fan-out.
  GradCheckOptions o;
  o.afterAutodiff = plant(1, [](mlir::OpBuilder &b, mlir::Value g) {
    return vjp::scale(b, b.getUnknownLoc(), g, 0.5);
  });
  EXPECT_FALSE(checkGradients("%x: tensor<5xf64>",
                              "%out = lcc.mul %x, %x : tensor<5xf64>, tensor<5xf64> -> tensor<5xf64>",
                              "tensor<5xf64>", o));
}

TEST(GradCheckHarness, TwoPointStencilAlsoPasses) {
  GradCheckOptions o;
  o.points = 2;
  o.h = 1e-6;
  EXPECT_TRUE(checkGradients("%x: tensor<6xf64>",
                             "%out = lcc.exp %x : tensor<6xf64>", "tensor<6xf64>", o));
}

TEST(GradCheckHarness, SamplesLargeParameters) {
  GradCheckOptions o;
  o.maxEntries = 10;
  GradCheckReport r = runGradCheck("%x: tensor<50xf64>", "%out = lcc.tanh %x : tensor<50xf64>",
                                   "tensor<50xf64>", o);
  ASSERT_TRUE(r.ok) << toAssertion(r).message();
  EXPECT_EQ(r.params[0].checked, 10);
}

TEST(GradCheckHarness, ReportsPassFailures) {
  GradCheckReport r = runGradCheck("%x: tensor<3xf64>",
                                   "%out = math.exp %x : tensor<3xf64>", "tensor<3xf64>");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("'math.exp' has no VJP"), std::string::npos) << r.error;
}

} // namespace
