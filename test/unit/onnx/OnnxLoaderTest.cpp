//===- OnnxLoaderTest.cpp - malformed ONNX models give one clear error -----===//
//
// Models are built with the generated protobuf classes, broken in one way
// each, serialized, and fed to the loader and importer: every case must give
// exactly its error (no crash), naming the node and op where there is one.
//
//===----------------------------------------------------------------------===//
#include "compiler/cpu/JitExecutor.h"
#include "test/unit/onnx/OnnxTestModels.h"
#include "frontends/onnx/OnnxImporter.h"
#include "frontends/onnx/OnnxModel.h"
#include "frontends/onnx/OnnxTraining.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "lcc_onnx.pb.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"

#include <cmath>
#include <limits>
#include <fstream>
#include <gtest/gtest.h>

using namespace lcc;
using namespace lcc::onnx_import;
using namespace lcc::test;

namespace {

/// y = Relu(x) @ w + b with x [2, 3], w [3, 4] (an initializer), b [4].
onnx::ModelProto validModel(int64_t opset = 17) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto *set = m.add_opset_import();
  set->set_domain("");
  set->set_version(opset);
  onnx::GraphProto &g = *m.mutable_graph();
  g.set_name("tiny");
  addInput(g, "x", {2, 3});
  onnx::TensorProto *w = g.add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(3);
  w->add_dims(4);
  for (int i = 0; i < 12; ++i)
    w->add_float_data(0.1f * float(i));
  onnx::TensorProto *b = g.add_initializer();
  b->set_name("b");
  b->set_data_type(onnx::TensorProto::FLOAT);
  b->add_dims(4);
  std::string raw(16, '\0');
  b->set_raw_data(raw);
  addNode(g, "Relu", {"x"}, {"r"});
  addNode(g, "MatMul", {"r", "w"}, {"m"});
  addNode(g, "Add", {"m", "b"}, {"y"});
  g.add_output()->set_name("y");
  return m;
}

/// The error of loading and importing `m` ("" when it imports).
std::string importError(const onnx::ModelProto &m, bool *unsupported = nullptr) {
  auto model = parseOnnxModel(m.SerializeAsString(), "model.onnx");
  if (!model)
    return llvm::toString(model.takeError());
  mlir::MLIRContext context;
  auto imported = importOnnx(*model, context, ImportOptions());
  if (imported)
    return "";
  if (unsupported)
    *unsupported = imported.errorIsA<UnsupportedOnnxError>();
  return llvm::toString(imported.takeError());
}

TEST(OnnxLoader, ValidModelImportsWithParameters) {
  auto model = parseOnnxModel(validModel().SerializeAsString(), "model.onnx");
  ASSERT_TRUE(bool(model)) << llvm::toString(model.takeError());
  mlir::MLIRContext context;
  auto imported = importOnnx(*model, context, ImportOptions());
  ASSERT_TRUE(bool(imported)) << llvm::toString(imported.takeError());
  ASSERT_EQ(imported->parameters.size(), 2u);
  EXPECT_EQ(imported->parameters[0].first, "w");
  EXPECT_FLOAT_EQ(float(imported->parameters[0].second.getDouble(11)), 1.1f);
  EXPECT_EQ(imported->parameters[1].second.shape(), std::vector<int64_t>{4});
}

TEST(OnnxLoader, TruncatedProtobuf) {
  std::string bytes = validModel().SerializeAsString();
  for (size_t cut : {bytes.size() / 2, bytes.size() - 3}) {
    auto model = parseOnnxModel(llvm::StringRef(bytes).take_front(cut), "model.onnx");
    ASSERT_FALSE(bool(model));
    EXPECT_EQ(llvm::toString(model.takeError()),
              "model.onnx: error: not a valid ONNX model: the protobuf data is malformed or "
              "truncated");
  }
  auto empty = parseOnnxModel("", "model.onnx");
  EXPECT_EQ(llvm::toString(empty.takeError()),
            "model.onnx: error: the file is empty, not an ONNX model");
}

TEST(OnnxLoader, MissingInitializer) {
  onnx::ModelProto m = validModel();
  m.mutable_graph()->mutable_initializer()->RemoveLast(); // b
  EXPECT_EQ(importError(m), "model.onnx: node 'Add_0' (Add, opset 17): error: input 'b' is not a "
                            "graph input, an initializer or any node's output");
}

TEST(OnnxLoader, WrongInputRank) {
  onnx::ModelProto m = validModel();
  // x declared [2, 3, 5]: MatMul's inner dimensions no longer agree.
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()
      ->add_dim()->set_dim_value(5);
  EXPECT_EQ(importError(m), "model.onnx: node 'MatMul_0' (MatMul, opset 17): error: inner "
                            "dimensions differ: 5 and 3");
}

