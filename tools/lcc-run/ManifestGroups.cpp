//===- ManifestGroups.cpp - a train.bin manifest's process groups ---------===//
#include "tools/lcc-run/ManifestGroups.h"

#include <algorithm>
#include <climits>

namespace lcc::run {

Status readGroups(const json::Value &manifest, ManifestGroups &out) {
  out = ManifestGroups();
  const json::Value *groups = manifest.get("process_groups");
  if (!groups || !groups->isArray())
    return {};
  for (const json::Value &g : groups->items()) {
    const json::Value *name = g.get("name"), *size = g.get("size"), *of = g.get("of"),
                      *members = g.get("members");
    // (A size is a rank count, an int: a larger one would wrap when laid out.)
    if (!name || !name->isString() || !size || !size->isInt() || size->asInt() < 1 ||
        size->asInt() > INT_MAX || (of && (!of->isString() || !members || !members->isArray())))
      return Status::failure("the manifest's process_groups are malformed");
    ManifestGroups::Entry e{name->asString(), size->asInt(), of ? of->asString() : "", {}};
    if (of)
      for (const json::Value &m : members->items())
        e.members.push_back(m.isInt() ? int(m.asInt()) : -1);
    else
      out.grid.push_back({e.name, int(e.size)});
    out.entries.push_back(std::move(e));
  }
  return {};
}

Status manifestWorldMatches(const json::Value &manifest, int64_t world) {
  int64_t compiled = 1;
  std::string sharding = "none";
  if (const json::Value *s = manifest.get("sharding"); s && s->isString())
    sharding = s->asString();
  ManifestGroups groups;
  if (Status st = readGroups(manifest, groups); !st)
    return st;
  for (const dist::GroupSpec &axis : groups.grid)
    if (__builtin_mul_overflow(compiled, int64_t(axis.size), &compiled) || compiled > INT_MAX)
      return Status::failure("the manifest's process_groups are malformed (more than 2^31 - 1 "
                             "ranks)");
  if (compiled == world)
    return {};
  return Status::failure("this train.bin was compiled for " + std::to_string(compiled) + " rank" +
                         (compiled == 1 ? "" : "s") + " (lcc --shard=" + sharding + " --world=" +
                         std::to_string(compiled) + "), but the job has " + std::to_string(world) +
                         " (lcc-run -n / WORLD_SIZE); run it with -n " + std::to_string(compiled) +
                         " or recompile with --world=" + std::to_string(world));
}

bool pipelineStageOf(const ManifestGroups &groups, int64_t rank, int64_t &stage) {
  for (size_t axis = 0; axis < groups.grid.size(); ++axis)
    if (groups.grid[axis].name == "pp") {
      std::vector<int> members = dist::gridGroupMembers(groups.grid, axis, int(rank));
      stage = std::find(members.begin(), members.end(), int(rank)) - members.begin();
      return true;
    }
  return false;
}

} // namespace lcc::run
