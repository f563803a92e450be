//===- TensorBoardTest.cpp - CRC-32C and TensorBoard event files ----------===//
//
// The CRC against published check values (RFC 3720's vectors and the
// catalogue's "123456789"), the record framing against a corrupted and a
// cut file, and the writer's events decoded with the schema.
//
//===----------------------------------------------------------------------===//
#include "runtime/support/Crc32c.h"
#include "test/unit/data/TestFiles.h"
#include "tools/lcc-run/TensorBoard.h"

#include "tensorboard_event.pb.h"

#include <gtest/gtest.h>

#include <random>

namespace lcc {
namespace {

using test::TempDir;

TEST(Crc32cTest, PublishedCheckValues) {
  const std::string check = "123456789";
  EXPECT_EQ(crc32c(check.data(), check.size()), 0xe3069283u);
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xff), up(32), down(32);
  for (int i = 0; i < 32; ++i)
    up[i] = uint8_t(i), down[i] = uint8_t(31 - i);
  // RFC 3720, B.4.
  EXPECT_EQ(crc32c(zeros.data(), 32), 0x8a9136aau);
  EXPECT_EQ(crc32c(ones.data(), 32), 0x62a8ab43u);
  EXPECT_EQ(crc32c(up.data(), 32), 0x46dd794eu);
  EXPECT_EQ(crc32c(down.data(), 32), 0x113fdb5cu);
  EXPECT_EQ(crc32c(nullptr, 0), 0u);
}

TEST(Crc32cTest, HardwareEqualsTableAndContinues) {
  std::mt19937 rng(7);
  std::vector<uint8_t> data(4099);
  for (uint8_t &b : data)
    b = uint8_t(rng());
  for (size_t size : {1u, 7u, 8u, 9u, 63u, 4099u}) {
    uint32_t whole = crc32c(data.data(), size);
    EXPECT_EQ(whole, crc32cPortable(data.data(), size)) << size;
    for (size_t cut : {size_t(0), size / 3, size})
      EXPECT_EQ(crc32c(data.data() + cut, size - cut, crc32c(data.data(), cut)), whole);
  }
}

TEST(TensorBoardTest, RecordsRoundTripAndCorruptionIsNamed) {
  TempDir dir;
  std::string a = frameEventRecord("first"), b = frameEventRecord(std::string(300, 'x'));
  ASSERT_EQ(a.size(), 5u + 16u);
  test::writeText(dir.file("ok"), a + b);
  std::vector<std::string> records;
  bool truncated = true;
  ASSERT_TRUE(readEventFile(dir.file("ok"), records, truncated));
  EXPECT_FALSE(truncated);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0], "first");
  EXPECT_EQ(records[1], std::string(300, 'x'));

  // Every flipped bit of the second record is caught, naming it.
  for (size_t byte = a.size(); byte < a.size() + b.size(); byte += 37) {
    std::string bad = a + b;
    bad[byte] ^= 0x10;
    test::writeText(dir.file("bad"), bad);
    Status st = readEventFile(dir.file("bad"), records, truncated);
    ASSERT_FALSE(st) << byte;
    EXPECT_NE(st.message().find("record 1 at byte " + std::to_string(a.size())), std::string::npos)
        << st.message();
  }
  // A record cut short ends the file.
  test::writeText(dir.file("cut"), a + b.substr(0, b.size() - 1));
  ASSERT_TRUE(readEventFile(dir.file("cut"), records, truncated));
  EXPECT_TRUE(truncated);
  EXPECT_EQ(records.size(), 1u);
}

TEST(TensorBoardTest, WriterEventsDecode) {
  TempDir dir;
  std::string sub = dir.file("runs/a");
  TensorBoardWriter w;
  ASSERT_TRUE(TensorBoardWriter::open(sub, 11, w));
  ASSERT_TRUE(w.scalars(11, {{"train/loss", 2.5}, {"train/lr", 3e-4}}));
  ASSERT_TRUE(w.scalars(12, {{"train/loss", 2.25}, {"val/loss", 2.75}}));
  std::string path = w.path();
  ASSERT_TRUE(w.close());
  EXPECT_NE(path.find("/runs/a/events.out.tfevents."), std::string::npos);

  std::vector<std::string> records;
  bool truncated = false;
  ASSERT_TRUE(readEventFile(path, records, truncated));
  ASSERT_EQ(records.size(), 4u);
  std::vector<tensorboard::Event> events(4);
  for (size_t i = 0; i < 4; ++i)
    ASSERT_TRUE(events[i].ParseFromString(records[i]));
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_GT(events[0].wall_time(), 1.7e9);
  EXPECT_EQ(events[1].session_log().status(), tensorboard::SessionLog::START);
  EXPECT_EQ(events[1].step(), 11);
  EXPECT_EQ(events[2].step(), 11);
  ASSERT_EQ(events[2].summary().value_size(), 2);
  EXPECT_EQ(events[2].summary().value(0).tag(), "train/loss");
  EXPECT_EQ(events[2].summary().value(0).simple_value(), 2.5f);
  EXPECT_EQ(events[2].summary().value(1).simple_value(), 3e-4f);
  EXPECT_EQ(events[3].summary().value(1).tag(), "val/loss");
  EXPECT_EQ(events[3].summary().value(1).simple_value(), 2.75f);

  // A new run's file has no START; a file where a directory should be fails.
  TensorBoardWriter fresh;
  ASSERT_TRUE(TensorBoardWriter::open(dir.path, 1, fresh));
  ASSERT_TRUE(fresh.close());
  ASSERT_TRUE(readEventFile(fresh.path(), records, truncated));
  EXPECT_EQ(records.size(), 1u);
  test::writeText(dir.file("plain"), "x");
  Status st = TensorBoardWriter::open(dir.file("plain/sub"), 1, fresh);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("plain: not a directory"), std::string::npos) << st.message();
  // (TempDir removes one level of directories.)
  std::remove(path.c_str());
  ::rmdir(sub.c_str());
}

} // namespace
} // namespace lcc
