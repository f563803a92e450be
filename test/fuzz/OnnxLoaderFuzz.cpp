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
#include "lcc_onnx.pb.h"

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
  // Again with every small, static graph input a compile-time constant
  // (zeros; the conformance runner's CONSTANT_INPUT mode), so that the
  // folding paths (CumSum, GatherND, ...) see mutated models too.
  ImportOptions folded = options;
  for (const onnx::ValueInfoProto &in : model->proto->graph().input()) {
    if (!in.type().has_tensor_type())
      continue;
    const auto &t = in.type().tensor_type();
    std::optional<lcc::ElementType> et = elementTypeOf(t.elem_type());
    std::vector<int64_t> shape;
    int64_t n = 1;
    bool small = et && t.has_shape();
    for (const auto &d : t.shape().dim()) {
      small = small && d.has_dim_value() && d.dim_value() >= 0 && d.dim_value() <= 4096;
      if (!small)
        break;
      shape.push_back(d.dim_value());
      n *= d.dim_value();
      small = n <= 4096;
    }
    if (small)
      folded.constantInputs[in.name()] = lcc::HostTensor(*et, shape);
  }
  if (!folded.constantInputs.empty()) {
    auto again = importOnnx(*model, *context, folded);
    if (!again)
      llvm::consumeError(again.takeError());
  }
  return 0;
}
