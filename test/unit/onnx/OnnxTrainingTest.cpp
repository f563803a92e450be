//===- OnnxTrainingTest.cpp - an imported graph as a trainable model -------===//
//
// importOnnxForTraining's choices: which output is the loss, which inputs
// become lcc-run's tokens and targets, an all-ones attention mask; each
// checked by running the imported @forward against a plain reference.
//
//===----------------------------------------------------------------------===//
#include "compiler/cpu/JitExecutor.h"
#include "frontends/onnx/OnnxModel.h"
#include "frontends/onnx/OnnxTraining.h"
#include "test/unit/onnx/OnnxTestModels.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"

#include <cmath>
#include <gtest/gtest.h>

using namespace lcc;
using namespace lcc::onnx_import;
using namespace lcc::test;

namespace {

/// A model exported with its loss: logits = Gather(emb, ids), loss =
/// SoftmaxCrossEntropyLoss over the class axis. --loss=loss keeps it, and its
/// two integer inputs become lcc-run's tokens and targets (i32).
TEST(OnnxLoader, NamedLossOutputWithTokenInputs) {
  const int64_t v = 5, b = 2, t = 3;
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto *set = m.add_opset_import();
  set->set_version(17);
  onnx::GraphProto &g = *m.mutable_graph();
  addInput(g, "ids", {b, t}, onnx::TensorProto::INT64);
  addInput(g, "labels", {b, t}, onnx::TensorProto::INT64);
  onnx::TensorProto *emb = g.add_initializer();
  emb->set_name("emb");
  emb->set_data_type(onnx::TensorProto::FLOAT);
  emb->add_dims(v);
  emb->add_dims(v);
  for (int i = 0; i < v * v; ++i)
    emb->add_float_data(0.3f * float(i % 7) - 0.8f);
  addNode(g, "Gather", {"emb", "ids"}, {"logits"});
  addNode(g, "Transpose", {"logits"}, {"scores"});
  auto *perm = g.mutable_node(1)->add_attribute();
  perm->set_name("perm");
  perm->set_type(onnx::AttributeProto::INTS);
  for (int64_t p : {0, 2, 1})
    perm->add_ints(p);
  addNode(g, "SoftmaxCrossEntropyLoss", {"scores", "labels"}, {"loss"});
  g.add_output()->set_name("loss");

  auto model = parseOnnxModel(m.SerializeAsString(), "model.onnx");
  ASSERT_TRUE(bool(model)) << llvm::toString(model.takeError());
  mlir::MLIRContext context;
  TrainingImportOptions options;
  options.loss = "loss";
  auto imported = importOnnxForTraining(*model, context, options);
  ASSERT_TRUE(bool(imported)) << llvm::toString(imported.takeError());
  auto *module = &imported->module;
  auto forward = (**module).lookupSymbol<mlir::func::FuncOp>("forward");
  ASSERT_EQ(forward.getNumArguments(), 3u);
  EXPECT_EQ(forward.getArgAttrOfType<mlir::StringAttr>(0, "lcc.param").str(), "emb");
  EXPECT_EQ(forward.getArgAttrOfType<mlir::StringAttr>(1, "lcc.input").str(), "tokens");
  EXPECT_EQ(forward.getArgAttrOfType<mlir::StringAttr>(2, "lcc.input").str(), "targets");

  auto jit = CpuJit::compile(**module);
  ASSERT_TRUE(bool(jit)) << llvm::toString(jit.takeError());
  auto params = (*jit)->call("init", {});
  ASSERT_TRUE(bool(params)) << llvm::toString(params.takeError());
  std::vector<int32_t> ids = {0, 4, 2, 3, 3, 1}, labels = {1, 0, 4, 2, 3, 0};
  auto out = (*jit)->call("forward", {(*params)[0], HostTensor::fromVector<int32_t>({b, t}, ids),
                                      HostTensor::fromVector<int32_t>({b, t}, labels)});
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  // Reference: mean over positions of logsumexp(row) - row[label], in double.
  double want = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    double row[v], mx = -1e300, sum = 0;
    for (int64_t c = 0; c < v; ++c)
      mx = std::max(mx, row[c] = double(0.3f * float((ids[i] * v + c) % 7) - 0.8f));
    for (int64_t c = 0; c < v; ++c)
      sum += std::exp(row[c] - mx);
    want += mx + std::log(sum) - row[labels[i]];
  }
  want /= double(ids.size());
  EXPECT_NEAR((*out)[0].getDouble(0), want, 1e-5 * std::fabs(want));

