//===- Distributed.cpp - lcc-run as one rank of a distributed job ---------===//
#include "Distributed.h"

#include "runtime/AtomicFile.h"
#include "runtime/Checkpoint.h"
#include "runtime/Sharding.h"
#include "runtime/TrainBin.h"
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

std::string stepDirName(int64_t step) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "step-%08lld.d", static_cast<long long>(step));
  return buf;
}

std::string rankFileName(int rank, int world) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "rank-%05d-of-%05d.safetensors", rank, world);
  return buf;
}

bool isStepDir(const std::string &n) { return n.rfind("step-", 0) == 0 && n.size() > 2 && n.compare(n.size() - 2, 2, ".d") == 0; }

bool removeTree(const std::string &dir) {
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..")
        unlink((dir + "/" + n).c_str());
    }
    closedir(d);
  }
  return rmdir(dir.c_str()) == 0;
}

} // namespace

bool checkWorld(const std::string &program, int64_t world, std::string &error) {
  TrainBin bin;
  if (TrainBinStatus st = TrainBin::open(program, bin); !st)
    return error = st.error, false;
  std::vector<int64_t> worlds = compiledWorlds(bin);
  if (!worlds.empty()) {
    if (std::find(worlds.begin(), worlds.end(), world) != worlds.end())
      return true;
    std::string list;
    for (int64_t w : worlds)
      list += (list.empty() ? "" : ", ") + std::to_string(w);
    return error = program + ": compiled for " + list + " ranks, not " + std::to_string(world) +
                   "; recompile with lcc --world=" + std::to_string(world),
           false;
  }
  TrainBinBytes text = bin.find("manifest", "any", -1);
  json::Value manifest;
  if (!text.found() ||
      !json::parse(std::string_view(reinterpret_cast<const char *>(text.data), text.size),
                   manifest, error))
    return true; // Program::load in the ranks reports a broken file
  int64_t compiled = 1;
  std::string sharding = "none";
  if (const json::Value *s = manifest.get("sharding"); s && s->isString())
    sharding = s->asString();
  if (const json::Value *groups = manifest.get("process_groups"); groups && groups->isArray())
    for (const json::Value &g : groups->items())
      if (const json::Value *size = g.get("size"); size && size->isInt())
        compiled *= size->asInt();
  if (compiled == world)
    return true;
  return error = "this train.bin was compiled for " + std::to_string(compiled) + " rank" +
                 (compiled == 1 ? "" : "s") + " (lcc --shard=" + sharding + " --world=" +
                 std::to_string(compiled) + "), but the job has " + std::to_string(world) +
                 " (lcc-run -n / WORLD_SIZE); run it with -n " + std::to_string(compiled) +
                 " or recompile with --world=" + std::to_string(world),
         false;
}

bool joinJob(const json::Value &manifest, const std::string &backend, double timeoutSeconds,
             DistributedRun &out, std::string &error) {
  out = DistributedRun();
  std::vector<dist::GroupSpec> grid;
  int64_t compiledWorld = 1;
  if (const json::Value *groups = manifest.get("process_groups"); groups && groups->isArray())
    for (const json::Value &g : groups->items()) {
      const json::Value *name = g.get("name"), *size = g.get("size");
      if (!name || !name->isString() || !size || !size->isInt() || size->asInt() < 1)
        return error = "the manifest's process_groups are malformed", false;
      grid.push_back({name->asString(), int(size->asInt())});
      out.groupSizes[name->asString()] = size->asInt();
      out.groups.push_back(name->asString());
      compiledWorld *= size->asInt();
    }
  dist::DistEnv env;
  if (dist::DistStatus st = dist::distEnvFromEnvironment(env); !st)
    return error = st.error, false;
  if (timeoutSeconds > 0) // --timeout wins over $LCC_DIST_TIMEOUT
    env.timeoutSeconds = timeoutSeconds;
  std::string sharding = "none";
  if (const json::Value *s = manifest.get("sharding"); s && s->isString())
    sharding = s->asString();
  if (env.worldSize != compiledWorld)
    return error = "this train.bin was compiled for " + std::to_string(compiledWorld) +
                   " rank" + (compiledWorld == 1 ? "" : "s") + " (lcc --shard=" + sharding +
                   " --world=" + std::to_string(compiledWorld) + "), but the job has " +
                   std::to_string(env.worldSize) + " (lcc-run -n / WORLD_SIZE); run it with -n " +
                   std::to_string(compiledWorld) + " or recompile with --world=" +
                   std::to_string(env.worldSize),
           false;
  out.rank = env.rank;
  out.world = env.worldSize;
  if (env.worldSize == 1)
    return true; // collectives of 1-rank groups copy; nothing to connect
  if (dist::DistStatus st = dist::createWorld(env, backend, gWorld); !st)
    return error = "rank " + std::to_string(env.rank) + ": " + st.error, false;
  std::vector<std::unique_ptr<dist::Communicator>> comms;
  if (dist::DistStatus st = dist::splitGroups(*gWorld, grid, comms); !st)
    return error = "rank " + std::to_string(env.rank) + ": " + st.error, false;
  for (size_t i = 0; i < comms.size(); ++i)
    out.groupRanks[grid[i].name] = comms[i]->rank();
  dist::installGroups(std::move(comms), out.groups);
  return true;
}

