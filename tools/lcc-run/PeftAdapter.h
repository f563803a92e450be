//===- PeftAdapter.h - LoRA adapters as PEFT saves them ---------*- C++ -*-===//
//
// A train.bin compiled with `lcc --lora=...` holds, beside its frozen base
// weights, an A [r, in] and a B [out, r] per adapted weight W (the
// manifest's "lora" section: passes/train/Lora.cpp). lcc-run writes and reads
// them as PEFT's save_pretrained does (adapter_model.safetensors with keys
// base_model.model.<module>.lora_A.weight / .lora_B.weight, where <module> is
// the Hugging Face name of W less ".weight", and adapter_config.json), and
// folds them into W for --export-hf --merge-lora. docs/hf.md.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_TOOLS_LCC_RUN_PEFTADAPTER_H
#define LCC_TOOLS_LCC_RUN_PEFTADAPTER_H

#include "runtime/support/HostTensor.h"
#include "runtime/support/Json.h"
#include "runtime/support/Status.h"

#include <map>
#include <string>

namespace lcc {

/// Writes the adapters of `params` (whole, by lcc name) into `dir`.
/// `manifest` must have "hf" and "lora".
Status writePeftAdapter(const std::string &dir, const json::Value &manifest,
                        const std::map<std::string, HostTensor> &params);

/// Reads the adapters of a PEFT directory into `params` (by lcc name),
/// checking its r, lora_alpha and rsLoRA against the compiled ones and that
/// it holds exactly the compiled adapters.
Status readPeftAdapter(const std::string &dir, const json::Value &manifest,
                       std::map<std::string, HostTensor> &params);

/// W += scale * (B A)^T for each adapter ((B A) when W is used transposed),
/// in f64 then rounded once; the adapters themselves are left in `params`.
Status mergeLora(const json::Value &manifest, std::map<std::string, HostTensor> &params);

} // namespace lcc

#endif // LCC_TOOLS_LCC_RUN_PEFTADAPTER_H
