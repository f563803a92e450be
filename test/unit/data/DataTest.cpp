//===- DataTest.cpp - token files, splits and batch sampling --------------===//
//
// Token files in every format read back exactly, format detection, the
// exact error messages, the train/val split boundary, and the sampler:
// windows are the file's tokens at the sampled offsets, batches depend only
// on (seed, step), starts cover the valid range, evaluation covers the split.
// Also the committed demo corpus (data/).
//
//===----------------------------------------------------------------------===//
#include "tools/lcc-run/Data.h"

#include "TestFiles.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <sys/stat.h>

using namespace lcc;
using namespace lcc::test;

namespace {

std::vector<uint8_t> llmcFile(int32_t magic, int32_t version, int32_t count,
                              const std::vector<uint8_t> &tokenBytes) {
  std::vector<int32_t> header(256, 0);
  header[0] = magic;
  header[1] = version;
  header[2] = count;
  std::vector<uint8_t> out = leBytes(header, 4);
  out.insert(out.end(), tokenBytes.begin(), tokenBytes.end());
  return out;
}

std::vector<uint8_t> randomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> out(n);
  for (uint8_t &b : out)
    b = static_cast<uint8_t>(rng());
  return out;
}

std::string openError(const std::string &path, TokenFormat format) {
  TokenFile f;
  Status s = TokenFile::open(path, format, f);
  EXPECT_EQ(f.size(), 0u) << "a failed open leaves the file empty";
  return s ? std::string("<ok>") : s.message();
}

std::string datasetError(const DatasetOptions &o) {
  Dataset d;
  Status s = Dataset::open(o, d);
  return s ? std::string("<ok>") : s.message();
}

DatasetOptions options(const std::string &path, uint32_t vocab, int64_t seq, double frac = 0.1) {
  DatasetOptions o;
  o.trainPath = path;
  o.vocabSize = vocab;
  o.seqLen = seq;
  o.valFraction = frac;
  return o;
}

} // namespace

//===----------------------------------------------------------------------===//
// Token files
//===----------------------------------------------------------------------===//

TEST(TokenFile, U16ReadsBackExactly) {
  TempDir dir;
  std::vector<uint16_t> tokens = {0, 1, 255, 256, 50256, 65535, 12345, 7};
  for (const char *name : {"train.bin", "x.u16", "X.BIN"}) {
    writeBytes(dir.file(name), leBytes(tokens, 2));
    TokenFile f;
    ASSERT_TRUE(TokenFile::open(dir.file(name), TokenFormat::Auto, f)) << name;
    EXPECT_EQ(f.format(), TokenFormat::U16) << name;
    EXPECT_FALSE(f.hasLlmcHeader());
    ASSERT_EQ(f.size(), tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i)
      EXPECT_EQ(f[i], tokens[i]) << name << " token " << i;
  }
}

TEST(TokenFile, U32ReadsBackExactly) {
  TempDir dir;
  std::vector<uint32_t> tokens = {0, 65536, 128255, 0xFFFFFFFFu, 0x01020304u};
  writeBytes(dir.file("t.u32"), leBytes(tokens, 4));
  writeBytes(dir.file("t.dat"), leBytes(tokens, 4));
  for (auto [name, format] : {std::pair{"t.u32", TokenFormat::Auto},
                              std::pair{"t.dat", TokenFormat::U32}}) {
    TokenFile f;
    ASSERT_TRUE(TokenFile::open(dir.file(name), format, f)) << name;
    EXPECT_EQ(f.format(), TokenFormat::U32);
    ASSERT_EQ(f.size(), tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i)
      EXPECT_EQ(f[i], tokens[i]) << name << " token " << i;
  }
}

