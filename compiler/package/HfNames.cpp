//===- HfNames.cpp - a model's parameters as a Hugging Face checkpoint ----===//
#include "compiler/package/HfNames.h"

#include "runtime/support/HostTensor.h"

#include <charconv>
#include <cmath>
#include <map>
#include <set>

namespace lcc {

namespace {

json::Value number(int64_t v) { return json::Value(static_cast<long long>(v)); }

/// Builds one architecture's section: the config from shapes and declared
/// values, the tensor list, and what is left unmatched.
class Mapping {
public:
  Mapping(std::string architecture, const json::Value &declared,
          const std::vector<HfParameter> &params, HfSemantics semantics)
      : architecture(std::move(architecture)), declared(declared), semantics(semantics) {
    for (const HfParameter &p : params)
      byName[p.name] = &p;
  }

  /// The parameter named `name` (or `alternative`), or null.
  const HfParameter *find(const std::string &name, const std::string &alternative = "") const {
    auto it = byName.find(name);
    if (it == byName.end() && !alternative.empty())
      it = byName.find(alternative);
    return it == byName.end() ? nullptr : it->second;
  }

  /// The number of layers: parameters named PREFIX.N.* for N = 0 .. count-1.
  /// An index that is not a number in range, or a gap, is an error naming
  /// it (a parameter's name is input: an ONNX initializer's, say).
  Status layerCount(const std::string &prefix, int64_t &count) const {
    std::set<int64_t> indices;
    for (const auto &[name, p] : byName) {
      if (name.rfind(prefix, 0) != 0)
        continue;
      size_t dot = name.find('.', prefix.size());
      std::string digits = name.substr(prefix.size(), dot - prefix.size());
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos)
        continue;
      int64_t index = 0;
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
      if (ec != std::errc() || index >= static_cast<int64_t>(byName.size()))
        return Status::failure("hf " + architecture + ": parameter '" + name + "' names layer " +
                               digits + ", but the model has " + std::to_string(byName.size()) +
                               " parameters in all");
      indices.insert(index);
    }
    count = indices.empty() ? 0 : *indices.rbegin() + 1;
    for (int64_t i = 0; i < count; ++i)
      if (!indices.count(i))
        return Status::failure("hf " + architecture + ": the parameters name layers up to " +
                               prefix + std::to_string(count - 1) + ", but none is named " +
                               prefix + std::to_string(i) + ".*");
    return Status();
  }

  /// A config.json value the architecture derives: must equal a declared one.
  Status derive(const std::string &key, json::Value value) {
    if (const json::Value *d = declared.get(key))
      if (!same(*d, value))
        return Status::failure("hf " + architecture + ": " + key + " = " + json::serialize(*d) +
                               " is declared, but the parameters' shapes say " +
                               json::serialize(value));
    config.set(key, std::move(value));
    return Status();
  }

  /// A value of what the model computes (its activation, its attention's
  /// scaling): lcc's ops compute `value`, an exported graph what its
  /// config.json declares.
  Status computes(const std::string &key, json::Value value) {
    if (const json::Value *d = declared.get(key); d && semantics == HfSemantics::Exported) {
      config.set(key, *d);
      return Status();
    }
    return derive(key, std::move(value));
  }

  /// A declared config.json value the shapes cannot say.
  Status require(const std::string &key, bool integer, json::Value &out) {
    const json::Value *d = declared.get(key);
    if (!d || !d->isNumber() || (integer && !d->isInt()))
      return Status::failure("hf " + architecture + " needs " + key + " = " +
                             (integer ? "an integer" : "a number") +
                             " in the model's hf section (the parameters' shapes do not say it)");
    out = *d;
    config.set(key, *d);
    return Status();
  }

  void fixed(const std::string &key, json::Value value) { config.set(key, std::move(value)); }

  /// The tensor `hf` (shape `hfShape`) is the parameter `param` (or
  /// `alternative`); `linear`: an nn.Linear weight ([out, in]), transposed
  /// unless the parameter is held in PyTorch's layout.
  Status tensor(const std::string &hf, const std::string &param, std::vector<int64_t> hfShape,
                bool linear, const std::string &alternative = "") {
    const HfParameter *p = find(param, alternative);
    const bool transpose = linear && !(p && p->torchLayout);
    std::vector<int64_t> want = hfShape;
    if (transpose && want.size() == 2)
      std::swap(want[0], want[1]);
    if (!p)
      return Status::failure("hf " + architecture + ": its tensor '" + hf + "' " +
                             shapeList(hfShape) + " would be the parameter '" + param + "' " +
                             shapeList(want) + ", which the model does not have");
    const std::string &stored = p->stored.empty() ? p->name : p->stored;
    if (p->shape != want)
      return Status::failure("hf " + architecture + ": parameter '" + stored + "' is " +
                             shapeList(p->shape) + ", but as '" + hf + "' " + shapeList(hfShape) +
                             (transpose ? " (transposed)" : "") + " it must be " + shapeList(want));
    used.insert(p->name);
    tensors.push(json::Value::object(
        {{"hf", hf}, {"param", stored}, {"transpose", transpose}, {"shape", shapeJson(hfShape)}}));
    return Status();
  }

