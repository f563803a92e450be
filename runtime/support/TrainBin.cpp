//===- TrainBin.cpp - the train.bin container -----------------------------===//
//
// Every integer is encoded and decoded with explicit shifts (little-endian),
// never by copying structs, so the layout does not depend on the compiler's
// padding or the host's byte order. The reader validates the whole file at
// open time, in an order where each check only relies on bytes an earlier
// check has vouched for: magic, version, header checksum, file size, table
// bounds and checksum, each entry, overlaps, then payload checksums.
//
//===----------------------------------------------------------------------===//
#include "runtime/support/TrainBin.h"

#include "runtime/support/AtomicFile.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <new>
#include <set>
#include <sys/mman.h>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

namespace lcc {
namespace {

using Status = Status;

constexpr uint8_t kMagic[8] = {'L', 'C', 'C', 'T', 'R', 'A', 'I', 'N'};

// Header field offsets (docs/train-bin.md).
constexpr size_t kHVersion = 8, kHFlags = 12, kHCount = 16, kHTableOffset = 24, kHFileSize = 32,
                 kHTableCrc = 40, kHReserved = 44, kHCrc = 60;
// Table entry field offsets.
constexpr size_t kEName = 0, kETarget = 32, kEOffset = 64, kESize = 72, kERank = 80, kECrc = 84,
                 kEReserved = 88;
// Flag bits 0-15 mark features a reader must understand to use the file;
// bits 16-31 are hints it may ignore. Version 1 defines none of either.
constexpr uint32_t kRequiredFlagsMask = 0x0000FFFFu;
constexpr uint32_t kKnownRequiredFlags = 0;

//===----------------------------------------------------------------------===//
// Little-endian encoding.
//===----------------------------------------------------------------------===//

void putU32(uint8_t *p, uint32_t v) {
  for (int k = 0; k < 4; ++k)
    p[k] = static_cast<uint8_t>(v >> (8 * k));
}
void putU64(uint8_t *p, uint64_t v) {
  for (int k = 0; k < 8; ++k)
    p[k] = static_cast<uint8_t>(v >> (8 * k));
}
uint32_t getU32(const uint8_t *p) {
  uint32_t v = 0;
  for (int k = 3; k >= 0; --k)
    v = (v << 8) | p[k];
  return v;
}
uint64_t getU64(const uint8_t *p) {
  uint64_t v = 0;
  for (int k = 7; k >= 0; --k)
    v = (v << 8) | p[k];
  return v;
}
// Two's complement, written out so it does not rely on implementation-defined
// unsigned-to-signed conversion.
int32_t toI32(uint32_t u) {
  return u <= 0x7FFFFFFFu ? static_cast<int32_t>(u)
                          : -static_cast<int32_t>(~u) - 1;
}

uint64_t alignUp(uint64_t v) {
  return (v + kTrainBinAlignment - 1) / kTrainBinAlignment * kTrainBinAlignment;
}

bool allZero(const uint8_t *p, size_t n) {
  for (size_t k = 0; k < n; ++k)
    if (p[k])
      return false;
  return true;
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08" PRIx32, v);
  return buf;
}

//===----------------------------------------------------------------------===//
// Names and targets ("labels").
//===----------------------------------------------------------------------===//

/// Why `s` cannot be a section name or target, or null if it can. Labels are
/// printed in error messages, so control characters (C0, DEL, C1) are refused
/// to keep every message one printable line, and bytes must be valid UTF-8.
const char *labelProblem(std::string_view s) {
  if (s.empty())
    return "empty";
  if (s.size() > kTrainBinMaxLabel)
    return "longer than 32 bytes";
  const auto *p = reinterpret_cast<const uint8_t *>(s.data());
  size_t n = s.size(), i = 0;
  while (i < n) {
    uint8_t c = p[i];
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7F)
        return "contains a control character";
      ++i;
      continue;
    }
    size_t len;
    uint8_t lo = 0x80, hi = 0xBF; // the allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0; // no overlong forms
      if (c == 0xED) hi = 0x9F; // no surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F; // nothing above U+10FFFF
    } else {
      return "not valid UTF-8";
    }
    if (i + len > n || p[i + 1] < lo || p[i + 1] > hi)
      return "not valid UTF-8";
    for (size_t k = 2; k < len; ++k)
      if (p[i + k] < 0x80 || p[i + k] > 0xBF)
        return "not valid UTF-8";
    if (c == 0xC2 && p[i + 1] <= 0x9F)
      return "contains a control character"; // U+0080..U+009F
    i += len;
  }
  return nullptr;
}

