//===- Data.cpp - token files, train/val splits and batch sampling --------===//
#include "tools/lcc-run/Data.h"

#include <cassert>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace lcc {

const char *tokenFormatName(TokenFormat format) {
  switch (format) {
  case TokenFormat::Auto: return "auto";
  case TokenFormat::U16: return "u16";
  case TokenFormat::U32: return "u32";
  case TokenFormat::Bytes: return "bytes";
  }
  return "?";
}

bool parseTokenFormat(const std::string &name, TokenFormat &out) {
  for (TokenFormat f : {TokenFormat::Auto, TokenFormat::U16, TokenFormat::U32, TokenFormat::Bytes})
    if (name == tokenFormatName(f)) {
      out = f;
      return true;
    }
  return false;
}

const char *sampleModeName(SampleMode mode) {
  return mode == SampleMode::Sequential ? "sequential" : "random";
}

bool parseSampleMode(const std::string &name, SampleMode &out) {
  for (SampleMode m : {SampleMode::Random, SampleMode::Sequential})
    if (name == sampleModeName(m)) {
      out = m;
      return true;
    }
  return false;
}

namespace {

const char *widthName(unsigned width) {
  return width == 1 ? "byte" : width == 2 ? "uint16" : "uint32";
}

int32_t loadLE32(const uint8_t *p) {
  return static_cast<int32_t>(static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
                              static_cast<uint32_t>(p[2]) << 16 |
                              static_cast<uint32_t>(p[3]) << 24);
}

/// The extension after the last '.' of the file name, lowercased ("" if none).
std::string extension(const std::string &path) {
  size_t slash = path.rfind('/');
  size_t dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash))
    return "";
  std::string ext = path.substr(dot + 1);
  for (char &c : ext)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

