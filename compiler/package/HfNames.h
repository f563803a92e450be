//===- HfNames.h - a model's parameters as a Hugging Face checkpoint -*- C++ -*-===//
//
// lcc maps two Hugging Face architectures, GPT2LMHeadModel and
// LlamaForCausalLM, the ones its examples and ONNX fixtures cover. A DSL
// model says which it is in an `hf` section, with the config.json values its
// parameter shapes do not determine (docs/hf.md):
//
//   hf GPT2LMHeadModel { n_head = heads; layer_norm_epsilon = eps }
//
// hfSection checks that the parameters are exactly the architecture's
// tensors, under its names less the base model's prefix ("transformer.",
// "model."; an embedding may drop ".weight"), with its shapes, and returns
// what the train.bin's manifest carries for lcc-run's --init-from and
// --export-hf (runtime only, no MLIR):
//
//   {"architecture": "GPT2LMHeadModel",
//    "config": {...},        config.json as --export-hf writes it
//    "checked": [...],       keys a checkpoint's config.json must agree on (at
//                            the top level, or in rope_parameters / rope_scaling
//                            as transformers 5 writes rope_theta and rope_type)
//    "defaults": {...},      their values where config.json leaves them out
//    "prefix": "transformer.",
//    "tensors": [{"hf": "transformer.h.0.attn.c_attn.weight", "param": "h.0.attn.c_attn.weight",
//                 "transpose": false}, ...],
//    "ignored": [...]}       glob patterns of tensors a checkpoint may hold
//                            beside them (buffers, a tied head)
//
// Layouts: GPT-2's Conv1D weights are [in, out], as lcc's `x @ weight`
// stores them; LLaMA's nn.Linear weights are [out, in], so a DSL model's are
// transposed both ways. lcc's rope is the rotate-half form Hugging Face's
// LLaMA uses, so q and k need no permutation.
//
// An ONNX export of the Hugging Face module itself (lcc --hf-config) is
// mapped too: its initializers are the module's tensors under their full
// names, in PyTorch's layouts, and its graph computes what config.json says,
// so the config's activation and attention-scaling values are taken as
// declared rather than checked against lcc's DSL semantics.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_COMPILER_PACKAGE_HFNAMES_H
#define LCC_COMPILER_PACKAGE_HFNAMES_H

#include "runtime/support/Json.h"
#include "runtime/support/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lcc {

struct HfParameter {
  std::string name;           // Hugging Face's less the base model's prefix
  std::vector<int64_t> shape; // whole, as the model declares it
  /// The module's own name when it differs from `name` (an ONNX export's
  /// full name), for the manifest.
  std::string stored;
  /// Held as the PyTorch module holds it (an ONNX export's initializer),
  /// rather than as lcc's `x @ weight` ([in, out]) does.
  bool torchLayout = false;
};

/// Who computes the model: lcc's DSL ops (values such as the activation
/// are lcc's and checked), or an exported graph of the Hugging Face module
/// (they are config.json's, taken as declared).
enum class HfSemantics { Dsl, Exported };

/// The prefix of `architecture`'s base model in its tensor names
/// ("transformer.", "model."), or empty for an architecture lcc does not map.
std::string hfBasePrefix(const std::string &architecture);

/// config.json (`config`, parsed) as the declared values of an exported model
/// (lcc --hf-config): its scalars (less what describes the file rather than
/// the model), RoPE's theta where transformers 5 nests it, and a scaled RoPE
/// as transformers 4's rope_scaling; `architecture` is the first name of its
/// "architectures" (unless already set). An error when it names none.
Status hfDeclaredConfig(const json::Value &config, std::string &architecture,
                        json::Value &declared);

/// The manifest's "hf" section for a model of `architecture` with
/// `declared` config.json values (an object) and `params`; an error naming
/// the first parameter or value that does not fit.
Status hfSection(const std::string &architecture, const json::Value &declared,
                 const std::vector<HfParameter> &params, json::Value &out,
                 HfSemantics semantics = HfSemantics::Dsl);

} // namespace lcc

#endif // LCC_COMPILER_PACKAGE_HFNAMES_H
