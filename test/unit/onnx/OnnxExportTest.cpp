//===- OnnxExportTest.cpp - lcc-run --export-onnx --------------------------===//
//
// Trained weights go back into a copy of the original model: the copy loads
// with lcc's own ONNX reader, its parameters are exactly the weights given,
// and everything else (the bool mask, the graph) is unchanged.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxImporter.h"
#include "frontends/onnx/OnnxModel.h"
#include "tools/lcc-run/OnnxExport.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <functional>
#include <gtest/gtest.h>

using namespace lcc;
using namespace lcc::onnx_import;

namespace {

const std::string kModel = std::string(LCC_SOURCE_DIR) + "/test/fixtures/onnx/gpt_ts17.onnx";

std::vector<std::pair<std::string, HostTensor>> parameters(const std::string &path,
                                                           bool untie = false) {
  auto model = loadOnnxModel(path);
  EXPECT_TRUE(bool(model)) << llvm::toString(model.takeError());
  if (!model)
    return {};
  mlir::MLIRContext context;
  ImportOptions options;
  options.batch = 2;
  options.seq = 16;
  options.untie = untie;
  auto imported = importOnnx(*model, context, options);
  EXPECT_TRUE(bool(imported)) << llvm::toString(imported.takeError());
  return imported ? std::move(imported->parameters)
                  : std::vector<std::pair<std::string, HostTensor>>();
}

/// "Trained" weights: each parameter's element i becomes f(name, value, i).
SafetensorsFile trainedFrom(const std::vector<std::pair<std::string, HostTensor>> &params,
                            const std::function<double(const std::string &, double, int64_t)> &f) {
  SafetensorsFile trained;
  for (const auto &[name, t] : params)
    trained.tensors[name] = HostTensor::generate(
        ElementType::F32, t.shape(), [&](int64_t i) { return f(name, t.getDouble(i), i); });
  return trained;
}

/// lcc-run's export of the model file `path` with `weights` into `out`.
bool exportModel(const std::string &path, const SafetensorsFile &weights, const std::string &out,
                 std::string &error) {
  auto bytes = llvm::MemoryBuffer::getFile(path, false, false);
  if (!bytes)
    return error = "cannot read " + path, false;
  Status st = exportOnnx(reinterpret_cast<const uint8_t *>((*bytes)->getBufferStart()),
                         (*bytes)->getBufferSize(), weights, out);
  error = st.message();
  return st.ok();
}

TEST(OnnxExport, TrainedWeightsReplaceTheInitializers) {
  auto original = parameters(kModel);
  ASSERT_EQ(original.size(), 28u);
  // "Trained": every value + 1 (and one all 0.5).
  SafetensorsFile trained = trainedFrom(original, [](const std::string &name, double v, int64_t) {
    return name == "ln_f.bias" ? 0.5 : v + 1.0;
  });
  llvm::SmallString<128> out;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("lcc-export", "onnx", out));
  std::string error;
  ASSERT_TRUE(exportModel(kModel, trained, std::string(out), error)) << error;
  auto exported = parameters(std::string(out));
  ASSERT_EQ(exported.size(), original.size());
  for (auto &[name, t] : exported) {
    const HostTensor &want = trained.tensors.at(name);
    ASSERT_EQ(t.shape(), want.shape()) << name;
    EXPECT_EQ(std::memcmp(t.rawData(), want.rawData(), t.byteSize()), 0) << name;
  }

  // A weight the model does not have, or of another shape: an error, no file.
  llvm::sys::fs::remove(out);
  SafetensorsFile extra = trained;
  extra.tensors["no.such.weight"] = HostTensor::scalar<float>(1.0f);
  EXPECT_FALSE(exportModel(kModel, extra, std::string(out), error));
  EXPECT_EQ(error, "the model has no initializer 'no.such.weight' for the trained parameter");
  SafetensorsFile shape = trained;
  shape.tensors["wte.weight"] = HostTensor(ElementType::F32, {2, 2});
  EXPECT_FALSE(exportModel(kModel, shape, std::string(out), error));
  EXPECT_EQ(error, "initializer 'wte.weight' has another type or shape than the trained "
                   "parameter");
  EXPECT_FALSE(llvm::sys::fs::exists(out));
}

/// The dynamo export splits GPT's tied embedding into the Gather table
/// (lm_head.weight) and a transposed copy (val_108); lcc trains one
/// parameter, and the export writes the copy from the trained table, so the
/// exported model is tied again (and --untie's two parameters are written
/// as they are).
TEST(OnnxExport, SplitTieIsWrittenFromTheTrainedTable) {
  const std::string model =
      std::string(LCC_SOURCE_DIR) + "/test/fixtures/onnx/gpt_dynamo18.onnx";
  auto original = parameters(model);
  for (const auto &entry : original)
    ASSERT_NE(entry.first, "val_108") << "the copy of a split tie is not a parameter";
  SafetensorsFile trained = trainedFrom(
      original, [](const std::string &, double v, int64_t i) { return v + 0.25 * double(i % 7); });
  ASSERT_TRUE(trained.tensors.count("lm_head.weight"));
  llvm::SmallString<128> out;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("lcc-export", "onnx", out));
  std::string error;
  ASSERT_TRUE(exportModel(model, trained, std::string(out), error)) << error;
  // Read back untied, so that both initializers are visible as they are.
  auto exported = parameters(std::string(out), /*untie=*/true);
  const HostTensor *table = nullptr, *copy = nullptr;
  for (auto &[name, t] : exported) {
    if (name == "lm_head.weight")
      table = &t;
    if (name == "val_108")
      copy = &t;
  }
  ASSERT_TRUE(table && copy);
  const HostTensor &want = trained.tensors.at("lm_head.weight");
  ASSERT_EQ(table->shape(), want.shape());
  EXPECT_EQ(std::memcmp(table->rawData(), want.rawData(), want.byteSize()), 0);
  int64_t v = want.shape()[0], d = want.shape()[1];
  ASSERT_EQ(copy->shape(), (std::vector<int64_t>{d, v}));
  for (int64_t i = 0; i < v; ++i)
    for (int64_t j = 0; j < d; ++j)
      ASSERT_EQ(copy->data<float>()[j * v + i], want.data<float>()[i * d + j]) << i << ", " << j;
  llvm::sys::fs::remove(out);
}

} // namespace
