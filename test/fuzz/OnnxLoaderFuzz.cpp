//===- OnnxLoaderFuzz.cpp - libFuzzer target for the ONNX loader ----------===//
//
// Any bytes -> parseOnnxModel -> importOnnx (symbolic sizes 2). Either an
// error comes back or a module that verifies; nothing may crash, hang or
// allocate without bound. CI runs it for a bounded time from a seed corpus of
// real models (test/fuzz/CMakeLists.txt).
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxImporter.h"
#include "frontends/onnx/OnnxModel.h"

#include "mlir/IR/MLIRContext.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace lcc::onnx_import;
  auto model = parseOnnxModel(llvm::StringRef(reinterpret_cast<const char *>(data), size),
                              "fuzz.onnx");
  if (!model) {
    llvm::consumeError(model.takeError());
    return 0;
  }
  static mlir::MLIRContext *context = [] {
    auto *c = new mlir::MLIRContext();
    c->disableMultithreading();
    return c;
  }();
  ImportOptions options;
  options.batch = 2;
  options.seq = 2;
  auto imported = importOnnx(*model, *context, options);
  if (!imported)
    llvm::consumeError(imported.takeError());
  return 0;
}
