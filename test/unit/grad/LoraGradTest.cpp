//===- LoraGradTest.cpp - FD check of a LoRA-adapted matmul ---------------===//
//
// lcc-lora rewrites y = x @ W into y + scale * (x @ A^T) @ B^T before
// autodiff; the adapters' gradients are checked against fp64 finite
// differences (GradCheck.h) with random nonzero A and B, W frozen, for a
// weight used as x @ W and one used as x @ W^T.
//
//===----------------------------------------------------------------------===//
#include "GradCheck.h"

#include "dialects/lcc/LccDialect.h"
#include "passes/train/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

using namespace lcc;
using namespace lcc::gradcheck;

namespace {

/// `source` after lcc-lora{function=f rank=2 alpha=3 targets=...}, printed.
std::string adapted(const std::string &source, const std::string &target, std::string &error) {
  mlir::MLIRContext context;
  context.loadDialect<LccDialect, mlir::func::FuncDialect, mlir::arith::ArithDialect>();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(source, &context);
  if (!module) {
    error = "does not parse";
    return "";
  }
  mlir::PassManager pm(&context);
  LccLoraPassOptions options;
  options.function = "f";
  options.rank = 2;
  options.alpha = 3.0;
  options.targets.push_back(target);
  pm.addPass(createLccLoraPass(options));
  if (mlir::failed(pm.run(*module))) {
    error = "lcc-lora failed";
    return "";
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os);
  return text;
}

const char *kModule = R"(
func.func @init() -> (tensor<5x3xf64>, tensor<4x3xf64>) {
  %a = lcc.fill {value = 0.5 : f64} : tensor<5x3xf64>
  %b = lcc.fill {value = 0.5 : f64} : tensor<4x3xf64>
  return %a, %b : tensor<5x3xf64>, tensor<4x3xf64>
}
func.func @f(%w: tensor<5x3xf64> {lcc.param = "w.weight"}, %v: tensor<4x3xf64> {lcc.param = "v.weight"},
             %x: tensor<2x4x5xf64> {lcc.input = "x"}) -> tensor<f64> {
  %y = lcc.matmul %x, %w : tensor<2x4x5xf64>, tensor<5x3xf64> -> tensor<2x4x3xf64>
  %t = lcc.tanh %y : tensor<2x4x3xf64>
  %z = lcc.matmul %t, %v {transpose_rhs = true} : tensor<2x4x3xf64>, tensor<4x3xf64> -> tensor<2x4x4xf64>
  %s = lcc.mul %z, %z : tensor<2x4x4xf64>, tensor<2x4x4xf64> -> tensor<2x4x4xf64>
  %l = lcc.reduce_sum %s {axes = array<i64: 0, 1, 2>} : tensor<2x4x4xf64> -> tensor<f64>
  return %l : tensor<f64>
}
)";

TEST(LoraGrad, AdaptersMatchFiniteDifferences) {
  for (const char *target : {"w", "v"}) {
    std::string error;
    std::string module = adapted(kModule, target, error);
    ASSERT_TRUE(error.empty()) << target << ": " << error;
    // Only the adapters are parameters now (the base is frozen): A and B
    // get random values, not @init's zero B.
    ASSERT_NE(module.find(std::string(target) + ".lora_A.weight"), std::string::npos);
    GradCheckReport report = runModuleGradCheck(module, "f");
    EXPECT_TRUE(report.ok) << target << ": " << report.error;
    EXPECT_EQ(report.params.size(), 2u) << target;
    std::printf("[gradcheck] lora on %s: max err %.3g\n", target, report.maxErr);
  }
}

} // namespace