/// Decodes a 32-byte zero-padded label field. The padding must be all zero
/// so that each label has exactly one encoding.
const char *decodeLabel(const uint8_t *field, std::string &out) {
  size_t len = 0;
  while (len < kTrainBinMaxLabel && field[len])
    ++len;
  out.assign(reinterpret_cast<const char *>(field), len);
  if (!allZero(field + len, kTrainBinMaxLabel - len))
    return "not zero-padded";
  return labelProblem(out);
}

std::string describe(const std::string &name, const std::string &target, int32_t rank) {
  return "'" + name + "' (" + target + ", rank " + std::to_string(rank) + ")";
}

/// The message for a file without the magic. Users do pass the wrong file
/// (the compiled object, the model, a checkpoint), so the common ones are
/// named.
std::string notATrainBin(const uint8_t *d, size_t n) {
  if (n >= 4 && d[0] == 0x7F && d[1] == 'E' && d[2] == 'L' && d[3] == 'F')
    return "not a train.bin: it is an ELF file (an executable or object file?)";
  // safetensors: an 8-byte little-endian JSON length, then the JSON object.
  if (n >= 9 && d[8] == '{' && getU64(d) <= n - 8)
    return "not a train.bin: it looks like a safetensors file (a checkpoint?)";
  // ONNX ModelProto as protobuf writes it: field 1 (ir_version, a small
  // varint), then one of fields 2-8 (producer, domain, graph, opset, ...).
  if (n >= 3 && d[0] == 0x08 && d[1] >= 1 && d[1] < 0x80 &&
      (d[2] == 0x12 || d[2] == 0x1A || d[2] == 0x22 || d[2] == 0x28 || d[2] == 0x32 ||
       d[2] == 0x3A || d[2] == 0x42))
    return "not a train.bin: it looks like an ONNX model (compile it with lcc first)";
  return "not a train.bin: wrong magic bytes (expected \"LCCTRAIN\")";
}

} // namespace

//===----------------------------------------------------------------------===//
// Reader
//===----------------------------------------------------------------------===//

TrainBin::~TrainBin() { reset(); }

TrainBin::TrainBin(TrainBin &&other) noexcept { *this = std::move(other); }

TrainBin &TrainBin::operator=(TrainBin &&other) noexcept {
  if (this != &other) {
    reset();
    base_ = other.base_;
    size_ = other.size_;
    mapping_ = other.mapping_;
    owned_ = other.owned_;
    flags_ = other.flags_;
    sections_ = std::move(other.sections_);
    other.mapping_ = nullptr;
    other.owned_ = nullptr;
    other.reset();
  }
  return *this;
}

void TrainBin::reset() {
  if (mapping_)
    ::munmap(mapping_, size_);
  if (owned_)
    ::operator delete(owned_, std::align_val_t(kTrainBinAlignment));
  base_ = nullptr;
  size_ = 0;
  mapping_ = nullptr;
  owned_ = nullptr;
  flags_ = 0;
  sections_.clear();
}

Status TrainBin::open(const std::string &path, TrainBin &out) {
  out.reset();
  auto fail = [&](const std::string &what) { return Status::failure(path + ": " + what); };
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer;
  // it has no effect on the regular files we accept.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return fail(std::string("cannot open: ") + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    std::string e = std::strerror(errno);
    ::close(fd);
    return fail("cannot stat: " + e);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail("not a regular file");
  }
  // mmap cannot map 0 bytes; an empty file gets the validator's message.
  if (st.st_size == 0) {
    ::close(fd);
    return fail("not a train.bin: the file is empty");
  }
  if (static_cast<uint64_t>(st.st_size) > std::numeric_limits<size_t>::max()) {
    ::close(fd);
    return fail("too large to map");
  }
  size_t size = static_cast<size_t>(st.st_size);
  // Read-only and private: the runtime can never modify the file through the
  // mapping. Writers replace train.bin by rename (never in place), so the
  // mapped inode does not change under us.
  void *m = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int mapErrno = errno;
  ::close(fd);
  if (m == MAP_FAILED)
    return fail(std::string("cannot map: ") + std::strerror(mapErrno));
  out.mapping_ = m;
  out.base_ = static_cast<const uint8_t *>(m);
  out.size_ = size;
  Status s = out.validate();
  if (!s) {
    out.reset();
    return fail(s.message());
  }
  return s;
}

