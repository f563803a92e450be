//===- HfModel.cpp - Hugging Face model directories in and out ------------===//
#include "tools/lcc-run/HfModel.h"

#include "runtime/support/AtomicFile.h"
#include "runtime/support/Safetensors.h"
#include "tools/lcc-run/AppendFile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fnmatch.h>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace lcc {

namespace {

bool exists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::vector<int64_t> shapeOf(const json::Value &v) {
  std::vector<int64_t> shape;
  for (const json::Value &d : v.items())
    shape.push_back(d.asInt());
  return shape;
}

/// A 2-D f32 tensor transposed.
HostTensor transposed(const HostTensor &t) {
  const int64_t rows = t.shape()[0], cols = t.shape()[1];
  HostTensor out(ElementType::F32, {cols, rows});
  const float *from = t.data<float>();
  float *to = out.data<float>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      to[c * rows + r] = from[r * cols + c];
  return out;
}

/// A config.json value: at the top level, else where transformers 5 keeps
/// RoPE's (rope_parameters) or older files their scaling (rope_scaling).
const json::Value *configValue(const json::Value &config, const std::string &key) {
  if (const json::Value *v = config.get(key))
    return v;
  for (const char *nested : {"rope_parameters", "rope_scaling"})
    if (const json::Value *n = config.get(nested); n && n->isObject())
      if (const json::Value *v = n->get(key))
        return v;
  return nullptr;
}

bool sameValue(const json::Value &a, const json::Value &b) {
  if (a.isNumber() && b.isNumber())
    return a.asDouble() == b.asDouble();
  return a == b;
}

} // namespace

Status checkHfConfig(const std::string &path, const json::Value &file, const json::Value &hf) {
  const json::Value &want = *hf.get("config");
  const std::string &arch = hf.get("architecture")->asString();
  if (const json::Value *archs = file.get("architectures"); archs && archs->isArray()) {
    bool listed = false;
    for (const json::Value &a : archs->items())
      listed |= a.isString() && a.asString() == arch;
    if (!listed)
      return Status::failure(path + ": architectures is " + json::serialize(*archs) +
                             ", the train.bin's model is a " + arch);
  }
  for (const json::Value &k : hf.get("checked")->items()) {
    const std::string &key = k.asString();
    const json::Value *expected = configValue(want, key);
    if (!expected)
      expected = hf.get("defaults")->get(key);
    const json::Value *given = configValue(file, key);
    if (!given)
      given = hf.get("defaults")->get(key);
    if (!given)
      return Status::failure(path + ": no " + key + " (the train.bin's model has " +
                             json::serialize(*expected) + ")");
    if (expected && !sameValue(*given, *expected))
      return Status::failure(path + ": " + key + " is " + json::serialize(*given) +
                             ", the train.bin was compiled with " + json::serialize(*expected) +
                             " (a model of another shape or kind)");
  }
  return Status();
}

Status parseJsonObject(const std::string &path, const std::string &text, json::Value &out) {
  if (Status st = json::parse(text, out); !st)
    return Status::failure(path + ": not JSON: " + st.message());
  if (!out.isObject())
    return Status::failure(path + ": not a JSON object");
  return Status();
}

Status readJsonObject(const std::string &path, json::Value &out) {
  std::string text;
  if (!readWholeFile(path, text))
    return Status::failure(path + ": cannot open: " + std::strerror(errno));
  return parseJsonObject(path, text, out);
}

Status hfIndexFiles(const std::string &dir, const std::string &text,
                    std::vector<std::string> &files) {
  json::Value index;
  if (Status st = parseJsonObject(dir + "/model.safetensors.index.json", text, index); !st)
    return st;
  const json::Value *map = index.get("weight_map");
  if (!map || !map->isObject())
    return Status::failure(dir + "/model.safetensors.index.json: no weight_map object");
  std::set<std::string> shards;
  for (const json::Value::Member &m : map->members()) {
    if (!m.second.isString() || m.second.asString().find('/') != std::string::npos)
      return Status::failure(dir + "/model.safetensors.index.json: tensor '" + m.first +
                             "' names no file of this directory");
    if (shards.insert(m.second.asString()).second)
      files.push_back(dir + "/" + m.second.asString());
  }
  return Status();
}