TEST(OnnxLoader, UnknownOp) {
  onnx::ModelProto m = validModel();
  m.mutable_graph()->mutable_node(0)->set_op_type("Frobnicate");
  bool unsupported = false;
  EXPECT_EQ(importError(m, &unsupported),
            "model.onnx: node 'Relu_0' (Frobnicate, opset 17): error: op Frobnicate is not "
            "supported at opset 17 (docs/onnx.md lists the supported ops)");
  EXPECT_TRUE(unsupported);
}

TEST(OnnxLoader, UnsupportedOpset) {
  EXPECT_EQ(importError(validModel(99)),
            "model.onnx: error: opset 99 is not supported; lcc imports opsets 7 to 22");
  onnx::ModelProto m = validModel();
  m.mutable_opset_import(0)->set_domain("com.example");
  EXPECT_EQ(importError(m),
            "model.onnx: error: the model imports no opset of the default ONNX domain");
}

TEST(OnnxLoader, CyclicGraph) {
  onnx::ModelProto m = validModel();
  // Relu now reads the Add's output: Relu -> MatMul -> Add -> Relu.
  m.mutable_graph()->mutable_node(0)->set_input(0, "y");
  EXPECT_EQ(importError(m), "model.onnx: node 'Relu_0' (Relu, opset 17): error: the graph has a "
                            "cycle through this node");
}

TEST(OnnxLoader, BadInitializerData) {
  onnx::ModelProto m = validModel();
  m.mutable_graph()->mutable_initializer(1)->set_raw_data(std::string(12, '\0'));
  EXPECT_EQ(importError(m), "model.onnx: initializer 'b': error: holds 12 bytes of data, but 16 "
                            "are needed for its shape");
  onnx::ModelProto e = validModel();
  onnx::TensorProto *w = e.mutable_graph()->mutable_initializer(0);
  w->clear_float_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto *entry = w->add_external_data();
  entry->set_key("location");
  entry->set_value("../secret.bin");
  EXPECT_EQ(importError(e), "model.onnx: initializer 'w': error: external data location "
                            "'../secret.bin' must be a relative path inside the model's "
                            "directory");
}

/// Initializers in an external-data file next to the model (how exporters
/// store models over 2 GiB): location, offset and length are honoured.
TEST(OnnxLoader, ExternalDataInitializers) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("lcc-onnx-external", dir));
  // weights.bin: 8 bytes of padding, then w (12 floats), then b (4 floats).
  std::vector<float> data(2 + 12 + 4);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = 0.25f * float(i);
  {
    std::ofstream out((dir + "/weights.bin").str(), std::ios::binary);
    out.write(reinterpret_cast<const char *>(data.data()), std::streamsize(data.size() * 4));
  }
  onnx::ModelProto m = validModel();
  auto external = [](onnx::TensorProto *t, int64_t offset, int64_t length) {
    t->clear_float_data();
    t->clear_raw_data();
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    for (auto [key, value] : {std::pair<std::string, std::string>{"location", "weights.bin"},
                              {"offset", std::to_string(offset)},
                              {"length", std::to_string(length)}}) {
      auto *e = t->add_external_data();
      e->set_key(key);
      e->set_value(value);
    }
  };
  external(m.mutable_graph()->mutable_initializer(0), 8, 48);
  external(m.mutable_graph()->mutable_initializer(1), 56, 16);
  std::string path = (dir + "/model.onnx").str();
  {
    std::ofstream out(path, std::ios::binary);
    out << m.SerializeAsString();
  }
  auto model = loadOnnxModel(path);
  ASSERT_TRUE(bool(model)) << llvm::toString(model.takeError());
  mlir::MLIRContext context;
  auto imported = importOnnx(*model, context, ImportOptions());
  ASSERT_TRUE(bool(imported)) << llvm::toString(imported.takeError());
  ASSERT_EQ(imported->parameters.size(), 2u);
  for (int64_t i = 0; i < 12; ++i)
    EXPECT_EQ(imported->parameters[0].second.getDouble(i), 0.25 * double(2 + i));
  for (int64_t i = 0; i < 4; ++i)
    EXPECT_EQ(imported->parameters[1].second.getDouble(i), 0.25 * double(14 + i));

  // A length past the file's end is an error naming the file.
  external(m.mutable_graph()->mutable_initializer(1), 64, 16);
  m.mutable_graph()->mutable_initializer(1)->mutable_external_data()->DeleteSubrange(0, 3);
  {
    std::ofstream out(path, std::ios::binary);
    out << m.SerializeAsString();
  }
  auto bad = loadOnnxModel(path);
  ASSERT_TRUE(bool(bad));
  auto failed = importOnnx(*bad, context, ImportOptions());
  ASSERT_FALSE(bool(failed));
  EXPECT_EQ(llvm::toString(failed.takeError()),
            path + ": initializer 'b': error: external data 'weights.bin' is 72 bytes, shorter "
                   "than offset + length");
  llvm::sys::fs::remove_directories(dir);
}