Status TrainBin::parse(const uint8_t *data, size_t size, TrainBin &out) {
  out.reset();
  if (size > 0) {
    // A copy in 64-byte aligned memory: payloads are aligned in memory as they
    // would be in a mapping, and `data` need not outlive `out`.
    void *buf = ::operator new(size, std::align_val_t(kTrainBinAlignment), std::nothrow);
    if (!buf)
      return Status::failure("out of memory copying " + std::to_string(size) + " bytes");
    std::memcpy(buf, data, size);
    out.owned_ = buf;
    out.base_ = static_cast<const uint8_t *>(buf);
    out.size_ = size;
  }
  Status s = out.validate();
  if (!s)
    out.reset();
  return s;
}

Status TrainBin::validate() {
  const uint8_t *d = base_;
  const size_t n = size_;
  if (n == 0)
    return Status::failure("not a train.bin: the file is empty");
  if (std::memcmp(d, kMagic, std::min<size_t>(n, sizeof kMagic)) != 0)
    return Status::failure(notATrainBin(d, n));
  std::string shortFile = "truncated: the file is " + std::to_string(n) +
                          " bytes, shorter than the 64-byte header";
  if (n < kHVersion + 4)
    return Status::failure(shortFile);
  // The version comes before the header checksum: another version may lay
  // out (and checksum) its header differently.
  uint32_t version = getU32(d + kHVersion);
  if (version != kTrainBinVersion)
    return Status::failure("train.bin format version " + std::to_string(version) +
                           ", this lcc-run reads version " + std::to_string(kTrainBinVersion) +
                           "; recompile the model with this lcc");
  if (n < kTrainBinHeaderSize)
    return Status::failure(shortFile);
  uint32_t headerCrc = crc32c(d, kHCrc);
  if (headerCrc != getU32(d + kHCrc))
    return Status::failure("corrupted: header checksum mismatch (stored " +
                           hex32(getU32(d + kHCrc)) + ", computed " + hex32(headerCrc) + ")");
  if (!allZero(d + kHReserved, kHCrc - kHReserved))
    return Status::failure("header reserved bytes are not zero");
  uint32_t flags = getU32(d + kHFlags);
  if (flags & kRequiredFlagsMask & ~kKnownRequiredFlags)
    return Status::failure("the file needs features this lcc-run does not know (header flags " +
                           hex32(flags) + "); recompile the model with this lcc");

  uint64_t fileSize = getU64(d + kHFileSize);
  if (fileSize > n)
    return Status::failure("truncated: the header says " + std::to_string(fileSize) +
                           " bytes, the file has " + std::to_string(n));
  if (fileSize < n)
    return Status::failure("the header says " + std::to_string(fileSize) +
                           " bytes, but the file has " + std::to_string(n) +
                           " (data appended after the end?)");

  uint64_t count = getU64(d + kHCount), tableOffset = getU64(d + kHTableOffset);
  if (tableOffset < kTrainBinHeaderSize)
    return Status::failure("section table offset " + std::to_string(tableOffset) +
                           " overlaps the header");
  // Division instead of count * 96, which a hostile count could overflow.
  if (tableOffset > n || count > (n - tableOffset) / kTrainBinEntrySize)
    return Status::failure("section table (" + std::to_string(count) + " entries at offset " +
                           std::to_string(tableOffset) + ") runs past the end of the " +
                           std::to_string(n) + "-byte file");
  const uint8_t *table = d + tableOffset;
  uint64_t tableBytes = count * kTrainBinEntrySize;
  uint32_t tableCrc = crc32c(table, static_cast<size_t>(tableBytes));
  if (tableCrc != getU32(d + kHTableCrc))
    return Status::failure("corrupted: section table checksum mismatch (stored " +
                           hex32(getU32(d + kHTableCrc)) + ", computed " + hex32(tableCrc) + ")");

  std::vector<TrainBinSection> sections;
  sections.reserve(static_cast<size_t>(count));
  std::set<std::tuple<std::string, std::string, int32_t>> seen;
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t *e = table + i * kTrainBinEntrySize;
    std::string entry = "section table entry " + std::to_string(i);
    TrainBinSection s;
    if (const char *why = decodeLabel(e + kEName, s.name))
      return Status::failure(entry + ": bad name (" + why + ")");
    if (const char *why = decodeLabel(e + kETarget, s.target))
      return Status::failure(entry + " ('" + s.name + "'): bad target (" + why + ")");
    s.rank = toI32(getU32(e + kERank));
    s.offset = getU64(e + kEOffset);
    s.size = getU64(e + kESize);
    s.crc = getU32(e + kECrc);
    std::string what = "section " + describe(s.name, s.target, s.rank);
    if (s.rank < -1)
      return Status::failure(what + ": bad rank (must be -1 or >= 0)");
    if (!allZero(e + kEReserved, kTrainBinEntrySize - kEReserved))
      return Status::failure(what + ": reserved bytes are not zero");
    if (s.offset % kTrainBinAlignment != 0)
      return Status::failure(what + ": offset " + std::to_string(s.offset) +
                             " is not a multiple of 64");
    if (s.offset > n || s.size > n - s.offset)
      return Status::failure(what + " is out of bounds (offset " + std::to_string(s.offset) +
                             ", size " + std::to_string(s.size) + ", file " + std::to_string(n) +
                             " bytes)");
    if (!seen.emplace(s.name, s.target, s.rank).second)
      return Status::failure("duplicate section " + describe(s.name, s.target, s.rank));
    sections.push_back(std::move(s));
  }

  // Overlaps: sweep the regions by start, remembering the one reaching
  // furthest; a region starting before that end overlaps it. Empty sections
  // occupy nothing. Kinds order ties so the header and table are named first.
  struct Region {
    uint64_t begin, end;
    int kind;     // 0 header, 1 table, 2 section
    size_t index; // into sections
  };
  std::vector<Region> regions{{0, kTrainBinHeaderSize, 0, 0}};
  if (tableBytes)
    regions.push_back({tableOffset, tableOffset + tableBytes, 1, 0});
  for (size_t i = 0; i < sections.size(); ++i)
    if (sections[i].size)
      regions.push_back({sections[i].offset, sections[i].offset + sections[i].size, 2, i});
  std::sort(regions.begin(), regions.end(), [](const Region &a, const Region &b) {
    return std::tie(a.begin, a.kind, a.index) < std::tie(b.begin, b.kind, b.index);
  });
  auto regionName = [&](const Region &r) {
    if (r.kind == 0)
      return std::string("the header");
    if (r.kind == 1)
      return std::string("the section table");
    const TrainBinSection &s = sections[r.index];
    return describe(s.name, s.target, s.rank);
  };
  const Region *furthest = &regions[0];
  for (size_t k = 1; k < regions.size(); ++k) {
    const Region &r = regions[k];
    if (r.begin < furthest->end) {
      // At least one of the two is a section (the table starts at or after
      // the header's end); name it first.
      const Region &a = furthest->kind == 2 ? *furthest : r;
      const Region &b = furthest->kind == 2 ? r : *furthest;
      if (b.kind == 2)
        return Status::failure("sections " + regionName(a) + " and " + regionName(b) +
                               " overlap");
      return Status::failure("section " + regionName(a) + " overlaps " + regionName(b));
    }
    if (r.end > furthest->end)
      furthest = &r;
  }

  for (const TrainBinSection &s : sections) {
    uint32_t crc = crc32c(d + s.offset, static_cast<size_t>(s.size));
    if (crc != s.crc)
      return Status::failure("corrupted: section " + describe(s.name, s.target, s.rank) +
                             " checksum mismatch (stored " + hex32(s.crc) + ", computed " +
                             hex32(crc) + ")");
  }
  flags_ = flags;
  sections_ = std::move(sections);
  return {};
}