bool barrier(const DistributedRun &run, std::string &error) {
  if (!run.active() || !gWorld)
    return true;
  if (dist::DistStatus st = gWorld->barrier(); !st)
    return error = "rank " + std::to_string(run.rank) + ": " + st.error, false;
  return true;
}

bool wholeSnapshot(const DistributedRun &run, const Trainer &trainer, bool withState,
                   const std::map<std::string, std::string> &meta, SafetensorsFile &out,
                   std::string &error) {
  out = trainer.snapshot(withState, meta);
  for (auto it = out.metadata.begin(); it != out.metadata.end();)
    it = it->first.rfind("lcc.shard.", 0) == 0 ? out.metadata.erase(it) : std::next(it);
  for (auto &[name, t] : out.tensors) {
    const ShardSpec *spec = trainer.layout(name);
    if (!spec)
      continue;
    auto g = std::find(run.groups.begin(), run.groups.end(), spec->group);
    if (g == run.groups.end())
      return error = "'" + name + "' is partitioned over unknown group '" + spec->group + "'",
             false;
    int64_t per = shardElements(*spec);
    HostTensor all(t.elementType(), {per * spec->parts});
    lcc_all_gather(int64_t(g - run.groups.begin()), int64_t(t.elementType()),
                   int64_t(reinterpret_cast<intptr_t>(t.rawData())),
                   int64_t(reinterpret_cast<intptr_t>(all.rawData())), per);
    // The gathered buffer is the pieces in rank order; put them in place.
    std::vector<HostTensor> pieces;
    std::vector<const HostTensor *> order;
    size_t bytes = size_t(per) * elementSize(t.elementType());
    for (int64_t r = 0; r < spec->parts; ++r) {
      pieces.emplace_back(t.elementType(), shardShape(*spec));
      std::memcpy(pieces.back().rawData(), static_cast<uint8_t *>(all.rawData()) + size_t(r) * bytes,
                  bytes);
    }
    for (const HostTensor &p : pieces)
      order.push_back(&p);
    t = joinShards(*spec, t.elementType(), order);
  }
  return true;
}