  Status finish(const std::string &prefix, const std::string &example,
                std::vector<std::string> checked, const json::Value &defaults,
                std::vector<std::string> ignored, json::Value &out) {
    for (const auto &[name, p] : byName)
      if (!used.count(name))
        return Status::failure("hf " + architecture + ": parameter '" +
                               (p->stored.empty() ? name : p->stored) +
                               "' is none of its tensors (they are named like '" + example +
                               "' less '" + prefix + "'; docs/hf.md)");
    // Declared keys the architecture does not derive go to config.json as
    // they are (token ids, for instance).
    for (const json::Value::Member &m : declared.members())
      if (!config.get(m.first))
        config.set(m.first, m.second);
    json::Value checkedJson = json::Value::array(), ignoredJson = json::Value::array();
    for (const std::string &k : checked)
      checkedJson.push(k);
    for (const std::string &k : ignored)
      ignoredJson.push(k);
    out = json::Value::object({{"architecture", architecture},
                               {"config", std::move(config)},
                               {"checked", std::move(checkedJson)},
                               {"defaults", defaults},
                               {"prefix", prefix},
                               {"tensors", std::move(tensors)},
                               {"ignored", std::move(ignoredJson)}});
    return Status();
  }

  const std::string architecture;

private:
  static bool same(const json::Value &a, const json::Value &b) {
    if (a.isNumber() && b.isNumber())
      return a.asDouble() == b.asDouble();
    return a == b;
  }
  static json::Value shapeJson(const std::vector<int64_t> &shape) {
    json::Value s = json::Value::array();
    for (int64_t d : shape)
      s.push(number(d));
    return s;
  }

