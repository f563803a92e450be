//===- Entries.h - a train.bin's text-generation entries by name -*- C++ -*-===//
//
// Besides @init, @forward and @train_step a train.bin may hold the entries
// lcc-build-generation makes (docs/generate.md): @prefill over the whole
// context, @prefill_<L> over its first L positions (shorter prompts run the
// shortest that holds them), and @decode_step.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_SUPPORT_ENTRIES_H
#define LCC_RUNTIME_SUPPORT_ENTRIES_H

#include <string_view>

namespace lcc {

/// Whether `name` is a prefill entry (@prefill or @prefill_<L>).
inline bool isPrefillEntry(std::string_view name) {
  return name == "prefill" || name.substr(0, 8) == "prefill_";
}

/// Whether `name` is a text-generation entry, whose buffers exist only
/// while lcc-run --generate runs.
inline bool isGenerationEntry(std::string_view name) {
  return isPrefillEntry(name) || name == "decode_step";
}

} // namespace lcc

#endif
