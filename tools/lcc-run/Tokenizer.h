//===- Tokenizer.h - lcc-run --tokenizer: SentencePiece models --*- C++ -*-===//
//
// Text to token ids and back for models whose vocabulary is not bytes, with
// a SentencePiece model file (what LLaMA-family and T5-family checkpoints
// ship as tokenizer.model), through Debian's libsentencepiece. Hugging Face
// tokenizer.json files are not read: the library that implements them
// (tokenizers) is Rust, with no packaged C++ interface. Without
// libsentencepiece at build time, load() says the build lacks it.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_TOOLS_LCC_RUN_TOKENIZER_H
#define LCC_TOOLS_LCC_RUN_TOKENIZER_H

#include "runtime/support/Status.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lcc::run {

class Tokenizer {
public:
  static Status load(const std::string &path, Tokenizer &out);
  /// Pieces in the model (ids 0 .. size-1).
  int64_t size() const;
  std::vector<int32_t> encode(const std::string &text) const;
  std::string decode(const std::vector<int32_t> &ids) const;

private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

} // namespace lcc::run

#endif
