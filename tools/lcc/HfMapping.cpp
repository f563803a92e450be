//===- HfMapping.cpp - the model as a Hugging Face architecture -----------===//
//
// A model whose frontend named a Hugging Face architecture (the DSL's `hf`
// section: the module's lcc.hf attribute) gets the mapping of its whole
// parameters, before any sharding, for the train.bin's manifest
// (compiler/package/HfNames.h).
//
//===----------------------------------------------------------------------===//
#include "compiler/package/HfNames.h"
#include "compiler/package/Package.h"
#include "tools/lcc/TrainFlags.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace lcc::driver {

std::string mapToHuggingFace(ModuleOp module, func::FuncOp forward, json::Value &out) {
  auto hf = module->getAttrOfType<DictionaryAttr>("lcc.hf");
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
