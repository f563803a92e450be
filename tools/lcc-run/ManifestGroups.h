//===- ManifestGroups.h - a train.bin manifest's process groups -*- C++ -*-===//
//
// A train.bin compiled with `lcc --shard=MODE --world=N` lists the process
// groups its code communicates over in its manifest ("process_groups",
// docs/train-bin.md): the axes of a grid whose sizes multiply to N, and
// groups made of some ranks of one axis (`of`, `members`: pp_ends). Reading
// them needs no compiled code and no communicator (Distributed.cpp joins the
// job with them; test/fuzz/TrainBinFuzz.cpp feeds them hostile manifests).
//
//===----------------------------------------------------------------------===//
#ifndef LCC_TOOLS_LCC_RUN_MANIFESTGROUPS_H
#define LCC_TOOLS_LCC_RUN_MANIFESTGROUPS_H

#include "runtime/dist/Communicator.h"
#include "runtime/support/Json.h"
#include "runtime/support/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lcc::run {

/// The manifest's process groups: the grid's axes, and the groups made of
/// some ranks of one axis, in manifest order.
struct ManifestGroups {
  std::vector<dist::GroupSpec> grid;
  struct Entry {
    std::string name;
    int64_t size = 1;
    std::string of; // empty for an axis of the grid
    std::vector<int> members;
  };
  std::vector<Entry> entries;
};

/// The manifest's process groups (none when it lists none); an error when
/// they are malformed (a size below 1 or above 2^31 - 1, ...).
Status readGroups(const json::Value &manifest, ManifestGroups &out);

/// Whether `manifest` was compiled for `world` ranks (the product of its
/// process groups); else a one-line error naming both sizes.
Status manifestWorldMatches(const json::Value &manifest, int64_t world);

/// The pipeline stage of world rank `rank` (its place in the "pp" axis of
/// `groups`, whose sizes must multiply to the world size: manifestWorldMatches);
/// false when the grid has no "pp" axis.
bool pipelineStageOf(const ManifestGroups &groups, int64_t rank, int64_t &stage);

} // namespace lcc::run

#endif // LCC_TOOLS_LCC_RUN_MANIFESTGROUPS_H