TrainBinBytes TrainBin::find(std::string_view name, std::string_view target,
                             int32_t rank) const {
  const TrainBinSection *best = nullptr;
  int bestScore = -1;
  for (const TrainBinSection &s : sections_) {
    if (s.name != name)
      continue;
    bool exactRank = s.rank == rank, exactTarget = s.target == target;
    if ((!exactRank && s.rank != -1) || (!exactTarget && s.target != "any"))
      continue;
    // Rank decides first, then target (the order documented in TrainBin.h).
    int score = (exactRank ? 2 : 0) + (exactTarget ? 1 : 0);
    if (score > bestScore) {
      best = &s;
      bestScore = score;
    }
  }
  return best ? bytes(*best) : TrainBinBytes{};
}

TrainBinBytes TrainBin::bytes(const TrainBinSection &section) const {
  return {base_ + section.offset, static_cast<size_t>(section.size)};
}

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

Status TrainBinWriter::addSection(std::string name, std::string target, int32_t rank,
                                  std::vector<uint8_t> bytes) {
  if (const char *why = labelProblem(name))
    return Status::failure(std::string("bad section name (") + why + ")");
  if (const char *why = labelProblem(target))
    return Status::failure("section '" + name + "': bad target (" + why + ")");
  if (rank < -1)
    return Status::failure("section " + describe(name, target, rank) +
                           ": bad rank (must be -1 or >= 0)");
  for (const Pending &p : sections_)
    if (p.name == name && p.target == target && p.rank == rank)
      return Status::failure("duplicate section " + describe(name, target, rank));
  sections_.push_back({std::move(name), std::move(target), rank, std::move(bytes)});
  return {};
}

