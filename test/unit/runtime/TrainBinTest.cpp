//===- TrainBinTest.cpp - the train.bin container -------------------------===//
//
// The layout is checked field by field at the offsets docs/train-bin.md gives
// (with this file's own little-endian helpers, so a change of the writer that
// the document does not follow fails here). Every reader error is produced by
// one specific corruption of a valid file; structural corruptions are
// "resealed" (checksums recomputed) so they reach the check they target, as a
// buggy writer would. Fuzzing covers truncations, single-byte changes and
// resealed table edits. Atomic writes are checked with a concurrent reader.
//
//===----------------------------------------------------------------------===//
#include "test/unit/common/TempDir.h"
#include "runtime/support/TrainBin.h"
#include "runtime/support/Safetensors.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace lcc;
using lcc::test::TempDir;

namespace {

// Offsets from docs/train-bin.md.
constexpr size_t kVersionAt = 8, kFlagsAt = 12, kCountAt = 16, kTableAt = 24, kSizeAt = 32,
                 kTableCrcAt = 40, kHeaderCrcAt = 60;
constexpr size_t kEntry = 96, kNameAt = 0, kTargetAt = 32, kOffsetAt = 64, kLenAt = 72,
                 kRankAt = 80, kCrcAt = 84;

uint64_t get(const std::vector<uint8_t> &b, size_t at, int bytes) {
  uint64_t v = 0;
  for (int k = bytes - 1; k >= 0; --k)
    v = (v << 8) | b[at + static_cast<size_t>(k)];
  return v;
}
void put(std::vector<uint8_t> &b, size_t at, int bytes, uint64_t v) {
  for (int k = 0; k < bytes; ++k)
    b[at + static_cast<size_t>(k)] = static_cast<uint8_t>(v >> (8 * k));
}
size_t entryAt(const std::vector<uint8_t> &b, size_t i) {
  return static_cast<size_t>(get(b, kTableAt, 8)) + i * kEntry;
}

/// Recomputes the table and header checksums after an edit of the table or
/// header fields (as a writer with a layout bug would produce).
void reseal(std::vector<uint8_t> &b) {
  uint64_t table = get(b, kTableAt, 8), count = get(b, kCountAt, 8);
  // A table edited out of the file keeps its old checksum (the reader
  // rejects it for its bounds before looking at the checksum).
  if (table <= b.size() && count <= (b.size() - table) / kEntry)
    put(b, kTableCrcAt, 4, crc32c(b.data() + table, static_cast<size_t>(count * kEntry)));
  put(b, kHeaderCrcAt, 4, crc32c(b.data(), kHeaderCrcAt));
}

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

std::vector<uint8_t> bytesOf(const std::string &s) { return {s.begin(), s.end()}; }

/// Distinct payloads with lengths that are not multiples of 64, so padding
/// is exercised.
std::vector<uint8_t> payload(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t k = 0; k < n; ++k)
    v[k] = static_cast<uint8_t>(seed + k * 7);
  return v;
}

struct Spec {
  std::string name, target;
  int32_t rank;
  std::vector<uint8_t> bytes;
};

std::vector<Spec> sampleSpecs() {
  return {{"config", "any", -1, bytesOf("{\"dim\": 64}")},
          {"code", "cpu-x86_64", -1, payload(200, 1)},
          {"code", "cuda-sm_90", -1, payload(129, 2)},
          {"plan", "cpu-x86_64", -1, payload(64, 3)},
          {"plan", "cpu-x86_64", 0, payload(1, 4)},
          {"plan", "cpu-x86_64", 1, payload(65, 5)},
          {"params", "any", 3, {}},
          {"optimizer \xc3\xa9t\xc3\xa9", "any", -1, payload(70, 6)}};
}

std::vector<uint8_t> sampleFile(const std::vector<Spec> &specs = sampleSpecs()) {
  TrainBinWriter w;
  for (const Spec &s : specs) {
    Status st = w.addSection(s.name, s.target, s.rank, s.bytes);
    EXPECT_TRUE(st) << st.message();
  }
  std::vector<uint8_t> out;
  EXPECT_TRUE(w.serialize(out));
  return out;
}