/// Formats a double without trailing noise ("0.1", not "0.100000").
std::string shortDouble(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

/// Token width of a recognised llm.c (magic, version); 0 if unknown.
unsigned llmcWidth(int32_t magic, int32_t version) {
  if (magic == kLlmcMagic && version == 1)
    return 2;
  if (magic == kLlmcMagic && version == 2)
    return 4;
  if (magic == kLlmcMagicLlama3 && version == 7)
    return 4;
  return 0;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

} // namespace

//===----------------------------------------------------------------------===//
// TokenFile
//===----------------------------------------------------------------------===//

TokenFile::~TokenFile() { reset(); }

void TokenFile::reset() {
  if (map_)
    ::munmap(map_, mapSize_);
  path_.clear();
  format_ = TokenFormat::Bytes;
  llmc_ = false;
  width_ = 1;
  tokens_ = nullptr;
  count_ = 0;
  map_ = nullptr;
  mapSize_ = 0;
}

TokenFile &TokenFile::operator=(TokenFile &&other) noexcept {
  if (this == &other)
    return *this;
  reset();
  path_ = std::move(other.path_);
  format_ = other.format_;
  llmc_ = other.llmc_;
  width_ = other.width_;
  tokens_ = other.tokens_;
  count_ = other.count_;
  map_ = other.map_;
  mapSize_ = other.mapSize_;
  other.map_ = nullptr; // the mapping now belongs to *this
  other.reset();
  return *this;
}

Status TokenFile::open(const std::string &path, TokenFormat format, TokenFile &out) {
  out.reset();
  auto fail = [&](const std::string &what) { return Status::failure(path + ": " + what); };

  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fail(std::string("cannot open: ") + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return fail(std::string("cannot stat: ") + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail("not a regular file");
  }
  size_t size = static_cast<size_t>(st.st_size);
  void *map = nullptr;
  // mmap of length 0 is an error; an empty file simply has no tokens.
  if (size > 0) {
    map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return fail(std::string("cannot mmap: ") + std::strerror(err));
    }
  }
  ::close(fd); // the mapping keeps the file alive

  TokenFile file;
  file.path_ = path;
  file.map_ = map;
  file.mapSize_ = size;
  const uint8_t *bytes = static_cast<const uint8_t *>(map);

  // The llm.c header. Bytes is the one format that never looks for it: a
  // byte-level model reads whatever the file holds.
  size_t offset = 0;
  unsigned width = 0;
  if (format != TokenFormat::Bytes && size >= kLlmcHeaderBytes &&
      (loadLE32(bytes) == kLlmcMagic || loadLE32(bytes) == kLlmcMagicLlama3)) {
    int32_t magic = loadLE32(bytes), version = loadLE32(bytes + 4), count = loadLE32(bytes + 8);
    width = llmcWidth(magic, version);
    if (width == 0)
      return fail("llm.c header: unsupported version " + std::to_string(version) + " for magic " +
                  std::to_string(magic));
    if ((format == TokenFormat::U16 && width != 2) || (format == TokenFormat::U32 && width != 4))
      return fail(std::string("llm.c header says ") + widthName(width) + " tokens, but format " +
                  tokenFormatName(format) + " was requested");
    size_t held = (size - kLlmcHeaderBytes) / width;
    if (count < 0 || static_cast<size_t>(count) != held ||
        (size - kLlmcHeaderBytes) % width != 0)
      return fail("llm.c header says " + std::to_string(count) + " tokens, but the file holds " +
                  std::to_string(size - kLlmcHeaderBytes) + " bytes after the " +
                  std::to_string(kLlmcHeaderBytes) + "-byte header (" + widthName(width) +
                  " tokens)");
    offset = kLlmcHeaderBytes;
    file.llmc_ = true;
  } else {
    if (format == TokenFormat::Auto) {
      std::string ext = extension(path);
      format = ext == "bin" || ext == "u16" ? TokenFormat::U16
               : ext == "u32"               ? TokenFormat::U32
                                            : TokenFormat::Bytes;
    }
    width = format == TokenFormat::U16 ? 2 : format == TokenFormat::U32 ? 4 : 1;
    if (size % width != 0)
      return fail("size " + std::to_string(size) + " bytes is not a multiple of " +
                  std::to_string(width) + " (" + widthName(width) + " tokens, format " +
                  tokenFormatName(format) + ")");
  }
  file.width_ = width;
  file.format_ = width == 1 ? TokenFormat::Bytes : width == 2 ? TokenFormat::U16 : TokenFormat::U32;
  file.tokens_ = bytes ? bytes + offset : nullptr;
  file.count_ = (size - offset) / width;
  out = std::move(file);
  return {};
}

Status TokenFile::checkVocab(uint32_t vocabSize) const {
  // One pass per width so the inner loop is a plain compare the compiler can
  // vectorise: this touches every page of a possibly multi-GB file once.
  size_t bad = count_;
  if (width_ == 1) {
    if (vocabSize < 256)
      for (size_t i = 0; i < count_ && bad == count_; ++i)
        if (tokens_[i] >= vocabSize)
          bad = i;
  } else {
    for (size_t i = 0; i < count_; ++i)
      if ((*this)[i] >= vocabSize) {
        bad = i;
        break;
      }
  }
  if (bad == count_)
    return {};
  return Status::failure(path_ + ": token " + std::to_string((*this)[bad]) + " at position " +
                         std::to_string(bad) + " is out of range for the vocabulary size " +
                         std::to_string(vocabSize));
}

//===----------------------------------------------------------------------===//
// Dataset
//===----------------------------------------------------------------------===//

Status Dataset::open(const DatasetOptions &options, Dataset &out) {
  out = Dataset();
  const std::string &path = options.trainPath;
  if (!(options.valFraction >= 0.0 && options.valFraction < 1.0))
    return Status::failure(path + ": validation fraction " + shortDouble(options.valFraction) +
                           " is not in [0, 1)");
  if (options.vocabSize == 0 || options.vocabSize > 0x7fffffffu)
    return Status::failure(path + ": vocabulary size " + std::to_string(options.vocabSize) +
                           " is not in [1, 2^31 - 1]");
  if (options.seqLen < 1)
    return Status::failure(path + ": sequence length " + std::to_string(options.seqLen) +
                           " is not positive");

  Dataset ds;
  ds.trainFile_ = std::make_unique<TokenFile>();
  if (Status s = TokenFile::open(path, options.format, *ds.trainFile_); !s)
    return s;
  if (Status s = ds.trainFile_->checkVocab(options.vocabSize); !s)
    return s;
  size_t n = ds.trainFile_->size();

  if (!options.valPath.empty()) {
    ds.valFile_ = std::make_unique<TokenFile>();
    if (Status s = TokenFile::open(options.valPath, options.format, *ds.valFile_); !s)
      return s;
    if (Status s = ds.valFile_->checkVocab(options.vocabSize); !s)
      return s;
    ds.train_ = TokenSpan(ds.trainFile_.get(), 0, n);
    ds.val_ = TokenSpan(ds.valFile_.get(), 0, ds.valFile_->size());
    if (Status s = Sampler::checkWindow(ds.train_, options.seqLen, "training data"); !s)
      return s;
    if (Status s = Sampler::checkWindow(ds.val_, options.seqLen, "validation data"); !s)
      return s;
  } else {
    // nanoGPT's prepare.py: train_data = data[:int(n*0.9)], val = the rest.
    // The product is exact for the sizes that matter (n < 2^53).
    size_t nTrain = static_cast<size_t>(static_cast<double>(n) * (1.0 - options.valFraction));
    if (options.valFraction == 0.0)
      nTrain = n;
    ds.train_ = TokenSpan(ds.trainFile_.get(), 0, nTrain);
    ds.val_ = TokenSpan(ds.trainFile_.get(), nTrain, n);
    std::string of = " (the first " + std::to_string(nTrain) + " of " + std::to_string(n) +
                     " tokens)";
    if (Status s = Sampler::checkWindow(ds.train_, options.seqLen, "training split" + of); !s)
      return s;
    if (options.valFraction > 0.0) {
      std::string last = " (the last " + shortDouble(options.valFraction * 100) + "% of " +
                         std::to_string(n) + " tokens)";
      if (Status s = Sampler::checkWindow(ds.val_, options.seqLen, "validation split" + last); !s)
        return s;
    }
  }
  out = std::move(ds);
  return {};
}

//===----------------------------------------------------------------------===//
// Sampler
//===----------------------------------------------------------------------===//

Sampler::Sampler(TokenSpan split, int64_t batch, int64_t seq, uint64_t seed, SampleMode mode)
    : split_(split), batch_(batch), seq_(seq), seed_(seed), mode_(mode) {
  assert(batch >= 1 && seq >= 1 && "batch and seq must be positive");
  assert(split.size() >= static_cast<size_t>(seq) + 1 && "split shorter than one window");
}

Status Sampler::checkWindow(const TokenSpan &split, int64_t seq, const std::string &what) {
  std::string path = split.file() ? split.file()->path() : std::string("<no file>");
  if (split.size() >= static_cast<uint64_t>(seq) + 1)
    return {};
  return Status::failure(
      path + ": the " + what + " has " + std::to_string(split.size()) +
      " tokens, too few for one window of seq_len + 1 = " + std::to_string(seq + 1) + " tokens");
}

uint64_t Sampler::numWindows() const {
  uint64_t n = split_.size(), seq = static_cast<uint64_t>(seq_);
  if (mode_ == SampleMode::Random)
    return n - seq;
  // Full windows at 0, seq, ...; plus one aligned to the end for a remainder.
  uint64_t full = (n - 1) / seq;
  return full + ((n - 1) % seq != 0 ? 1 : 0);
}

uint64_t Sampler::numSteps() const {
  if (mode_ == SampleMode::Random)
    return 0;
  uint64_t b = static_cast<uint64_t>(batch_);
  return (numWindows() + b - 1) / b;
}

uint64_t Sampler::start(uint64_t step, int64_t row) const {
  uint64_t n = split_.size(), seq = static_cast<uint64_t>(seq_);
  if (mode_ == SampleMode::Random) {
    uint64_t r = splitmix64(splitmix64(splitmix64(seed_) ^ step) ^ static_cast<uint64_t>(row));
    // Uniform in [0, n - seq): the high half of r * range. Modulo would do as
    // well; this is as cheap and its bias is the smallest possible.
    return static_cast<uint64_t>((static_cast<unsigned __int128>(r) * (n - seq)) >> 64);
  }
  uint64_t windows = numWindows();
  // In 128 bits: step * batch must not wrap before the modulo.
  uint64_t k = static_cast<uint64_t>(
      (static_cast<unsigned __int128>(step) * static_cast<uint64_t>(batch_) +
       static_cast<uint64_t>(row)) %
      windows);
  uint64_t s = k * seq;
  return s + seq + 1 <= n ? s : n - seq - 1; // the end-aligned last window
}

void Sampler::fill(uint64_t step, int32_t *tokens, int32_t *targets) const {
  size_t seq = static_cast<size_t>(seq_);
  for (int64_t row = 0; row < batch_; ++row) {
    size_t s = static_cast<size_t>(start(step, row));
    int32_t *tok = tokens + static_cast<size_t>(row) * seq;
    int32_t *tgt = targets + static_cast<size_t>(row) * seq;
    // Tokens were checked against the vocabulary (< 2^31) at load.
    for (size_t t = 0; t < seq; ++t)
      tok[t] = static_cast<int32_t>(split_[s + t]);
    for (size_t t = 0; t < seq; ++t)
      tgt[t] = static_cast<int32_t>(split_[s + t + 1]);
  }
}

Batch Sampler::next(uint64_t step) const {
  Batch b;
  b.tokens = HostTensor(ElementType::I32, {batch_, seq_});
  b.targets = HostTensor(ElementType::I32, {batch_, seq_});
  fill(step, b.tokens.data<int32_t>(), b.targets.data<int32_t>());
  b.starts.resize(static_cast<size_t>(batch_));
  for (int64_t row = 0; row < batch_; ++row)
    b.starts[static_cast<size_t>(row)] = start(step, row);
  return b;
}

} // namespace lcc
