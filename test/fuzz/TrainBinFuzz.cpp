//===- TrainBinFuzz.cpp - libFuzzer target for train.bin and its manifest -===//
//
// Any bytes, as a train.bin -> TrainBin::parse (the container: header,
// section table, labels, bounds, overlaps, checksums), and for what parses,
// what the runtime reads of it before it runs any code: for every world size
// and pipeline stage the file has a variant for, Program::loadManifest (the
// manifest JSON, its format and version, every function's slots and their
// shard layouts, the initial parameters of section params as safetensors,
// a CUDA program's kernel list); and for every manifest section the memory
// plan report (lcc --plan, lcc-run) and the process groups (lcc-run's
// readGroups, the world check, each rank's pipeline stage). No code from the
// file is loaded or run (no dlopen). Must hold: an error Status or a valid
// result (a slot's shard describes its own shape, a stage lies in the grid),
// never a crash, a sanitizer report, a hang or an unbounded allocation.
//
// Mutated files almost never keep their checksums, so each input is also
// parsed once more with every CRC-32C recomputed (when that changes it): the
// checks after the checksums, and the manifests, see mutated bytes too.
// Seeds: test/fuzz/corpus/trainbin (test/fuzz/corpus/make_seeds.py).
//
//===----------------------------------------------------------------------===//
#include "test/fuzz/FuzzCheck.h"
#include "runtime/cpu/CpuProgram.h"
#include "runtime/support/Crc32c.h"
#include "runtime/support/Json.h"
#include "runtime/support/TrainBin.h"
#include "tools/lcc-run/ManifestGroups.h"

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

void check(bool ok, const char *what) { fuzz::check(ok, "TrainBinFuzz", what); }

uint64_t le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int k = 7; k >= 0; --k)
    v = v << 8 | p[k];
  return v;
}

void put32(uint8_t *p, uint32_t v) {
  for (int k = 0; k < 4; ++k)
    p[k] = uint8_t(v >> (8 * k));
}

void put64(uint8_t *p, uint64_t v) {
  for (int k = 0; k < 8; ++k)
    p[k] = uint8_t(v >> (8 * k));
}

/// `file` with its size field and every checksum it has room for made right
/// (docs/train-bin.md): payloads, the table, then the header.
std::vector<uint8_t> withChecksums(std::vector<uint8_t> file) {
  const size_t size = file.size();
  if (size < kTrainBinHeaderSize || std::memcmp(file.data(), "LCCTRAIN", 8) != 0)
    return file;
  uint8_t *b = file.data();
  put64(b + 32, size);
  uint64_t count = le64(b + 16), table = le64(b + 24);
  if (table <= size && count <= (size - table) / kTrainBinEntrySize) {
    for (uint64_t i = 0; i < count; ++i) {
      uint8_t *e = b + table + i * kTrainBinEntrySize;
      uint64_t offset = le64(e + 64), bytes = le64(e + 72);
      if (offset <= size && bytes <= size - offset)
        put32(e + 84, crc32c(b + offset, bytes));
    }
    put32(b + 40, crc32c(b + table, count * kTrainBinEntrySize));
  }
  put32(b + 60, crc32c(b, 60));
  return file;
}

/// What lcc-run reads of one manifest besides the slots: the memory plan and
/// the process groups.
void readManifestJson(const json::Value &manifest) {
  MemoryPlanLines lines;
  if (memoryPlanLines(manifest, lines))
    check(!memoryPlanReport(manifest).empty() && memoryPlanBytes(manifest) == lines.total,
          "the memory plan's report and total disagree with its lines");
  run::ManifestGroups groups;
  if (!run::readGroups(manifest, groups))
    return;
  for (int64_t world = 1; world <= 16; ++world) {
    if (!run::manifestWorldMatches(manifest, world))
      continue;
    for (int64_t rank = 0; rank < world; ++rank) {
      int64_t stage = -1;
      if (!run::pipelineStageOf(groups, rank, stage))
        break;
      int64_t stages = 0;
      for (const dist::GroupSpec &axis : groups.grid)
        if (axis.name == "pp")
          stages = axis.size;
      check(stage >= 0 && stage < stages, "a rank's pipeline stage is outside the pp group");
    }
  }
}

/// A loaded manifest's slots: each describes a buffer the runtime can size.
void checkProgram(const Program &program) {
  for (const char *name : {"init", "forward", "train_step", "prefill", "decode_step"}) {
    const EntryPoint *e = program.entry(name);
    if (!e)
      continue;
    check(e->fn == nullptr, "loadManifest loaded code");
    for (const Slot &slot : e->slots) {
      (void)slot.bytes();
      if (slot.shard.sharded())
        check(shardShape(slot.shard) == slot.shape, "a slot's shard is not its shape");
    }
  }
  check(program.target().empty(), "loadManifest picked a code target");
}

void readFile(const uint8_t *data, size_t size) {
  TrainBin bin;
  if (!TrainBin::parse(data, size, bin))
    return;
  check(bin.fileSize() == size, "the parsed file has another size");
  for (const TrainBinSection &s : bin.sections()) {
    TrainBinBytes bytes = bin.bytes(s);
    check(bytes.found() && s.offset + s.size <= size, "a section lies outside the file");
    check(bin.find(s.name, s.target, s.rank).data == bytes.data,
          "find does not return a section by its exact key");
    if (s.name.rfind("manifest", 0) != 0)
      continue;
    json::Value manifest;
    if (json::parse(std::string_view(reinterpret_cast<const char *>(bytes.data), bytes.size),
                    manifest))
      readManifestJson(manifest);
  }
  // Every variant Program::load could be asked for, and some it could not.
  std::vector<int64_t> worlds = compiledWorlds(bin);
  if (worlds.empty() || worlds.size() > 8)
    worlds = {1, 2};
  for (int64_t world : worlds) {
    int64_t stages = std::min<int64_t>(compiledStages(bin, world), 8);
    for (int64_t stage = -1; stage <= stages; ++stage) {
      Program program;
      if (Program::loadManifest(bin, "fuzz.bin", program, world, stage))
        checkProgram(program);
    }
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  readFile(data, size);
  std::vector<uint8_t> fixed = withChecksums(std::vector<uint8_t>(data, data + size));
  if (fixed.size() >= kTrainBinHeaderSize && std::memcmp(fixed.data(), data, size) != 0)
    readFile(fixed.data(), fixed.size());
  return 0;
}