TEST(TokenFile, BytesReadBackExactly) {
  TempDir dir;
  std::vector<uint8_t> bytes = randomBytes(1001, 3); // odd: not a U16 file
  // .txt and unknown extensions are bytes under Auto; any file when asked.
  for (auto [name, format] : {std::pair{"a.txt", TokenFormat::Auto},
                              std::pair{"noext", TokenFormat::Auto},
                              std::pair{"dir.d/c", TokenFormat::Auto}, // a dot in the dir only
                              std::pair{"b.bin", TokenFormat::Bytes}}) {
    if (std::string(name) == "dir.d/c")
      ::mkdir(dir.file("dir.d").c_str(), 0755);
    writeBytes(dir.file(name), bytes);
    TokenFile f;
    ASSERT_TRUE(TokenFile::open(dir.file(name), format, f)) << name;
    EXPECT_EQ(f.format(), TokenFormat::Bytes) << name;
    ASSERT_EQ(f.size(), bytes.size());
    for (size_t i = 0; i < bytes.size(); ++i)
      ASSERT_EQ(f[i], bytes[i]) << name << " byte " << i;
  }
  ::unlink(dir.file("dir.d/c").c_str());
  ::rmdir(dir.file("dir.d").c_str());
}

TEST(TokenFile, LlmcHeaderIsHonoured) {
  TempDir dir;
  std::vector<uint16_t> t16 = {50256, 1, 2, 3, 65535};
  std::vector<uint32_t> t32 = {128000, 7, 0xFFFFFFFFu};
  writeBytes(dir.file("gpt2.bin"), llmcFile(20240520, 1, 5, leBytes(t16, 2)));
  writeBytes(dir.file("gpt2.txt"), llmcFile(20240520, 1, 5, leBytes(t16, 2)));
  writeBytes(dir.file("v2.bin"), llmcFile(20240520, 2, 3, leBytes(t32, 4)));
  writeBytes(dir.file("llama3.bin"), llmcFile(20240801, 7, 3, leBytes(t32, 4)));
  struct Case {
    const char *name;
    TokenFormat requested, resolved;
  };
  for (Case c : {Case{"gpt2.bin", TokenFormat::Auto, TokenFormat::U16},
                 Case{"gpt2.txt", TokenFormat::Auto, TokenFormat::U16}, // header beats extension
                 Case{"gpt2.bin", TokenFormat::U16, TokenFormat::U16},
                 Case{"v2.bin", TokenFormat::Auto, TokenFormat::U32}, // not U16 despite .bin
                 Case{"v2.bin", TokenFormat::U32, TokenFormat::U32},
                 Case{"llama3.bin", TokenFormat::Auto, TokenFormat::U32}}) {
    TokenFile f;
    ASSERT_TRUE(TokenFile::open(dir.file(c.name), c.requested, f)) << c.name;
    EXPECT_TRUE(f.hasLlmcHeader()) << c.name;
    EXPECT_EQ(f.format(), c.resolved) << c.name;
    if (c.resolved == TokenFormat::U16) {
      ASSERT_EQ(f.size(), t16.size());
      for (size_t i = 0; i < t16.size(); ++i)
        EXPECT_EQ(f[i], t16[i]);
    } else {
      ASSERT_EQ(f.size(), t32.size());
      for (size_t i = 0; i < t32.size(); ++i)
        EXPECT_EQ(f[i], t32[i]);
    }
  }
  // Bytes reads the file as it is, header included.
  TokenFile raw;
  ASSERT_TRUE(TokenFile::open(dir.file("gpt2.bin"), TokenFormat::Bytes, raw));
  EXPECT_FALSE(raw.hasLlmcHeader());
  EXPECT_EQ(raw.size(), 1024u + 10u);
  EXPECT_EQ(raw[0], 20240520u & 0xFF);
}

