//===- OnnxGptTest.cpp - PyTorch-exported GPT and LLaMA against PyTorch ---===//
//
// test/fixtures/onnx/export_{gpt,llama}.py export a tiny GPT-2 and a tiny
// LLaMA (RMSNorm, RoPE, SwiGLU, grouped-query attention) from PyTorch with
// both exporters (TorchScript, opset 17; dynamo, opset 18) and store
// PyTorch's logits, loss and per-initializer gradients (fp32) in
// {gpt,llama}_ref.safetensors. Here lcc imports each file, and
//   - the initializers it read equal PyTorch's parameters bit for bit;
//   - the logits of the imported graph (CPU JIT) match PyTorch's;
//   - the next-token cross-entropy @forward (--loss=cross-entropy) and its
//     lcc-autodiff gradients match PyTorch's loss and gradients.
// Tolerance (fp32, different but equally valid operation orders): relative
// error of each tensor in the 2-norm, ||lcc - torch|| / ||torch|| <= 1e-5;
// for the loss |lcc - torch| / |torch| <= 1e-5.
//
//===----------------------------------------------------------------------===//
#include "compiler/cpu/JitExecutor.h"
#include "frontends/dsl/Importer.h"
#include "frontends/onnx/OnnxImporter.h"
#include "frontends/onnx/OnnxModel.h"
#include "frontends/onnx/OnnxTraining.h"
#include "passes/Passes.h"
#include "runtime/support/Safetensors.h"

#include "dialects/lcc/LccDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <cmath>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

using namespace lcc;
using namespace lcc::onnx_import;

namespace {

const std::string kDir = std::string(LCC_SOURCE_DIR) + "/test/fixtures/onnx/";

/// The reference file of the current model family ("gpt" or "llama").
std::string family = "gpt";

const SafetensorsFile &reference() {
  static std::map<std::string, SafetensorsFile> files;
  auto it = files.find(family);
  if (it == files.end()) {
    SafetensorsFile f;
    Status st = readSafetensors(kDir + family + "_ref.safetensors", f);
    EXPECT_TRUE(st.ok()) << st.message();
    it = files.emplace(family, std::move(f)).first;
  }
  return it->second;
}

const HostTensor &ref(const std::string &name) {
  static HostTensor missing;
  auto it = reference().tensors.find(name);
  if (it == reference().tensors.end()) {
    ADD_FAILURE() << family << "_ref.safetensors has no '" << name << "'";
    return missing;
  }
  return it->second;
}

/// ||a - b|| / ||b|| over all elements (shapes must agree).
double relativeError(const HostTensor &a, const HostTensor &b) {
  EXPECT_EQ(a.shape(), b.shape());
  if (a.shape() != b.shape())
    return INFINITY;
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < b.numElements(); ++i) {
    double d = a.getDouble(i) - b.getDouble(i);
    diff += d * d;
    norm += b.getDouble(i) * b.getDouble(i);
  }
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
}

/// The reference gradient of an initializer: grad.NAME, or grad18.NAME for
/// the dynamo export's own initializers.
const HostTensor *refGrad(const std::string &name) {
  for (const char *prefix : {"grad.", "grad18."}) {
    auto it = reference().tensors.find(prefix + name);
    if (it != reference().tensors.end())
      return &it->second;
  }
  return nullptr;
}
const HostTensor *refParam(const std::string &name) {
  for (const char *prefix : {"param.", "param18."}) {
    auto it = reference().tensors.find(prefix + name);
    if (it != reference().tensors.end())
      return &it->second;
  }
  return nullptr;
}

struct Export {
  const char *file;
  const char *family;
  /// Float initializers of rank >= 1 that PyTorch does not train (buffers
  /// the exporter stored as initializers): frozen with --frozen in real use.
  std::vector<std::string> buffers;
  int trained;
  /// A split tie lcc restores (OnnxTies.h): the parameter, and the module
  /// parameter whose PyTorch gradient (through both uses) it must have.
  std::pair<std::string, std::string> tied = {};
};

void PrintTo(const Export &e, std::ostream *os) { *os << e.file; }

class ExportedGpt : public ::testing::TestWithParam<Export> {
protected:
  void SetUp() override { family = GetParam().family; }
};

