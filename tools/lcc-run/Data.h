//===- Data.h - token files, train/val splits and batch sampling -*- C++ -*-===//
//
// The training data of `lcc-run`: a file of token ids, mapped read-only,
// split into training and validation tokens, and sampled into batches of
// `tokens` [batch, seq] and `targets` [batch, seq] (i32, targets = tokens
// shifted by one), the inputs of a model's @forward/@train_step.
//
// Token files (TokenFormat):
//  - U16 / U32: flat little-endian arrays, as nanoGPT's prepare scripts write
//    them (train.bin/val.bin, np.uint16) and as other tools write uint32 ids.
//  - llm.c's .bin files: a header of 256 little-endian int32 (header[0] the
//    magic, header[1] the version, header[2] the token count) then the tokens.
//    Recognised: magic 20240520 version 1 (GPT-2, uint16), magic 20240520
//    version 2 (uint32) and magic 20240801 version 7 (llm.c's Llama 3, uint32).
//    The header is honoured whatever the requested format, except Bytes.
//  - Bytes: any file, each byte one token 0..255 (byte-level models on text).
//  - Auto: the llm.c header when present, else the extension: .bin and .u16
//    are U16, .u32 is U32, anything else (.txt, ...) is Bytes.
//
// Sampling is counter-based, so batch k depends only on (seed, k): resuming
// from a checkpoint at step k reproduces the run exactly without saving any
// RNG state, and every data-parallel rank can compute any batch.
//
// Part of the runtime: no MLIR/LLVM, no exceptions. Errors are one line,
// prefixed with the file's path.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_DATA_H
#define LCC_RUNTIME_DATA_H

#include "runtime/support/Status.h"

#include "runtime/support/HostTensor.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace lcc {

enum class TokenFormat { Auto, U16, U32, Bytes };

/// "auto", "u16", "u32", "bytes": the names command lines use.
const char *tokenFormatName(TokenFormat format);
/// Parses one of the names above; false for anything else.
bool parseTokenFormat(const std::string &name, TokenFormat &out);

/// The llm.c header: 256 int32, 1024 bytes.
constexpr size_t kLlmcHeaderBytes = 256 * 4;
constexpr int32_t kLlmcMagic = 20240520;       // GPT-2 data (version 1: uint16, 2: uint32)
constexpr int32_t kLlmcMagicLlama3 = 20240801; // Llama 3 data (version 7: uint32)

/// A token file mapped read-only. Move-only; unmapped on destruction.
class TokenFile {
public:
  TokenFile() = default;
  ~TokenFile();
  TokenFile(TokenFile &&other) noexcept { *this = std::move(other); }
  TokenFile &operator=(TokenFile &&other) noexcept;
  TokenFile(const TokenFile &) = delete;
  TokenFile &operator=(const TokenFile &) = delete;

  /// Maps `path` and checks its layout (size a multiple of the token width,
  /// llm.c header consistent with the size). On failure `out` is left empty.
  static Status open(const std::string &path, TokenFormat format, TokenFile &out);

  const std::string &path() const { return path_; }
  /// The resolved format: U16, U32 or Bytes (never Auto).
  TokenFormat format() const { return format_; }
  bool hasLlmcHeader() const { return llmc_; }
  /// Number of tokens (the llm.c header excluded).
  size_t size() const { return count_; }
  /// Token i (i < size()), decoded little-endian.
  uint32_t operator[](size_t i) const {
    const uint8_t *p = tokens_ + i * width_;
    switch (width_) {
    case 1: return p[0];
    case 2: return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8;
    default:
      return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
             static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
    }
  }
  /// Checks every token is below `vocabSize`; the error names the first
  /// offending position (token index in the file) and value.
  Status checkVocab(uint32_t vocabSize) const;

private:
  void reset();

  std::string path_;
  TokenFormat format_ = TokenFormat::Bytes;
  bool llmc_ = false;
  unsigned width_ = 1; // bytes per token
  const uint8_t *tokens_ = nullptr;
  size_t count_ = 0;
  void *map_ = nullptr; // the whole mapping (header included); null for an empty file
  size_t mapSize_ = 0;
};

/// A contiguous range [begin, end) of one file's tokens: a train or val split.
/// Does not own the file, which must outlive it.
class TokenSpan {
public:
  TokenSpan() = default;
  TokenSpan(const TokenFile *file, size_t begin, size_t end) : file_(file), begin_(begin), end_(end) {}
  const TokenFile *file() const { return file_; }
  size_t begin() const { return begin_; }
  size_t end() const { return end_; }
  size_t size() const { return end_ - begin_; }
  bool empty() const { return end_ == begin_; }
  uint32_t operator[](size_t i) const { return (*file_)[begin_ + i]; }

private:
  const TokenFile *file_ = nullptr;
  size_t begin_ = 0, end_ = 0;
};