TEST(OnnxLoader, SymbolicDimensionNeedsASize) {
  onnx::ModelProto m = validModel();
  auto *dim = m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()
                  ->mutable_shape()->mutable_dim(0);
  dim->set_dim_param("batch");
  EXPECT_EQ(importError(m), "model.onnx: graph input 'x': error: dimension 0 ('batch') is "
                            "symbolic; give its size with --batch or --dim batch=N");
  auto model = parseOnnxModel(m.SerializeAsString(), "model.onnx");
  ASSERT_TRUE(bool(model));
  mlir::MLIRContext context;
  ImportOptions options;
  options.batch = 2;
  auto imported = importOnnx(*model, context, options);
  EXPECT_TRUE(bool(imported)) << llvm::toString(imported.takeError());
}

/// Runs `m`'s graph on x = 0.1 * i - 0.5 (no parameters: initializers are constants).
std::vector<HostTensor> run(const onnx::ModelProto &m) {
  auto model = parseOnnxModel(m.SerializeAsString(), "model.onnx");
  EXPECT_TRUE(bool(model)) << llvm::toString(model.takeError());
  if (!model)
    return {};
  mlir::MLIRContext context;
  ImportOptions options;
  options.initializersAsParameters = false;
  auto imported = importOnnx(*model, context, options);
  EXPECT_TRUE(bool(imported)) << llvm::toString(imported.takeError());
  if (!imported)
    return {};
  auto jit = CpuJit::compile(*imported->module);
  EXPECT_TRUE(bool(jit)) << llvm::toString(jit.takeError());
  if (!jit)
    return {};
  auto x = HostTensor::generate(ElementType::F32, {2, 3}, [](int64_t i) { return 0.1 * i - 0.5; });
  auto out = (*jit)->call("forward", {x});
  EXPECT_TRUE(bool(out)) << llvm::toString(out.takeError());
  return out ? *out : std::vector<HostTensor>();
}

/// The dynamo exporter may wrap ops in model-local functions: they are
/// inlined, with attributes passed by reference (ref_attr_name).
TEST(OnnxLoader, ModelLocalFunctionsAreInlined) {
  onnx::ModelProto plain = validModel();
  onnx::NodeProto *soft = plain.mutable_graph()->add_node();
  soft->set_op_type("Softmax");
  soft->add_input("y");
  soft->add_output("s");
  addIntAttribute(*soft, "axis", 0);
  plain.mutable_graph()->mutable_output(0)->set_name("s");

  // The same graph with Relu -> MatMul -> Add -> Softmax in a function
  // local.Block(x, w, b) -> (s) whose softmax axis is the caller's `ax`.
  onnx::ModelProto wrapped = validModel();
  wrapped.mutable_graph()->clear_node();
  auto *local = wrapped.add_opset_import();
  local->set_domain("local");
  local->set_version(1);
  onnx::FunctionProto *f = wrapped.add_functions();
  f->set_name("Block");
  f->set_domain("local");
  for (const char *in : {"X", "W", "B"})
    f->add_input(in);
  f->add_output("S");
  f->add_attribute("ax");
  *f->add_opset_import() = wrapped.opset_import(0);
  onnx::GraphProto body; // built with the helpers, then moved into the function
  addNode(body, "Relu", {"X"}, {"r"});
  addNode(body, "MatMul", {"r", "W"}, {"m"});
  addNode(body, "Add", {"m", "B"}, {"y"});
  addNode(body, "Softmax", {"y"}, {"S"});
  auto *ref = body.mutable_node(3)->add_attribute();
  ref->set_name("axis");
  ref->set_type(onnx::AttributeProto::INT);
  ref->set_ref_attr_name("ax");
  *f->mutable_node() = body.node();
  onnx::NodeProto *call = wrapped.mutable_graph()->add_node();
  call->set_op_type("Block");
  call->set_domain("local");
  call->set_name("block");
  for (const char *in : {"x", "w", "b"})
    call->add_input(in);
  call->add_output("s");
  addIntAttribute(*call, "ax", 0);
  wrapped.mutable_graph()->mutable_output(0)->set_name("s");

  std::vector<HostTensor> a = run(plain), b = run(wrapped);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  ASSERT_EQ(a[0].shape(), b[0].shape());
  for (int64_t i = 0; i < a[0].numElements(); ++i)
    EXPECT_EQ(a[0].getDouble(i), b[0].getDouble(i)) << i;
  // Softmax over axis 0: each column sums to 1 (the attribute got through).
  for (int64_t col = 0; col < 4; ++col)
    EXPECT_NEAR(b[0].getDouble(col) + b[0].getDouble(4 + col), 1.0, 1e-6);
}