bool saveShardedCheckpoint(const DistributedRun &run, const std::string &dir, int64_t step,
                           const Trainer &trainer, const std::map<std::string, std::string> &meta,
                           int64_t keep, std::string &error) {
  // Every rank writes into a fresh partial directory; only when all have
  // written does rank 0 move it into place, so a step directory is always
  // complete and never mixes files of two runs (of different world sizes).
  std::string stepDir = dir + "/" + stepDirName(step);
  std::string partial = dir + "/.partial-" + stepDirName(step);
  if (run.rank == 0) {
    if (mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
      return error = "cannot create checkpoint directory '" + dir + "': " + std::strerror(errno),
             false;
    removeTree(partial);
    if (mkdir(partial.c_str(), 0777) != 0)
      return error = "cannot create '" + partial + "': " + std::strerror(errno), false;
  }
  if (!barrier(run, error))
    return false;
  std::map<std::string, std::string> m = meta;
  m["lcc.world"] = std::to_string(run.world);
  SafetensorsFile mine = trainer.snapshot(true, m, /*withWhole=*/run.rank == 0);
  if (SafetensorsStatus st = writeSafetensors(partial + "/" + rankFileName(run.rank, run.world), mine);
      !st)
    return error = st.error, false;
  // Only a checkpoint every rank finished writing may become `latest`.
  if (!barrier(run, error))
    return false;
  if (run.rank != 0)
    return true;
  // An older directory of the same step (another run) goes out of the way
  // first; `latest` may name it until the new one is in place.
  std::string old = dir + "/.replaced-" + stepDirName(step);
  removeTree(old);
  if (rename(stepDir.c_str(), old.c_str()) != 0 && errno != ENOENT)
    return error = "cannot replace '" + stepDir + "': " + std::strerror(errno), false;
  if (rename(partial.c_str(), stepDir.c_str()) != 0)
    return error = "cannot commit '" + stepDir + "': " + std::strerror(errno), false;
  removeTree(old);
  std::string latest = stepDirName(step) + "\n";
  if (!writeFileAtomically(dir + "/latest", latest.data(), latest.size(), error))
    return false;
  std::vector<std::string> all;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d))
      if (isStepDir(e->d_name))
        all.push_back(e->d_name);
    closedir(d);
  }
  std::sort(all.begin(), all.end());
  for (size_t i = 0; i + size_t(std::max<int64_t>(keep, 1)) < all.size(); ++i)
    if (all[i] != stepDirName(step))
      removeTree(dir + "/" + all[i]);
  return true;
}

bool loadAnyCheckpoint(const std::string &given, SafetensorsFile &file, std::string &used,
                       std::string &error) {
  std::string path = given;
  while (path.size() > 1 && path.back() == '/')
    path.pop_back();
  std::string target = path;
  struct stat sb;
  if (stat(path.c_str(), &sb) == 0 && S_ISDIR(sb.st_mode) && !isStepDir(path.substr(path.find_last_of('/') + 1))) {
    // A checkpoint directory: `latest` names a file (1 rank) or a step directory.
    if (FILE *f = std::fopen((path + "/latest").c_str(), "r")) {
      char buf[256] = {0};
      size_t n = std::fread(buf, 1, sizeof buf - 1, f);
      std::fclose(f);
      std::string name(buf, n);
      while (!name.empty() && (name.back() == '\n' || name.back() == '\r'))
        name.pop_back();
      if (isStepDir(name) && name.find('/') == std::string::npos)
        target = path + "/" + name;
    }
  }
  if (stat(target.c_str(), &sb) != 0 || !S_ISDIR(sb.st_mode) ||
      !isStepDir(target.substr(target.find_last_of('/') + 1))) {
    // One file; written by a 1-rank run it may still hold pieces (a ZeRO
    // train.bin's 1-rank variant): put them together.
    SafetensorsFile one;
    if (!loadCheckpoint(path, one, used, error))
      return false;
    return assembleShards({one}, file, error) || (error = used + ": " + error, false);
  }
  used = target;
  std::vector<std::string> names;
  if (DIR *d = opendir(target.c_str())) {
    while (dirent *e = readdir(d)) {
      std::string n = e->d_name;
      if (n.rfind("rank-", 0) == 0 && n.size() > 12 && n.compare(n.size() - 12, 12, ".safetensors") == 0)
        names.push_back(n);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  if (names.empty())
    return error = target + ": no rank files in this checkpoint", false;
  // Every file of one checkpoint says the same world size, and all are there.
  std::string world = names.front().substr(names.front().find("-of-"));
  for (const std::string &n : names)
    if (n.substr(n.find("-of-")) != world)
      return error = target + ": files of different world sizes (" + names.front() + ", " + n +
                     ")", false;
  int64_t expected = std::strtoll(world.c_str() + 4, nullptr, 10);
  if (int64_t(names.size()) != expected)
    return error = target + ": has " + std::to_string(names.size()) + " rank files, expected " +
                   std::to_string(expected) + " (a rank's file is missing)", false;
  std::vector<SafetensorsFile> files(names.size());
  for (size_t i = 0; i < names.size(); ++i)
    if (SafetensorsStatus st = readSafetensors(target + "/" + names[i], files[i]); !st)
      return error = st.error, false;
  if (!assembleShards(files, file, error))
    return error = target + ": " + error, false;
  return true;
}

} // namespace lcc::run
