// Whole tensors <-> flat pieces (runtime/support/Sharding.h): the pieces of every
// rank reassemble the tensor at any part count, and incomplete or
// inconsistent checkpoints are refused with a message naming the tensor.
#include "runtime/support/Sharding.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <memory>

using namespace lcc;

namespace {

/// assembleShards with its message in `error` (the assertions compare it).
bool assemble(const std::vector<SafetensorsFile> &files, SafetensorsFile &whole,
              std::string &error) {
  Status st = assembleShards(files, whole);
  error = st.message();
  return st.ok();
}

HostTensor iota(std::vector<int64_t> shape) {
  HostTensor t(ElementType::F32, std::move(shape));
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.data<float>()[i] = float(i + 1);
  return t;
}

/// The files N ranks would write for `whole` cut into N pieces.
std::vector<SafetensorsFile> piecesOf(const std::string &name, const HostTensor &whole, int64_t n) {
  ShardSpec spec{"dp", n, whole.shape()};
  std::vector<SafetensorsFile> files(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r) {
    files[r].tensors[name] = cutShard(whole, spec, r);
    files[r].metadata[shardMetadataKey(name)] = shardMetadataValue(spec, r);
    files[r].metadata["lcc.step"] = "7";
  }
  return files;
}

TEST(Sharding, CutPadsTheLastPieceWithZeros) {
  HostTensor w = iota({2, 5}); // 10 elements over 4 parts: 3, 3, 3, 1 + 2 zeros
  ShardSpec spec{"dp", 4, {2, 5}};
  EXPECT_EQ(shardElements(spec), 3);
  HostTensor last = cutShard(w, spec, 3);
  ASSERT_EQ(last.shape(), std::vector<int64_t>{3});
  EXPECT_EQ(last.data<float>()[0], 10.0f);
  EXPECT_EQ(last.data<float>()[1], 0.0f);
  EXPECT_EQ(last.data<float>()[2], 0.0f);
  HostTensor second = cutShard(w, spec, 1);
  EXPECT_EQ(second.data<float>()[0], 4.0f);
}

TEST(Sharding, PiecesReassembleAtEveryPartCount) {
  HostTensor w = iota({3, 7});
  for (int64_t n : {1, 2, 3, 4, 5, 8, 21, 32}) {
    std::vector<SafetensorsFile> files = piecesOf("w", w, n);
    files[0].tensors["bias"] = iota({4}); // whole tensors pass through
    SafetensorsFile whole;
    std::string error;
    ASSERT_TRUE(assemble(files, whole, error)) << n << ": " << error;
    ASSERT_EQ(whole.tensors.at("w").shape(), w.shape());
    EXPECT_EQ(std::memcmp(whole.tensors.at("w").rawData(), w.rawData(), w.byteSize()), 0) << n;
    EXPECT_EQ(whole.tensors.at("bias").numElements(), 4);
    EXPECT_EQ(whole.metadata.at("lcc.step"), "7");
    EXPECT_FALSE(whole.metadata.count(shardMetadataKey("w"))) << "piece descriptions are dropped";
  }
}

TEST(Sharding, VocabularySplitPadsTheLastRowsWithZeros) {
  // 5 vocabulary rows of 3 over 2 ranks: 3 rows each, rank 1's last one
  // padding. Over 4 ranks along the columns of [2, 5]: widths 2, rank 2 holds
  // one real column, rank 3 none.
  HostTensor rows = iota({5, 3});
  ShardSpec byRow{"tp", 2, {5, 3}, 0, 1};
  ASSERT_EQ(shardShape(byRow), (std::vector<int64_t>{3, 3}));
  HostTensor second = cutShard(rows, byRow, 1);
  std::vector<float> want = {10, 11, 12, 13, 14, 15, 0, 0, 0};
  EXPECT_EQ(std::vector<float>(second.data<float>(), second.data<float>() + 9), want);

  HostTensor cols = iota({2, 5});
  ShardSpec byCol{"tp", 4, {2, 5}, 1, 1};
  ASSERT_EQ(shardShape(byCol), (std::vector<int64_t>{2, 2}));
  HostTensor third = cutShard(cols, byCol, 2), fourth = cutShard(cols, byCol, 3);
  EXPECT_EQ(std::vector<float>(third.data<float>(), third.data<float>() + 4),
            (std::vector<float>{5, 0, 10, 0}));
  EXPECT_EQ(std::vector<float>(fourth.data<float>(), fourth.data<float>() + 4),
            (std::vector<float>{0, 0, 0, 0}));
}

TEST(Sharding, SplitsAlongADimensionReassemble) {
  // Padded splits of rows and columns at several counts, and a 3-block split
  // (fused q/k/v) that divides exactly; the checkpoint metadata round-trips.
  HostTensor w = iota({6, 7});
  for (auto [n, dim, blocks] : std::vector<std::array<int64_t, 3>>{
           {2, 0, 1}, {4, 0, 1}, {5, 1, 1}, {3, 1, 1}, {2, 0, 3}, {3, 0, 1}}) {
    ShardSpec spec{"tp", n, w.shape(), dim, blocks};
    std::vector<SafetensorsFile> files(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r) {
      files[r].tensors["w"] = cutShard(w, spec, r);
      files[r].metadata[shardMetadataKey("w")] = shardMetadataValue(spec, r);
    }
    SafetensorsFile whole;
    std::string error;
    ASSERT_TRUE(assemble(files, whole, error)) << n << " " << dim << ": " << error;
    EXPECT_EQ(std::memcmp(whole.tensors.at("w").rawData(), w.rawData(), w.byteSize()), 0)
        << n << " parts along " << dim << " in " << blocks << " blocks";
  }
}

TEST(Sharding, ZeroPartsOfTensorParallelPiecesReassemble) {
  // A dp x tp grid: [5, 3] cut by rows over tp = 2 (3 rows each, one padding
  // row), each piece cut flat over dp = 2 (9 elements: 5 and 4 + 1 zero).
  HostTensor w = iota({5, 3});
  auto tp = std::make_shared<ShardSpec>(ShardSpec{"tp", 2, {5, 3}, 0, 1});
  ShardSpec spec{"dp", 2, shardShape(*tp)};
  spec.within = tp;
  EXPECT_EQ(spec.wholeShape(), w.shape());
  // tp piece 1 is rows 3..4 and a zero row: 10..15, 0, 0, 0; its dp part 1
  // is the last 4 elements and a zero.
  HostTensor last = cutPiece(w, spec, 1, 1);
  EXPECT_EQ(std::vector<float>(last.data<float>(), last.data<float>() + 5),
            (std::vector<float>{15, 0, 0, 0, 0}));
  std::vector<SafetensorsFile> files;
  for (int64_t t = 0; t < 2; ++t)
    for (int64_t d = 0; d < 2; ++d) {
      files.emplace_back();
      files.back().tensors["w"] = cutPiece(w, spec, d, t);
      files.back().metadata[shardMetadataKey("w")] = shardMetadataValue(spec, d, t);
    }
  EXPECT_EQ(files[1].metadata.at(shardMetadataKey("w")), "2:1:3x3|2:0:5x3:0:1");
  SafetensorsFile whole;
  std::string error;
  ASSERT_TRUE(assemble(files, whole, error)) << error;
  ASSERT_EQ(whole.tensors.at("w").shape(), w.shape());
  EXPECT_EQ(std::memcmp(whole.tensors.at("w").rawData(), w.rawData(), w.byteSize()), 0);

  // One rank's file missing: 3 of the 4 pieces.
  files.pop_back();
  EXPECT_FALSE(assemble(files, whole, error));
  EXPECT_EQ(error, "the checkpoint has 3 of the 4 pieces of 'w' (a rank's file is missing)");
  // A within that does not produce the outer shape is refused.
  files[0].metadata[shardMetadataKey("w")] = "2:0:3x3|2:0:4x3:0:1";
  EXPECT_FALSE(assemble(files, whole, error));
  EXPECT_EQ(error, "bad piece description '2:0:3x3|2:0:4x3:0:1' of 'w'");
}

TEST(Sharding, MissingPieceIsNamed) {
  std::vector<SafetensorsFile> files = piecesOf("h.0.w", iota({8}), 4);
  files.erase(files.begin() + 2);
  SafetensorsFile whole;
  std::string error;
  EXPECT_FALSE(assemble(files, whole, error));
  EXPECT_EQ(error, "the checkpoint has 3 of the 4 pieces of 'h.0.w' (a rank's file is missing)");
}

TEST(Sharding, InconsistentPiecesAreRefused) {
  std::vector<SafetensorsFile> files = piecesOf("w", iota({8}), 2);
  files[1].metadata[shardMetadataKey("w")] = "2:1:9";
  SafetensorsFile whole;
  std::string error;
  EXPECT_FALSE(assemble(files, whole, error));
  EXPECT_EQ(error, "the pieces of 'w' disagree on their layout");

  files = piecesOf("w", iota({8}), 2);
  files[1].metadata[shardMetadataKey("w")] = "2:5:8";
  EXPECT_FALSE(assemble(files, whole, error));
  EXPECT_EQ(error, "bad piece description '2:5:8' of 'w'");

  files = piecesOf("w", iota({8}), 2);
  files[1].tensors["w"] = iota({3});
  EXPECT_FALSE(assemble(files, whole, error));
  EXPECT_EQ(error, "piece 1 of 'w' has the wrong size");
}

// Piece descriptions come from checkpoint files (test/fuzz/SafetensorsFuzz.cpp):
// sizes whose arithmetic overflows are refused, and an empty tensor with
// large dimensions is put together without looping over them.
TEST(Sharding, HostileSizesAreRefusedOrCheap) {
  auto spec = [](int64_t parts, std::vector<int64_t> shape, int64_t dim, int64_t blocks) {
    ShardSpec s;
    s.group = "dp";
    s.parts = parts;
    s.shape = std::move(shape);
    s.dim = dim;
    s.blocks = blocks;
    return s;
  };
  // blocks x parts = 2^64 (it wrapped to 0, and the dimension was taken modulo it).
  EXPECT_FALSE(validShardSpec(spec(int64_t(1) << 32, {0}, 0, int64_t(1) << 32)));
  // 10^15 x 10^15 elements before the empty dimension.
  EXPECT_FALSE(validShardSpec(spec(1, {1000000000000000, 1000000000000000, 0}, -1, 1)));
  ShardSpec empty = spec(1, {1000000000000000, 0, 7}, -1, 1);
  EXPECT_TRUE(validShardSpec(empty));
  EXPECT_EQ(shardElements(empty), 0);

  SafetensorsFile file, whole;
  std::string error;
  file.tensors["w"] = HostTensor(ElementType::F32, {0});
  file.metadata[shardMetadataKey("w")] = "4294967296:0:0:0:4294967296";
  EXPECT_FALSE(assemble({file}, whole, error));
  EXPECT_EQ(error, "bad piece description '4294967296:0:0:0:4294967296' of 'w'");
  file.metadata[shardMetadataKey("w")] = "100000000000000:0:0|100000000000000:0:0";
  EXPECT_FALSE(assemble({file}, whole, error));
  EXPECT_EQ(error, "the checkpoint has 1 of the 9223372036854775807 pieces of 'w' (a rank's "
                   "file is missing)");
  // 10^14 blocks of an empty tensor: nothing to copy, at once.
  file.tensors["w"] = HostTensor(ElementType::F32, {200000000000000, 0});
  file.metadata[shardMetadataKey("w")] = "1:0:200000000000000x0:0:100000000000000";
  ASSERT_TRUE(assemble({file}, whole, error)) << error;
  EXPECT_EQ(whole.tensors.at("w").shape(), (std::vector<int64_t>{200000000000000, 0}));
}

} // namespace
