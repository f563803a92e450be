//===- ModelGradTest.cpp - whole-model gradients against fp64 FD ----------===//
//
// The example models, imported from the DSL exactly as users write them, are
// differentiated by lcc-autodiff and checked against 4-point finite
// differences in fp64 on a seeded sample of entries of EVERY parameter. The
// DSL produces f32; the test retypes the module to f64 (every f32 tensor type)
// so that finite differences are accurate to ~1e-10. Batch and sequence are
// overridden to small sizes to keep the test fast; the architecture is the
// shipped one.
//
//===----------------------------------------------------------------------===//
#include "GradCheck.h"

#include "dialects/lcc/LccDialect.h"
#include "frontends/dsl/Importer.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <fstream>
#include <gtest/gtest.h>
#include <regex>
#include <sstream>

using namespace lcc::gradcheck;

namespace {

/// The example imported with `overrides`, printed with every f32 type as f64.
std::string importAsF64(const std::string &example, std::map<std::string, int64_t> overrides) {
  std::ifstream in(std::string(LCC_SOURCE_DIR) + "/examples/" + example);
  std::stringstream source;
  source << in.rdbuf();
  mlir::MLIRContext context;
  context.loadDialect<lcc::LccDialect, mlir::func::FuncDialect>();
  lcc::dsl::ImportOptions options;
  options.overrides = std::move(overrides);
  auto module = lcc::dsl::importDsl(source.str(), example, context, options);
  if (!module) {
    ADD_FAILURE() << llvm::toString(module.takeError());
    return "";
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  (**module).print(os);
  // Tensor types only ("xf32>" and "tensor<f32>"): attribute values stay as they are.
  text = std::regex_replace(text, std::regex("xf32>"), "xf64>");
  return std::regex_replace(text, std::regex("tensor<f32>"), "tensor<f64>");
}

void checkModel(const std::string &example, std::map<std::string, int64_t> overrides) {
  std::string module = importAsF64(example, std::move(overrides));
  ASSERT_FALSE(module.empty());
  GradCheckOptions options;
  options.maxEntries = 3; // per parameter: every parameter tensor is sampled
  options.intLo = 0;
  options.intHi = 256; // token ids over the whole byte vocabulary
  options.lo = -0.5;
  options.hi = 0.5;
  GradCheckReport report = runModuleGradCheck(module, "forward", options);
  EXPECT_TRUE(toAssertion(report));
  EXPECT_GT(report.params.size(), 20u) << "every parameter of the model is checked";
  for (const ParamReport &p : report.params)
    EXPECT_GT(p.checked, 0) << p.name;
  std::printf("[gradcheck] %s: %zu parameters, max err %.3g\n", example.c_str(),
              report.params.size(), report.maxErr);
}

TEST(ModelGrad, GptTiny) { checkModel("gpt-tiny.lcc", {{"batch", 2}, {"seq", 8}}); }

TEST(ModelGrad, LlamaTiny) { checkModel("llama-tiny.lcc", {{"batch", 2}, {"seq", 8}}); }

} // namespace
