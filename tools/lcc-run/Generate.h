//===- Generate.h - lcc-run --generate ------------------------*- C++ -*-===//
#ifndef LCC_TOOLS_LCC_RUN_GENERATE_H
#define LCC_TOOLS_LCC_RUN_GENERATE_H

#include "tools/lcc-run/Options.h"
#include "runtime/train/Trainer.h"

namespace lcc::run {

/// Prints the continuation of --prompt by the model `trainer` holds (its
/// parameters as initialized or restored), then the prefill and decode
/// rates; lcc-run's exit code (2: a prompt or train.bin that cannot
/// generate). A byte-level model (vocab 256) reads and writes text, as does
/// any model with --tokenizer; otherwise it reads and prints token ids.
int generateText(Trainer &trainer, const Options &opt);

} // namespace lcc::run

#endif
