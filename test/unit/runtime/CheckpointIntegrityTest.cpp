//===- CheckpointIntegrityTest.cpp - checksummed checkpoints --------------===//
//
// Oracle: every bit of a checkpoint file, flipped in turn, must make loading
// fail; in the tensor data, with an error naming the tensor that byte
// belongs to (known from the header's data offsets, read here on its own);
// the untouched file loads with the same bytes; a file without checksums
// (an older lcc's) loads and says so; a checksum for one tensor removed while
// the others stay is an error.
//
//===----------------------------------------------------------------------===//
#include "runtime/support/Safetensors.h"
#include "runtime/train/Checkpoint.h"
#include "test/unit/common/StatusAssert.h"
#include "test/unit/common/TempDir.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>

namespace {

using lcc::test::isOk;

lcc::SafetensorsFile sample() {
  lcc::SafetensorsFile f;
  lcc::HostTensor w(lcc::ElementType::F32, {3, 4}), b(lcc::ElementType::F64, {5}),
      n(lcc::ElementType::I32, {2});
  for (int64_t i = 0; i < w.numElements(); ++i)
    w.data<float>()[i] = 0.25f * float(i) - 1.0f;
  for (int64_t i = 0; i < b.numElements(); ++i)
    b.data<double>()[i] = 1.0 / double(i + 3);
  n.data<int32_t>()[0] = 7;
  n.data<int32_t>()[1] = -9;
  f.tensors["h.0.w"] = std::move(w);
  f.tensors["h.0.b"] = std::move(b);
  f.tensors["step"] = std::move(n);
  f.metadata["lcc.data_seed"] = "1337";
  return f;
}

std::string readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeAll(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

TEST(CheckpointIntegrity, EveryFlippedBitIsFoundAndNamesItsTensor) {
  lcc::test::TempDir tmp("lcc-ckpt-crc");
  ASSERT_TRUE(isOk(lcc::saveCheckpoint(tmp.path, 3, sample(), 2)));
  const std::string path = tmp.file(lcc::checkpointFileName(3));
  const std::string good = readAll(path);

  // The header's data offsets, read with a regex: which tensor owns a byte.
  uint64_t headerSize = 0;
  std::memcpy(&headerSize, good.data(), 8);
  const std::string header = good.substr(8, headerSize);
  std::regex entry("\"([^\"]+)\":\\{[^}]*\"data_offsets\":\\[([0-9]+),([0-9]+)\\]");
  std::vector<std::tuple<std::string, uint64_t, uint64_t>> ranges;
  for (std::sregex_iterator it(header.begin(), header.end(), entry), end; it != end; ++it)
    ranges.emplace_back((*it)[1], std::stoull((*it)[2]), std::stoull((*it)[3]));
  ASSERT_EQ(ranges.size(), 3u);

  lcc::SafetensorsFile back;
  std::string used;
  bool unchecked = true;
  ASSERT_TRUE(isOk(lcc::loadCheckpoint(tmp.path, back, used, &unchecked)));
  EXPECT_FALSE(unchecked);
  lcc::SafetensorsFile want = sample();
  for (const auto &[name, t] : want.tensors) {
    ASSERT_TRUE(back.tensors.count(name)) << name;
    EXPECT_EQ(std::memcmp(back.tensors.at(name).rawData(), t.rawData(), t.byteSize()), 0) << name;
  }

  // The header (its length, the JSON: names, dtypes, shapes, offsets, the
  // step and seed, the sums) and the data, every bit.
  size_t failures = 0;
  for (size_t at = 0; at < good.size(); ++at)
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = good;
      bad[at] ^= char(1 << bit);
      writeAll(path, bad);
      lcc::SafetensorsFile f;
      lcc::Status st = lcc::loadCheckpoint(path, f, used);
      EXPECT_FALSE(st.ok()) << "byte " << at << " bit " << bit << " flipped loads";
      failures += !st.ok();
      if (at < 8 + headerSize)
        continue;
      size_t i = at - 8 - headerSize;
      std::string owner;
      for (const auto &[name, begin, end] : ranges)
        if (i >= begin && i < end)
          owner = name;
      ASSERT_FALSE(owner.empty()) << "byte " << i << " belongs to no tensor";
      EXPECT_NE(st.message().find("tensor '" + owner + "' is corrupt"), std::string::npos)
          << "byte " << at << ": " << st.message();
    }
  EXPECT_EQ(failures, 8 * good.size());
  writeAll(path, good);
  EXPECT_TRUE(isOk(lcc::loadCheckpoint(path, back, used)));
}

TEST(CheckpointIntegrity, OldFilesLoadUncheckedAndPartialSumsAreErrors) {
  lcc::test::TempDir tmp("lcc-ckpt-old");
  // What an lcc before checksums wrote: the tensors and metadata alone.
  const std::string path = tmp.file(lcc::checkpointFileName(1));
  ASSERT_TRUE(isOk(lcc::writeSafetensors(path, sample())));
  lcc::SafetensorsFile f;
  std::string used;
  bool unchecked = false;
  ASSERT_TRUE(isOk(lcc::loadCheckpoint(path, f, used, &unchecked)));
  EXPECT_TRUE(unchecked);

  // A metadata value changed (the seed) with the sums left as they were.
  lcc::SafetensorsFile altered = sample();
  lcc::addChecksums(altered);
  altered.metadata["lcc.data_seed"] = "1338";
  ASSERT_TRUE(isOk(lcc::writeSafetensors(path, altered)));
  EXPECT_EQ(lcc::loadCheckpoint(path, f, used).message(),
            path + ": its metadata (step, data seed, ...) is corrupt or altered: their CRC-32C "
                   "does not match the one recorded");

  lcc::SafetensorsFile partial = sample();
  lcc::addChecksums(partial);
  ASSERT_EQ(partial.metadata.erase("lcc.crc32c.h.0.b"), 1u);
  ASSERT_TRUE(isOk(lcc::writeSafetensors(path, partial)));
  lcc::Status st = lcc::loadCheckpoint(path, f, used);
  EXPECT_EQ(st.message(), path + ": tensor 'h.0.b' has no checksum while the others have (the "
                                 "file was altered)");
}

} // namespace
