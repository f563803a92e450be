//===- ParamFlags.cpp - --frozen, --no-decay, --decay-only ----------------===//
//
// Per-parameter training choices by glob over parameter names, for every
// frontend (the DSL can also say them in its train section; these flags
// override it). They mark @forward's arguments with the attributes
// lcc-build-train-step reads: lcc.frozen (no gradient, no optimizer state),
// lcc.no_decay and lcc.decay (docs/training.md's no-decay rule).
//
//===----------------------------------------------------------------------===//
#include "tools/lcc/TrainFlags.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/GlobPattern.h"

using namespace mlir;
namespace cl = llvm::cl;

namespace lcc::driver {

static cl::list<std::string> frozenFlag(
    "frozen",
    cl::desc("Freeze parameters whose names match these glob patterns (comma-separated, e.g. "
             "--frozen='wte,h.*.attn.*'): no gradient, no optimizer state"),
    cl::CommaSeparated, cl::cat(trainCat));
static cl::list<std::string> noDecayFlag(
    "no-decay",
    cl::desc("No weight decay for parameters matching these glob patterns (the others keep the "
             "rule: matrices decay, biases and norm weights do not)"),
    cl::CommaSeparated, cl::cat(trainCat));
static cl::list<std::string> decayOnlyFlag(
    "decay-only",
    cl::desc("Weight decay for exactly the parameters matching these glob patterns, none for "
             "the others"),
    cl::CommaSeparated, cl::cat(trainCat));

static cl::opt<std::string> loraFlag(
    "lora",
    cl::desc("Low-rank adapters: --lora=r=8,alpha=16,targets=c_attn,c_proj[,rslora][,dropout=0]. "
             "A target is a module name as PEFT's target_modules (q_proj: every "
             "*.q_proj.weight) or a glob over parameter names; the base model is frozen"),
    cl::cat(trainCat));

namespace {

/// The @forward arguments whose parameter names match `text`; an error for
/// a bad pattern or one that matches nothing (almost always a typo, which
/// would silently train another model).
std::string matching(func::FuncOp forward, const std::string &flag, const std::string &text,
                     std::vector<unsigned> &out) {
  auto pattern = llvm::GlobPattern::create(text, /*MaxSubPatterns=*/1024);
  if (!pattern)
    return "bad --" + flag + " pattern '" + text + "': " + llvm::toString(pattern.takeError());
  out.clear();
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    if (auto name = forward.getArgAttrOfType<StringAttr>(i, "lcc.param");
        name && pattern->match(name.getValue()))
      out.push_back(i);
  if (out.empty())
    return "--" + flag + " pattern '" + text + "' matches no parameter of the model";
  return "";
}

} // namespace

std::string applyParameterFlags(func::FuncOp forward) {
  MLIRContext *context = forward.getContext();
  std::vector<unsigned> args;
  for (const std::string &text : frozenFlag) {
    if (std::string e = matching(forward, "frozen", text, args); !e.empty())
      return e;
    for (unsigned i : args)
      forward.setArgAttr(i, "lcc.frozen", UnitAttr::get(context));
  }
  unsigned trainable = 0;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    trainable += forward.getArgAttr(i, "lcc.param") && !forward.getArgAttr(i, "lcc.frozen");
  if (!frozenFlag.empty() && trainable == 0)
    return "--frozen freezes every parameter, nothing would be trained";

  auto setDecay = [&](unsigned i, bool decay) {
    forward.removeArgAttr(i, decay ? "lcc.no_decay" : "lcc.decay");
    forward.setArgAttr(i, decay ? "lcc.decay" : "lcc.no_decay", UnitAttr::get(context));
  };
  if (!decayOnlyFlag.empty()) {
    std::vector<bool> decays(forward.getNumArguments(), false);
    for (const std::string &text : decayOnlyFlag) {
      if (std::string e = matching(forward, "decay-only", text, args); !e.empty())
        return e;
      for (unsigned i : args)
        decays[i] = true;
    }
    for (unsigned i = 0; i < forward.getNumArguments(); ++i)
      if (forward.getArgAttr(i, "lcc.param"))
        setDecay(i, decays[i]);
  }
  // After --decay-only, so that both together mean "these, except those".
  for (const std::string &text : noDecayFlag) {
    if (std::string e = matching(forward, "no-decay", text, args); !e.empty())
      return e;
    for (unsigned i : args)
      setDecay(i, false);
  }
  return "";
}

std::string parseLora(TrainStepOptions &o) {
  if (loraFlag.empty())
    return "";
  std::string key;
  for (llvm::StringRef item : llvm::split(loraFlag.getValue(), ',')) {
    auto [k, v] = item.split('=');
    if (!item.contains('=')) {
      if (item == "rslora") {
        o.loraRslora = true;
        continue;
      }
      if (key != "targets")
        return "--lora: '" + item.str() + "' is neither key=value nor a target (give targets=...)";
      o.loraTargets.push_back(item.str());
      continue;
    }
    key = k.str();
    if (key == "targets") {
      if (!v.empty())
        o.loraTargets.push_back(v.str());
    } else if (key == "r" || key == "rank") {
      if (v.getAsInteger(10, o.loraRank) || o.loraRank < 1)
        return "--lora: r expects an integer >= 1, got '" + v.str() + "'";
    } else if (key == "alpha") {
      if (v.getAsDouble(o.loraAlpha) || !(o.loraAlpha > 0))
        return "--lora: alpha expects a number > 0, got '" + v.str() + "'";
    } else if (key == "dropout") {
      double p = 0;
      if (v.getAsDouble(p) || p != 0)
        return "--lora: dropout=" + v.str() +
               " is not supported (lcc has no dropout yet); leave it out or give dropout=0";
    } else {
      return "--lora: unknown key '" + key + "' (r, alpha, targets, rslora, dropout)";
    }
  }
  if (o.loraTargets.empty())
    return "--lora needs targets=... (module names such as c_attn or q_proj, or globs over "
           "parameter names)";
  return "";
}

} // namespace lcc::driver