std::string parseError(const std::vector<uint8_t> &b) {
  TrainBin tb;
  Status s = TrainBin::parse(b.data(), b.size(), tb);
  if (!s)
    EXPECT_TRUE(tb.sections().empty() && tb.fileData() == nullptr) << "failure leaves it empty";
  return s ? std::string("<ok>") : s.message();
}

std::string text(TrainBinBytes b) {
  return b.found() ? std::string(reinterpret_cast<const char *>(b.data), b.size) : "<none>";
}


std::vector<uint8_t> readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void writeRaw(const std::string &path, const std::vector<uint8_t> &b) {
  std::FILE *f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fwrite(b.data(), 1, b.size(), f);
  std::fclose(f);
}

/// Checks that `tb` holds exactly `specs`, in order, aligned.
void expectSections(const TrainBin &tb, const std::vector<Spec> &specs) {
  ASSERT_EQ(tb.sections().size(), specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const TrainBinSection &s = tb.sections()[i];
    SCOPED_TRACE(s.name + " " + s.target);
    EXPECT_EQ(s.name, specs[i].name);
    EXPECT_EQ(s.target, specs[i].target);
    EXPECT_EQ(s.rank, specs[i].rank);
    EXPECT_EQ(s.offset % 64, 0u);
    TrainBinBytes b = tb.bytes(s);
    ASSERT_TRUE(b.found());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data) % 64, 0u) << "aligned in memory too";
    EXPECT_EQ(std::vector<uint8_t>(b.data, b.data + b.size), specs[i].bytes);
  }
}

TEST(TrainBin, Crc32cKnownValues) {
  // RFC 3720 (iSCSI) appendix B.4 test vectors and the usual check value.
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xFF), inc(32);
  for (size_t k = 0; k < 32; ++k)
    inc[k] = static_cast<uint8_t>(k);
  EXPECT_EQ(crc32c(zeros.data(), 32), 0x8A9136AAu);
  EXPECT_EQ(crc32c(ones.data(), 32), 0x62A8AB43u);
  EXPECT_EQ(crc32c(inc.data(), 32), 0x46DD794Eu);
  EXPECT_EQ(crc32c(nullptr, 0), 0u);
  // Fed in pieces of every split (crossing the 8-byte fast path).
  for (size_t split = 0; split <= 32; ++split)
    EXPECT_EQ(crc32c(inc.data() + split, 32 - split, crc32c(inc.data(), split)), 0x46DD794Eu);
}

TEST(TrainBin, RoundTripInMemory) {
  std::vector<Spec> specs = sampleSpecs();
  std::vector<uint8_t> bytes = sampleFile(specs);
  TrainBin tb;
  Status s = TrainBin::parse(bytes.data(), bytes.size(), tb);
  ASSERT_TRUE(s) << s.message();
  expectSections(tb, specs);
  EXPECT_EQ(tb.fileSize(), bytes.size());
  EXPECT_EQ(tb.flags(), 0u);
  // Deterministic: the same sections give the same bytes.
  EXPECT_EQ(sampleFile(specs), bytes);
  // Moving keeps the data valid.
  TrainBin moved = std::move(tb);
  EXPECT_TRUE(tb.sections().empty());
  EXPECT_EQ(text(moved.find("config", "any", 0)), "{\"dim\": 64}");
  // No sections at all is a valid file of just the header.
  TrainBinWriter empty;
  std::vector<uint8_t> e;
  ASSERT_TRUE(empty.serialize(e));
  EXPECT_EQ(e.size(), 64u);
  EXPECT_EQ(parseError(e), "<ok>");
}

TEST(TrainBin, RoundTripThroughAFile) {
  TempDir dir;
  std::vector<Spec> specs = sampleSpecs();
  TrainBinWriter w;
  for (const Spec &s : specs)
    ASSERT_TRUE(w.addSection(s.name, s.target, s.rank, s.bytes.data(), s.bytes.size()));
  std::string path = dir.path + "/train.bin";
  Status s = w.write(path);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(dir.files(), std::vector<std::string>{"train.bin"});
  std::vector<uint8_t> expected;
  ASSERT_TRUE(w.serialize(expected));
  EXPECT_EQ(readAll(path), expected) << "write() and serialize() give the same bytes";
  TrainBin tb;
  s = TrainBin::open(path, tb);
  ASSERT_TRUE(s) << s.message();
  expectSections(tb, specs); // pointers into the mapping are 64-aligned
  // The usual permissions (0666 less the umask), not mkstemp's 0600.
  mode_t mask = ::umask(0);
  ::umask(mask);
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask);
}

