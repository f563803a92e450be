//===- Exports.h - what lcc-run writes after training ----------*- C++ -*-===//
#ifndef LCC_TOOLS_LCC_RUN_EXPORTS_H
#define LCC_TOOLS_LCC_RUN_EXPORTS_H

#include "runtime/support/Json.h"
#include "runtime/support/Status.h"
#include "runtime/train/Trainer.h"
#include "tools/lcc-run/Distributed.h"
#include "tools/lcc-run/Options.h"

#include <map>
#include <string>

namespace lcc::run {

/// --export (safetensors), --export-peft, --export-hf (with --merge-lora and
/// the tokenizer files) and --export-onnx of the trained weights. Exports
/// hold whole tensors: partitioned ones are gathered, so every rank calls
/// this; rank 0 writes. Errors are one line, naming the flag.
Status writeExports(const Options &opt, const DistributedRun &job, const Trainer &trainer,
                    const std::map<std::string, std::string> &meta, const json::Value &manifest);

} // namespace lcc::run

#endif
