//===- OnnxTraining.cpp - an imported graph as a model lcc can train -------===//
#include "frontends/onnx/OnnxTraining.h"
#include "frontends/onnx/OnnxOps.h"

#include "lcc_onnx.pb.h"

#include "dialects/lcc/LccOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Path.h"

#include <algorithm>

using namespace mlir;

namespace lcc::onnx_import {

static llvm::Error error(const OnnxModel &model, const llvm::Twine &message) {
  return onnxError(model.path, message);
}

/// Appends an i32 argument with lcc.input = `name` (what lcc-run feeds).
static BlockArgument appendI32Input(func::FuncOp fn, ArrayRef<int64_t> shape, StringRef name) {
  Builder b(fn.getContext());
  unsigned index = fn.getNumArguments();
  // Cannot fail: the function has a body and no argument constraints.
  (void)fn.insertArgument(index, RankedTensorType::get(shape, b.getI32Type()),
                          b.getDictionaryAttr(b.getNamedAttr("lcc.input", b.getStringAttr(name))),
                          fn.getLoc());
  return fn.getArgument(index);
}

/// Feeds the integer argument `old` from a new i32 input `name`: its uses
/// read the new argument, converted to its type. `old` is left unused.
static BlockArgument feedFromI32(func::FuncOp fn, BlockArgument old, StringRef name) {
  auto type = llvm::cast<RankedTensorType>(old.getType());
  BlockArgument fed = appendI32Input(fn, type.getShape(), name);
  Value value = fed;
  if (!type.getElementType().isInteger(32)) {
    OpBuilder b = OpBuilder::atBlockBegin(&fn.getBody().front());
    value = lcc::ConvertOp::create(b, fn.getLoc(), type, fed);
  }
  old.replaceAllUsesWith(value);
  return fed;
}

llvm::Expected<ImportedGraph> importOnnxForTraining(const OnnxModel &model,
                                                             MLIRContext &context,
                                                             const TrainingImportOptions &options) {
  ImportOptions graphOptions = options.graph;
  graphOptions.functionName = "forward";
  graphOptions.initializersAsParameters = true;
  // Hugging Face exports may take `attention_mask` [batch, seq] beside the
  // ids. lcc-run trains on unpadded windows of the token stream, so the mask
  // is all ones: a constant, and the mask subgraph folds away.
  std::string maskNotice;
  if ((options.loss == "cross-entropy" || options.loss == "auto") &&
      model.proto->graph().input_size() >= 2)
    for (const onnx::ValueInfoProto &in : model.proto->graph().input()) {
      if (in.name() != "attention_mask" || !in.type().has_tensor_type() ||
          graphOptions.constantInputs.count(in.name()))
        continue;
      const auto &t = in.type().tensor_type();
      std::optional<ElementType> et = elementTypeOf(t.elem_type());
      if (!et || t.shape().dim_size() != 2)
        continue;
      std::vector<int64_t> shape;
      for (int d = 0; d < 2; ++d) {
        const auto &dim = t.shape().dim(d);
        int64_t given = d == 0 ? graphOptions.batch : graphOptions.seq;
        shape.push_back(dim.has_dim_value() ? dim.dim_value() : given);
      }
      if (shape[0] <= 0 || shape[1] <= 0)
        continue; // its size is unknown: the import names the missing --batch/--seq
      HostTensor ones(*et, shape);
      ones.fill(1.0);
      graphOptions.constantInputs[in.name()] = std::move(ones);
      maskNotice = "input 'attention_mask' is all ones: lcc-run trains on unpadded sequences";
    }
  auto imported = importOnnx(model, context, graphOptions);
  if (!imported)
    return imported.takeError();
  if (!maskNotice.empty())
    imported->notices.push_back(maskNotice);
  OwningOpRef<ModuleOp> module = std::move(imported->module);
  auto fn = module->lookupSymbol<func::FuncOp>("forward");
  OpBuilder b(&context);
  Location loc = fn.getLoc();
  auto ret = llvm::cast<func::ReturnOp>(fn.getBody().front().getTerminator());

  std::vector<unsigned> inputArgs;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (fn.getArgAttr(i, "lcc.input"))
      inputArgs.push_back(i);

  // --loss=auto: a graph that computes its own loss (one scalar float
  // output) trains on it; any other graph on next-token cross-entropy.
  std::string lossName = options.loss;
  if (lossName == "auto") {
    std::vector<std::string> scalars;
    for (auto [i, out] : llvm::enumerate(model.proto->graph().output()))
      if (auto t = llvm::dyn_cast<RankedTensorType>(ret.getOperand(unsigned(i)).getType());
          t && t.getRank() == 0 && llvm::isa<FloatType>(t.getElementType()))
        scalars.push_back(out.name());
    if (scalars.size() > 1)
      return error(model, "the graph has " + llvm::Twine(scalars.size()) +
                              " scalar float outputs ('" + llvm::join(scalars, "', '") +
                              "'); say which is the loss with --loss=NAME");
    lossName = scalars.empty() ? "cross-entropy" : scalars[0];
    if (!scalars.empty())
      imported->notices.push_back("loss: graph output '" + lossName +
                                  "', the graph's one scalar float output (--loss=NAME "
                                  "chooses another)");
  }

  int64_t vocab = 0, batch = 0, seq = 0;
  Value loss;
  if (lossName == "cross-entropy") {
    // Next-token cross-entropy on output 0 (logits [B, T, V]) against
    // `targets`; the one integer input [B, T] is fed from `tokens`.
    if (inputArgs.size() != 1)
      return error(model, "--loss=cross-entropy needs a graph with exactly one input (the "
                          "token ids [batch, seq]); this one has " +
                              llvm::Twine(inputArgs.size()));
    BlockArgument ids = fn.getArgument(inputArgs[0]);
    auto idsType = llvm::cast<RankedTensorType>(ids.getType());
    if (idsType.getRank() != 2 || !llvm::isa<IntegerType>(idsType.getElementType()))
      return error(model, "--loss=cross-entropy needs integer token ids [batch, seq] as the "
                          "graph input");
    if (ret.getNumOperands() < 1)
      return error(model, "the graph has no output");
    auto logitsType = llvm::dyn_cast<RankedTensorType>(ret.getOperand(0).getType());
    if (!logitsType || logitsType.getRank() != 3 ||
        !llvm::isa<FloatType>(logitsType.getElementType()) ||
        logitsType.getShape().take_front(2) != idsType.getShape())
      return error(model, "--loss=cross-entropy needs graph output 0 to be logits "
                          "[batch, seq, vocab] for input ids [batch, seq]");
    batch = idsType.getDimSize(0);
    seq = idsType.getDimSize(1);
    vocab = logitsType.getDimSize(2);
    feedFromI32(fn, ids, "tokens");
    Value targets = appendI32Input(fn, idsType.getShape(), "targets");
    b.setInsertionPoint(ret);
    loss = lcc::CrossEntropyOp::create(b, loc, RankedTensorType::get({}, b.getF32Type()),
                                       ret.getOperand(0), targets, b.getI64IntegerAttr(-100));
    if (failed(fn.eraseArgument(inputArgs[0])))
      return error(model, "cannot remove the original input argument");
  } else {
    // A scalar float graph output the model computes itself.
    const auto &outputs = model.proto->graph().output();
    int index = -1;
    for (int i = 0; i < outputs.size(); ++i)
      if (outputs[i].name() == lossName)
        index = i;
    if (index < 0)
      return error(model, "--loss=" + lossName +
                              ": no graph output has that name (use cross-entropy, or the "
                              "name of a scalar loss output)");
    loss = ret.getOperand(unsigned(index));
    auto t = llvm::cast<RankedTensorType>(loss.getType());
    if (t.getRank() != 0 || !llvm::isa<FloatType>(t.getElementType()))
      return error(model, "--loss=" + lossName + " is not a scalar float output");
    // A model exported with its loss usually takes (ids, labels): one or two
    // integer [batch, seq] inputs become lcc-run's `tokens` and `targets`.
    // Masks are not token ids; labels go to `targets` whatever their position.
    auto inputName = [&](unsigned a) {
      return fn.getArgAttrOfType<StringAttr>(a, "lcc.input").getValue().lower();
    };
    bool tokenInputs = !inputArgs.empty() && inputArgs.size() <= 2;
    for (unsigned a : inputArgs) {
      auto type = llvm::cast<RankedTensorType>(fn.getArgument(a).getType());
      auto first = llvm::cast<RankedTensorType>(fn.getArgument(inputArgs[0]).getType());
      tokenInputs &= type.getRank() == 2 && llvm::isa<IntegerType>(type.getElementType()) &&
                     !type.getElementType().isInteger(1) && type.getShape() == first.getShape() &&
                     inputName(a).find("mask") == std::string::npos;
    }
    auto isLabels = [&](unsigned a) {
      std::string name = inputName(a);
      return name == "labels" || name == "label" || name == "targets" || name == "target";
    };
    if (tokenInputs && inputArgs.size() == 2 && isLabels(inputArgs[0]) && !isLabels(inputArgs[1]))
      std::swap(inputArgs[0], inputArgs[1]);
    if (tokenInputs) {
      const char *names[] = {"tokens", "targets"}; // ids first, then labels
      for (unsigned k = 0; k < inputArgs.size(); ++k)
        feedFromI32(fn, fn.getArgument(inputArgs[k]), names[k]);
      std::sort(inputArgs.begin(), inputArgs.end());
      llvm::BitVector erase(fn.getNumArguments());
      for (unsigned a : inputArgs)
        erase.set(a);
      if (failed(fn.eraseArguments(erase)))
        return error(model, "cannot remove the original input arguments");
    }
  }
  b.setInsertionPoint(ret);
  func::ReturnOp::create(b, loc, loss);
  ret.erase();
  fn.setFunctionType(b.getFunctionType(fn.getArgumentTypes(), {loss.getType()}));

  // @init returns the initializers, in @forward's parameter order.
  b.setInsertionPoint(fn);
  SmallVector<Type> paramTypes;
  for (auto &p : imported->parameters)
    paramTypes.push_back(
        RankedTensorType::get(p.second.shape(), mlirElementType(&context, p.second.elementType())));
  auto init = func::FuncOp::create(b, loc, "init", b.getFunctionType({}, paramTypes));
  b.setInsertionPointToEnd(init.addEntryBlock());
  SmallVector<Value> initial;
  for (auto &p : imported->parameters)
    initial.push_back(options.parametersAsData
                          ? materializeConstant(b, loc, HostTensor(p.second.elementType(),
                                                                   p.second.shape()))
                          : materializeConstant(b, loc, p.second));
  func::ReturnOp::create(b, loc, initial);

  SmallVector<NamedAttribute> config;
  if (vocab) {
    config.push_back(b.getNamedAttr("vocab", b.getI64IntegerAttr(vocab)));
    config.push_back(b.getNamedAttr("batch", b.getI64IntegerAttr(batch)));
    config.push_back(b.getNamedAttr("seq", b.getI64IntegerAttr(seq)));
  }
  module->getOperation()->setAttr("lcc.config", b.getDictionaryAttr(config));
  std::string name = model.proto->graph().name();
  if (name.empty())
    name = llvm::sys::path::stem(model.path).str();
  module->getOperation()->setAttr("lcc.model", b.getStringAttr(name));
  if (failed(verify(*module)))
    return error(model, "the training module does not verify (an importer bug)");
  imported->module = std::move(module);
  return std::move(*imported);
}

llvm::Expected<ImportedGraph> importOnnxForTraining(llvm::StringRef bytes, const std::string &path,
                                                    MLIRContext &context,
                                                    const TrainingImportOptions &options) {
  auto model = parseOnnxModel(bytes, path);
  if (!model)
    return model.takeError();
  return importOnnxForTraining(*model, context, options);
}

} // namespace lcc::onnx_import