/// Shape arithmetic folds at compile time exactly, beyond 2^53, and wraps
/// rather than trapping (review findings: doubles lost precision, INT64_MIN /
/// -1 raised SIGFPE).
TEST(OnnxLoader, FoldedIntegerArithmeticIsExact) {
  onnx::ModelProto m = validModel();
  onnx::GraphProto &g = *m.mutable_graph();
  g.clear_output();
  const int64_t big = 9223372036854775807LL, p53 = int64_t(1) << 53;
  addIntConstant(g, "ca", {big - 1, p53 + 1, std::numeric_limits<int64_t>::min()});
  addIntConstant(g, "cb", {big, p53, -1});
  addNode(g, "Less", {"ca", "cb"}, {"lt"}, "lt");
  addNode(g, "Equal", {"ca", "cb"}, {"eq"}, "eq");
  addNode(g, "Div", {"ca", "cb"}, {"div"}, "div");
  addIntConstant(g, "r0", {int64_t(1) << 60}, true);
  addIntConstant(g, "r1", {(int64_t(1) << 60) + 3}, true);
  addIntConstant(g, "r2", {1}, true);
  addNode(g, "Range", {"r0", "r1", "r2"}, {"range"}, "range");
  addIntConstant(g, "wide", {4294967297LL});
  addNode(g, "Cast", {"wide"}, {"narrow"}, "cast");
  addIntAttribute(*g.mutable_node(g.node_size() - 1), "to", onnx::TensorProto::INT32);
  for (const char *out : {"lt", "eq", "div", "range", "narrow"})
    g.add_output()->set_name(out);
  std::vector<HostTensor> r = run(m);
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r[0].getDouble(0), 1); // big - 1 < big
  EXPECT_EQ(r[1].getDouble(1), 0); // 2^53 + 1 != 2^53
  EXPECT_EQ(r[2].data<int64_t>()[2], std::numeric_limits<int64_t>::min()); // wraps
  EXPECT_EQ(r[2].data<int64_t>()[1], 1);
  ASSERT_EQ(r[3].numElements(), 3);
  EXPECT_EQ(r[3].data<int64_t>()[2], (int64_t(1) << 60) + 2);
  EXPECT_EQ(r[4].data<int32_t>()[0], 1); // 2^32 + 1 truncated to 32 bits
}

TEST(OnnxLoader, NegativeSplitSizesAreAnError) {
  onnx::ModelProto m = validModel();
  onnx::GraphProto &g = *m.mutable_graph();
  addIntConstant(g, "v", {1, 2, 3, 4});
  addIntConstant(g, "sizes", {5, -1});
  addNode(g, "Split", {"v", "sizes"}, {"s0", "s1"}, "split");
  g.add_output()->set_name("s0");
  EXPECT_EQ(importError(m), "model.onnx: node 'split' (Split, opset 17): error: split sizes must "
                            "not be negative");
}

/// CumSum and GatherND fold exactly on int64 position ids (beyond 2^53, as
/// shape arithmetic does); a compile-time-only op fed run-time data, and an
/// out-of-range GatherND index, are errors naming the node and the input.
TEST(OnnxLoader, PositionIdOpsFoldExactly) {
  onnx::ModelProto m = validModel();
  onnx::GraphProto &g = *m.mutable_graph();
  g.clear_output();
  const int64_t p53 = int64_t(1) << 53;
  addIntConstant(g, "ones", {p53, 1, 1, 1});
  addIntConstant(g, "axis", {0}, true);
  addNode(g, "CumSum", {"ones", "axis"}, {"pos"}, "cumsum");
  addIntConstant(g, "table", {10, 11, 12, 13, 14, 15});
  addIntConstant(g, "shape", {3, 2});
  addNode(g, "Reshape", {"table", "shape"}, {"t2"}, "reshape");
  addIntConstant(g, "where", {2, 1, -3, 0});
  addIntConstant(g, "pairs", {2, 2});
  addNode(g, "Reshape", {"where", "pairs"}, {"idx"}, "reshape_idx");
  addNode(g, "GatherND", {"t2", "idx"}, {"picked"}, "gathernd");
  for (const char *out : {"pos", "picked"})
    g.add_output()->set_name(out);
  std::vector<HostTensor> r = run(m);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].toVector<int64_t>(), (std::vector<int64_t>{p53, p53 + 1, p53 + 2, p53 + 3}));
  EXPECT_EQ(r[1].toVector<int64_t>(), (std::vector<int64_t>{15, 10})); // [2,1], [-3,0]
}

