//===- TorchRefCommon.cpp - shared by the PyTorch reference tests ---------===//
#include "TorchRefCommon.h"

#include "dialects/lcc/LccDialect.h"
#include "frontends/dsl/Importer.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

#include <fstream>
#include <gtest/gtest.h>
#include <regex>
#include <sstream>

namespace lcc::torchref {

namespace {
const std::string kDir = std::string(LCC_SOURCE_DIR) + "/test/fixtures/torch/";
} // namespace

mlir::MLIRContext &context() {
  static mlir::MLIRContext *ctx = [] {
    auto *c = new mlir::MLIRContext();
    c->disableMultithreading(); // one small model: threads only cost time on CI
    mlir::DialectRegistry registry;
    registry.insert<LccDialect>();
    mlir::registerAllDialects(registry);
    c->appendDialectRegistry(registry);
    c->loadDialect<LccDialect, mlir::func::FuncDialect>();
    return c;
  }();
  return *ctx;
}

SafetensorsFile loadFixture(const std::string &name) {
  SafetensorsFile f;
  Status s = readSafetensors(kDir + name, f);
  EXPECT_TRUE(s) << s.message();
  return f;
}

llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>> importRefModel(bool f64) {
  std::ifstream in(kDir + "gpt-ref.lcc");
  std::stringstream source;
  source << in.rdbuf();
  auto imported = dsl::importDsl(source.str(), "gpt-ref.lcc", context(), {});
  if (!imported || !f64)
    return imported;
  std::string text;
  llvm::raw_string_ostream os(text);
  (**imported).print(os);
  // Tensor types only ("xf32>" and "tensor<f32>"); attributes stay as they are.
  text = std::regex_replace(text, std::regex("xf32>"), "xf64>");
  text = std::regex_replace(text, std::regex("tensor<f32>"), "tensor<f64>");
  auto module = mlir::parseSourceString<mlir::ModuleOp>(text, &context());
  if (!module)
    return llvm::createStringError("the retyped module does not parse");
  return module;
}

HostTensor widen(const HostTensor &t) {
  HostTensor out(ElementType::F64, t.shape());
  for (int64_t i = 0; i < t.numElements(); ++i)
    out.setDouble(i, t.getDouble(i));
  return out;
}

} // namespace lcc::torchref