  // --loss=auto (the default) takes the one scalar output, saying so: the
  // same @forward, the same loss.
  auto picked = importOnnxForTraining(*model, context, TrainingImportOptions());
  ASSERT_TRUE(bool(picked)) << llvm::toString(picked.takeError());
  EXPECT_EQ(picked->notices, std::vector<std::string>{"loss: graph output 'loss', the graph's one "
                                                      "scalar float output (--loss=NAME chooses "
                                                      "another)"});
  auto pickedJit = CpuJit::compile(*picked->module);
  ASSERT_TRUE(bool(pickedJit)) << llvm::toString(pickedJit.takeError());
  auto again = (*pickedJit)
                   ->call("forward", {(*params)[0], HostTensor::fromVector<int32_t>({b, t}, ids),
                                      HostTensor::fromVector<int32_t>({b, t}, labels)});
  ASSERT_TRUE(bool(again)) << llvm::toString(again.takeError());
  EXPECT_EQ((*again)[0].getDouble(0), (*out)[0].getDouble(0));

  // Two scalar outputs: auto does not guess.
  onnx::ModelProto two = m;
  addNode(*two.mutable_graph(), "Identity", {"loss"}, {"loss_copy"}, "copy");
  two.mutable_graph()->add_output()->set_name("loss_copy");
  auto twoModel = parseOnnxModel(two.SerializeAsString(), "two.onnx");
  ASSERT_TRUE(bool(twoModel)) << llvm::toString(twoModel.takeError());
  auto ambiguous = importOnnxForTraining(*twoModel, context, TrainingImportOptions());
  ASSERT_FALSE(bool(ambiguous));
  EXPECT_EQ(llvm::toString(ambiguous.takeError()),
            "two.onnx: error: the graph has 2 scalar float outputs ('loss', 'loss_copy'); say "
            "which is the loss with --loss=NAME");
}

/// A Hugging Face export with `attention_mask` beside the ids trains with
/// the mask all ones (a constant: its subgraph folds), said in a notice;
/// without --batch/--seq for a symbolic mask, the usual size error.
TEST(OnnxLoader, AttentionMaskInputIsOnes) {
  const int64_t v = 5, b = 2, t = 3;
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto &g = *m.mutable_graph();
  addInput(g, "input_ids", {b, t}, onnx::TensorProto::INT64);
  addInput(g, "attention_mask", {b, t}, onnx::TensorProto::INT64);
  addFloatInitializer(g, "emb", {v, v}, std::vector<float>(size_t(v * v), 0.5f));
  addNode(g, "Gather", {"emb", "input_ids"}, {"rows"});
  // Masked positions would get a huge negative bias: (1 - mask) * -1e9.
  addNode(g, "Cast", {"attention_mask"}, {"maskf"}, "cast");
  auto *to = g.mutable_node(1)->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::FLOAT);
  addFloatInitializer(g, "one", {}, {1.0f});
  addFloatInitializer(g, "neg", {}, {-1e9f});
  addNode(g, "Sub", {"one", "maskf"}, {"inv"}, "inv");
  addNode(g, "Mul", {"inv", "neg"}, {"bias2"}, "bias2");
  addIntConstant(g, "axis", {2});
  addNode(g, "Unsqueeze", {"bias2", "axis"}, {"bias"}, "unsqueeze");
  addNode(g, "Add", {"rows", "bias"}, {"logits"}, "add");
  g.add_output()->set_name("logits");

  auto model = parseOnnxModel(m.SerializeAsString(), "model.onnx");
  ASSERT_TRUE(bool(model)) << llvm::toString(model.takeError());
  mlir::MLIRContext context;
  auto imported = importOnnxForTraining(*model, context, TrainingImportOptions());
  ASSERT_TRUE(bool(imported)) << llvm::toString(imported.takeError());
  EXPECT_EQ(imported->notices,
            (std::vector<std::string>{
                "input 'attention_mask' is all ones: lcc-run trains on unpadded sequences"}));
  auto forward = imported->module->lookupSymbol<mlir::func::FuncOp>("forward");
  ASSERT_EQ(forward.getNumArguments(), 3u); // emb, tokens, targets
  // The bias folded to zeros: no Cast/Sub/Mul of the mask is left at run time.
  int ops = 0;
  forward.walk([&](mlir::Operation *op) {
    ops += op->getName().getStringRef() == "lcc.mul" || op->getName().getStringRef() == "lcc.sub";
  });
  EXPECT_EQ(ops, 0);

  // With a symbolic mask and no sizes, the import says which size is missing.
  onnx::ModelProto symbolic = m;
  auto *dim = symbolic.mutable_graph()
                  ->mutable_input(1)
                  ->mutable_type()
                  ->mutable_tensor_type()
                  ->mutable_shape()
                  ->mutable_dim(0);
  dim->set_dim_param("batch");
  auto sm = parseOnnxModel(symbolic.SerializeAsString(), "model.onnx");
  ASSERT_TRUE(bool(sm));
  auto failed = importOnnxForTraining(*sm, context, TrainingImportOptions());
  ASSERT_FALSE(bool(failed));
  EXPECT_EQ(
      llvm::toString(failed.takeError()),
      "model.onnx: graph input 'attention_mask': error: dimension 0 ('batch') is symbolic; give "
      "its size with --batch or --dim batch=N");
}

