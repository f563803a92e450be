//===- DataFuzz.cpp - libFuzzer target for token data files ---------------===//
//
// Any bytes -> a token data file as lcc-run --data reads it
// (tools/lcc-run/Data.h): the first 4 bytes pick the options (format, the
// file's extension for format auto, validation fraction or a separate
// validation file, vocabulary size, sequence length, batch size), the rest
// is the file, written to /dev/shm (TokenFile maps a path) and opened with
// Dataset::open: u16 / u32 / byte tokens, llm.c headers. For a dataset that
// opens, batches are sampled from each split in both orders and checked:
// every token below the vocabulary size, targets the tokens shifted by one,
// windows inside the split. Must hold: an error Status or such batches,
// never a crash, a sanitizer report, a hang or an unbounded allocation.
// Seeds: test/fuzz/corpus/data (make_seeds.py).
//
//===----------------------------------------------------------------------===//
#include "test/fuzz/FuzzCheck.h"
#include "tools/lcc-run/Data.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

using namespace lcc;

namespace {

void check(bool ok, const char *what) { fuzz::check(ok, "DataFuzz", what); }

const char *const kExtensions[] = {".bin", ".u16", ".u32", ".txt"};

/// The scratch files of this process (fuzzer jobs run in parallel). Never
/// destroyed: the exit handler that removes them still needs their names.
std::string scratch(int i) {
  static const std::string *base = [] {
    std::string dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    return new std::string(dir + "/lcc-data-fuzz-" + std::to_string(getpid()));
  }();
  return *base + "-" + std::to_string(i) + kExtensions[i];
}

void removeScratch() {
  for (int i = 0; i < 4; ++i)
    unlink(scratch(i).c_str());
}

bool writeFile(const std::string &path, const uint8_t *data, size_t size) {
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return false;
  bool ok = std::fwrite(data, 1, size, f) == size;
  return std::fclose(f) == 0 && ok;
}

void sample(const TokenSpan &split, int64_t batch, int64_t seq, uint32_t vocab) {
  for (SampleMode mode : {SampleMode::Random, SampleMode::Sequential}) {
    Sampler sampler(split, batch, seq, /*seed=*/1337, mode);
    for (uint64_t step : {uint64_t(0), uint64_t(1), sampler.numSteps(), ~uint64_t(0)}) {
      Batch b = sampler.next(step);
      check(b.tokens.shape() == std::vector<int64_t>{batch, seq} &&
                b.targets.shape() == b.tokens.shape() && b.starts.size() == size_t(batch),
            "a batch has the wrong shape");
      const int32_t *tokens = b.tokens.data<int32_t>(), *targets = b.targets.data<int32_t>();
      for (int64_t r = 0; r < batch; ++r) {
        check(b.starts[size_t(r)] + uint64_t(seq) + 1 <= split.size(),
              "a window runs past the end of its split");
        for (int64_t t = 0; t < seq; ++t) {
          int32_t tok = tokens[r * seq + t], tgt = targets[r * seq + t];
          check(tok >= 0 && uint32_t(tok) < vocab && tgt >= 0 && uint32_t(tgt) < vocab,
                "a sampled token is outside the vocabulary");
          check(tok == int32_t(split[b.starts[size_t(r)] + uint64_t(t)]),
                "a token is not the split's token at its window");
          check(t + 1 == seq || tgt == tokens[r * seq + t + 1],
                "the targets are not the tokens shifted by one");
        }
      }
    }
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static bool registered = (std::atexit(removeScratch), true);
  (void)registered;
  if (size < 4)
    return 0;
  // Byte 0: format (2 bits), extension (2 bits), validation (2 bits: none,
  // 10 %, 50 %, the same bytes as a validation file). Bytes 1-3: vocabulary,
  // sequence length, batch.
  static const TokenFormat kFormats[] = {TokenFormat::Auto, TokenFormat::U16, TokenFormat::U32,
                                         TokenFormat::Bytes};
  static const uint32_t kVocab[] = {1, 2, 255, 256, 257, 50257, 65535, 65536, 128256, 0x7fffffff};
  DatasetOptions options;
  options.format = kFormats[data[0] & 3];
  int ext = (data[0] >> 2) & 3, val = (data[0] >> 4) & 3;
  options.valFraction = val == 1 ? 0.1 : val == 2 ? 0.5 : 0.0;
  options.vocabSize = data[1] < 240 ? uint32_t(data[1]) + 1 : kVocab[data[1] % 10];
  options.seqLen = data[2] % 64 + (data[2] >= 192 ? 1000 : 1);
  int64_t batch = data[3] % 8 + 1;
  options.trainPath = scratch(ext);
  if (!writeFile(options.trainPath, data + 4, size - 4))
    return 0;
  if (val == 3)
    options.valPath = options.trainPath;

  Dataset dataset;
  if (!Dataset::open(options, dataset))
    return 0;
  check(dataset.train().size() >= uint64_t(options.seqLen) + 1,
        "the training split is shorter than one window");
  sample(dataset.train(), batch, options.seqLen, options.vocabSize);
  if (dataset.hasVal())
    sample(dataset.val(), batch, options.seqLen, options.vocabSize);
  return 0;
}