TEST(TrainBin, LayoutMatchesTheDocument) {
  std::vector<uint8_t> b =
      sampleFile({{"config", "any", -1, bytesOf("hi")}, {"plan", "cuda-sm_90", 5, payload(3, 9)}});
  ASSERT_EQ(std::string(b.begin(), b.begin() + 8), "LCCTRAIN");
  EXPECT_EQ(get(b, kVersionAt, 4), 1u);
  EXPECT_EQ(get(b, kFlagsAt, 4), 0u);
  EXPECT_EQ(get(b, kCountAt, 8), 2u);
  EXPECT_EQ(get(b, kTableAt, 8), 64u);
  EXPECT_EQ(get(b, kSizeAt, 8), b.size());
  EXPECT_EQ(get(b, kTableCrcAt, 4), crc32c(b.data() + 64, 2 * kEntry));
  EXPECT_EQ(get(b, kHeaderCrcAt, 4), crc32c(b.data(), 60));
  for (size_t k = 44; k < 60; ++k)
    EXPECT_EQ(b[k], 0) << "reserved header byte " << k;
  // Entry 0 at 64, entry 1 at 160; the table ends at 256, a multiple of 64,
  // so the first payload is at 256 and the second at the next multiple, 320.
  size_t e0 = 64, e1 = 160;
  EXPECT_EQ(std::string(reinterpret_cast<const char *>(&b[e0 + kNameAt])), "config");
  EXPECT_EQ(std::string(reinterpret_cast<const char *>(&b[e1 + kTargetAt])), "cuda-sm_90");
  EXPECT_EQ(get(b, e0 + kOffsetAt, 8), 256u);
  EXPECT_EQ(get(b, e0 + kLenAt, 8), 2u);
  EXPECT_EQ(get(b, e0 + kRankAt, 4), 0xFFFFFFFFu); // -1, two's complement
  EXPECT_EQ(get(b, e0 + kCrcAt, 4), crc32c("hi", 2));
  EXPECT_EQ(get(b, e1 + kOffsetAt, 8), 320u);
  EXPECT_EQ(get(b, e1 + kRankAt, 4), 5u);
  for (size_t k = 88; k < 96; ++k)
    EXPECT_EQ(b[e0 + k], 0) << "reserved entry byte " << k;
  EXPECT_EQ(b.size(), 323u) << "the file ends with the last payload";
  for (size_t k = 258; k < 320; ++k)
    EXPECT_EQ(b[k], 0) << "padding byte " << k;
}

// The example file of docs/train-bin.md ("Example"), byte for byte; the
// document's readers in other languages are checked against the same bytes.
TEST(TrainBin, ExampleFileOfTheDocument) {
  const char *hex = "4c4343545241494e010000000000000001000000000000004000000000000000"
                    "c2000000000000002c4ab984000000000000000000000000000000004b61d8a3"
                    "636f6e6669670000000000000000000000000000000000000000000000000000"
                    "616e790000000000000000000000000000000000000000000000000000000000"
                    "c0000000000000000200000000000000ffffffffc2d99df50000000000000000";
  std::vector<uint8_t> expected;
  for (const char *p = hex; *p; p += 2)
    expected.push_back(static_cast<uint8_t>(std::stoi(std::string(p, 2), nullptr, 16)));
  expected.resize(192, 0); // padding up to the payload
  expected.push_back('h');
  expected.push_back('i');
  EXPECT_EQ(sampleFile({{"config", "any", -1, bytesOf("hi")}}), expected);
  TrainBin tb;
  ASSERT_TRUE(TrainBin::parse(expected.data(), expected.size(), tb));
  EXPECT_EQ(text(tb.find("config", "cuda-sm_90", 4)), "hi");
}