  const json::Value &declared;
  const HfSemantics semantics;
  std::map<std::string, const HfParameter *> byName;
  json::Value config = json::Value::object();
  json::Value tensors = json::Value::array();
  std::set<std::string> used;
};

Status gpt2(Mapping &m, json::Value &out) {
  const HfParameter *wte = m.find("wte.weight", "wte"), *wpe = m.find("wpe.weight", "wpe");
  if (!wte || wte->shape.size() != 2 || !wpe || wpe->shape.size() != 2)
    return Status::failure("hf GPT2LMHeadModel needs the embeddings 'wte' [vocab, n_embd] and "
                           "'wpe' [n_positions, n_embd]");
  const int64_t vocab = wte->shape[0], dim = wte->shape[1], positions = wpe->shape[0];
  int64_t layers = 0;
  if (Status st = m.layerCount("h.", layers); !st)
    return st;
  int64_t inner = 4 * dim;
  if (const HfParameter *fc = m.find("h.0.mlp.c_fc.weight"); fc && fc->shape.size() == 2)
    inner = fc->shape[1];
  json::Value heads, eps;
  m.fixed("architectures", json::Value::array({"GPT2LMHeadModel"}));
  m.fixed("model_type", "gpt2");
  for (Status st :
       {m.derive("vocab_size", number(vocab)), m.derive("n_positions", number(positions)),
        m.derive("n_embd", number(dim)), m.derive("n_layer", number(layers)),
        m.require("n_head", true, heads),
        m.derive("n_inner", inner == 4 * dim ? json::Value() : number(inner)),
        m.computes("activation_function", "gelu_new"), m.require("layer_norm_epsilon", false, eps),
        m.computes("scale_attn_weights", true),
        m.computes("scale_attn_by_inverse_layer_idx", false)})
    if (!st)
      return st;
  if (heads.asInt() <= 0 || dim % heads.asInt() != 0)
    return Status::failure("hf GPT2LMHeadModel: n_head = " + std::to_string(heads.asInt()) +
                           " does not divide n_embd = " + std::to_string(dim));
  for (const char *k : {"resid_pdrop", "embd_pdrop", "attn_pdrop"})
    m.fixed(k, 0.0);
  m.fixed("tie_word_embeddings", true);
  m.fixed("torch_dtype", "float32");

  const std::string t = "transformer.";
  Status st = m.tensor(t + "wte.weight", "wte.weight", {vocab, dim}, false, "wte");
  if (st)
    st = m.tensor(t + "wpe.weight", "wpe.weight", {positions, dim}, false, "wpe");
  for (int64_t i = 0; st && i < layers; ++i) {
    std::string h = "h." + std::to_string(i) + ".";
    struct {
      const char *name;
      std::vector<int64_t> shape;
    } each[] = {{"ln_1.weight", {dim}},
                {"ln_1.bias", {dim}},
                {"attn.c_attn.weight", {dim, 3 * dim}},
                {"attn.c_attn.bias", {3 * dim}},
                {"attn.c_proj.weight", {dim, dim}},
                {"attn.c_proj.bias", {dim}},
                {"ln_2.weight", {dim}},
                {"ln_2.bias", {dim}},
                {"mlp.c_fc.weight", {dim, inner}},
                {"mlp.c_fc.bias", {inner}},
                {"mlp.c_proj.weight", {inner, dim}},
                {"mlp.c_proj.bias", {dim}}};
    for (auto &e : each)
      if (st)
        st = m.tensor(t + h + e.name, h + e.name, e.shape, false);
  }
  for (const char *n : {"ln_f.weight", "ln_f.bias"})
    if (st)
      st = m.tensor(t + n, n, {dim}, false);
  if (!st)
    return st;
  json::Value defaults = json::Value::object({{"n_inner", json::Value()},
                                              {"activation_function", "gelu_new"},
                                              {"layer_norm_epsilon", 1e-5},
                                              {"scale_attn_weights", true},
                                              {"scale_attn_by_inverse_layer_idx", false}});
  return m.finish(t, "transformer.h.0.attn.c_attn.weight",
                  {"vocab_size", "n_positions", "n_embd", "n_layer", "n_head", "n_inner",
                   "activation_function", "layer_norm_epsilon", "scale_attn_weights",
                   "scale_attn_by_inverse_layer_idx"},
                  defaults, {"*.attn.bias", "*.attn.masked_bias", "lm_head.weight"}, out);
}

Status llama(Mapping &m, json::Value &out) {
  const HfParameter *embed = m.find("embed_tokens.weight", "embed_tokens");
  // (hidden_size 0 would make the head dimension 0, which divides below.)
  if (!embed || embed->shape.size() != 2 || embed->shape[1] <= 0)
    return Status::failure("hf LlamaForCausalLM needs the embedding 'embed_tokens' [vocab, "
                           "hidden_size]");
  const int64_t vocab = embed->shape[0], dim = embed->shape[1];
  int64_t layers = 0;
  if (Status st = m.layerCount("layers.", layers); !st)
    return st;
  json::Value heads, eps, theta, positions;
  m.fixed("architectures", json::Value::array({"LlamaForCausalLM"}));
  m.fixed("model_type", "llama");
  for (Status st : {m.derive("vocab_size", number(vocab)), m.derive("hidden_size", number(dim)),
                    m.derive("num_hidden_layers", number(layers)),
                    m.require("num_attention_heads", true, heads)})
    if (!st)
      return st;
  if (heads.asInt() <= 0 || dim % heads.asInt() != 0)
    return Status::failure(
        "hf LlamaForCausalLM: num_attention_heads = " + std::to_string(heads.asInt()) +
        " does not divide hidden_size = " + std::to_string(dim));
  const int64_t headDim = dim / heads.asInt();
  int64_t kvHeads = heads.asInt(), inner = 0;
  // Output features: [in, out] in lcc's layout, [out, in] in PyTorch's.
  auto outputs = [](const HfParameter &p) { return p.shape[p.torchLayout ? 0 : 1]; };
  if (const HfParameter *k = m.find("layers.0.self_attn.k_proj.weight"); k && k->shape.size() == 2)
    kvHeads = outputs(*k) / headDim;
  if (const HfParameter *g = m.find("layers.0.mlp.gate_proj.weight"); g && g->shape.size() == 2)
    inner = outputs(*g);
  const HfParameter *head = m.find("lm_head.weight");
  for (Status st :
       {m.derive("intermediate_size", number(inner)),
        m.derive("num_key_value_heads", number(kvHeads)), m.derive("head_dim", number(headDim)),
        m.computes("hidden_act", "silu"), m.require("max_position_embeddings", true, positions),
        m.require("rms_norm_eps", false, eps), m.require("rope_theta", false, theta),
        m.computes("rope_scaling", json::Value()), m.derive("attention_bias", false),
        m.derive("mlp_bias", false), m.derive("tie_word_embeddings", head == nullptr)})
    if (!st)
      return st;
  m.fixed("torch_dtype", "float32");

  const std::string t = "model.";
  Status st = m.tensor(t + "embed_tokens.weight", "embed_tokens.weight", {vocab, dim}, false,
                       "embed_tokens");
  const int64_t q = heads.asInt() * headDim, kv = kvHeads * headDim;
  for (int64_t i = 0; st && i < layers; ++i) {
    std::string l = "layers." + std::to_string(i) + ".";
    struct {
      const char *name;
      std::vector<int64_t> shape; // Hugging Face's: [out, in] for Linear weights
      bool linear;
    } each[] = {{"input_layernorm.weight", {dim}, false},
                {"self_attn.q_proj.weight", {q, dim}, true},
                {"self_attn.k_proj.weight", {kv, dim}, true},
                {"self_attn.v_proj.weight", {kv, dim}, true},
                {"self_attn.o_proj.weight", {dim, q}, true},
                {"post_attention_layernorm.weight", {dim}, false},
                {"mlp.gate_proj.weight", {inner, dim}, true},
                {"mlp.up_proj.weight", {inner, dim}, true},
                {"mlp.down_proj.weight", {dim, inner}, true}};
    for (auto &e : each)
      if (st)
        st = m.tensor(t + l + e.name, l + e.name, e.shape, e.linear);
  }
  if (st)
    st = m.tensor(t + "norm.weight", "norm.weight", {dim}, false);
  if (st && head)
    st = m.tensor("lm_head.weight", "lm_head.weight", {vocab, dim}, true);
  if (!st)
    return st;
  json::Value defaults = json::Value::object({{"num_key_value_heads", heads},
                                              {"head_dim", number(dim / heads.asInt())},
                                              {"hidden_act", "silu"},
                                              {"rms_norm_eps", 1e-6},
                                              {"rope_theta", 10000.0},
                                              {"rope_type", "default"},
                                              {"attention_bias", false},
                                              {"mlp_bias", false},
                                              {"tie_word_embeddings", false}});
  std::vector<std::string> ignored = {"*.rotary_emb.inv_freq"};
  if (!head)
    ignored.push_back("lm_head.weight");
  return m.finish(t, "model.layers.0.self_attn.q_proj.weight",
                  {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                   "num_attention_heads", "num_key_value_heads", "head_dim", "hidden_act",
                   "rms_norm_eps", "rope_theta", "rope_type", "attention_bias", "mlp_bias",
                   "tie_word_embeddings"},
                  defaults, ignored, out);
}

} // namespace