Status TrainBinWriter::addSection(std::string name, std::string target, int32_t rank,
                                  const uint8_t *data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  return addSection(std::move(name), std::move(target), rank, std::move(bytes));
}

void TrainBinWriter::layout(std::vector<uint8_t> &head, std::vector<uint64_t> &offsets,
                            uint64_t &fileSize) const {
  // The table directly follows the header; payloads follow the table, each
  // at the next multiple of 64, in the order they were added.
  uint64_t tableOffset = kTrainBinHeaderSize;
  uint64_t tableEnd = tableOffset + sections_.size() * kTrainBinEntrySize;
  head.assign(static_cast<size_t>(tableEnd), 0);
  offsets.clear();
  uint64_t cursor = tableEnd;
  for (size_t i = 0; i < sections_.size(); ++i) {
    const Pending &p = sections_[i];
    uint64_t offset = alignUp(cursor);
    offsets.push_back(offset);
    cursor = offset + p.bytes.size();
    uint8_t *e = head.data() + tableOffset + i * kTrainBinEntrySize;
    std::memcpy(e + kEName, p.name.data(), p.name.size()); // zero-padded by assign()
    std::memcpy(e + kETarget, p.target.data(), p.target.size());
    putU64(e + kEOffset, offset);
    putU64(e + kESize, p.bytes.size());
    putU32(e + kERank, static_cast<uint32_t>(p.rank));
    putU32(e + kECrc, crc32c(p.bytes.data(), p.bytes.size()));
  }
  // The file ends where the last payload ends (offsets only grow).
  fileSize = cursor;
  uint8_t *h = head.data();
  std::memcpy(h, kMagic, sizeof kMagic);
  putU32(h + kHVersion, kTrainBinVersion);
  putU32(h + kHFlags, 0);
  putU64(h + kHCount, sections_.size());
  putU64(h + kHTableOffset, tableOffset);
  putU64(h + kHFileSize, fileSize);
  putU32(h + kHTableCrc, crc32c(h + tableOffset, static_cast<size_t>(tableEnd - tableOffset)));
  putU32(h + kHCrc, crc32c(h, kHCrc));
}

Status TrainBinWriter::serialize(std::vector<uint8_t> &out) const {
  std::vector<uint64_t> offsets;
  uint64_t fileSize = 0;
  layout(out, offsets, fileSize);
  out.reserve(static_cast<size_t>(fileSize));
  for (size_t i = 0; i < sections_.size(); ++i) {
    out.resize(static_cast<size_t>(offsets[i]), 0); // alignment padding
    out.insert(out.end(), sections_[i].bytes.begin(), sections_[i].bytes.end());
  }
  return {};
}

Status TrainBinWriter::write(const std::string &path) const {
  static const uint8_t kZeros[kTrainBinAlignment] = {};
  std::vector<uint8_t> head;
  std::vector<uint64_t> offsets;
  uint64_t fileSize = 0; // == the end of the last piece
  layout(head, offsets, fileSize);
  // Pieces point into the writer's own buffers: no second copy of the file.
  std::vector<FilePiece> pieces{{head.data(), head.size()}};
  uint64_t at = head.size();
  for (size_t i = 0; i < sections_.size(); ++i) {
    // Padding is always shorter than the alignment (see layout()).
    pieces.push_back({kZeros, static_cast<size_t>(offsets[i] - at)});
    pieces.push_back({sections_[i].bytes.data(), sections_[i].bytes.size()});
    at = offsets[i] + sections_[i].bytes.size();
  }
  return writeFileAtomically(path, pieces);
}

} // namespace lcc
