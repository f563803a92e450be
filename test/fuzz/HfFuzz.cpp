//===- HfFuzz.cpp - libFuzzer target for Hugging Face model files ---------===//
//
// Any bytes, as the files of a Hugging Face model directory that lcc and
// lcc-run read:
//  - config.json for lcc --hf-config (compiler/package/HfNames.h:
//    hfDeclaredConfig, then hfSection with parameters of the sizes the
//    config declares, small, in both the DSL's and an export's layout; an
//    ONNX export's parameter names are input too, so a string
//    "_fuzz_param" in the config adds a parameter of that name);
//  - config.json for lcc-run --init-from (checkHfConfig against the manifest
//    sections of a tiny GPT-2 and a tiny LLaMA);
//  - model.safetensors.index.json (hfIndexFiles: the weight files it names);
//    every text that parses as JSON goes to all three;
//  - otherwise model.safetensors: written to a scratch model directory beside
//    the tiny models' config.json and read by readHfModel (F16/BF16 widened,
//    names, shapes, transposes) against both sections.
// lcc-run's SentencePiece tokenizer (tools/lcc-run/Tokenizer.cpp) is not
// fuzzed: the model file is parsed by libsentencepiece, not lcc, and the
// bridge is opened with RTLD_DEEPBIND, which AddressSanitizer refuses.
// Must hold: an error Status or a valid result (a section maps every
// parameter once; the files an index names lie in the model directory; read
// weights have the model's shapes), never a crash, a sanitizer report, a
// hang or an unbounded allocation. Seeds: test/fuzz/corpus/hf (make_seeds.py)
// and test/fixtures/hf/*/config.json.
//
//===----------------------------------------------------------------------===//
#include "test/fuzz/FuzzCheck.h"
#include "compiler/package/HfNames.h"
#include "runtime/support/Json.h"
#include "tools/lcc-run/HfModel.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace lcc;