TEST_P(ExportedGpt, LogitsMatchPyTorch) {
  auto model = loadOnnxModel(kDir + GetParam().file);
  ASSERT_TRUE(bool(model)) << llvm::toString(model.takeError());
  mlir::MLIRContext context;
  ImportOptions options;
  options.functionName = "graph";
  options.batch = 2;
  options.seq = 16;
  auto imported = importOnnx(*model, context, options);
  ASSERT_TRUE(bool(imported)) << llvm::toString(imported.takeError());
  std::vector<HostTensor> args;
  for (auto &[name, value] : imported->parameters) {
    const HostTensor *p = refParam(name);
    if (!p && llvm::is_contained(GetParam().buffers, name)) {
      args.push_back(value);
      continue;
    }
    ASSERT_TRUE(p) << "no reference value for initializer " << name;
    ASSERT_EQ(p->byteSize(), value.byteSize()) << name;
    EXPECT_EQ(std::memcmp(p->rawData(), value.rawData(), value.byteSize()), 0)
        << "initializer " << name << " differs from PyTorch's parameter";
    args.push_back(value);
  }
  const HostTensor &tokens = ref("tokens");
  args.push_back(HostTensor::generate(ElementType::I64, tokens.shape(),
                                      [&](int64_t i) { return tokens.getDouble(i); }));
  auto jit = CpuJit::compile(*imported->module);
  ASSERT_TRUE(bool(jit)) << llvm::toString(jit.takeError());
  auto out = (*jit)->call("graph", args);
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  ASSERT_EQ(out->size(), 1u);
  EXPECT_LE(relativeError((*out)[0], ref("logits")), 1e-5);
}

TEST_P(ExportedGpt, LossAndGradientsMatchPyTorch) {
  auto model = loadOnnxModel(kDir + GetParam().file);
  ASSERT_TRUE(bool(model)) << llvm::toString(model.takeError());
  mlir::MLIRContext context;
  TrainingImportOptions options;
  options.graph.batch = 2;
  options.graph.seq = 16;
  auto imported = importOnnxForTraining(*model, context, options);
  ASSERT_TRUE(bool(imported)) << llvm::toString(imported.takeError());
  auto *module = &imported->module;
  auto forward = (**module).lookupSymbol<mlir::func::FuncOp>("forward");
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    if (auto name = forward.getArgAttrOfType<mlir::StringAttr>(i, "lcc.param"))
      if (llvm::is_contained(GetParam().buffers, name.str()))
        forward.setArgAttr(i, "lcc.frozen", mlir::UnitAttr::get(&context));
  {
    mlir::PassManager pm(&context);
    LccAutodiffPassOptions autodiff;
    autodiff.function = "forward";
    pm.addPass(createLccAutodiffPass(autodiff));
    ASSERT_TRUE(mlir::succeeded(pm.run(**module)));
  }
  auto jit = CpuJit::compile(**module);
  ASSERT_TRUE(bool(jit)) << llvm::toString(jit.takeError());
  auto params = (*jit)->call("init", {});
  ASSERT_TRUE(bool(params)) << llvm::toString(params.takeError());
  std::vector<HostTensor> args = *params;
  args.push_back(ref("tokens"));
  args.push_back(ref("targets"));
  auto out = (*jit)->call("forward_grad", args);
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());

  auto grad = (**module).lookupSymbol<mlir::func::FuncOp>("forward_grad");
  ASSERT_EQ(out->size(), grad.getNumResults());
  double loss = (*out)[0].getDouble(0), want = ref("loss").getDouble(0);
  EXPECT_LE(std::fabs(loss - want) / std::fabs(want), 1e-5) << loss << " vs " << want;
  int checked = 0;
  for (unsigned r = 1; r < grad.getNumResults(); ++r) {
    auto name = grad.getResultAttrOfType<mlir::StringAttr>(r, "lcc.grad_of");
    ASSERT_TRUE(name);
    bool tied = name.str() == GetParam().tied.first;
    const HostTensor *want = refGrad(tied ? GetParam().tied.second : name.str());
    ASSERT_TRUE(want) << "no reference gradient for " << name.str();
    EXPECT_LE(relativeError((*out)[r], *want), 1e-5) << "gradient of " << name.str();
    ++checked;
  }
  EXPECT_EQ(checked, GetParam().trained);
}

