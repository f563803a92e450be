//===- Generator.h - text generation with a train.bin's KV cache -*- C++ -*-===//
//
// Runs the generation entries lcc compiles beside the step (passes/train,
// lcc-build-generation): the shortest prefill that holds the prompt (padded
// to its length: @prefill_<L>, or @prefill over the whole context) gives the
// logits after the prompt and the KV cache;
// each @decode_step takes one token and its position, reads the cache and
// returns it with the token's row written. The cache lives in two sets of
// device buffers, one read and one written per step, swapped after it (no
// copies); on a GPU each set's step is one captured graph (Trainer::
// callEntry). Parameters are the Trainer's: whatever it holds (fresh,
// restored, --init-from) is what generates. A program with a @prefill
// without cache and no @decode_step (an ONNX model's) generates by running
// the prefill again over the text so far for each token.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_TRAIN_GENERATOR_H
#define LCC_RUNTIME_TRAIN_GENERATOR_H

#include "runtime/train/Trainer.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace lcc {

/// How the next token is picked from the logits.
struct SamplingOptions {
  double temperature = 0.8; ///< 0: greedy (the likeliest token, the lowest id on ties)
  int64_t topK = 40;        ///< keep the K likeliest (0: all)
  double topP = 0.95;       ///< then the fewest whose probabilities reach P (1: all)
};

/// A token drawn from softmax(logits / temperature) cut to top-k, then to
/// the top-p nucleus, with `rng`; the same rng state gives the same token
/// on every machine (the draw uses its raw 64-bit output, not a standard
/// library distribution).
int32_t sampleToken(const std::vector<float> &logits, const SamplingOptions &o,
                    std::mt19937_64 &rng);

class Generator {
public:
  /// Binds to `trainer`'s program, which must have @prefill and
  /// @decode_step, or a @prefill without cache (an error naming why it has
  /// none otherwise); allocates the
  /// cache and the entries' inputs and outputs on the trainer's device
  /// (released with the generator, which must not outlive the trainer).
  Status init(Trainer &trainer);
  Generator() = default;
  Generator(const Generator &) = delete;
  Generator &operator=(const Generator &) = delete;
  ~Generator();

  /// The most tokens the cache holds (prompt and continuation).
  int64_t context() const { return context_; }
  int64_t vocab() const { return vocab_; }
  /// Tokens in the cache so far.
  int64_t length() const { return length_; }
  /// Whether each token reads a KV cache (else the prefill runs again).
  bool cached() const { return decode_ != nullptr; }

  /// Starts over with `prompt` (1..context tokens, each in [0, vocab)):
  /// `logits` of the token after it.
  Status prefill(const std::vector<int32_t> &prompt, std::vector<float> &logits);
  /// Appends `token` at position length() (< context): `logits` of the
  /// token after it.
  Status decode(int32_t token, std::vector<float> &logits);

private:
  Trainer *trainer_ = nullptr;
  const EntryPoint *prefill_ = nullptr, *decode_ = nullptr;
  int64_t context_ = 0, vocab_ = 0, length_ = 0;
  std::string tokensName_; // the model's token input
  std::vector<std::string> cacheNames_;
  // The prefills by length, shortest first (the last is @prefill, the context).
  std::vector<std::pair<int64_t, const EntryPoint *>> prefills_;
  std::vector<int32_t> text_; // the tokens so far, padded to the context (no cache)
  // Device buffers: the prefill's tokens [1, context], the decode's token
  // [1, 1], the position [1], the logits [1, 1, vocab], two cache sets.
  uint64_t tokens_ = 0, token_ = 0, position_ = 0, logits_ = 0;
  std::vector<uint64_t> cache_[2];
  int current_ = 0;   // the set holding the cache
  bool warm_[2] = {}; // a decode step read set s eagerly (graphs capture after it)
  size_t cacheBytes_ = 0;
  void release();
  Status readLogits(std::vector<float> &logits);
  /// @prefill over text_ with the logits at `last`.
  Status runPrefill(int32_t last, std::vector<float> &logits);
};

} // namespace lcc

#endif
