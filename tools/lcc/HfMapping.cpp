//===- HfMapping.cpp - the model as a Hugging Face architecture -----------===//
//
// A model whose frontend named a Hugging Face architecture (the DSL's `hf`
// section: the module's lcc.hf attribute), or an ONNX export of a Hugging
// Face module given its config.json (--hf-config), gets the mapping of its
// whole parameters, before any sharding, for the train.bin's manifest
// (compiler/package/HfNames.h).
//
//===----------------------------------------------------------------------===//
#include "compiler/package/HfNames.h"
#include "compiler/package/Package.h"
#include "tools/lcc/TrainFlags.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace mlir;

namespace lcc::driver {

static llvm::cl::opt<std::string> hfConfigFlag(
    "hf-config",
    llvm::cl::desc("The config.json (or the model directory holding it) of the Hugging Face "
                   "model an ONNX input was exported from: maps its tensors for lcc-run's "
                   "--init-from, --export-hf and --export-peft (docs/hf.md)"),
    llvm::cl::value_desc("FILE|DIR"), llvm::cl::cat(trainCat));

namespace {

/// config.json as the declared values of an exported model
/// (hfDeclaredConfig).
std::string readHfConfig(std::string path, std::string &architecture, json::Value &declared) {
  if (llvm::sys::fs::is_directory(path))
    path = (llvm::Twine(path) + "/config.json").str();
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return "--hf-config " + path + ": cannot read: " + buffer.getError().message();
  json::Value config;
  if (Status st = json::parse((*buffer)->getBuffer().str(), config); !st)
    return "--hf-config " + path + ": not JSON: " + st.message();
  if (Status st = hfDeclaredConfig(config, architecture, declared); !st)
    return "--hf-config " + path + ": " + st.message();
  return "";
}

/// An ONNX export's parameters under the names HfNames matches: each
/// initializer holds a module tensor under its full name (less a wrapper's
/// prefix, the same for all), or is the optimizer's transposed copy of one
/// (lcc.folded_from).
std::string exportedParameters(func::FuncOp forward, const std::string &architecture,
                               std::vector<HfParameter> &params) {
  const std::string base = hfBasePrefix(architecture);
  if (base.empty())
    return "hf: unknown architecture '" + architecture +
           "' (lcc maps GPT2LMHeadModel and LlamaForCausalLM)";
  std::optional<std::string> wrapper;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    auto name = forward.getArgAttrOfType<StringAttr>(i, "lcc.param");
    if (!name)
      continue;
    auto folded = forward.getArgAttrOfType<StringAttr>(i, "lcc.folded_from");
    std::string key = folded ? folded.str() : name.str();
    // The module's name: after the wrapper's prefix, "<base>..." or the head.
    auto at = [&](const std::string &part) {
      for (size_t pos = key.find(part); pos != std::string::npos; pos = key.find(part, pos + 1))
        if (pos == 0 || key[pos - 1] == '.')
          return pos;
      return std::string::npos;
    };
    size_t pos = at(base);
    std::string inModel;
    if (pos != std::string::npos)
      inModel = key.substr(pos + base.size());
    else if (pos = at("lm_head.weight"); pos != std::string::npos && pos + 14 == key.size())
      inModel = "lm_head.weight";
    else {
      return "hf " + architecture + ": parameter '" + name.str() +
             "' is none of the module's tensors (they are named '" + base +
             "...' and 'lm_head.weight'); an exporter's constant folding renames the tensors "
             "it folds (a transposed weight, the rows of a position table): re-export with "
             "do_constant_folding=False (TorchScript) or optimize=False (dynamo)";
    }
    std::string prefix = key.substr(0, pos);
    if (wrapper && *wrapper != prefix)
      return "hf " + architecture + ": parameter '" + name.str() + "' is under '" + prefix +
             "', the others under '" + *wrapper + "' (one Hugging Face module, one prefix)";
    wrapper = prefix;
    auto type = llvm::cast<RankedTensorType>(forward.getArgument(i).getType());
    params.push_back({inModel, type.getShape().vec(), name.str(), /*torchLayout=*/!folded});
  }
  return "";
}

} // namespace

std::string mapToHuggingFace(ModuleOp module, func::FuncOp forward, bool isOnnx, json::Value &out) {
  auto hf = module->getAttrOfType<DictionaryAttr>("lcc.hf");
  if (!hfConfigFlag.empty() && !isOnnx)
    return "--hf-config maps an ONNX export of a Hugging Face model; a DSL model names its "
           "architecture in an hf section (docs/hf.md)";
  if (isOnnx) {
    if (hfConfigFlag.empty())
      return "";
    std::string architecture;
    json::Value declared;
    std::vector<HfParameter> params;
    if (std::string e = readHfConfig(hfConfigFlag, architecture, declared); !e.empty())
      return e;
    if (std::string e = exportedParameters(forward, architecture, params); !e.empty())
      return e;
    Status st = hfSection(architecture, declared, params, out, HfSemantics::Exported);
    return st ? "" : st.message();
  }
  if (!hf)
    return "";
  json::Value declared = scalarsToJson(hf.getAs<DictionaryAttr>("config"));
  std::vector<HfParameter> params;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    if (auto name = forward.getArgAttrOfType<StringAttr>(i, "lcc.param")) {
      auto type = llvm::cast<RankedTensorType>(forward.getArgument(i).getType());
      params.push_back({name.str(), type.getShape().vec()});
    }
  Status st = hfSection(hf.getAs<StringAttr>("architecture").str(), declared, params, out);
  return st ? "" : st.message();
}

} // namespace lcc::driver
