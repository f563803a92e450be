//===- HfModel.h - Hugging Face model directories in and out -----*- C++ -*-===//
//
// `lcc-run --init-from DIR` starts training from a model directory that
// transformers' save_pretrained wrote (config.json and model.safetensors, or
// shards listed by model.safetensors.index.json); `--export-hf DIR` writes
// the trained weights back in the same form, for transformers, vLLM and
// llama.cpp's converter. Both follow the train.bin manifest's "hf" section
// (compiler/package/HfNames.h): which tensor is which parameter, which is
// transposed, and the config.json values that must agree. docs/hf.md.
//
// Runtime only: no MLIR. Errors are one line naming the file and tensor.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_TOOLS_LCC_RUN_HFMODEL_H
#define LCC_TOOLS_LCC_RUN_HFMODEL_H

#include "runtime/support/HostTensor.h"
#include "runtime/support/Json.h"
#include "runtime/support/Status.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace lcc {

/// A JSON file holding an object (config.json, an index, adapter_config.json).
Status readJsonObject(const std::string &path, json::Value &out);
/// The same from the file's text (errors name `path`).
Status parseJsonObject(const std::string &path, const std::string &text, json::Value &out);

/// Checks a model's config.json (`file`, read from `path`) against the
/// manifest's "hf" section: the architecture, and every "checked" value.
Status checkHfConfig(const std::string &path, const json::Value &file, const json::Value &hf);

/// The weight files model.safetensors.index.json (its text, in `dir`) lists
/// in its weight_map, appended to `files` as paths in `dir`, each once in
/// the order first named; an error for a name that is not a file of `dir`.
Status hfIndexFiles(const std::string &dir, const std::string &text,
                    std::vector<std::string> &files);

/// The whole parameters, by lcc name, of the model in `dir`, after checking
/// its config.json against `hf` (the manifest's section) and every tensor's
/// name, shape and dtype.
Status readHfModel(const std::string &dir, const json::Value &hf,
                   std::map<std::string, HostTensor> &params);

/// Writes `params` (whole, by lcc name) into `dir` as config.json,
/// generation_config.json and model.safetensors, or shards of at most
/// `shardBytes` with model.safetensors.index.json when they are larger
/// (transformers' layout; stale weight files of an earlier export are
/// removed). Each file is written atomically.
Status writeHfModel(const std::string &dir, const json::Value &hf,
                    const std::map<std::string, HostTensor> &params, int64_t shardBytes);

/// The tokenizer files transformers and llama.cpp's converter read beside a
/// model (tokenizer.json, vocab.json and merges.txt, tokenizer.model, their
/// configs, a chat template), copied atomically from the model directory
/// `from` into `to` where `from` has them: an export of a fine-tuned model
/// keeps its tokenizer.
Status copyTokenizerFiles(const std::string &from, const std::string &to);

} // namespace lcc

#endif // LCC_TOOLS_LCC_RUN_HFMODEL_H