TEST(TrainBin, LookupPreferences) {
  std::vector<uint8_t> b = sampleFile({{"plan", "cpu-x86_64", 0, bytesOf("cpu/0")},
                                       {"plan", "any", 0, bytesOf("any/0")},
                                       {"plan", "cpu-x86_64", -1, bytesOf("cpu/all")},
                                       {"plan", "any", -1, bytesOf("any/all")},
                                       {"plan", "any", 2, bytesOf("any/2")},
                                       {"code", "cpu-x86_64", -1, bytesOf("x86")},
                                       {"config", "any", -1, {}}});
  TrainBin tb;
  ASSERT_TRUE(TrainBin::parse(b.data(), b.size(), tb));
  EXPECT_EQ(text(tb.find("plan", "cpu-x86_64", 0)), "cpu/0");  // exact both
  EXPECT_EQ(text(tb.find("plan", "cuda-sm_90", 0)), "any/0");  // exact rank beats exact target
  EXPECT_EQ(text(tb.find("plan", "cpu-x86_64", 2)), "any/2");   // rank decides before target
  EXPECT_EQ(text(tb.find("plan", "cpu-x86_64", 1)), "cpu/all"); // rank -1, exact target
  EXPECT_EQ(text(tb.find("plan", "cuda-sm_90", 1)), "any/all");
  EXPECT_EQ(text(tb.find("plan", "cpu-x86_64", -1)), "cpu/all");
  EXPECT_EQ(text(tb.find("plan", "any", 0)), "any/0");
  EXPECT_EQ(text(tb.find("code", "cpu-x86_64", 7)), "x86");
  EXPECT_FALSE(tb.find("code", "cuda-sm_90", 0).found()) << "no 'any' fallback was written";
  EXPECT_FALSE(tb.find("params", "any", -1).found());
  EXPECT_FALSE(tb.find("pla", "any", -1).found());
  TrainBinBytes cfg = tb.find("config", "cpu-x86_64", 2);
  EXPECT_TRUE(cfg.found()) << "an empty section is found";
  EXPECT_EQ(cfg.size, 0u);
}

TEST(TrainBin, WriterErrors) {
  TrainBinWriter w;
  ASSERT_TRUE(w.addSection("plan", "cpu-x86_64", -1, {1}));
  EXPECT_EQ(w.addSection("plan", "cpu-x86_64", -1, {2}).message(),
            "duplicate section 'plan' (cpu-x86_64, rank -1)");
  EXPECT_TRUE(w.addSection("plan", "cpu-x86_64", 0, {2})) << "another rank is another section";
  EXPECT_TRUE(w.addSection("plan", "any", -1, {3})) << "another target is another section";
  EXPECT_EQ(w.addSection("", "any", -1, {}).message(), "bad section name (empty)");
  EXPECT_EQ(w.addSection(std::string(33, 'n'), "any", -1, {}).message(),
            "bad section name (longer than 32 bytes)");
  EXPECT_TRUE(w.addSection(std::string(32, 'n'), "any", -1, {}));
  EXPECT_EQ(w.addSection("a\nb", "any", -1, {}).message(),
            "bad section name (contains a control character)");
  EXPECT_EQ(w.addSection(std::string("a\0b", 3), "any", -1, {}).message(),
            "bad section name (contains a control character)");
  EXPECT_EQ(w.addSection("\xc2\x85", "any", -1, {}).message(),
            "bad section name (contains a control character)"); // U+0085, C1
  EXPECT_EQ(w.addSection("\xff", "any", -1, {}).message(), "bad section name (not valid UTF-8)");
  EXPECT_EQ(w.addSection("\xc3", "any", -1, {}).message(), "bad section name (not valid UTF-8)");
  EXPECT_EQ(w.addSection("\xc0\xaf", "any", -1, {}).message(),
            "bad section name (not valid UTF-8)");
  EXPECT_EQ(w.addSection("\xed\xa0\x80", "any", -1, {}).message(),
            "bad section name (not valid UTF-8)"); // a surrogate
  EXPECT_TRUE(w.addSection("\xf0\x9f\x98\x80", "any", -1, {}));
  EXPECT_EQ(w.addSection("code", "", -1, {}).message(), "section 'code': bad target (empty)");
  EXPECT_EQ(w.addSection("code", "any", -2, {}).message(),
            "section 'code' (any, rank -2): bad rank (must be -1 or >= 0)");
  EXPECT_EQ(w.write("/nonexistent/train.bin").message(),
            "/nonexistent/train.bin: cannot create a temporary file: No such file or directory");
}