/// The same architecture written in lcc's DSL (examples/gpt-tiny.lcc and
/// llama-tiny.lcc at the exported sizes), given PyTorch's weights, computes
/// PyTorch's loss. The DSL names parameters as the PyTorch models do, without
/// ".weight" on embeddings, and stores Linear weights [in, out]; nn.Linear's
/// are [out, in].
void checkDsl(const char *example, std::map<std::string, int64_t> overrides, size_t params) {
  std::ifstream in(std::string(LCC_SOURCE_DIR) + "/examples/" + example);
  std::stringstream source;
  source << in.rdbuf();
  mlir::MLIRContext context;
  dsl::ImportOptions options;
  options.overrides = std::move(overrides);
  auto module = dsl::importDsl(source.str(), example, context, options);
  ASSERT_TRUE(bool(module)) << llvm::toString(module.takeError());
  auto forward = (**module).lookupSymbol<mlir::func::FuncOp>("forward");
  std::vector<HostTensor> args;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    auto name = forward.getArgAttrOfType<mlir::StringAttr>(i, "lcc.param");
    if (!name)
      continue;
    std::string torchName = name.str();
    bool embedding = torchName.find('.') == std::string::npos; // wte, wpe, embed_tokens
    if (embedding)
      torchName += ".weight";
    const HostTensor *p = refParam(torchName);
    ASSERT_TRUE(p) << "no PyTorch parameter for " << name.str();
    HostTensor value = *p;
    if (p->rank() == 2 && !embedding) { // [out, in] -> [in, out]
      int64_t rows = p->shape()[0], cols = p->shape()[1];
      value = HostTensor::generate(ElementType::F32, {cols, rows}, [&](int64_t j) {
        return p->getDouble(j % rows * cols + j / rows);
      });
    }
    args.push_back(std::move(value));
  }
  ASSERT_EQ(args.size(), params);
  args.push_back(ref("tokens"));
  args.push_back(ref("targets"));
  auto jit = CpuJit::compile(**module);
  ASSERT_TRUE(bool(jit)) << llvm::toString(jit.takeError());
  auto out = (*jit)->call("forward", args);
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  double loss = (*out)[0].getDouble(0), want = ref("loss").getDouble(0);
  EXPECT_LE(std::fabs(loss - want) / std::fabs(want), 1e-5) << loss << " vs " << want;
}

TEST(ExportedModelInDsl, GptWeightsGiveTheSameLoss) {
  family = "gpt";
  checkDsl("gpt-tiny.lcc",
           {{"vocab", 64}, {"ctx", 16}, {"dim", 32}, {"heads", 2}, {"layers", 2}, {"batch", 2},
            {"seq", 16}},
           28);
}

TEST(ExportedModelInDsl, LlamaWeightsGiveTheSameLoss) {
  family = "llama";
  checkDsl("llama-tiny.lcc",
           {{"vocab", 64}, {"dim", 32}, {"heads", 4}, {"kv_heads", 2}, {"n_layers", 2},
            {"hidden", 96}, {"batch", 2}, {"seq", 16}},
           21);
}

// Trained initializers: every float initializer of rank >= 1 but the buffers.
// gpt dynamo18: 39 initializers less 2 int64 shapes, the bool mask and 7
// scalar constants; llama dynamo18: its cos/sin tables are buffers.
INSTANTIATE_TEST_SUITE_P(
    Exporters, ExportedGpt,
    ::testing::Values(Export{"gpt_ts17.onnx", "gpt", {}, 28},
                      Export{"gpt_dynamo18.onnx", "gpt", {}, 28, {"lm_head.weight", "wte.weight"}},
                      Export{"llama_ts17.onnx", "llama", {}, 21},
                      Export{"llama_dynamo18.onnx", "llama", {}, 21}),
    [](const auto &info) {
      std::string f = info.param.file;
      return std::string(f.find("gpt") == 0 ? "Gpt" : "Llama") +
             (f.find("ts17") != std::string::npos ? "TorchScript17" : "Dynamo18");
    });

} // namespace
