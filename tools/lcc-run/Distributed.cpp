//===- Distributed.cpp - lcc-run as one rank of a distributed job ---------===//
#include "Distributed.h"

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

/// Whether `manifest` was compiled for `world` ranks (the product of its
/// process groups); else a one-line error naming both sizes.
Status manifestWorldMatches(const json::Value &manifest, int64_t world) {
  int64_t compiled = 1;
  std::string sharding = "none";
  if (const json::Value *s = manifest.get("sharding"); s && s->isString())
    sharding = s->asString();
  if (const json::Value *groups = manifest.get("process_groups"); groups && groups->isArray())
    for (const json::Value &g : groups->items())
      if (const json::Value *size = g.get("size"); size && size->isInt())
        compiled *= size->asInt();
  if (compiled == world)
    return {};
  return Status::failure("this train.bin was compiled for " + std::to_string(compiled) + " rank" +
                         (compiled == 1 ? "" : "s") + " (lcc --shard=" + sharding + " --world=" +
                         std::to_string(compiled) + "), but the job has " + std::to_string(world) +
                         " (lcc-run -n / WORLD_SIZE); run it with -n " + std::to_string(compiled) +
                         " or recompile with --world=" + std::to_string(world));
}

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

Status joinJob(const json::Value &manifest, const std::string &backend, double timeoutSeconds,
               DistributedRun &out) {
  out = DistributedRun();
  std::vector<dist::GroupSpec> grid;
  if (const json::Value *groups = manifest.get("process_groups"); groups && groups->isArray())
    for (const json::Value &g : groups->items()) {
      const json::Value *name = g.get("name"), *size = g.get("size");
      if (!name || !name->isString() || !size || !size->isInt() || size->asInt() < 1)
        return Status::failure("the manifest's process_groups are malformed");
      grid.push_back({name->asString(), int(size->asInt())});
      out.groupSizes[name->asString()] = size->asInt();
      out.groups.push_back(name->asString());
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
  std::vector<std::unique_ptr<dist::Communicator>> comms;
  if (Status st = dist::splitGroups(*gWorld, grid, comms); !st)
    return Status::failure("rank " + std::to_string(env.rank) + ": " + st.message());
  for (size_t i = 0; i < comms.size(); ++i)
    out.groupRanks[grid[i].name] = comms[i]->rank();
  dist::installGroups(std::move(comms), out.groups);
  return {};
}

Status barrier(const DistributedRun &run) {
  if (!run.active() || !gWorld)
    return {};
  if (Status st = gWorld->barrier(); !st)
    return Status::failure("rank " + std::to_string(run.rank) + ": " + st.message());
  return {};
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
  if (run.rank == 0) {
    if (mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
      return Status::failure("cannot create checkpoint directory '" + dir +
                             "': " + std::strerror(errno));
    removeCheckpointDir(partial);
    if (mkdir(partial.c_str(), 0777) != 0)
      return Status::failure("cannot create '" + partial + "': " + std::strerror(errno));
  }
  if (Status st = barrier(run); !st)
    return st;
  std::map<std::string, std::string> m = meta;
  m["lcc.world"] = std::to_string(run.world);
  SafetensorsFile mine = trainer.snapshot(true, m, /*withWhole=*/run.rank == 0);
  if (Status st =
          writeSafetensors(partial + "/" + checkpointRankFileName(run.rank, run.world), mine);
      !st)
    return st;
  // Only a checkpoint every rank finished writing may become `latest`.
  if (Status st = barrier(run); !st)
    return st;
  if (run.rank != 0)
    return {};
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
}

} // namespace lcc::run
