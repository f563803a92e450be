//===- Distributed.cpp - lcc-run as one rank of a distributed job ---------===//
#include "Distributed.h"
#include "ManifestGroups.h"

#include "runtime/support/AtomicFile.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/support/Sharding.h"
#include "runtime/support/TrainBin.h"
#include "runtime/dist/Collectives.h"
#include "runtime/dist/Communicator.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

namespace lcc::run {

namespace {

// The world communicator outlives main's locals: the groups the compiled code
// uses were split from it.
std::unique_ptr<dist::Communicator> gWorld;

} // namespace

Status checkWorld(const std::string &program, int64_t world) {
  TrainBin bin;
  if (Status st = TrainBin::open(program, bin); !st)
    return st;
  std::vector<int64_t> worlds = compiledWorlds(bin);
  if (!worlds.empty()) {
    if (std::find(worlds.begin(), worlds.end(), world) != worlds.end())
      return {};
    std::string list;
    for (int64_t w : worlds)
      list += (list.empty() ? "" : ", ") + std::to_string(w);
    return Status::failure(program + ": compiled for " + list + " ranks, not " +
                           std::to_string(world) +
                           "; recompile with lcc --world=" + std::to_string(world));
  }
  TrainBinBytes text = bin.find("manifest", "any", -1);
  json::Value manifest;
  if (!text.found() ||
      !json::parse(std::string_view(reinterpret_cast<const char *>(text.data), text.size),
                   manifest))
    return {}; // Program::load in the ranks reports a broken file
  return manifestWorldMatches(manifest, world);
}

Status pipelineStage(const std::string &program, int64_t world, int64_t rank, int64_t &stage) {
  stage = -1;
  TrainBin bin;
  if (Status st = TrainBin::open(program, bin); !st || compiledStages(bin, world) == 0)
    return {}; // Program::load reports a broken file
  TrainBinBytes text = bin.find("manifest.w" + std::to_string(world) + ".s0", "any", -1);
  json::Value manifest;
  ManifestGroups groups;
  if (!text.found() ||
      !json::parse(std::string_view(reinterpret_cast<const char *>(text.data), text.size),
                   manifest) ||
      !readGroups(manifest, groups))
    return {};
  // The grid is laid out over the job's ranks only when it is this job's.
  if (Status st = manifestWorldMatches(manifest, world); !st)
    return Status::failure(program + ": " + st.message());
  if (pipelineStageOf(groups, rank, stage))
    return {};
  return Status::failure(program + ": pipeline stages without a 'pp' process group");
}

Status joinJob(const json::Value &manifest, const std::string &backend, double timeoutSeconds,
               DistributedRun &out) {
  out = DistributedRun();
  ManifestGroups groups;
  if (Status st = readGroups(manifest, groups); !st)
    return st;
  for (const ManifestGroups::Entry &e : groups.entries) {
    out.groupSizes[e.name] = e.size;
    out.groups.push_back(e.name);
  }
  dist::DistEnv env;
  if (Status st = dist::distEnvFromEnvironment(env); !st)
    return st;
  if (timeoutSeconds > 0) // --timeout wins over $LCC_DIST_TIMEOUT
    env.timeoutSeconds = timeoutSeconds;
  if (Status st = manifestWorldMatches(manifest, env.worldSize); !st)
    return st;
  out.rank = env.rank;
  out.world = env.worldSize;
  out.timeoutSeconds = env.timeoutSeconds;
  if (env.worldSize == 1)
    return {}; // collectives of 1-rank groups copy; nothing to connect
  if (Status st = dist::createWorld(env, backend, gWorld); !st)
    return Status::failure("rank " + std::to_string(env.rank) + ": " + st.message());
  std::vector<std::unique_ptr<dist::Communicator>> axes;
  if (Status st = dist::splitGroups(*gWorld, groups.grid, axes); !st)
    return Status::failure("rank " + std::to_string(env.rank) + ": " + st.message());
  // Each entry's communicator, in the manifest's order (the compiled code's
  // group numbers). A rank outside a group of some ranks gets a stand-in it
  // never uses (its program has no collective on that group).
  std::vector<std::unique_ptr<dist::Communicator>> comms;
  for (const ManifestGroups::Entry &e : groups.entries) {
    if (e.of.empty()) {
      size_t axis = 0;
      while (groups.grid[axis].name != e.name)
        ++axis;
      out.groupRanks[e.name] = axes[axis]->rank();
      comms.push_back(std::move(axes[axis]));
      continue;
    }
    size_t axis = 0;
    while (axis < groups.grid.size() && groups.grid[axis].name != e.of)
      ++axis;
    if (axis == groups.grid.size())
      return Status::failure("process group '" + e.name + "' is part of unknown group '" + e.of +
                             "'");
    std::vector<int> parent = dist::gridGroupMembers(groups.grid, axis, env.rank);
    int mine = int(std::find(parent.begin(), parent.end(), env.rank) - parent.begin());
    auto at = std::find(e.members.begin(), e.members.end(), mine);
    if (at == e.members.end()) {
      comms.push_back(dist::makeLocalCommunicator(e.name + " (not a member)", env.rank));
      continue;
    }
    // Made from the world: its ranks call subgroup, the others do not.
    std::vector<int> members;
    for (int m : e.members)
      members.push_back(m >= 0 && m < int(parent.size()) ? parent[size_t(m)] : -1);
    std::unique_ptr<dist::Communicator> group;
    if (Status st =
            gWorld->subgroup(e.name, members, e.name + "/" + std::to_string(members[0]), group);
        !st)
      return Status::failure("rank " + std::to_string(env.rank) + ": " + st.message());
    out.groupRanks[e.name] = group->rank();
    comms.push_back(std::move(group));
  }
  dist::installGroups(std::move(comms), out.groups);
  return {};
}

Status agree(const DistributedRun &run, std::vector<int32_t> &flags) {
  if (!run.active() || !gWorld || flags.empty())
    return {};
  std::vector<int32_t> all(flags.size());
  if (Status st = gWorld->allReduce(flags.data(), all.data(), int64_t(flags.size()),
                                    ElementType::I32, dist::Reduction::Max);
      !st)
    return Status::failure("rank " + std::to_string(run.rank) + ": " + st.message());
  flags = all;
  return {};
}

Status agreeOk(const DistributedRun &run, Status mine) {
  // The largest failing rank + 1 (0: none failed).
  std::vector<int32_t> failed = {mine ? 0 : run.rank + 1};
  if (Status st = agree(run, failed); !st)
    return mine ? st : mine;
  if (!mine || failed[0] == 0)
    return mine;
  return Status::failure("rank " + std::to_string(failed[0] - 1) +
                         " failed (its error is in its output)");
}

Status wholeSnapshot(const DistributedRun &run, const Trainer &trainer, bool withState,
                     const std::map<std::string, std::string> &meta, SafetensorsFile &out) {
  out = trainer.snapshot(withState, meta);
  for (auto it = out.metadata.begin(); it != out.metadata.end();)
    it = it->first.rfind("lcc.shard.", 0) == 0 ? out.metadata.erase(it) : std::next(it);
  // Gathers a piece of `spec` from every rank of its group and joins them.
  auto gather = [&](const std::string &name, const ShardSpec &spec, HostTensor &t) -> Status {
    auto g = std::find(run.groups.begin(), run.groups.end(), spec.group);
    if (g == run.groups.end())
      return Status::failure("'" + name + "' is partitioned over unknown group '" + spec.group +
                             "'");
    int64_t per = shardElements(spec);
    HostTensor all(t.elementType(), {per * spec.parts});
    lcc_all_gather(int64_t(g - run.groups.begin()), int64_t(t.elementType()),
                   int64_t(reinterpret_cast<intptr_t>(t.rawData())),
                   int64_t(reinterpret_cast<intptr_t>(all.rawData())), per);
    // The gathered buffer is the pieces in rank order; put them in place.
    std::vector<HostTensor> pieces;
    std::vector<const HostTensor *> order;
    size_t bytes = size_t(per) * elementSize(t.elementType());
    for (int64_t r = 0; r < spec.parts; ++r) {
      pieces.emplace_back(t.elementType(), shardShape(spec));
      std::memcpy(pieces.back().rawData(), static_cast<uint8_t *>(all.rawData()) + size_t(r) * bytes,
                  bytes);
    }
    for (const HostTensor &p : pieces)
      order.push_back(&p);
    t = joinShards(spec, t.elementType(), order);
    return {};
  };
  for (auto &[name, t] : out.tensors) {
    const ShardSpec *spec = trainer.layout(name);
    if (!spec)
      continue;
    // ZeRO's part of a tensor-parallel piece: the piece first, then the whole.
    if (Status st = gather(name, *spec, t); !st)
      return st;
    if (spec->within)
      if (Status st = gather(name, *spec->within, t); !st)
        return st;
  }
  return gatherStages(run, out);
}

Status gatherStages(const DistributedRun &run, SafetensorsFile &whole) {
  auto pp = std::find(run.groups.begin(), run.groups.end(), "pp");
  if (pp == run.groups.end() || run.groupSizes.at("pp") < 1)
    return {};
  int64_t group = int64_t(pp - run.groups.begin()), stages = run.groupSizes.at("pp");
  std::vector<uint8_t> mine;
  if (Status st = serializeSafetensors(whole, mine); !st)
    return st;
  // Sizes first, then every stage's file padded to the largest (in i32s).
  std::vector<int64_t> sizes(size_t(stages), 0);
  int64_t size = int64_t(mine.size());
  auto address = [](const void *p) { return int64_t(reinterpret_cast<intptr_t>(p)); };
  lcc_all_gather(group, int64_t(ElementType::I64), address(&size), address(sizes.data()), 1);
  int64_t words = (*std::max_element(sizes.begin(), sizes.end()) + 3) / 4;
  mine.resize(size_t(words) * 4);
  std::vector<uint8_t> all(size_t(words * 4 * stages));
  lcc_all_gather(group, int64_t(ElementType::I32), address(mine.data()), address(all.data()),
                 words);
  for (int64_t k = 0; k < stages; ++k) {
    SafetensorsFile theirs;
    if (Status st = parseSafetensors(all.data() + k * words * 4, size_t(sizes[size_t(k)]), theirs);
        !st)
      return Status::failure("stage " + std::to_string(k) + "'s tensors: " + st.message());
    for (auto &[name, t] : theirs.tensors)
      whole.tensors.emplace(name, std::move(t)); // a tied parameter: the first stage's
  }
  return {};
}

Status saveShardedCheckpoint(const DistributedRun &run, const std::string &dir, int64_t step,
                             const Trainer &trainer, const std::map<std::string, std::string> &meta,
                             int64_t keep) {
  // Every rank writes into a fresh partial directory; only when all have
  // written does rank 0 move it into place, so a step directory is always
  // complete and never mixes files of two runs (of different world sizes).
  std::string name = checkpointStepDirName(step);
  std::string stepDir = dir + "/" + name, partial = dir + "/.partial-" + name;
  Status made;
  if (run.rank == 0) {
    if (mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
      made = Status::failure("cannot create checkpoint directory '" + dir +
                             "': " + std::strerror(errno));
    removeCheckpointDir(partial);
    if (made && mkdir(partial.c_str(), 0777) != 0)
      made = Status::failure("cannot create '" + partial + "': " + std::strerror(errno));
  }
  if (Status st = agreeOk(run, made); !st)
    return st;
  std::map<std::string, std::string> m = meta;
  m["lcc.world"] = std::to_string(run.world);
  // Whole tensors from one rank of each pipeline stage (the first of its
  // data- and tensor-parallel groups), as they are the same on all of them.
  bool first = std::all_of(run.groupRanks.begin(), run.groupRanks.end(), [](const auto &g) {
    // (pp, and its groups of some ranks: pp_ends, pp_tied_...)
    return g.first == "pp" || g.first.rfind("pp_", 0) == 0 || g.second == 0;
  });
  SafetensorsFile mine = trainer.snapshot(true, m, /*withWhole=*/first);
  addChecksums(mine);
  // Only a checkpoint every rank finished writing may become `latest`.
  Status wrote =
      writeSafetensors(partial + "/" + checkpointRankFileName(run.rank, run.world), mine);
  if (Status st = agreeOk(run, wrote); !st) {
    if (run.rank == 0)
      removeCheckpointDir(partial);
    return st;
  }
  // Rank 0 commits; the others learn whether it could.
  auto commit = [&]() -> Status {
    // An older directory of the same step (another run) goes out of the way
    // first; `latest` may name it until the new one is in place.
    std::string old = dir + "/.replaced-" + name;
    removeCheckpointDir(old);
    if (rename(stepDir.c_str(), old.c_str()) != 0 && errno != ENOENT)
      return Status::failure("cannot replace '" + stepDir + "': " + std::strerror(errno));
    if (rename(partial.c_str(), stepDir.c_str()) != 0)
      return Status::failure("cannot commit '" + stepDir + "': " + std::strerror(errno));
    removeCheckpointDir(old);
    return commitCheckpoint(dir, name, keep);
  };
  return agreeOk(run, run.rank == 0 ? commit() : Status());
}

} // namespace lcc::run
