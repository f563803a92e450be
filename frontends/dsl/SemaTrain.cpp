//===- SemaTrain.cpp - the `train` section: loss choice, frozen and decay ---===//
//
// The model body computes what the architecture computes (a loss, or logits);
// the train section says how it is trained. Keeping the two apart lets one
// model file serve pre-training and fine-tuning: freezing the base of a LoRA
// model or everything but the head is a list of patterns, not an edit of the
// blocks.
//
//   train {
//     loss = cross_entropy(output[:, :-1], tokens[:, 1:])   # `output`: what the model returns
//     frozen = ["wte", "h.*.attn.*"]                         # glob patterns over parameter names
//     no_decay = ["wpe"]
//     decay = ["h.*.ln_*.weight"]
//   }
//
//===----------------------------------------------------------------------===//
#include "frontends/dsl/Sema.h"

#include "llvm/Support/Error.h"
#include <algorithm>
#include "llvm/Support/GlobPattern.h"

namespace lcc::dsl {

static std::string str(SrcLoc l) { return std::to_string(l.line) + ":" + std::to_string(l.col); }

bool Sema::applyTrainSection(Frame &top, const Value &ret) {
  const ConfigEntry *loss = nullptr;
  std::vector<const ConfigEntry *> marks;
  if (file.train) {
    std::map<std::string, SrcLoc> seen;
    for (const ConfigEntry &e : file.train->entries) {
      if (e.name != "loss" && e.name != "frozen" && e.name != "no_decay" && e.name != "decay")
        return error(e.loc, "unknown train setting '" + e.name + "'" +
                                didYouMean(e.name, {"loss", "frozen", "no_decay", "decay"}) +
                                ", the train section takes loss, frozen, no_decay and decay"),
               false;
      auto [it, fresh] = seen.emplace(e.name, e.loc);
      if (!fresh)
        return error(e.loc, "train setting '" + e.name + "' is set twice, the first is at " +
                                str(it->second)),
               false;
      if (e.name == "loss")
        loss = &e;
      else
        marks.push_back(&e);
    }
  }

  // The loss: an expression over `output` (the returned value), the inputs and
  // the model's variables; a returned scalar; or the default for logits.
  if (loss) {
    Frame frame = top;
    frame.vars["output"] = ret;
    auto v = eval(*loss->value, frame);
    if (!v)
      return false;
    if (v->kind != Value::Tensor || typeOf(v->node).dtype != DType::F32 ||
        !typeOf(v->node).shape.empty())
      return error(loss->value->loc, "the train loss is " + describeValue(*v, g) +
                                         ", it must be a scalar f32 tensor (shape []); reduce "
                                         "it, for example with mean(x)"),
             false;
    g.result = v->node;
  } else if (ret.kind == Value::Tensor && typeOf(ret.node).dtype == DType::F32 &&
             typeOf(ret.node).shape.empty()) {
    g.result = ret.node;
  } else {
    if (ret.kind != Value::Tensor || typeOf(ret.node).dtype != DType::F32 ||
        typeOf(ret.node).shape.size() < 2)
      return error(returnLoc, "the model returns " + describeValue(ret, g) +
                                  ", it must return the loss (a scalar f32 tensor, shape []) "
                                  "or logits [..., vocab] for the default cross-entropy"),
             false;
    auto l = defaultLoss(ret.node);
    if (!l)
      return false;
    g.result = *l;
  }

  for (const ConfigEntry *e : marks)
    if (!markParams(*e, top))
      return false;
  bool anyTrainable = false;
  for (const ParamInfo &p : g.params)
    anyTrainable |= !p.frozen;
  if (!g.params.empty() && !anyTrainable) {
    SrcLoc where = g.params.front().loc;
    for (const ConfigEntry *e : marks)
      if (e->name == "frozen")
        where = e->loc;
    return error(where, "every parameter is frozen, nothing would be trained; leave at least "
                        "one parameter trainable"),
           false;
  }
  return true;
}

/// Cross-entropy of logits [..., T, V] against class indices: the input
/// `targets` when the model declares one of the right shape (the data loader
/// shifted it), else next-token prediction on the only integer input of
/// shape [..., T] — logits[..., :-1, :] against tokens[..., 1:], as Hugging
/// Face's causal-LM loss shifts its labels.
std::optional<int> Sema::defaultLoss(int output) {
  const TensorType lt = typeOf(output);
  std::vector<int64_t> want(lt.shape.begin(), lt.shape.end() - 1);
  auto isIndex = [&](const InputInfo &in) {
    return (in.type.dtype == DType::I32 || in.type.dtype == DType::I64) && in.type.shape == want;
  };
  NodeAttr ignore{NodeAttr::Int, "ignore_index"};
  ignore.i = -100;
  for (const InputInfo &in : g.inputs)
    if (in.name == "targets" && isIndex(in))
      return emit("cross_entropy", {output, in.node}, TensorType{DType::F32, {}}, returnLoc,
                  {ignore});
  const InputInfo *tokens = nullptr;
  int candidates = 0;
  for (const InputInfo &in : g.inputs)
    if (isIndex(in)) {
      tokens = &in;
      ++candidates;
    }
  if (candidates != 1 || want.back() < 2) {
    std::string why = candidates > 1 ? "several integer inputs have the shape " +
                                           shapeString(want) + ", so the targets are ambiguous"
                                     : "no integer input has the shape " + shapeString(want);
    if (candidates == 1)
      why = "a sequence of length 1 has no next token";
    return error(returnLoc, "the model returns logits " + shapeString(lt.shape) +
                                " and no loss is chosen: " + why +
                                "; declare `input targets: i32" + shapeString(want) +
                                "` or write `train { loss = ... }`"),
           std::nullopt;
  }
  size_t r = lt.shape.size();
  std::vector<int64_t> start(r, 0), limit = lt.shape, step(r, 1);
  limit[r - 2] -= 1; // logits of positions 0..T-2 predict tokens 1..T-1
  auto logits = slice(output, start, limit, step, returnLoc);
  if (!logits)
    return std::nullopt;
  std::vector<int64_t> tstart(r - 1, 0), tlimit = want, tstep(r - 1, 1);
  tstart[r - 2] = 1;
  auto targets = slice(tokens->node, tstart, tlimit, tstep, returnLoc);
  if (!targets)
    return std::nullopt;
  return emit("cross_entropy", {*logits, *targets}, TensorType{DType::F32, {}}, returnLoc,
              {ignore});
}

/// frozen / no_decay / decay = "pattern" or ["pattern", ...]: glob patterns
/// (`*`, `?`, `[a-z]`, `{a,b}`) over full parameter names. A pattern that
/// matches nothing is an error, since it is almost always a typo that would
/// otherwise silently train (or decay) the wrong parameters.
bool Sema::markParams(const ConfigEntry &e, Frame &frame) {
  auto v = eval(*e.value, frame);
  if (!v)
    return false;
  std::vector<Value> items = v->kind == Value::List ? v->list : std::vector<Value>{*v};
  std::vector<std::string> names;
  for (const ParamInfo &p : g.params)
    names.push_back(p.name);
  for (const Value &item : items) {
    if (item.kind != Value::Str)
      return error(e.value->loc, "train." + e.name + " takes parameter name patterns (strings "
                                 "such as \"h.*.attn.*\"), got " + describeValue(item, g)),
             false;
    auto pattern = llvm::GlobPattern::create(item.s, /*MaxSubPatterns=*/1024);
    if (!pattern) {
      std::string why = llvm::toString(pattern.takeError());
      return error(e.value->loc, "bad pattern \"" + item.s + "\" in train." + e.name + ", " +
                                     why),
             false;
    }
    bool matched = false;
    for (ParamInfo &p : g.params) {
      if (!pattern->match(p.name))
        continue;
      matched = true;
      if (e.name == "frozen") {
        p.frozen = true;
        continue;
      }
      auto want = e.name == "decay" ? ParamInfo::ForceDecay : ParamInfo::NoDecay;
      if (p.decay != ParamInfo::Default && p.decay != want)
        return error(e.value->loc, "parameter '" + p.name + "' would be both decayed and not "
                                   "decayed: \"" + item.s + "\" in train." + e.name +
                                   " contradicts an earlier decay setting"),
               false;
      p.decay = want;
    }
    if (!matched)
      return error(e.value->loc, "pattern \"" + item.s + "\" in train." + e.name +
                                     " matches no parameter" + didYouMean(item.s, names)),
             false;
  }
  return true;
}

bool Sema::applyHfSection(Frame &top) {
  if (!file.hf)
    return true;
  const HfSection &hf = *file.hf;
  static const std::vector<std::string> known = {"GPT2LMHeadModel", "LlamaForCausalLM"};
  if (std::find(known.begin(), known.end(), hf.architecture) == known.end())
    return error(hf.architectureLoc, "unknown Hugging Face architecture '" + hf.architecture + "'" +
                                         didYouMean(hf.architecture, known) +
                                         ", lcc maps GPT2LMHeadModel and LlamaForCausalLM"),
           false;
  g.hfArchitecture = hf.architecture;
  std::map<std::string, SrcLoc> seen;
  for (const ConfigEntry &e : hf.entries) {
    auto [it, fresh] = seen.emplace(e.name, e.loc);
    if (!fresh)
      return error(e.loc, "config.json key '" + e.name + "' is set twice, the first is at " +
                              str(it->second)),
             false;
    auto v = eval(*e.value, top);
    if (!v)
      return false;
    ConfigValue c;
    c.name = e.name;
    switch (v->kind) {
    case Value::Int: c.i = v->i; break;
    case Value::Float:
      c.isFloat = true;
      c.f = v->f;
      break;
    case Value::Bool:
      c.isBool = true;
      c.i = v->b;
      break;
    case Value::Str:
      c.isString = true;
      c.s = v->s;
      break;
    default:
      return error(e.value->loc, "config.json key '" + e.name +
                                     "' takes a number, a bool or "
                                     "a string, got " +
                                     describeValue(*v, g)),
             false;
    }
    g.hfConfig.push_back(std::move(c));
  }
  return true;
}

} // namespace lcc::dsl
