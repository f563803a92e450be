//===- TrainBin.h - the train.bin container ---------------------*- C++ -*-===//
//
// A train.bin is the one file a training rank needs: compiled code per
// target, the execution plan, parameter metadata, optimizer settings and the
// model config. This file only defines the container: named sections of
// bytes, each tagged with a target ("any", "cpu-x86_64", "cuda-sm_90") and a
// rank (-1 = every rank), 64-byte aligned so code and plans can be used in
// place from an mmap, each protected by a CRC-32C. What goes inside a section
// is defined by its producer. docs/train-bin.md has the exact byte layout.
//
// Part of the runtime, so no MLIR/LLVM and no exceptions: errors are returned
// as a status with one line of text; hostile input gives an error, never a
// crash.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_TRAINBIN_H
#define LCC_RUNTIME_TRAINBIN_H

#include "runtime/support/Crc32c.h"
#include "runtime/support/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lcc {

/// The container layout version this code reads and writes. Readers accept
/// exactly this version (docs/train-bin.md, "Versioning").
constexpr uint32_t kTrainBinVersion = 1;
/// Payloads (and the section table) start at multiples of this.
constexpr uint64_t kTrainBinAlignment = 64;
constexpr size_t kTrainBinHeaderSize = 64;
constexpr size_t kTrainBinEntrySize = 96;
/// Longest section name / target in bytes (UTF-8).
constexpr size_t kTrainBinMaxLabel = 32;

/// The bytes of one section. `data` is null when a lookup found nothing; a
/// found empty section has a non-null `data` and `size` 0.
struct TrainBinBytes {
  const uint8_t *data = nullptr;
  size_t size = 0;
  bool found() const { return data != nullptr; }
};

/// One entry of the section table as read from a file.
struct TrainBinSection {
  std::string name;
  std::string target;
  int32_t rank = -1;
  uint64_t offset = 0; ///< from the start of the file, a multiple of 64
  uint64_t size = 0;
  uint32_t crc = 0; ///< CRC-32C of the payload
};

/// A train.bin opened for reading. The file is mapped read-only and the
/// sections point into the mapping, so they live as long as this object.
/// Move-only.
class TrainBin {
public:
  TrainBin() = default;
  ~TrainBin();
  TrainBin(TrainBin &&other) noexcept;
  TrainBin &operator=(TrainBin &&other) noexcept;
  TrainBin(const TrainBin &) = delete;
  TrainBin &operator=(const TrainBin &) = delete;

  /// Maps `path` read-only and validates all of it (header, table, every
  /// payload checksum). Errors are prefixed with "<path>: ". On failure `out`
  /// is left empty.
  static Status open(const std::string &path, TrainBin &out);

  /// Validates an in-memory file. The bytes are copied into a 64-byte aligned
  /// buffer owned by `out`, so `data` need not outlive it. On failure `out`
  /// is left empty.
  static Status parse(const uint8_t *data, size_t size, TrainBin &out);

  /// The best section for a rank running on a target: among the sections
  /// called `name`, an exact `rank` beats rank -1, and then an exact `target`
  /// beats "any"; so the order tried is (target, rank), ("any", rank),
  /// (target, -1), ("any", -1). Not found: `data` is null.
  TrainBinBytes find(std::string_view name, std::string_view target, int32_t rank) const;

  /// The payload of a section from sections().
  TrainBinBytes bytes(const TrainBinSection &section) const;

  /// The table, in file order.
  const std::vector<TrainBinSection> &sections() const { return sections_; }
  uint32_t flags() const { return flags_; }
  /// The whole file (the mapping or the owned copy).
  const uint8_t *fileData() const { return base_; }
  size_t fileSize() const { return size_; }

private:
  void reset();
  Status validate();

  const uint8_t *base_ = nullptr;
  size_t size_ = 0;
  void *mapping_ = nullptr; ///< from mmap, or null
  void *owned_ = nullptr;   ///< from aligned operator new, or null
  uint32_t flags_ = 0;
  std::vector<TrainBinSection> sections_;
};

/// Builds a train.bin. Sections keep the order they were added in (the file
/// is byte-for-byte deterministic).
class TrainBinWriter {
public:
  /// Adds a section. Errors: a name or target that is empty, longer than 32
  /// bytes, not UTF-8 or contains a control character; rank < -1; a second
  /// section with the same (name, target, rank).
  Status addSection(std::string name, std::string target, int32_t rank, std::vector<uint8_t> bytes);
  Status addSection(std::string name, std::string target, int32_t rank, const uint8_t *data,
                    size_t size);

  /// The file's bytes.
  Status serialize(std::vector<uint8_t> &out) const;

  /// Writes the file atomically (runtime/support/AtomicFile.h): readers of `path`
  /// see the old file or the new one, never a partial one. Errors are
  /// prefixed with "<path>: ".
  Status write(const std::string &path) const;

private:
  struct Pending {
    std::string name, target;
    int32_t rank;
    std::vector<uint8_t> bytes;
  };
  /// The header and table bytes and each payload's offset; shared by
  /// serialize() and write() so they produce the same file.
  void layout(std::vector<uint8_t> &headerAndTable, std::vector<uint64_t> &offsets,
              uint64_t &fileSize) const;

  std::vector<Pending> sections_;
};

} // namespace lcc

#endif // LCC_RUNTIME_TRAINBIN_H