struct DatasetOptions {
  std::string trainPath;
  /// A separate validation file; when empty, the last `valFraction` of the
  /// training file is held out instead (as nanoGPT's prepare scripts do).
  std::string valPath;
  TokenFormat format = TokenFormat::Auto; // for both files
  /// In [0, 1). The training split is the first floor(n * (1 - valFraction))
  /// tokens (nanoGPT: data[:int(n*0.9)]), validation the rest. 0: no val split.
  double valFraction = 0.1;
  /// Every token must be below it (1 ..= 2^31 - 1: ids are i32 in the model).
  uint32_t vocabSize = 0;
  /// The model's sequence length: each non-empty split must hold one window
  /// of seqLen + 1 tokens (inputs plus the last target).
  int64_t seqLen = 0;
};

/// The training data: one or two mapped files and their splits.
class Dataset {
public:
  /// Maps the files, checks the vocabulary once over all tokens and the split
  /// sizes. On failure `out` is left empty.
  static Status open(const DatasetOptions &options, Dataset &out);

  const TokenSpan &train() const { return train_; }
  /// Empty when valFraction is 0 and no val file was given.
  const TokenSpan &val() const { return val_; }
  bool hasVal() const { return !val_.empty(); }

private:
  // Behind pointers so the spans stay valid when the Dataset moves.
  std::unique_ptr<TokenFile> trainFile_, valFile_;
  TokenSpan train_, val_;
};

/// A batch: `tokens` and `targets` are i32 [batch, seq] with
/// targets[r][t] == tokens[r][t + 1] within the window; `starts[r]` is row
/// r's window start, relative to the split.
struct Batch {
  HostTensor tokens, targets;
  std::vector<uint64_t> starts;
};

enum class SampleMode {
  /// Training: each row a uniform random window start in [0, n - seq - 1] (as
  /// nanoGPT's get_batch: torch.randint(len(data) - block_size)), from
  ///   splitmix64(splitmix64(splitmix64(seed) ^ step) ^ row)
  /// mapped to the range by a 64x64->128-bit multiply (bias < range / 2^64).
  Random,
  /// Evaluation, and training with lcc-run --order sequential: windows in
  /// order, row r of step k being window
  /// (k * batch + r) mod numWindows(). Windows start at 0, seq, 2*seq, ...;
  /// when they do not end exactly at the split's end, one last window is
  /// aligned to the end, so numSteps() batches cover every target of the split
  /// (the last batch wraps to the first windows to fill its rows).
  Sequential,
};

/// "random", "sequential": lcc-run's --order and a checkpoint's
/// lcc.data_order.
const char *sampleModeName(SampleMode mode);
/// Parses one of the names above; false for anything else.
bool parseSampleMode(const std::string &name, SampleMode &out);

/// Draws batches from one split. Copyable; keeps no state between calls.
class Sampler {
public:
  /// Requires batch >= 1, seq >= 1 and split.size() >= seq + 1 (checked by
  /// Dataset::open for its seqLen, or with checkWindow first).
  Sampler(TokenSpan split, int64_t batch, int64_t seq, uint64_t seed,
          SampleMode mode = SampleMode::Random);

  /// An error when `split` cannot hold one window of seq + 1 tokens;
  /// `what` names the split in the message ("training split", ...).
  static Status checkWindow(const TokenSpan &split, int64_t seq, const std::string &what);

  /// The batch of step `step`: a pure function of (split, batch, seq, seed,
  /// mode, step).
  Batch next(uint64_t step) const;
  /// The same into caller buffers of batch * seq int32 each (no allocation).
  void fill(uint64_t step, int32_t *tokens, int32_t *targets) const;
  /// Row `row`'s window start at step `step`, relative to the split.
  uint64_t start(uint64_t step, int64_t row) const;

  int64_t batch() const { return batch_; }
  int64_t seq() const { return seq_; }
  SampleMode mode() const { return mode_; }
  /// Sequential: the number of distinct windows; Random: the number of valid
  /// starts (n - seq).
  uint64_t numWindows() const;
  /// Sequential: batches needed to cover the split once, ceil(numWindows /
  /// batch). Random: 0 (no pass).
  uint64_t numSteps() const;

private:
  TokenSpan split_;
  int64_t batch_, seq_;
  uint64_t seed_;
  SampleMode mode_;
};

} // namespace lcc

#endif // LCC_RUNTIME_DATA_H