TEST(TokenFile, LlmcHeaderErrors) {
  TempDir dir;
  std::string p = dir.file("bad.bin");
  writeBytes(p, llmcFile(20240520, 1, 10, std::vector<uint8_t>(18, 0)));
  EXPECT_EQ(openError(p, TokenFormat::Auto),
            p + ": llm.c header says 10 tokens, but the file holds 18 bytes after the "
                "1024-byte header (uint16 tokens)");
  writeBytes(p, llmcFile(20240520, 1, 4, std::vector<uint8_t>(9, 0))); // odd byte count
  EXPECT_EQ(openError(p, TokenFormat::Auto),
            p + ": llm.c header says 4 tokens, but the file holds 9 bytes after the "
                "1024-byte header (uint16 tokens)");
  writeBytes(p, llmcFile(20240520, 3, 0, {}));
  EXPECT_EQ(openError(p, TokenFormat::Auto),
            p + ": llm.c header: unsupported version 3 for magic 20240520");
  writeBytes(p, llmcFile(20240801, 1, 0, {}));
  EXPECT_EQ(openError(p, TokenFormat::Auto),
            p + ": llm.c header: unsupported version 1 for magic 20240801");
  writeBytes(p, llmcFile(20240520, 1, 2, std::vector<uint8_t>(4, 0)));
  EXPECT_EQ(openError(p, TokenFormat::U32),
            p + ": llm.c header says uint16 tokens, but format u32 was requested");
  writeBytes(p, llmcFile(20240801, 7, 1, std::vector<uint8_t>(4, 0)));
  EXPECT_EQ(openError(p, TokenFormat::U16),
            p + ": llm.c header says uint32 tokens, but format u16 was requested");
}

