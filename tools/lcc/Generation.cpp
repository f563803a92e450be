//===- Generation.cpp - the train.bin's text-generation entries -----------===//
//
// A DSL model's train.bin also holds @prefill and @decode_step (lcc-run
// --generate): the model imported again at batch 1, at the context's length
// and at one token, each made an entry by lcc-build-generation, then
// compiled with the step (fused, planned, on CPU or GPU like it, in its
// precision). Shapes are compile-time constants, so re-importing is how the
// same model gets other sizes. An ONNX graph with symbolic batch and
// sequence dimensions gets a @prefill without KV cache (its attention is
// the exporter's ops); one whose shapes the exporter fixed gets none. Only
// where each rank holds whole parameters (not tp, pp or ZeRO-3).
//
//===----------------------------------------------------------------------===//
#include "tools/lcc/TrainFlags.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;

namespace lcc::driver {

static llvm::cl::opt<int64_t>
    contextFlag("context",
                llvm::cl::desc("Longest text lcc-run --generate handles, prompt and continuation "
                               "(the KV cache's length; default: the config's ctx, else seq)"),
                llvm::cl::init(0), llvm::cl::cat(trainCat));
static llvm::cl::list<std::string> prefillLengthsFlag(
    "prefill-lengths",
    llvm::cl::desc("Shorter prefills compiled beside the one over the whole context: a prompt "
                   "runs the shortest that holds it (auto: context/16 and context/4, those of "
                   "at least 16; none; or lengths, comma-separated)"),
    llvm::cl::CommaSeparated, llvm::cl::cat(trainCat));
static llvm::cl::opt<bool>
    noGenerateFlag("no-generate",
                   llvm::cl::desc("Leave the text-generation entries out of the train.bin"),
                   llvm::cl::init(false), llvm::cl::cat(trainCat));

/// The shorter prefills' lengths for `context`, ascending; an error message
/// in `error` for a length that is not below it.
static std::vector<int64_t> prefillLengths(int64_t context, std::string &error) {
  std::vector<int64_t> lengths;
  std::vector<std::string> given(prefillLengthsFlag.begin(), prefillLengthsFlag.end());
  if (given.empty() || given == std::vector<std::string>{"auto"}) {
    for (int64_t fraction : {16, 4})
      if (context / fraction >= 16)
        lengths.push_back(context / fraction);
  } else if (given != std::vector<std::string>{"none"}) {
    for (const std::string &text : given) {
      int64_t length = 0;
      if (llvm::StringRef(text).getAsInteger(10, length) || length < 1 || length >= context) {
        error = "--prefill-lengths: '" + text + "' is not a length below the context (" +
                std::to_string(context) + ")";
        return {};
      }
      lengths.push_back(length);
    }
  }
  llvm::sort(lengths);
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  return lengths;
}

std::string addGenerationEntries(ModuleOp module, bool isOnnx, const ImportAt &importAt,
                                 std::map<std::string, int64_t> overrides) {
  if (noGenerateFlag)
    return "";
  if (contextFlag.getNumOccurrences() && contextFlag < 1)
    return "--context must be at least 1";
  // Where the entries cannot be made, the train.bin has none and its
  // manifest says why (lcc-run --generate prints it); only --context asks
  // for them outright.
  auto skip = [&](const std::string &why) {
    if (contextFlag.getNumOccurrences())
      return "--context: " + why;
    module->setAttr("lcc.no_generation", StringAttr::get(module.getContext(), why));
    return std::string();
  };
  if (tpFlag > 1 || ppFlag > 1 || autoShard || modes.shard == ShardMode::Zero3)
    return skip("its ranks hold parts of the parameters (--tp, --pp, --shard=zero3 or auto); "
                "compile the model without them to generate from its checkpoints");
  auto value = [&](llvm::StringRef key) { return configConstant(module, key); };
  if (!value("batch") || !value("seq"))
    return skip("the model's config has no batch and seq to set");
  int64_t context = contextFlag.getNumOccurrences() ? int64_t(contextFlag)
                    : value("ctx")                  ? value("ctx")
                                                    : value("seq");

  // The imports and passes report to this handler, not to the driver's:
  // their first error is why there are no entries.
  std::string why;
  ScopedDiagnosticHandler capture(module.getContext(), [&](Diagnostic &d) {
    if (d.getSeverity() == DiagnosticSeverity::Error && why.empty())
      why = d.str();
    return success();
  });
  TrainStepOptions t = trainStepOptions();
  std::vector<func::FuncOp> made; // unlinked from their modules until both exist
  auto drop = [&](const std::string &reason) {
    for (func::FuncOp fn : made)
      fn.erase();
    return skip(reason);
  };
  // An ONNX graph's attention is the exporter's ops, not one lcc.attention
  // whose keys and values could be a cache: prefills alone, run again over
  // the text so far for every token.
  struct Entry {
    std::string entry, symbol;
    int64_t seq;
  };
  std::vector<Entry> entries = {{"prefill", "prefill", context}};
  std::string error;
  for (int64_t length : prefillLengths(context, error))
    entries.push_back({"prefill", "prefill_" + std::to_string(length), length});
  if (!error.empty())
    return error;
  if (!isOnnx)
    entries.push_back({"decode_step", "decode_step", 1});
  for (const auto &[entry, symbol, seq] : entries) {
    overrides["batch"] = 1;
    overrides["seq"] = seq;
    auto imported = importAt(overrides);
    if (!imported)
      return drop("the model does not import at batch 1, seq " + std::to_string(seq) + ": " +
                  llvm::toString(imported.takeError()));
    ModuleOp gen = **imported;
    // An export with fixed shapes imports at its own sizes whatever is asked.
    if (auto forward = gen.lookupSymbol<func::FuncOp>("forward"); isOnnx && forward)
      for (unsigned i = 0; i < forward.getNumArguments(); ++i)
        if (auto name = forward.getArgAttrOfType<StringAttr>(i, "lcc.input")) {
          auto type = llvm::cast<RankedTensorType>(forward.getArgument(i).getType());
          if (type.getRank() == 2 && type.getShape() != ArrayRef<int64_t>{1, seq})
            return drop("the exporter fixed its input shape at [" +
                        std::to_string(type.getDimSize(0)) + ", " +
                        std::to_string(type.getDimSize(1)) +
                        "]; generation needs symbolic batch and sequence dimensions (export "
                        "with dynamic axes)");
        }
    PassManager pm(module.getContext());
    buildGenerationPipeline(pm, t, entry, context, /*cache=*/!isOnnx, symbol);
    if (failed(pm.run(gen)))
      return drop(why.empty() ? "cannot build @" + symbol : why);
    auto fn = gen.lookupSymbol<func::FuncOp>(symbol);
    fn->remove();
    made.push_back(fn);
  }
  for (func::FuncOp fn : made)
    module.push_back(fn);
  return "";
}

} // namespace lcc::driver