TEST(TrainBin, NotATrainBin) {
  EXPECT_EQ(parseError({}), "not a train.bin: the file is empty");
  std::vector<uint8_t> b = sampleFile();
  b[3] = 'X';
  EXPECT_EQ(parseError(b), "not a train.bin: wrong magic bytes (expected \"LCCTRAIN\")");
  EXPECT_EQ(parseError({'L', 'C', 'X'}),
            "not a train.bin: wrong magic bytes (expected \"LCCTRAIN\")");
  std::vector<uint8_t> elf = {0x7F, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(parseError(elf), "not a train.bin: it is an ELF file (an executable or object file?)");
  // The start of a model exported by torch.onnx: ir_version 8, producer "pytorch".
  std::vector<uint8_t> onnx = {0x08, 0x08, 0x12, 0x07, 'p', 'y', 't', 'o', 'r', 'c', 'h'};
  EXPECT_EQ(parseError(onnx),
            "not a train.bin: it looks like an ONNX model (compile it with lcc first)");
  SafetensorsFile st;
  st.tensors["w"] = HostTensor::scalar<float>(1.f);
  std::vector<uint8_t> stBytes;
  ASSERT_TRUE(serializeSafetensors(st, stBytes));
  EXPECT_EQ(parseError(stBytes),
            "not a train.bin: it looks like a safetensors file (a checkpoint?)");
}

TEST(TrainBin, VersionAndFlags) {
  const std::string tail = ", this lcc-run reads version 1; recompile the model with this lcc";
  std::vector<uint8_t> b = sampleFile();
  put(b, kVersionAt, 4, 7);
  EXPECT_EQ(parseError(b), "train.bin format version 7" + tail) << "checked before the checksum";
  put(b, kVersionAt, 4, 0);
  EXPECT_EQ(parseError(b), "train.bin format version 0" + tail);
  b = sampleFile();
  put(b, kFlagsAt, 4, 0x4);
  reseal(b);
  EXPECT_EQ(parseError(b), "the file needs features this lcc-run does not know (header flags "
                           "0x00000004); recompile the model with this lcc");
  put(b, kFlagsAt, 4, 0x10000); // an optional hint: ignored
  reseal(b);
  TrainBin tb;
  ASSERT_TRUE(TrainBin::parse(b.data(), b.size(), tb));
  EXPECT_EQ(tb.flags(), 0x10000u);
}

TEST(TrainBin, TruncatedAndExtended) {
  std::vector<uint8_t> b = sampleFile();
  std::string full = std::to_string(b.size());
  std::vector<uint8_t> t(b.begin(), b.begin() + 300);
  EXPECT_EQ(parseError(t), "truncated: the header says " + full + " bytes, the file has 300");
  EXPECT_EQ(parseError({b.begin(), b.begin() + 40}),
            "truncated: the file is 40 bytes, shorter than the 64-byte header");
  EXPECT_EQ(parseError({b.begin(), b.begin() + 5}),
            "truncated: the file is 5 bytes, shorter than the 64-byte header");
  b.push_back(0);
  EXPECT_EQ(parseError(b), "the header says " + full + " bytes, but the file has " +
                               std::to_string(b.size()) + " (data appended after the end?)");
}

TEST(TrainBin, Checksums) {
  std::vector<Spec> specs = sampleSpecs();
  std::vector<uint8_t> b = sampleFile(specs);
  // Flip one payload byte of 'plan' (cpu-x86_64, rank -1), entry 3.
  size_t plan = static_cast<size_t>(get(b, entryAt(b, 3) + kOffsetAt, 8));
  b[plan + 10] ^= 0x01;
  EXPECT_EQ(parseError(b), "corrupted: section 'plan' (cpu-x86_64, rank -1) checksum mismatch "
                           "(stored " + hex(crc32c(specs[3].bytes.data(), 64)) +
                               ", computed " + hex(crc32c(&b[plan], 64)) + ")");
  b = sampleFile(specs);
  b[kCountAt] ^= 0x02;
  EXPECT_EQ(parseError(b).rfind("corrupted: header checksum mismatch (stored 0x", 0), 0u);
  b = sampleFile(specs);
  b[entryAt(b, 1) + kNameAt] = 'k';
  EXPECT_EQ(parseError(b).rfind("corrupted: section table checksum mismatch (stored 0x", 0), 0u);
}

TEST(TrainBin, StructuralErrors) {
  const std::vector<uint8_t> good = sampleFile();
  const std::string size = std::to_string(good.size());
  auto edit = [&](auto change) {
    std::vector<uint8_t> b = good;
    change(b);
    reseal(b);
    return parseError(b);
  };
  // Entry 3 is 'plan' (cpu-x86_64, rank -1); entry 1 is 'code' (cpu-x86_64, rank -1).
  const std::string plan = "section 'plan' (cpu-x86_64, rank -1)";
  EXPECT_EQ(edit([&](auto &b) { put(b, entryAt(b, 3) + kOffsetAt, 8, 1 << 20); }),
            plan + " is out of bounds (offset 1048576, size 64, file " + size + " bytes)");
  EXPECT_EQ(edit([&](auto &b) { put(b, entryAt(b, 3) + kLenAt, 8, ~0ull); }),
            plan + " is out of bounds (offset " +
                std::to_string(get(good, entryAt(good, 3) + kOffsetAt, 8)) +
                ", size 18446744073709551615, file " + size + " bytes)");
  EXPECT_EQ(edit([&](auto &b) {
              put(b, entryAt(b, 3) + kOffsetAt, 8, get(b, entryAt(b, 1) + kOffsetAt, 8) + 128);
            }),
            "sections 'code' (cpu-x86_64, rank -1) and " + plan.substr(8) + " overlap");
  EXPECT_EQ(edit([&](auto &b) { put(b, entryAt(b, 3) + kOffsetAt, 8, 128); }),
            plan + " overlaps the section table");
  EXPECT_EQ(edit([&](auto &b) { put(b, entryAt(b, 3) + kOffsetAt, 8, 0); }),
            plan + " overlaps the header");
  EXPECT_EQ(edit([&](auto &b) { put(b, entryAt(b, 3) + kOffsetAt, 8, 65); }),
            plan + ": offset 65 is not a multiple of 64");
  EXPECT_EQ(edit([&](auto &b) { b[entryAt(b, 2) + kNameAt + 1] = 0x07; }),
            "section table entry 2: bad name (contains a control character)");
  EXPECT_EQ(edit([&](auto &b) { b[entryAt(b, 2) + kNameAt + 1] = 0xC3; }),
            "section table entry 2: bad name (not valid UTF-8)");
  EXPECT_EQ(edit([&](auto &b) { b[entryAt(b, 2) + kNameAt + 31] = 'x'; }),
            "section table entry 2: bad name (not zero-padded)");
  EXPECT_EQ(edit([&](auto &b) { b[entryAt(b, 2) + kNameAt] = 0; }),
            "section table entry 2: bad name (not zero-padded)"); // "\0ode"
  EXPECT_EQ(edit([&](auto &b) { std::memset(&b[entryAt(b, 2) + kNameAt], 0, 32); }),
            "section table entry 2: bad name (empty)");
  EXPECT_EQ(edit([&](auto &b) { std::memset(&b[entryAt(b, 2) + kTargetAt], 0, 32); }),
            "section table entry 2 ('code'): bad target (empty)");
  EXPECT_EQ(edit([&](auto &b) { put(b, entryAt(b, 3) + kRankAt, 4, 0xFFFFFFFE); }),
            "section 'plan' (cpu-x86_64, rank -2): bad rank (must be -1 or >= 0)");
  EXPECT_EQ(edit([&](auto &b) { b[entryAt(b, 3) + 90] = 1; }),
            plan + ": reserved bytes are not zero");
  EXPECT_EQ(edit([&](auto &b) { b[50] = 1; }), "header reserved bytes are not zero");
  // Entry 2 ('code', cuda-sm_90) given entry 1's target.
  EXPECT_EQ(edit([&](auto &b) {
              std::memcpy(&b[entryAt(b, 2) + kTargetAt], &b[entryAt(b, 1) + kTargetAt], 32);
            }),
            "duplicate section 'code' (cpu-x86_64, rank -1)");
  EXPECT_EQ(edit([&](auto &b) { put(b, kTableAt, 8, 0); }),
            "section table offset 0 overlaps the header");
  EXPECT_EQ(edit([&](auto &b) { put(b, kCountAt, 8, 1ull << 60); }),
            "section table (1152921504606846976 entries at offset 64) runs past the end of the " +
                size + "-byte file");
  EXPECT_EQ(edit([&](auto &b) { put(b, kTableAt, 8, ~0ull); }),
            "section table (8 entries at offset 18446744073709551615) runs past the end of the " +
                size + "-byte file");
}

TEST(TrainBin, FileErrorsNameThePath) {
  TrainBin tb;
  EXPECT_EQ(TrainBin::open("/nonexistent/train.bin", tb).message(),
            "/nonexistent/train.bin: cannot open: No such file or directory");
  TempDir dir;
  EXPECT_EQ(TrainBin::open(dir.path, tb).message(), dir.path + ": not a regular file");
  std::string path = dir.path + "/train.bin";
  writeRaw(path, {});
  EXPECT_EQ(TrainBin::open(path, tb).message(), path + ": not a train.bin: the file is empty");
  std::vector<uint8_t> b = sampleFile();
  b[b.size() - 1] ^= 0x80; // the last payload: 'optimizer été'
  writeRaw(path, b);
  Status s = TrainBin::open(path, tb);
  EXPECT_EQ(s.message().rfind(path +
                                  ": corrupted: section 'optimizer \xc3\xa9t\xc3\xa9' (any, rank "
                                  "-1) checksum mismatch (stored 0x",
                              0),
            0u)
      << s.message();
  EXPECT_EQ(tb.fileData(), nullptr);
  b = sampleFile();
  put(b, kVersionAt, 4, 7);
  writeRaw(path, b);
  EXPECT_EQ(TrainBin::open(path, tb).message(),
            path + ": train.bin format version 7, this lcc-run reads version 1; recompile the "
                   "model with this lcc");
}

// Every prefix and every single-byte change of a valid file must give an
// error (every byte but alignment padding is covered by a checksum, the magic
// or the version), and padding changes must parse. Resealed random edits of
// the table and header reach the structural checks; they must parse or fail
// cleanly, and whatever parses must be in bounds.
TEST(TrainBin, FuzzedFilesNeverCrash) {
  const std::vector<uint8_t> good = sampleFile();
  std::vector<bool> padding(good.size(), true);
  {
    TrainBin tb;
    ASSERT_TRUE(TrainBin::parse(good.data(), good.size(), tb));
    size_t tableEnd = 64 + tb.sections().size() * kEntry;
    for (size_t k = 0; k < tableEnd; ++k)
      padding[k] = false;
    for (const TrainBinSection &s : tb.sections())
      for (uint64_t k = s.offset; k < s.offset + s.size; ++k)
        padding[k] = false;
  }
  for (size_t n = 0; n < good.size(); ++n)
    EXPECT_NE(parseError({good.begin(), good.begin() + static_cast<long>(n)}), "<ok>")
        << "prefix of " << n;

  std::mt19937_64 rng(2024);
  int paddingHits = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<uint8_t> b = good;
    size_t at = rng() % b.size();
    b[at] = static_cast<uint8_t>(b[at] ^ (1 + rng() % 255));
    std::string e = parseError(b);
    if (padding[at]) {
      ++paddingHits;
      EXPECT_EQ(e, "<ok>") << "padding byte " << at;
    } else {
      EXPECT_NE(e, "<ok>") << "byte " << at;
    }
  }
  EXPECT_GT(paddingHits, 0);

  const uint64_t interesting[] = {0,          1,           63,          64,
                                  128,        256,         good.size(), good.size() - 1,
                                  1ull << 32, 1ull << 63,  ~0ull,       ~0ull - 63};
  int parsed = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<uint8_t> b = good;
    int edits = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < edits; ++k) {
      uint64_t v = rng() % 2 ? interesting[rng() % std::size(interesting)] : rng() % 1024;
      size_t entry = entryAt(good, rng() % 8);
      switch (rng() % 6) {
      case 0: put(b, entry + kOffsetAt, 8, v & ~63ull); break;
      case 1: put(b, entry + kLenAt, 8, v); break;
      case 2: put(b, entry + kRankAt, 4, v); break;
      case 3: put(b, kCountAt, 8, v % 16); break;
      case 4: put(b, kTableAt, 8, v); break;
      default: b[entry + rng() % kEntry] = static_cast<uint8_t>(rng()); break;
      }
    }
    reseal(b);
    TrainBin tb;
    Status s = TrainBin::parse(b.data(), b.size(), tb);
    if (!s) {
      EXPECT_FALSE(s.message().empty());
      EXPECT_EQ(s.message().find('\n'), std::string::npos);
      continue;
    }
    ++parsed;
    for (const TrainBinSection &sec : tb.sections())
      EXPECT_LE(sec.offset + sec.size, b.size());
  }
  EXPECT_GT(parsed, 0) << "some edits (e.g. of an unused rank) still parse";
}