TEST(TokenFile, LayoutErrors) {
  TempDir dir;
  std::string odd = dir.file("odd.bin");
  writeBytes(odd, {1, 2, 3, 4, 5});
  EXPECT_EQ(openError(odd, TokenFormat::Auto),
            odd + ": size 5 bytes is not a multiple of 2 (uint16 tokens, format u16)");
  std::string q = dir.file("q.u32");
  writeBytes(q, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(openError(q, TokenFormat::Auto),
            q + ": size 6 bytes is not a multiple of 4 (uint32 tokens, format u32)");
  std::string missing = dir.file("missing.bin");
  EXPECT_EQ(openError(missing, TokenFormat::Auto),
            missing + ": cannot open: No such file or directory");
  EXPECT_EQ(openError(dir.path, TokenFormat::Auto), dir.path + ": not a regular file");
  // An empty file opens with no tokens (the dataset then reports it short).
  std::string empty = dir.file("empty.txt");
  writeBytes(empty, {});
  TokenFile f;
  ASSERT_TRUE(TokenFile::open(empty, TokenFormat::Auto, f));
  EXPECT_EQ(f.size(), 0u);
}

TEST(TokenFile, FormatNames) {
  for (TokenFormat f : {TokenFormat::Auto, TokenFormat::U16, TokenFormat::U32, TokenFormat::Bytes}) {
    TokenFormat back = TokenFormat::Auto;
    ASSERT_TRUE(parseTokenFormat(tokenFormatName(f), back));
    EXPECT_EQ(back, f);
  }
  TokenFormat out;
  EXPECT_FALSE(parseTokenFormat("uint16", out));
  EXPECT_STREQ(tokenFormatName(TokenFormat::U16), "u16");
}

TEST(TokenFile, MoveKeepsTheMapping) {
  TempDir dir;
  writeText(dir.file("a.txt"), "hello");
  TokenFile a;
  ASSERT_TRUE(TokenFile::open(dir.file("a.txt"), TokenFormat::Auto, a));
  TokenFile b = std::move(a);
  EXPECT_EQ(a.size(), 0u);
  ASSERT_EQ(b.size(), 5u);
  EXPECT_EQ(b[4], uint32_t('o'));
  a = std::move(b);
  EXPECT_EQ(a[0], uint32_t('h'));
}

//===----------------------------------------------------------------------===//
// Dataset: vocabulary, sizes, split
//===----------------------------------------------------------------------===//

TEST(Dataset, OutOfVocabularyNamesTheFirstPosition) {
  TempDir dir;
  std::vector<uint16_t> tokens(100, 5);
  tokens[37] = 300;
  tokens[50] = 999;
  tokens[95] = 1000; // in the held-out tail: checked too
  std::string p = dir.file("t.bin");
  writeBytes(p, leBytes(tokens, 2));
  EXPECT_EQ(datasetError(options(p, 256, 8)),
            p + ": token 300 at position 37 is out of range for the vocabulary size 256");
  EXPECT_EQ(datasetError(options(p, 1000, 8)),
            p + ": token 1000 at position 95 is out of range for the vocabulary size 1000");
  EXPECT_EQ(datasetError(options(p, 1001, 8)), "<ok>");
  // Bytes against a small vocabulary (a 128-token ASCII model).
  std::string t = dir.file("t.txt");
  writeText(t, "plain ascii\xC3\xA9");
  EXPECT_EQ(datasetError(options(t, 128, 4, 0)),
            t + ": token 195 at position 11 is out of range for the vocabulary size 128");
  // The separate val file is checked as well, and named.
  std::string v = dir.file("v.bin");
  std::vector<uint16_t> vt(20, 1);
  vt[3] = 256;
  writeBytes(v, leBytes(vt, 2));
  DatasetOptions o = options(dir.file("ok.bin"), 256, 4);
  writeBytes(o.trainPath, leBytes(std::vector<uint16_t>(20, 2), 2));
  o.valPath = v;
  EXPECT_EQ(datasetError(o),
            v + ": token 256 at position 3 is out of range for the vocabulary size 256");
}

TEST(Dataset, TooShortForOneWindow) {
  TempDir dir;
  std::string p = dir.file("short.txt");
  writeText(p, "0123456789");
  EXPECT_EQ(datasetError(options(p, 256, 10, 0)),
            p + ": the training split (the first 10 of 10 tokens) has 10 tokens, too few for "
                "one window of seq_len + 1 = 11 tokens");
  EXPECT_EQ(datasetError(options(p, 256, 9, 0)), "<ok>");
  std::string h = dir.file("hundred.txt");
  writeText(h, std::string(100, 'a'));
  EXPECT_EQ(datasetError(options(h, 256, 16)),
            h + ": the validation split (the last 10% of 100 tokens) has 10 tokens, too few "
                "for one window of seq_len + 1 = 17 tokens");
  EXPECT_EQ(datasetError(options(h, 256, 9)), "<ok>");
  std::string empty = dir.file("empty.bin");
  writeBytes(empty, {});
  EXPECT_EQ(datasetError(options(empty, 256, 1, 0)),
            empty + ": the training split (the first 0 of 0 tokens) has 0 tokens, too few for "
                    "one window of seq_len + 1 = 2 tokens");
  DatasetOptions o = options(h, 256, 8);
  o.valPath = p; // 10 tokens
  EXPECT_EQ(datasetError(o), "<ok>");
  o.seqLen = 10;
  EXPECT_EQ(datasetError(o), p + ": the validation data has 10 tokens, too few for one window of "
                                 "seq_len + 1 = 11 tokens");
}

TEST(Dataset, OptionErrors) {
  TempDir dir;
  std::string p = dir.file("a.txt");
  writeText(p, std::string(100, 'a'));
  EXPECT_EQ(datasetError(options(p, 256, 4, 1.0)),
            p + ": validation fraction 1 is not in [0, 1)");
  EXPECT_EQ(datasetError(options(p, 256, 4, -0.5)),
            p + ": validation fraction -0.5 is not in [0, 1)");
  EXPECT_EQ(datasetError(options(p, 0, 4)), p + ": vocabulary size 0 is not in [1, 2^31 - 1]");
  EXPECT_EQ(datasetError(options(p, 256, 0)), p + ": sequence length 0 is not positive");
}

TEST(Dataset, SplitBoundaryIsExact) {
  TempDir dir;
  // nanoGPT: train = data[:int(n * 0.9)], val = data[int(n * 0.9):].
  struct Case {
    size_t n;
    double frac;
    size_t train;
  };
  for (Case c : {Case{1000, 0.1, 900}, Case{1003, 0.1, 902}, Case{10, 0.25, 7},
                 Case{367215, 0.1, 330493}, Case{50, 0.0, 50}}) {
    std::string p = dir.file("s.txt");
    writeBytes(p, randomBytes(c.n, unsigned(c.n)));
    Dataset d;
    ASSERT_TRUE(Dataset::open(options(p, 256, 2, c.frac), d)) << c.n;
    EXPECT_EQ(d.train().begin(), 0u);
    EXPECT_EQ(d.train().size(), c.train) << c.n << " " << c.frac;
    EXPECT_EQ(d.val().begin(), c.train);
    EXPECT_EQ(d.val().end(), c.n);
    EXPECT_EQ(d.hasVal(), c.frac > 0);
    std::vector<uint8_t> bytes = readBytes(p);
    if (d.hasVal()) {
      EXPECT_EQ(d.val()[0], bytes[c.train]);
      EXPECT_EQ(d.train()[c.train - 1], bytes[c.train - 1]);
    }
  }
}

TEST(Dataset, SeparateValFileAndMove) {
  TempDir dir;
  writeText(dir.file("train.txt"), "the training text, long enough");
  writeText(dir.file("val.txt"), "validation");
  DatasetOptions o = options(dir.file("train.txt"), 256, 4);
  o.valPath = dir.file("val.txt");
  Dataset d;
  ASSERT_TRUE(Dataset::open(o, d));
  Dataset moved = std::move(d); // the spans point into heap-held files
  EXPECT_EQ(moved.train().size(), 30u); // no tokens held out of a train file
  ASSERT_EQ(moved.val().size(), 10u);
  EXPECT_EQ(moved.val().file()->path(), o.valPath);
  EXPECT_EQ(moved.val()[0], uint32_t('v'));
  EXPECT_EQ(moved.train()[29], uint32_t('h'));
}

//===----------------------------------------------------------------------===//
// Sampler
//===----------------------------------------------------------------------===//

TEST(Sampler, WindowsAreTheFileAtTheSampledOffsets) {
  TempDir dir;
  std::string p = dir.file("r.txt");
  std::vector<uint8_t> bytes = randomBytes(5000, 11);
  writeBytes(p, bytes);
  Dataset d;
  ASSERT_TRUE(Dataset::open(options(p, 256, 32), d));
  for (const TokenSpan *split : {&d.train(), &d.val()}) {
    Sampler s(*split, 8, 32, 1234);
    for (uint64_t step = 0; step < 20; ++step) {
      Batch b = s.next(step);
      ASSERT_EQ(b.tokens.shape(), (std::vector<int64_t>{8, 32}));
      ASSERT_EQ(b.targets.shape(), (std::vector<int64_t>{8, 32}));
      ASSERT_EQ(b.tokens.elementType(), ElementType::I32);
      const int32_t *tok = b.tokens.data<int32_t>(), *tgt = b.targets.data<int32_t>();
      for (int r = 0; r < 8; ++r) {
        uint64_t start = b.starts[r];
        ASSERT_EQ(start, s.start(step, r));
        ASSERT_LE(start + 32 + 1, split->size());
        size_t at = split->begin() + start; // offset in the file
        for (int t = 0; t < 32; ++t) {
          ASSERT_EQ(tok[r * 32 + t], bytes[at + t]);
          ASSERT_EQ(tgt[r * 32 + t], bytes[at + t + 1]);
          if (t + 1 < 32)
            ASSERT_EQ(tgt[r * 32 + t], tok[r * 32 + t + 1]) << "targets = tokens shifted";
        }
      }
    }
  }
}

TEST(Sampler, BatchDependsOnlyOnSeedAndStep) {
  TempDir dir;
  std::string p = dir.file("r.txt");
  writeBytes(p, randomBytes(20000, 5));
  Dataset d;
  ASSERT_TRUE(Dataset::open(options(p, 256, 16), d));
  Sampler a(d.train(), 4, 16, 42), b(d.train(), 4, 16, 42), other(d.train(), 4, 16, 43);
  // Out of order and repeated: no state between calls (checkpoint resume).
  Batch b7 = b.next(7);
  Batch b3 = b.next(3);
  EXPECT_EQ(a.next(3).tokens.toVector<int32_t>(), b3.tokens.toVector<int32_t>());
  EXPECT_EQ(a.next(7).tokens.toVector<int32_t>(), b7.tokens.toVector<int32_t>());
  EXPECT_EQ(a.next(7).targets.toVector<int32_t>(), b7.targets.toVector<int32_t>());
  EXPECT_NE(a.next(3).starts, a.next(4).starts);
  EXPECT_NE(a.next(3).tokens.toVector<int32_t>(), a.next(4).tokens.toVector<int32_t>());
  EXPECT_NE(a.next(3).starts, other.next(3).starts);
  // Rows of one batch differ too.
  std::set<uint64_t> rows(b7.starts.begin(), b7.starts.end());
  EXPECT_EQ(rows.size(), 4u);
  // fill() writes the same values as next().
  std::vector<int32_t> tok(64), tgt(64);
  a.fill(7, tok.data(), tgt.data());
  EXPECT_EQ(tok, b7.tokens.toVector<int32_t>());
  EXPECT_EQ(tgt, b7.targets.toVector<int32_t>());
}

TEST(Sampler, StartsCoverTheValidRange) {
  TempDir dir;
  std::string p = dir.file("r.txt");
  writeBytes(p, randomBytes(100, 9));
  Dataset d;
  ASSERT_TRUE(Dataset::open(options(p, 256, 10, 0), d));
  Sampler s(d.train(), 8, 10, 7);
  EXPECT_EQ(s.numWindows(), 90u); // starts 0 ..= n - seq - 1 = 89
  std::vector<int> seen(90, 0);
  for (uint64_t step = 0; step < 2000; ++step)
    for (int r = 0; r < 8; ++r) {
      uint64_t st = s.start(step, r);
      ASSERT_LT(st, 90u) << "step " << step << " row " << r;
      ++seen[st];
    }
  // 16000 draws over 90 values: each expected ~178 times; all must appear,
  // none wildly off (a broken mapping, e.g. always even, would fail).
  for (int v = 0; v < 90; ++v) {
    EXPECT_GT(seen[v], 100) << v;
    EXPECT_LT(seen[v], 270) << v;
  }

  // A large split: the extremes get close to both ends.
  std::string big = dir.file("big.txt");
  writeBytes(big, randomBytes(1 << 20, 13));
  Dataset db;
  ASSERT_TRUE(Dataset::open(options(big, 256, 256, 0), db));
  Sampler sb(db.train(), 16, 256, 99);
  uint64_t lo = UINT64_MAX, hi = 0, last = (1u << 20) - 256 - 1;
  for (uint64_t step = 0; step < 500; ++step)
    for (int r = 0; r < 16; ++r) {
      uint64_t st = sb.start(step, r);
      ASSERT_LE(st, last);
      lo = std::min(lo, st);
      hi = std::max(hi, st);
    }
  EXPECT_LT(lo, last / 1000);
  EXPECT_GT(hi, last - last / 1000);
}

TEST(Sampler, SequentialModeCoversTheValSplit) {
  TempDir dir;
  std::string p = dir.file("r.txt");
  std::vector<uint8_t> bytes = randomBytes(1000, 21);
  writeBytes(p, bytes);
  Dataset d;
  ASSERT_TRUE(Dataset::open(options(p, 256, 16), d));
  const TokenSpan &val = d.val(); // 100 tokens: 6 full windows + one at the end
  ASSERT_EQ(val.size(), 100u);
  Sampler s(val, 3, 16, 0, SampleMode::Sequential);
  EXPECT_EQ(s.numWindows(), 7u);
  EXPECT_EQ(s.numSteps(), 3u);
  std::vector<uint64_t> starts;
  std::vector<int> covered(100, 0); // target positions
  for (uint64_t step = 0; step < s.numSteps(); ++step) {
    Batch b = s.next(step);
    const int32_t *tgt = b.targets.data<int32_t>();
    for (int r = 0; r < 3; ++r) {
      starts.push_back(b.starts[r]);
      for (int t = 0; t < 16; ++t) {
        ASSERT_EQ(tgt[r * 16 + t], bytes[900 + b.starts[r] + t + 1]);
        ++covered[b.starts[r] + t + 1];
      }
    }
  }
  // In order, the last window aligned to the end, then wrapping to the start.
  EXPECT_EQ(starts, (std::vector<uint64_t>{0, 16, 32, 48, 64, 80, 83, 0, 16}));
  for (int pos = 1; pos < 100; ++pos)
    EXPECT_GT(covered[pos], 0) << "target position " << pos << " not evaluated";
  // The seed plays no part, and the next pass repeats the first.
  Sampler s2(val, 3, 16, 12345, SampleMode::Sequential);
  EXPECT_EQ(s2.next(1).starts, s.next(1).starts);
  EXPECT_EQ(s.next(7).starts, (std::vector<uint64_t>{0, 16, 32})); // 21 mod 7 == 0

  // Windows that fit exactly: no extra window.
  Dataset e;
  std::string q = dir.file("q.txt");
  writeBytes(q, randomBytes(65, 1));
  ASSERT_TRUE(Dataset::open(options(q, 256, 16, 0), e));
  Sampler se(e.train(), 4, 16, 0, SampleMode::Sequential);
  EXPECT_EQ(se.numWindows(), 4u);
  EXPECT_EQ(se.numSteps(), 1u);
  EXPECT_EQ(se.next(0).starts, (std::vector<uint64_t>{0, 16, 32, 48}));
  EXPECT_EQ(se.numWindows(), 4u);
  EXPECT_EQ(Sampler(e.train(), 4, 16, 0).numSteps(), 0u); // random mode has no pass
}

//===----------------------------------------------------------------------===//
// The committed demo corpus
//===----------------------------------------------------------------------===//

TEST(Corpus, KjvGenesisExodusIsSmallAsciiText) {
  std::string p = std::string(LCC_SOURCE_DIR) + "/data/kjv-genesis-exodus.txt";
  std::vector<uint8_t> bytes = readBytes(p);
  ASSERT_FALSE(bytes.empty()) << p << " is missing (data/make_corpus.sh makes it)";
  EXPECT_GT(bytes.size(), 100u * 1000);
  EXPECT_LT(bytes.size(), 400u * 1000);
  for (size_t i = 0; i < bytes.size(); ++i)
    ASSERT_TRUE(bytes[i] == '\n' || (bytes[i] >= 0x20 && bytes[i] < 0x7F))
        << "byte " << int(bytes[i]) << " at " << i;
  std::string text(bytes.begin(), bytes.end());
  EXPECT_EQ(text.rfind("Genesis 1\nIn the beginning God created the heaven and the earth.\n", 0),
            0u);
  EXPECT_NE(text.find("\nExodus 40\n"), std::string::npos);
  // It loads as the demo uses it: bytes, a 256-token vocabulary.
  Dataset d;
  Status s = Dataset::open(options(p, 256, 64), d);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(d.train().file()->format(), TokenFormat::Bytes);
  EXPECT_EQ(d.train().size() + d.val().size(), bytes.size());
}