namespace {

void check(bool ok, const char *what) { fuzz::check(ok, "HfFuzz", what); }

/// An integer config value clamped to [0, 16] (so that the parameters made
/// from it stay small), or `dflt`.
int64_t size(const json::Value &declared, const char *key, int64_t dflt) {
  const json::Value *v = declared.get(key);
  if (!v || !v->isInt())
    return dflt;
  return std::clamp<int64_t>(v->asInt(), 0, 16);
}

/// The parameters of the model `declared` describes, as a DSL model holds
/// them (or, `torch`, as an ONNX export of the module does).
std::vector<HfParameter> paramsFor(const std::string &architecture, const json::Value &declared,
                                   bool torch) {
  std::vector<HfParameter> params;
  auto add = [&](std::string name, std::vector<int64_t> shape, bool linear) {
    if (torch && linear && shape.size() == 2)
      std::swap(shape[0], shape[1]);
    params.push_back({name, shape, torch ? hfBasePrefix(architecture) + name : "", torch});
  };
  if (architecture == "GPT2LMHeadModel") {
    int64_t vocab = size(declared, "vocab_size", 8), dim = size(declared, "n_embd", 4),
            positions = size(declared, "n_positions", 4), layers = size(declared, "n_layer", 1),
            inner = size(declared, "n_inner", 4 * dim);
    add("wte", {vocab, dim}, false);
    add("wpe", {positions, dim}, false);
    for (int64_t i = 0; i < std::min<int64_t>(layers, 3); ++i) {
      std::string h = "h." + std::to_string(i) + ".";
      for (const char *n : {"ln_1", "ln_2"}) {
        add(h + n + ".weight", {dim}, false);
        add(h + n + ".bias", {dim}, false);
      }
      add(h + "attn.c_attn.weight", {dim, 3 * dim}, false);
      add(h + "attn.c_attn.bias", {3 * dim}, false);
      add(h + "attn.c_proj.weight", {dim, dim}, false);
      add(h + "attn.c_proj.bias", {dim}, false);
      add(h + "mlp.c_fc.weight", {dim, inner}, false);
      add(h + "mlp.c_fc.bias", {inner}, false);
      add(h + "mlp.c_proj.weight", {inner, dim}, false);
      add(h + "mlp.c_proj.bias", {dim}, false);
    }
    add("ln_f.weight", {dim}, false);
    add("ln_f.bias", {dim}, false);
  } else if (architecture == "LlamaForCausalLM") {
    int64_t vocab = size(declared, "vocab_size", 8), dim = size(declared, "hidden_size", 4),
            heads = size(declared, "num_attention_heads", 2),
            kvHeads = size(declared, "num_key_value_heads", heads),
            headDim = size(declared, "head_dim", heads > 0 ? dim / heads : 0),
            inner = size(declared, "intermediate_size", 8),
            layers = size(declared, "num_hidden_layers", 1);
    const json::Value *tie = declared.get("tie_word_embeddings");
    add("embed_tokens", {vocab, dim}, false);
    for (int64_t i = 0; i < std::min<int64_t>(layers, 3); ++i) {
      std::string l = "layers." + std::to_string(i) + ".";
      add(l + "input_layernorm.weight", {dim}, false);
      add(l + "self_attn.q_proj.weight", {dim, heads * headDim}, true);
      add(l + "self_attn.k_proj.weight", {dim, kvHeads * headDim}, true);
      add(l + "self_attn.v_proj.weight", {dim, kvHeads * headDim}, true);
      add(l + "self_attn.o_proj.weight", {heads * headDim, dim}, true);
      add(l + "post_attention_layernorm.weight", {dim}, false);
      add(l + "mlp.gate_proj.weight", {dim, inner}, true);
      add(l + "mlp.up_proj.weight", {dim, inner}, true);
      add(l + "mlp.down_proj.weight", {inner, dim}, true);
    }
    add("norm.weight", {dim}, false);
    if (!(tie && tie->isBool() && tie->asBool()))
      add("lm_head.weight", {dim, vocab}, true);
  }
  if (const json::Value *extra = declared.get("_fuzz_param"); extra && extra->isString())
    add(extra->asString(), {1}, false);
  return params;
}

/// lcc --hf-config: the config's declared values, mapped.
void hfConfig(const json::Value &config) {
  std::string architecture;
  json::Value declared;
  if (!hfDeclaredConfig(config, architecture, declared))
    return;
  check(!architecture.empty() && declared.isObject(), "hfDeclaredConfig gave no architecture");
  for (HfSemantics semantics : {HfSemantics::Exported, HfSemantics::Dsl}) {
    std::vector<HfParameter> params =
        paramsFor(architecture, declared, semantics == HfSemantics::Exported);
    json::Value section;
    if (!hfSection(architecture, declared, params, section, semantics))
      continue;
    const json::Value *tensors = section.get("tensors");
    check(tensors && tensors->isArray() && tensors->size() == params.size(),
          "a Hugging Face section does not map every parameter once");
    (void)json::serialize(section, 2);
    // What lcc-run checks a checkpoint's config.json against.
    (void)checkHfConfig("config.json", config, section);
  }
}

/// The manifest sections of the tiny models readHfModel reads against.
const std::vector<json::Value> &sections() {
  static const std::vector<json::Value> &all = *[] {
    auto *out = new std::vector<json::Value>;
    const json::Value gpt2 = json::Value::object({{"n_head", 2}, {"layer_norm_epsilon", 1e-5}});
    const json::Value llama = json::Value::object({{"num_attention_heads", 2},
                                                   {"num_key_value_heads", 1},
                                                   {"max_position_embeddings", 16},
                                                   {"rms_norm_eps", 1e-6},
                                                   {"rope_theta", 10000.0}});
    for (auto &[arch, declared] :
         {std::pair{"GPT2LMHeadModel", gpt2}, std::pair{"LlamaForCausalLM", llama}}) {
      json::Value section;
      Status st = hfSection(arch, declared, paramsFor(arch, declared, false), section);
      check(bool(st), st.message().c_str());
      out->push_back(std::move(section));
    }
    return out;
  }();
  return all;
}

/// Scratch model directories, one per section, with its config.json. Never
/// destroyed: the exit handler that removes them still needs their names.
const std::vector<std::string> &modelDirs() {
  static const std::vector<std::string> &dirs = *[] {
    std::string base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    base += "/lcc-hf-fuzz-" + std::to_string(getpid());
    auto *out = new std::vector<std::string>;
    for (size_t i = 0; i < sections().size(); ++i) {
      std::string dir = base + "-" + std::to_string(i);
      ::mkdir(dir.c_str(), 0700);
      std::string text = json::serialize(*sections()[i].get("config"), 2);
      std::FILE *f = std::fopen((dir + "/config.json").c_str(), "wb");
      check(f && std::fwrite(text.data(), 1, text.size(), f) == text.size() && !std::fclose(f),
            "cannot write a scratch config.json");
      out->push_back(dir);
    }
    return out;
  }();
  return dirs;
}

void removeScratch() {
  for (const std::string &dir : modelDirs()) {
    unlink((dir + "/config.json").c_str());
    unlink((dir + "/model.safetensors").c_str());
    rmdir(dir.c_str());
  }
}

/// lcc-run --init-from DIR with `data` as DIR/model.safetensors.
void readWeights(const uint8_t *data, size_t size) {
  for (size_t i = 0; i < sections().size(); ++i) {
    const std::string path = modelDirs()[i] + "/model.safetensors";
    std::FILE *f = std::fopen(path.c_str(), "wb");
    bool written = f && std::fwrite(data, 1, size, f) == size;
    if (!f || std::fclose(f) != 0 || !written)
      continue;
    std::map<std::string, HostTensor> params;
    if (!readHfModel(modelDirs()[i], sections()[i], params))
      continue;
    const json::Value &tensors = *sections()[i].get("tensors");
    check(params.size() == tensors.size(), "readHfModel gave another set of parameters");
    for (const json::Value &t : tensors.items()) {
      auto it = params.find(t.get("param")->asString());
      check(it != params.end(), "readHfModel left out a parameter");
      std::vector<int64_t> shape;
      for (const json::Value &d : t.get("shape")->items())
        shape.push_back(d.asInt());
      if (t.get("transpose")->asBool())
        std::reverse(shape.begin(), shape.end());
      check(it->second.shape() == shape, "readHfModel gave a parameter of another shape");
    }
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static bool registered = (modelDirs(), std::atexit(removeScratch), true);
  (void)registered;
  std::string text(reinterpret_cast<const char *>(data), size);
  json::Value config;
  if (!json::parse(text, config)) {
    readWeights(data, size);
    return 0;
  }
  hfConfig(config);
  if (config.isObject())
    for (const json::Value &section : sections())
      (void)checkHfConfig("config.json", config, section);
  std::vector<std::string> files;
  if (hfIndexFiles("/model", text, files)) {
    std::set<std::string> unique(files.begin(), files.end());
    check(unique.size() == files.size(), "an index names a weight file twice");
    for (const std::string &f : files)
      check(f.rfind("/model/", 0) == 0 && f.find('/', 7) == std::string::npos,
            "an index names a file outside the model directory");
  }
  return 0;
}