std::string hfBasePrefix(const std::string &architecture) {
  if (architecture == "GPT2LMHeadModel")
    return "transformer.";
  if (architecture == "LlamaForCausalLM")
    return "model.";
  return "";
}

Status hfDeclaredConfig(const json::Value &config, std::string &architecture,
                        json::Value &declared) {
  const json::Value *archs = config.isObject() ? config.get("architectures") : nullptr;
  if (archs && archs->isArray())
    for (const json::Value &a : archs->items())
      if (a.isString() && architecture.empty())
        architecture = a.asString();
  if (architecture.empty())
    return Status::failure("no \"architectures\" list naming the model's class");
  declared = json::Value::object();
  for (const json::Value::Member &m : config.members()) {
    if (m.first == "transformers_version" || m.first == "_name_or_path" || m.first == "dtype" ||
        m.first == "torch_dtype" || m.second.isArray() || m.second.isObject())
      continue;
    declared.set(m.first, m.second);
  }
  if (const json::Value *scaling = config.get("rope_scaling"); scaling && scaling->isObject())
    declared.set("rope_scaling", *scaling);
  if (const json::Value *rope = config.get("rope_parameters"); rope && rope->isObject()) {
    if (const json::Value *theta = rope->get("rope_theta"); theta && !declared.get("rope_theta"))
      declared.set("rope_theta", *theta);
    const json::Value *type = rope->get("rope_type");
    if (type && !(type->isString() && type->asString() == "default")) {
      json::Value scaling = json::Value::object();
      for (const json::Value::Member &m : rope->members())
        if (m.first != "rope_theta")
          scaling.set(m.first, m.second);
      declared.set("rope_scaling", std::move(scaling));
    }
  }
  return Status();
}

Status hfSection(const std::string &architecture, const json::Value &declared,
                 const std::vector<HfParameter> &params, json::Value &out, HfSemantics semantics) {
  Mapping m(architecture, declared, params, semantics);
  if (architecture == "GPT2LMHeadModel")
    return gpt2(m, out);
  if (architecture == "LlamaForCausalLM")
    return llama(m, out);
  return Status::failure("hf: unknown architecture '" + architecture +
                         "' (lcc maps GPT2LMHeadModel and LlamaForCausalLM)");
}

} // namespace lcc