TEST(OnnxLoader, CompileTimeOnlyOpsNameTheirInput) {
  onnx::ModelProto m = validModel();
  onnx::GraphProto &g = *m.mutable_graph();
  addNode(g, "Cos", {"x"}, {"c"}, "rope_cos");
  g.add_output()->set_name("c");
  bool unsupported = false;
  EXPECT_EQ(importError(m, &unsupported),
            "model.onnx: node 'rope_cos' (Cos, opset 17): error: Cos runs only at compile time "
            "in lcc (mask, position and RoPE-table subgraphs), but input 'x' depends on the "
            "model's inputs");
  EXPECT_TRUE(unsupported);

  onnx::ModelProto n = validModel();
  onnx::GraphProto &h = *n.mutable_graph();
  addIntConstant(h, "data", {1, 2, 3});
  addIntConstant(h, "idx", {3});
  addNode(h, "GatherND", {"data", "idx"}, {"v"}, "gathernd");
  h.add_output()->set_name("v");
  EXPECT_EQ(importError(n), "model.onnx: node 'gathernd' (GatherND, opset 17): error: index 3 is "
                            "out of range for dimension 0 of size 3");
}

/// GatherND with compile-time indices on run-time data is a row gather:
/// negative indices count from the end, batch_dims pairs rows. An empty
/// run-time slice is an empty constant, which Concat drops and other ops
/// take as any tensor.
TEST(OnnxLoader, GatherNDOnRunTimeDataAndEmptySlices) {
  onnx::ModelProto m = validModel();
  onnx::GraphProto &g = *m.mutable_graph();
  g.clear_output();
  addIntConstant(g, "axis1", {1});
  addIntConstant(g, "rows", {1, -2});
  addNode(g, "Unsqueeze", {"rows", "axis1"}, {"rows2"}, "rows2");
  addNode(g, "GatherND", {"x", "rows2"}, {"picked"}, "picked");
  addIntConstant(g, "cols", {2, -1});
  addNode(g, "Unsqueeze", {"cols", "axis1"}, {"cols2"}, "cols2");
  addNode(g, "GatherND", {"x", "cols2"}, {"paired"}, "paired");
  addIntAttribute(*g.mutable_node(g.node_size() - 1), "batch_dims", 1);
  addIntConstant(g, "one", {1});
  addNode(g, "Slice", {"x", "one", "one", "axis1"}, {"empty"}, "empty");
  addNode(g, "Concat", {"picked", "empty"}, {"joined"}, "joined");
  addIntAttribute(*g.mutable_node(g.node_size() - 1), "axis", 1);
  for (const char *out : {"joined", "paired"})
    g.add_output()->set_name(out);
  std::vector<HostTensor> r = run(m);
  ASSERT_EQ(r.size(), 2u);
  // x[i][j] = 0.1 * (3 i + j) - 0.5; picked = rows x[1], x[0]; paired = x[0][2], x[1][2].
  auto x = [](int64_t i, int64_t j) { return 0.1 * double(3 * i + j) - 0.5; };
  ASSERT_EQ(r[0].shape(), (std::vector<int64_t>{2, 3}));
  for (int64_t j = 0; j < 3; ++j) {
    EXPECT_NEAR(r[0].getDouble(j), x(1, j), 1e-6);
    EXPECT_NEAR(r[0].getDouble(3 + j), x(0, j), 1e-6);
  }
  ASSERT_EQ(r[1].shape(), (std::vector<int64_t>{2}));
  EXPECT_NEAR(r[1].getDouble(0), x(0, 2), 1e-6);
  EXPECT_NEAR(r[1].getDouble(1), x(1, 2), 1e-6);

  // Empty tensors are tensors too: as a graph output, and through a
  // run-time op ([2, 0] * [2, 1] broadcasts to [2, 0]).
  addIntConstant(g, "zero", {0});
  addNode(g, "Slice", {"x", "zero", "one", "axis1"}, {"column"}, "column"); // [2, 1]
  addNode(g, "Mul", {"empty", "column"}, {"scaled"}, "scaled");
  for (const char *out : {"empty", "scaled"})
    g.add_output()->set_name(out);
  r = run(m);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[2].shape(), (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(r[3].shape(), (std::vector<int64_t>{2, 0}));
}

/// Buffers are not trained: a table that reaches only compile-time operands
/// (RoPE's inv_freq -> positions -> Cos) and a mask holding float32's lowest
/// value are constants, listed with the reason; a large weight is not a mask.
TEST(OnnxLoader, BuffersAreNotTrained) {
  onnx::ModelProto m = validModel();
  onnx::GraphProto &g = *m.mutable_graph();
  g.clear_output();
  addFloatInitializer(g, "inv_freq", {3}, {1.0f, 0.5f, 0.25f});
  addFloatInitializer(g, "positions", {2, 1}, {0.0f, 2.0f});
  addNode(g, "Mul", {"positions", "inv_freq"}, {"angles"}, "angles");
  addNode(g, "Cos", {"angles"}, {"cos"}, "cos");
  addNode(g, "Mul", {"x", "cos"}, {"rotated"}, "rotate");
  const float lowest = std::numeric_limits<float>::lowest();
  addFloatInitializer(g, "mask", {2, 3}, {0, lowest, lowest, 0, 0, lowest});
  addNode(g, "Add", {"rotated", "mask"}, {"masked"}, "mask_add");
  addFloatInitializer(g, "big", {3}, {1e30f, -1e30f, 2.0f});
  addNode(g, "Add", {"masked", "big"}, {"z"}, "big_add");
  g.add_output()->set_name("z");

  auto model = parseOnnxModel(m.SerializeAsString(), "model.onnx");
  ASSERT_TRUE(bool(model)) << llvm::toString(model.takeError());
  mlir::MLIRContext context;
  auto imported = importOnnx(*model, context, ImportOptions());
  ASSERT_TRUE(bool(imported)) << llvm::toString(imported.takeError());
  std::vector<std::string> params;
  for (auto &p : imported->parameters)
    params.push_back(p.first);
  EXPECT_EQ(params, (std::vector<std::string>{"w", "b", "big"}));
  ASSERT_EQ(imported->buffers.size(), 3u);
  EXPECT_EQ(imported->buffers[0].first, "inv_freq");
  EXPECT_EQ(imported->buffers[0].second,
            "is used only at compile time (shapes, positions, RoPE tables)");
  EXPECT_EQ(imported->buffers[1].first, "positions");
  EXPECT_EQ(imported->buffers[2].first, "mask");
  EXPECT_EQ(imported->buffers[2].second, "holds float32's extreme value (a mask)");

  // --trainable overrides a signal, but not a compile-time use.
  ImportOptions override;
  override.trainable = {"ma?k"};
  auto trained = importOnnx(*model, context, override);
  ASSERT_TRUE(bool(trained)) << llvm::toString(trained.takeError());
  ASSERT_EQ(trained->parameters.size(), 4u);
  EXPECT_EQ(trained->parameters[2].first, "mask");
  EXPECT_EQ(trained->buffers.size(), 2u);
  ASSERT_EQ(trained->notices.size(), 1u);
  EXPECT_EQ(trained->notices[0], "'mask' is trained as --trainable asks, although it holds "
                                 "float32's extreme value (a mask)");
  override.trainable = {"inv_freq"};
  auto impossible = importOnnx(*model, context, override);
  ASSERT_FALSE(bool(impossible));
  EXPECT_EQ(llvm::toString(impossible.takeError()),
            "model.onnx: error: --trainable matches initializer 'inv_freq', which is used only "
            "at compile time (shapes, positions, RoPE tables) and cannot be trained");

  // The folded table is cos(position * inv_freq), computed in double.
  std::vector<HostTensor> r = run(m);
  ASSERT_EQ(r.size(), 1u);
  for (int64_t i = 0; i < 6; ++i) {
    double x = 0.1 * double(i) - 0.5, pos = i < 3 ? 0.0 : 2.0, f = std::pow(0.5, double(i % 3));
    double mask = (i == 1 || i == 2 || i == 5) ? double(lowest) : 0.0;
    double big = i % 3 == 0 ? 1e30 : i % 3 == 1 ? -1e30 : 2.0;
    EXPECT_FLOAT_EQ(float(r[0].getDouble(i)),
                    float(float(float(float(x) * float(std::cos(pos * f))) + float(mask)) +
                          float(float(big))))
        << "element " << i;
  }
}

/// RoPE tables an exporter folded into initializers are found by
/// cos^2 + sin^2 = 1 and kept constant; a fresh LayerNorm's ones and zeros
/// satisfy the identity too but are constant tensors, so they stay weights.
TEST(OnnxLoader, RopeTablesAreFoundByTheirIdentity) {
  onnx::ModelProto m = validModel();
  onnx::GraphProto &g = *m.mutable_graph();
  g.clear_output();
  std::vector<float> c, s;
  for (int p = 0; p < 2; ++p)
    for (int i = 0; i < 3; ++i)
      c.push_back(std::cos(float(p) / float(1 << i))), s.push_back(std::sin(float(p) / float(1 << i)));
  addFloatInitializer(g, "cos_table", {2, 3}, c);
  addFloatInitializer(g, "sin_table", {2, 3}, s);
  addFloatInitializer(g, "ln_w", {3}, {1, 1, 1});
  addFloatInitializer(g, "ln_b", {3}, {0, 0, 0});
  addNode(g, "Mul", {"x", "cos_table"}, {"xc"}, "xc");
  addNode(g, "Mul", {"x", "sin_table"}, {"xs"}, "xs");
  addNode(g, "Add", {"xc", "xs"}, {"rot"}, "rot");
  addNode(g, "Mul", {"rot", "ln_w"}, {"scaled"}, "scaled");
  addNode(g, "Add", {"scaled", "ln_b"}, {"z"}, "shifted");
  g.add_output()->set_name("z");
  auto model = parseOnnxModel(m.SerializeAsString(), "model.onnx");
  ASSERT_TRUE(bool(model)) << llvm::toString(model.takeError());
  mlir::MLIRContext context;
  auto imported = importOnnx(*model, context, ImportOptions());
  ASSERT_TRUE(bool(imported)) << llvm::toString(imported.takeError());
  std::vector<std::string> params, buffers;
  for (auto &p : imported->parameters)
    params.push_back(p.first);
  for (auto &b : imported->buffers)
    buffers.push_back(b.first + ": " + b.second);
  EXPECT_EQ(params, (std::vector<std::string>{"w", "b", "ln_w", "ln_b"}));
  EXPECT_EQ(buffers, (std::vector<std::string>{
                         "cos_table: is a RoPE cos/sin table (its square plus 'sin_table''s is 1 "
                         "everywhere)",
                         "sin_table: is a RoPE cos/sin table (its square plus 'cos_table''s is 1 "
                         "everywhere)"}));
}

/// One weight used alike by several modules (an exporter merged equal
/// initializers) is trained shared, with a warning naming the modules; the
/// same weight used differently (a tied embedding: Gather and MatMul) is not.
TEST(OnnxLoader, MergedInitializersAreReported) {
  onnx::ModelProto m = validModel();
  onnx::GraphProto &g = *m.mutable_graph();
  g.clear_output();
  addFloatInitializer(g, "norm", {3}, {1, 1, 1});
  addNode(g, "Mul", {"x", "norm"}, {"n0"}, "/blocks.0/norm/Mul");
  addNode(g, "Mul", {"n0", "norm"}, {"n1"}, "/blocks.1/norm/Mul");
  addFloatInitializer(g, "emb", {3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  addNode(g, "MatMul", {"n1", "emb"}, {"logits"}, "/lm_head/MatMul");
  addIntConstant(g, "ids", {0, 2});
  addNode(g, "Gather", {"emb", "ids"}, {"rows"}, "/wte/Gather");
  for (const char *out : {"logits", "rows"})
    g.add_output()->set_name(out);
  auto model = parseOnnxModel(m.SerializeAsString(), "model.onnx");
  ASSERT_TRUE(bool(model)) << llvm::toString(model.takeError());
  mlir::MLIRContext context;
  auto imported = importOnnx(*model, context, ImportOptions());
  ASSERT_TRUE(bool(imported)) << llvm::toString(imported.takeError());
  ASSERT_EQ(imported->notices.size(), 1u);
  const std::string want = "warning: 'norm' is used alike by 2 modules (/blocks.0/norm, "
                           "/blocks.1/norm) and trains as one shared parameter";
  EXPECT_EQ(imported->notices[0].substr(0, want.size()), want);
}

/// Appends a metadata entry (StringStringEntryProto) as field `field` of a
/// message's unknown fields, as a newer onnx.proto (IR 10) writes it.
void addMetadata(std::string *unknown, int field, const std::string &key,
                 const std::string &value) {
  onnx::StringStringEntryProto entry;
  entry.set_key(key);
  entry.set_value(value);
  std::string bytes = entry.SerializeAsString();
  auto varint = [&](uint64_t v) {
    for (; v >= 0x80; v >>= 7)
      unknown->push_back(char(v | 0x80));
    unknown->push_back(char(v));
  };
  varint(uint64_t(field) << 3 | 2); // length-delimited
  varint(bytes.size());
  unknown->append(bytes);
}

/// A dynamo export's own record decides what is trained: initializers that
/// are parameters (the graph signature's targets, or marked PARAMETER) or
/// were folded from one are; other float initializers are the exporter's
/// constants. Without the record, all of them are trained.
TEST(OnnxLoader, ExporterSignatureDecidesParameters) {
  onnx::ModelProto m = validModel();
  onnx::GraphProto &g = *m.mutable_graph();
  g.clear_output();
  addFloatInitializer(g, "b_t", {4}, {1, 2, 3, 4});    // folded from b
  addFloatInitializer(g, "ones", {4}, {1, 1, 1, 1});   // folded from an activation's shape
  addFloatInitializer(g, "scale", {4}, {2, 2, 2, 2});  // no record at all
  addNode(g, "Add", {"y", "b_t"}, {"y2"}, "add_bt");
  addNode(g, "Mul", {"y2", "ones"}, {"y3"}, "mul_ones");
  addNode(g, "Mul", {"y3", "scale"}, {"z"}, "mul_scale");
  g.add_output()->set_name("z");
  auto vi = [&](const std::string &name, const std::string &key, const std::string &value) {
    onnx::ValueInfoProto *v = g.add_value_info();
    v->set_name(name);
    addMetadata(v->mutable_unknown_fields(), 4, key, value);
  };
  vi("b", "pkg.torch.export.graph_signature.InputSpec.kind", "PARAMETER");
  vi("b_t", "pkg.onnxscript.optimizer.folded_from", "['b']");
  vi("ones", "pkg.onnxscript.optimizer.folded_from", "['r', 'val_3']");
  auto trained = [](const onnx::ModelProto &model, std::vector<std::string> &buffers) {
    auto parsed = parseOnnxModel(model.SerializeAsString(), "model.onnx");
    EXPECT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
    mlir::MLIRContext context;
    auto imported = importOnnx(*parsed, context, ImportOptions());
    EXPECT_TRUE(bool(imported)) << llvm::toString(imported.takeError());
    std::vector<std::string> params;
    for (auto &p : imported->parameters)
      params.push_back(p.first);
    for (auto &b : imported->buffers)
      buffers.push_back(b.first + ": " + b.second);
    return params;
  };
  std::vector<std::string> buffers;
  EXPECT_EQ(trained(m, buffers), (std::vector<std::string>{"w", "b", "b_t", "ones", "scale"}));
  EXPECT_TRUE(buffers.empty());

  addMetadata(g.mutable_unknown_fields(), 16, "pkg.torch.export.ExportedProgram.graph_signature",
              "\n# inputs\np_w: PARAMETER target='w'\nx: USER_INPUT\n\n# outputs\nz: "
              "USER_OUTPUT\n");
  EXPECT_EQ(trained(m, buffers), (std::vector<std::string>{"w", "b", "b_t"}));
  const std::string why = ": is no parameter of the exported module (torch.export's graph "
                          "signature)";
  EXPECT_EQ(buffers, (std::vector<std::string>{"ones" + why, "scale" + why}));
}

/// MatMul of constants folds (HF's RoPE: inv_freq[:, None] @ positions[None, :]
/// feeds Cos, which runs only at compile time), with NumPy's broadcasting
/// and 1-D operands.
TEST(OnnxLoader, ConstantMatMulFolds) {
  onnx::ModelProto m = validModel();
  onnx::GraphProto &g = *m.mutable_graph();
  g.clear_output();
  addFloatInitializer(g, "A", {2, 1, 3}, {1, 2, 3, -1, 0.5f, 4});
  addFloatInitializer(g, "B", {3, 2}, {0.25f, 1, -2, 0, 1, 3});
  addFloatInitializer(g, "v", {3}, {1, 1, 2});
  addNode(g, "MatMul", {"A", "B"}, {"ab"}, "ab");
  addNode(g, "Cos", {"ab"}, {"cos_ab"}, "cos_ab");
  addNode(g, "MatMul", {"v", "B"}, {"vb"}, "vb");
  addNode(g, "Cos", {"vb"}, {"cos_vb"}, "cos_vb");
  for (const char *out : {"cos_ab", "cos_vb"})
    g.add_output()->set_name(out);
  std::vector<HostTensor> r = run(m);
  ASSERT_EQ(r.size(), 2u);
  ASSERT_EQ(r[0].shape(), (std::vector<int64_t>{2, 1, 2}));
  ASSERT_EQ(r[1].shape(), (std::vector<int64_t>{2}));
  const double a[2][3] = {{1, 2, 3}, {-1, 0.5, 4}}, b[3][2] = {{0.25, 1}, {-2, 0}, {1, 3}};
  const double v[3] = {1, 1, 2};
  for (int t = 0; t < 2; ++t)
    for (int j = 0; j < 2; ++j) {
      double sum = 0, vsum = 0;
      for (int l = 0; l < 3; ++l)
        sum += a[t][l] * b[l][j], vsum += v[l] * b[l][j];
      EXPECT_FLOAT_EQ(float(r[0].getDouble(t * 2 + j)), float(std::cos(double(float(sum)))));
      if (t == 0)
        EXPECT_FLOAT_EQ(float(r[1].getDouble(j)), float(std::cos(double(float(vsum)))));
    }
}

} // namespace
