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

TEST(OnnxExport, TrainedWeightsReplaceTheInitializers) {
  auto original = parameters(kModel);
  ASSERT_EQ(original.size(), 28u);
  SafetensorsFile trained;
  for (auto &entry : original) { // "trained": every value + 1 (and one all 0.5)
    const std::string &name = entry.first;
    const HostTensor &t = entry.second;
    trained.tensors[name] = HostTensor::generate(ElementType::F32, t.shape(), [&](int64_t i) {
      return name == "ln_f.bias" ? 0.5 : t.getDouble(i) + 1.0;
    });
  }
  auto bytes = llvm::MemoryBuffer::getFile(kModel, false, false);
  ASSERT_TRUE(bool(bytes));
  llvm::SmallString<128> out;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("lcc-export", "onnx", out));
  std::string error;
  ASSERT_TRUE(exportOnnx(reinterpret_cast<const uint8_t *>((*bytes)->getBufferStart()),
                         (*bytes)->getBufferSize(), trained, std::string(out), error))
      << error;
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
  EXPECT_FALSE(exportOnnx(reinterpret_cast<const uint8_t *>((*bytes)->getBufferStart()),
                          (*bytes)->getBufferSize(), extra, std::string(out), error));
  EXPECT_EQ(error, "the model has no initializer 'no.such.weight' for the trained parameter");
  SafetensorsFile shape = trained;
  shape.tensors["wte.weight"] = HostTensor(ElementType::F32, {2, 2});
  EXPECT_FALSE(exportOnnx(reinterpret_cast<const uint8_t *>((*bytes)->getBufferStart()),
                          (*bytes)->getBufferSize(), shape, std::string(out), error));
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
  SafetensorsFile trained;
  for (auto &entry : original) {
    const std::string &name = entry.first;
    const HostTensor &t = entry.second;
    ASSERT_NE(name, "val_108") << "the copy of a split tie is not a parameter";
    trained.tensors[name] = HostTensor::generate(ElementType::F32, t.shape(), [&](int64_t i) {
      return t.getDouble(i) + 0.25 * double(i % 7);
    });
  }
  ASSERT_TRUE(trained.tensors.count("lm_head.weight"));
  auto bytes = llvm::MemoryBuffer::getFile(model, false, false);
  ASSERT_TRUE(bool(bytes));
  llvm::SmallString<128> out;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("lcc-export", "onnx", out));
  std::string error;
  ASSERT_TRUE(exportOnnx(reinterpret_cast<const uint8_t *>((*bytes)->getBufferStart()),
                         (*bytes)->getBufferSize(), trained, std::string(out), error))
      << error;
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