// A reader opening the file while it is rewritten sees the old file or the
// new one, complete, never a partial file.
TEST(TrainBin, AtomicOverwrite) {
  TempDir dir;
  std::string path = dir.path + "/train.bin";
  TrainBinWriter a, b;
  ASSERT_TRUE(a.addSection("plan", "any", -1, std::vector<uint8_t>(100000, 'a')));
  ASSERT_TRUE(b.addSection("plan", "any", -1, std::vector<uint8_t>(7000, 'b')));
  ASSERT_TRUE(b.addSection("code", "any", -1, std::vector<uint8_t>(50000, 'c')));
  ASSERT_TRUE(a.write(path));
  std::atomic<bool> done{false};
  std::atomic<int> reads{0}, bad{0};
  std::string firstBad;
  std::thread reader([&] {
    while (!done.load()) {
      TrainBin tb;
      Status s = TrainBin::open(path, tb);
      TrainBinBytes plan = tb.find("plan", "any", 0);
      bool ok = s && plan.found() &&
                ((plan.size == 100000 && plan.data[99999] == 'a') ||
                 (plan.size == 7000 && plan.data[6999] == 'b' && tb.find("code", "any", 0).found()));
      if (!ok && bad.fetch_add(1) == 0)
        firstBad = s ? "unexpected contents" : s.message();
      reads.fetch_add(1);
    }
  });
  for (int i = 0; i < 60; ++i)
    ASSERT_TRUE((i % 2 ? a : b).write(path));
  done = true;
  reader.join();
  EXPECT_EQ(bad.load(), 0) << firstBad;
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(dir.files(), std::vector<std::string>{"train.bin"}) << "no temporary left behind";
  std::vector<uint8_t> expected;
  ASSERT_TRUE(a.serialize(expected));
  EXPECT_EQ(readAll(path), expected) << "the last write wins";

  // A failed write (here: the rename, as the path is a non-empty directory)
  // leaves the target as it was and no temporary behind.
  std::string sub = dir.path + "/sub";
  ASSERT_EQ(::mkdir(sub.c_str(), 0755), 0);
  writeRaw(sub + "/keep", {1, 2, 3});
  Status s = a.write(sub);
  EXPECT_EQ(s.message().rfind(sub + ": rename failed: ", 0), 0u) << s.message();
  std::vector<std::string> files = dir.files();
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"sub", "train.bin"}));
  EXPECT_EQ(readAll(sub + "/keep"), (std::vector<uint8_t>{1, 2, 3}));
  std::remove((sub + "/keep").c_str());
}

} // namespace
