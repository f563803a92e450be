//===- PeftAdapter.cpp - LoRA adapters as PEFT saves them -----------------===//
#include "tools/lcc-run/PeftAdapter.h"

#include "runtime/support/AtomicFile.h"
#include "runtime/support/Safetensors.h"
#include "tools/lcc-run/HfModel.h"

#include <cerrno>
#include <cstring>
#include <set>
#include <sys/stat.h>

namespace lcc {

namespace {

/// PEFT's key of an adapter tensor: base_model.model.<W's HF name less
/// .weight>.lora_A.weight.
struct Keyed {
  std::string aKey, bKey, module; // module: the last component (target_modules)
};

Status keysOf(const json::Value &manifest, std::map<std::string, Keyed> &out) {
  const json::Value *hf = manifest.get("hf"), *lora = manifest.get("lora");
  if (!lora)
    return Status::failure("the train.bin has no LoRA adapters (compile with lcc --lora=...)");
  if (!hf)
    return Status::failure("the train.bin's model names no Hugging Face architecture (an `hf` "
                           "section of a DSL model; docs/hf.md), so its adapters have no PEFT "
                           "names");
  std::map<std::string, std::string> hfName;
  for (const json::Value &t : hf->get("tensors")->items())
    hfName[t.get("param")->asString()] = t.get("hf")->asString();
  for (const json::Value &a : lora->get("adapters")->items()) {
    const std::string &base = a.get("base")->asString();
    auto it = hfName.find(base);
    if (it == hfName.end())
      return Status::failure("adapted weight '" + base + "' has no Hugging Face name");
    std::string module = it->second;
    if (module.size() > 7 && module.compare(module.size() - 7, 7, ".weight") == 0)
      module.resize(module.size() - 7);
    Keyed k;
    k.aKey = "base_model.model." + module + ".lora_A.weight";
    k.bKey = "base_model.model." + module + ".lora_B.weight";
    k.module = module.substr(module.rfind('.') + 1);
    out[base] = k;
  }
  return Status();
}

} // namespace

Status writePeftAdapter(const std::string &dir, const json::Value &manifest,
                        const std::map<std::string, HostTensor> &params) {
  std::map<std::string, Keyed> keys;
  if (Status st = keysOf(manifest, keys); !st)
    return st;
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
    return Status::failure(dir + ": cannot create the directory: " + std::strerror(errno));
  const json::Value &lora = *manifest.get("lora");
  SafetensorsFile file;
  file.metadata["format"] = "pt";
  std::set<std::string> modules;
  for (const json::Value &a : lora.get("adapters")->items()) {
    const Keyed &k = keys.at(a.get("base")->asString());
    for (auto [param, key] :
         {std::pair{a.get("a")->asString(), k.aKey}, std::pair{a.get("b")->asString(), k.bKey}}) {
      auto it = params.find(param);
      if (it == params.end())
        return Status::failure("no value for adapter '" + param + "'");
      file.tensors[key] = it->second;
    }
    modules.insert(k.module);
  }
  if (Status st = writeSafetensors(dir + "/adapter_model.safetensors", file); !st)
    return st;
  json::Value targets = json::Value::array();
  for (const std::string &m : modules)
    targets.push(m);
  const std::string &arch = manifest.get("hf")->get("architecture")->asString();
  json::Value config =
      json::Value::object({{"peft_type", "LORA"},
                           {"task_type", "CAUSAL_LM"},
                           {"base_model_name_or_path", json::Value()},
                           {"r", *lora.get("rank")},
                           {"lora_alpha", *lora.get("alpha")},
                           {"lora_dropout", 0.0},
                           {"use_rslora", *lora.get("rslora")},
                           {"target_modules", std::move(targets)},
                           // GPT-2's Conv1D stores [in, out]: PEFT calls that fan_in_fan_out.
                           {"fan_in_fan_out", arch == "GPT2LMHeadModel"},
                           {"bias", "none"},
                           {"modules_to_save", json::Value()},
                           {"init_lora_weights", true},
                           {"inference_mode", true}});
  std::string text = json::serialize(config, 2) + "\n";
  return writeFileAtomically(dir + "/adapter_config.json", text.data(), text.size());
}

Status readPeftAdapter(const std::string &dir, const json::Value &manifest,
                       std::map<std::string, HostTensor> &params) {
  std::map<std::string, Keyed> keys;
  if (Status st = keysOf(manifest, keys); !st)
    return st;
  const json::Value &lora = *manifest.get("lora");
  json::Value config;
  if (Status st = readJsonObject(dir + "/adapter_config.json", config); !st)
    return st;
  auto number = [&](const char *key, double &out) {
    const json::Value *v = config.get(key);
    if (!v || !v->isNumber())
      return false;
    out = v->asDouble();
    return true;
  };
  double r = 0, alpha = 0;
  if (!number("r", r) || r != double(lora.get("rank")->asInt()))
    return Status::failure(dir + "/adapter_config.json: r is not the compiled " +
                           std::to_string(lora.get("rank")->asInt()));
  if (!number("lora_alpha", alpha) || alpha != lora.get("alpha")->asDouble())
    return Status::failure(dir + "/adapter_config.json: lora_alpha is not the compiled " +
                           json::serialize(*lora.get("alpha")));
  const json::Value *rs = config.get("use_rslora");
  if ((rs && rs->isBool() && rs->asBool()) != lora.get("rslora")->asBool())
    return Status::failure(dir + "/adapter_config.json: use_rslora differs from the compiled "
                                 "adapters'");
  SafetensorsFile file;
  if (Status st = readSafetensors(dir + "/adapter_model.safetensors", file, /*widenHalf=*/true);
      !st)
    return st;
  std::map<std::string, std::string> byKey; // PEFT key -> lcc name
  for (const json::Value &a : lora.get("adapters")->items()) {
    const Keyed &k = keys.at(a.get("base")->asString());
    byKey[k.aKey] = a.get("a")->asString();
    byKey[k.bKey] = a.get("b")->asString();
  }
  for (auto &[key, tensor] : file.tensors) {
    auto it = byKey.find(key);
    if (it == byKey.end())
      return Status::failure(dir + "/adapter_model.safetensors: tensor '" + key +
                             "' is no adapter of the train.bin's model (another target_modules?)");
    params[it->second] = std::move(tensor);
  }
  for (auto &[key, name] : byKey)
    if (!file.tensors.count(key))
      return Status::failure(dir + "/adapter_model.safetensors: no tensor '" + key + "'");
  return Status();
}

Status mergeLora(const json::Value &manifest, std::map<std::string, HostTensor> &params) {
  const json::Value *lora = manifest.get("lora");
  if (!lora)
    return Status();
  const double scale = lora->get("scale")->asDouble();
  for (const json::Value &a : lora->get("adapters")->items()) {
    auto w = params.find(a.get("base")->asString());
    auto A = params.find(a.get("a")->asString()), B = params.find(a.get("b")->asString());
    if (w == params.end() || A == params.end() || B == params.end())
      return Status::failure("merging '" + a.get("base")->asString() + "': a tensor is missing");
    const int64_t r = A->second.shape()[0], in = A->second.shape()[1], out = B->second.shape()[0];
    const bool transposed = a.get("transposed")->asBool();
    float *W = w->second.data<float>();
    const float *pa = A->second.data<float>(), *pb = B->second.data<float>();
    // W is [in, out] (x @ W), or [out, in] when used transposed.
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < in; ++i) {
        double d = 0;
        for (int64_t k = 0; k < r; ++k)
          d += double(pb[o * r + k]) * double(pa[k * in + i]);
        float &target = transposed ? W[o * in + i] : W[i * out + o];
        target = float(double(target) + scale * d);
      }
  }
  return Status();
}

} // namespace lcc
