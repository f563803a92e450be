//===- SafetensorsFuzz.cpp - libFuzzer target for safetensors/checkpoints -===//
//
// Any bytes, as a .safetensors file -> parseSafetensors (the header length,
// the header JSON, every tensor entry's dtype, shape and offsets; F16/BF16
// widened as for Hugging Face weights), then what lcc-run does with a
// checkpoint file: verifyChecksums (runtime/train/Checkpoint.h), and the
// sharded-checkpoint path (runtime/support/Sharding.h): the `lcc.shard.<name>`
// piece descriptions parsed and the pieces put together by assembleShards,
// for the file alone and for the rank files of a step directory made from it
// (the same file once per piece index its descriptions allow, at most 16).
// Must hold: an error Status or a valid result (a file written back reads
// back the same; a file given its checksums verifies; assembled tensors are
// whole), never a crash, a sanitizer report, a hang or an unbounded
// allocation. Seeds: test/fuzz/corpus/safetensors (make_seeds.py) and
// test/fixtures/torch/batch.safetensors.
//
//===----------------------------------------------------------------------===//
#include "test/fuzz/FuzzCheck.h"
#include "runtime/support/Safetensors.h"
#include "runtime/support/Sharding.h"
#include "runtime/train/Checkpoint.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace lcc;

namespace {

void check(bool ok, const char *what) { fuzz::check(ok, "SafetensorsFuzz", what); }

bool sameTensor(const HostTensor &a, const HostTensor &b) {
  return a.elementType() == b.elementType() && a.shape() == b.shape() &&
         a.byteSize() == b.byteSize() &&
         (a.byteSize() == 0 || std::memcmp(a.rawData(), b.rawData(), a.byteSize()) == 0);
}

bool sameFile(const SafetensorsFile &a, const SafetensorsFile &b) {
  if (a.metadata != b.metadata || a.tensors.size() != b.tensors.size())
    return false;
  for (auto ia = a.tensors.begin(), ib = b.tensors.begin(); ia != a.tensors.end(); ++ia, ++ib)
    if (ia->first != ib->first || !sameTensor(ia->second, ib->second))
      return false;
  return true;
}

/// "<parts>:<index>:<rest>" with its index replaced; false when the value
/// is not of that form (it is then left to assembleShards to refuse).
bool reindex(std::string &value, int64_t k, int64_t &parts) {
  size_t a = value.find(':'), b = a == std::string::npos ? a : value.find(':', a + 1);
  if (b == std::string::npos || a == 0 || a > 15 || value.find_first_not_of("0123456789") < a)
    return false;
  parts = std::strtoll(value.substr(0, a).c_str(), nullptr, 10);
  if (parts < 1)
    return false;
  value = value.substr(0, a + 1) + std::to_string(k % parts) + value.substr(b);
  return true;
}

/// Piece description `value` as rank file `k` of a step directory holds it:
/// piece k % parts of within-piece (k / parts) % within-parts.
std::string forRank(const std::string &value, int64_t k) {
  size_t bar = value.find('|');
  std::string outer = value.substr(0, bar);
  int64_t parts = 1, withinParts = 1;
  if (!reindex(outer, k, parts))
    return value;
  if (bar == std::string::npos)
    return outer;
  std::string inner = value.substr(bar + 1);
  if (!reindex(inner, k / parts, withinParts))
    return value;
  return outer + "|" + inner;
}

/// How many rank files one checkpoint of `file`'s pieces has: parts (times
/// within-parts) of its first piece description, at most 16.
int64_t rankFiles(const SafetensorsFile &file) {
  for (const auto &[key, value] : file.metadata) {
    if (key.rfind("lcc.shard.", 0) != 0)
      continue;
    std::string v = value;
    int64_t parts = 1, withinParts = 1;
    if (!reindex(v, 0, parts))
      return 1;
    if (size_t bar = value.find('|'); bar != std::string::npos) {
      std::string inner = value.substr(bar + 1);
      if (!reindex(inner, 0, withinParts))
        withinParts = 1;
    }
    return parts > 16 || withinParts > 16 ? 16 : std::min<int64_t>(parts * withinParts, 16);
  }
  return 1;
}

void assemble(const std::vector<SafetensorsFile> &files) {
  SafetensorsFile whole;
  if (!assembleShards(files, whole))
    return;
  for (const auto &[key, value] : whole.metadata)
    check(key.rfind("lcc.shard.", 0) != 0, "an assembled file keeps a piece description");
  for (const SafetensorsFile &f : files)
    for (const auto &[name, t] : f.tensors)
      check(whole.tensors.count(name) == 1, "a tensor is missing from the assembled file");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  SafetensorsFile half;
  (void)parseSafetensors(data, size, half, /*widenHalf=*/true);
  SafetensorsFile file;
  if (!parseSafetensors(data, size, file))
    return 0;

  // What the writer makes of it reads back the same.
  std::vector<uint8_t> bytes;
  if (serializeSafetensors(file, bytes)) {
    SafetensorsFile again;
    check(bool(parseSafetensors(bytes.data(), bytes.size(), again)),
          "a file written by serializeSafetensors does not parse");
    check(sameFile(file, again), "a file written back reads back different");
  }

  // Checksums: the file's own, then ones made for it.
  bool checked = false;
  (void)verifyChecksums(file, "fuzz.safetensors", checked);
  SafetensorsFile summed = file;
  addChecksums(summed);
  check(bool(verifyChecksums(summed, "fuzz.safetensors", checked)) && checked,
        "a file with fresh checksums does not verify");

  // One process's checkpoint, then a step directory's rank files.
  assemble({file});
  int64_t ranks = rankFiles(file);
  if (ranks > 1) {
    std::vector<SafetensorsFile> files(size_t(ranks), file);
    for (int64_t k = 0; k < ranks; ++k)
      for (auto &[key, value] : files[size_t(k)].metadata)
        if (key.rfind("lcc.shard.", 0) == 0)
          value = forRank(value, k);
    assemble(files);
  }
  return 0;
}