Status readHfModel(const std::string &dir, const json::Value &hf,
                   std::map<std::string, HostTensor> &params) {
  json::Value config;
  if (Status st = readJsonObject(dir + "/config.json", config); !st)
    return st;
  if (Status st = checkHfConfig(dir + "/config.json", config, hf); !st)
    return st;

  // The weight files: one, or the shards an index lists.
  std::vector<std::string> files;
  if (exists(dir + "/model.safetensors")) {
    files.push_back(dir + "/model.safetensors");
  } else if (exists(dir + "/model.safetensors.index.json")) {
    const std::string path = dir + "/model.safetensors.index.json";
    std::string text;
    if (!readWholeFile(path, text))
      return Status::failure(path + ": cannot open: " + std::strerror(errno));
    if (Status st = hfIndexFiles(dir, text, files); !st)
      return st;
  } else {
    return Status::failure(dir + ": neither model.safetensors nor model.safetensors.index.json "
                                 "(a directory transformers' save_pretrained wrote; PyTorch "
                                 ".bin weights must be converted to safetensors first)");
  }

  std::map<std::string, const json::Value *> byHf;
  for (const json::Value &t : hf.get("tensors")->items())
    byHf[t.get("hf")->asString()] = &t;
  const std::string &prefix = hf.get("prefix")->asString();
  std::set<std::string> found;
  params.clear();
  for (const std::string &file : files) {
    SafetensorsFile st;
    if (Status s = readSafetensors(file, st, /*widenHalf=*/true); !s)
      return s;
    for (auto &[name, tensor] : st.tensors) {
      // A base model's own save has no prefix (openai-community/gpt2: "h.0.attn...").
      auto it = byHf.find(name);
      if (it == byHf.end())
        it = byHf.find(prefix + name);
      if (it == byHf.end()) {
        bool ignored = false;
        for (const json::Value &g : hf.get("ignored")->items())
          ignored |= ::fnmatch(g.asString().c_str(), name.c_str(), 0) == 0;
        if (ignored)
          continue;
        return Status::failure(file + ": tensor '" + name + "' is none of the " +
                               hf.get("architecture")->asString() +
                               " tensors the train.bin's model has");
      }
      const json::Value &entry = *it->second;
      std::vector<int64_t> shape = shapeOf(*entry.get("shape"));
      if (tensor.elementType() != ElementType::F32 || tensor.shape() != shape)
        return Status::failure(file + ": tensor '" + name + "' is " + tensor.typeString() +
                               ", the train.bin's model needs f32" + shapeList(shape) +
                               " (f16 and bf16 are read as f32)");
      if (!found.insert(it->first).second)
        return Status::failure(file + ": tensor '" + it->first + "' is stored twice");
      params[entry.get("param")->asString()] =
          entry.get("transpose")->asBool() ? transposed(tensor) : std::move(tensor);
    }
  }
  for (const auto &[name, entry] : byHf)
    if (!found.count(name))
      return Status::failure(dir + ": no tensor '" + name + "' (parameter '" +
                             entry->get("param")->asString() + "' of the train.bin's model)");
  return Status();
}

Status writeHfModel(const std::string &dir, const json::Value &hf,
                    const std::map<std::string, HostTensor> &params, int64_t shardBytes) {
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
    return Status::failure(dir + ": cannot create the directory: " + std::strerror(errno));
  // Tensors under their Hugging Face names, in name order, cut into shards.
  std::map<std::string, HostTensor> tensors;
  for (const json::Value &entry : hf.get("tensors")->items()) {
    auto it = params.find(entry.get("param")->asString());
    if (it == params.end())
      return Status::failure("no value for parameter '" + entry.get("param")->asString() + "'");
    tensors[entry.get("hf")->asString()] =
        entry.get("transpose")->asBool() ? transposed(it->second) : it->second;
  }
  std::vector<SafetensorsFile> shards(1);
  int64_t total = 0, inShard = 0;
  for (auto &[name, t] : tensors) {
    int64_t bytes = int64_t(t.byteSize());
    if (inShard > 0 && inShard + bytes > shardBytes) {
      shards.emplace_back();
      inShard = 0;
    }
    inShard += bytes;
    total += bytes;
    shards.back().tensors[name] = std::move(t);
  }
  std::vector<std::string> names;
  for (size_t i = 0; i < shards.size(); ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
    names.push_back(shards.size() == 1 ? "model.safetensors" : name);
  }
  // Weight files of an earlier export that this one does not rewrite would
  // be read with it (an index beside model.safetensors, stale shards).
  if (DIR *d = ::opendir(dir.c_str())) {
    std::set<std::string> keep(names.begin(), names.end());
    if (shards.size() > 1)
      keep.insert("model.safetensors.index.json");
    std::vector<std::string> stale;
    while (dirent *e = ::readdir(d)) {
      std::string n = e->d_name;
      bool weights = n == "model.safetensors" || n == "model.safetensors.index.json" ||
                     ::fnmatch("model-*-of-*.safetensors", n.c_str(), 0) == 0;
      if (weights && !keep.count(n))
        stale.push_back(dir + "/" + n);
    }
    ::closedir(d);
    for (const std::string &p : stale)
      if (::unlink(p.c_str()) != 0)
        return Status::failure(p + ": cannot remove a stale weight file: " + std::strerror(errno));
  }
  json::Value weightMap = json::Value::object();
  for (size_t i = 0; i < shards.size(); ++i) {
    shards[i].metadata["format"] = "pt";
    for (auto &[name, t] : shards[i].tensors)
      weightMap.set(name, names[i]);
    if (Status st = writeSafetensors(dir + "/" + names[i], shards[i]); !st)
      return st;
  }
  auto writeJson = [&](const std::string &name, const json::Value &v) {
    std::string text = json::serialize(v, 2) + "\n";
    return writeFileAtomically(dir + "/" + name, text.data(), text.size());
  };
  if (shards.size() > 1) {
    json::Value index = json::Value::object(
        {{"metadata", json::Value::object({{"total_size", static_cast<long long>(total)}})},
         {"weight_map", std::move(weightMap)}});
    if (Status st = writeJson("model.safetensors.index.json", index); !st)
      return st;
  }
  const json::Value &config = *hf.get("config");
  json::Value generation = json::Value::object({{"_from_model_config", true}});
  for (const char *k : {"bos_token_id", "eos_token_id", "pad_token_id"})
    if (const json::Value *v = config.get(k))
      generation.set(k, *v);
  if (Status st = writeJson("generation_config.json", generation); !st)
    return st;
  return writeJson("config.json", config);
}

Status copyTokenizerFiles(const std::string &from, const std::string &to) {
  for (const char *name :
       {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
        "vocab.json", "merges.txt", "tokenizer.model", "chat_template.jinja"}) {
    const std::string source = from + "/" + name;
    if (::access(source.c_str(), F_OK) != 0)
      continue;
    std::string bytes;
    if (!readWholeFile(source, bytes))
      return Status::failure(source + ": cannot read: " + std::strerror(errno));
    if (Status st = writeFileAtomically(to + "/" + name, bytes.data(), bytes.size()); !st)
      return st;
  }
  return Status();
}

} // namespace lcc