/// What an exporter changed is warned about, naming the fix: duplicates
/// merged into Identity copies (TorchScript, eval mode) and weights renamed
/// by constant folding (onnx::MatMul_N, val_N).
TEST(OnnxLoader, ExporterChangesAreWarned) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto &g = *m.mutable_graph();
  addInput(g, "x", {2, 3});
  addFloatInitializer(g, "h.0.ln.weight", {3}, {1, 1, 1});
  addFloatInitializer(g, "onnx::MatMul_7", {3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  addFloatInitializer(g, "val_12", {3}, {0.5f, 0.25f, 0.125f});
  addNode(g, "Identity", {"h.0.ln.weight"}, {"h.1.ln.weight"}, "Identity_0");
  addNode(g, "Identity", {"h.1.ln.weight"}, {"h.2.ln.weight"}, "Identity_1");
  addNode(g, "Mul", {"x", "h.0.ln.weight"}, {"a"}, "/h.0/ln/Mul");
  addNode(g, "Mul", {"a", "h.1.ln.weight"}, {"b"}, "/h.1/ln/Mul");
  addNode(g, "Mul", {"b", "h.2.ln.weight"}, {"c"}, "/h.2/ln/Mul");
  addNode(g, "MatMul", {"c", "onnx::MatMul_7"}, {"d"}, "/fc/MatMul");
  addNode(g, "Add", {"d", "val_12"}, {"y"}, "/fc/Add");
  g.add_output()->set_name("y");
  auto model = parseOnnxModel(m.SerializeAsString(), "model.onnx");
  ASSERT_TRUE(bool(model)) << llvm::toString(model.takeError());
  mlir::MLIRContext context;
  auto imported = importOnnx(*model, context, ImportOptions());
  ASSERT_TRUE(bool(imported)) << llvm::toString(imported.takeError());
  EXPECT_EQ(imported->notices,
            (std::vector<std::string>{
                "warning: 'h.1.ln.weight', 'h.2.ln.weight' are Identity copies of "
                "'h.0.ln.weight', trained as one parameter with it: the exporter merged "
                "initializers with equal values (torch.onnx.export in eval mode deduplicates "
                "them), unlike the PyTorch module; re-export with "
                "training=torch.onnx.TrainingMode.TRAINING unless they are meant to be shared",
                "warning: 'onnx::MatMul_7', 'val_12' are weights the exporter renamed (constant "
                "folding stored a transposed copy): checkpoints and exports carry these names "
                "and layouts, not the module's; re-export with do_constant_folding=False "
                "(TorchScript) or optimize=False (dynamo) to keep them"}));
}

} // namespace
