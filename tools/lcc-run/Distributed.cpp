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
      out.groups.push_back(name->asString());
      compiledWorld *= size->asInt();
    }
  dist::DistEnv env;
  if (dist::DistStatus st = dist::distEnvFromEnvironment(env); !st)
    return error = st.error, false;
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
    HostTensor whole(t.elementType(), spec->shape);
    std::memcpy(whole.rawData(), all.rawData(), whole.byteSize());
    t = std::move(whole);
  }
  return true;
}

bool saveShardedCheckpoint(const DistributedRun &run, const std::string &dir, int64_t step,
                           const Trainer &trainer, const std::map<std::string, std::string> &meta,
                           int64_t keep, std::string &error) {
  std::string stepDir = dir + "/" + stepDirName(step);
  for (const std::string &d : {dir, stepDir})
    if (mkdir(d.c_str(), 0777) != 0 && errno != EEXIST)
      return error = "cannot create checkpoint directory '" + d + "': " + std::strerror(errno),
             false;
  std::map<std::string, std::string> m = meta;
  m["lcc.world"] = std::to_string(run.world);
  SafetensorsFile mine = trainer.snapshot(true, m, /*withWhole=*/run.rank == 0);
  if (SafetensorsStatus st = writeSafetensors(stepDir + "/" + rankFileName(run.rank, run.world), mine);
      !st)
    return error = st.error, false;
  // Only a checkpoint every rank finished writing may become `latest`.
  if (!barrier(run, error))
    return false;
  if (run.rank != 0)
    return true;
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

bool loadAnyCheckpoint(const std::string &path, SafetensorsFile &file, std::string &used,
                       std::string &error) {
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
      !isStepDir(target.substr(target.find_last_of('/') + 1)))
    return loadCheckpoint(path, file, used, error);
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
  std::vector<SafetensorsFile> files(names.size());
  for (size_t i = 0; i < names.size(); ++i)
    if (SafetensorsStatus st = readSafetensors(target + "/" + names[i], files[i]); !st)
      return error = st.error, false;
  if (!assembleShards(files, file, error))
    return error = target + ": " + error, false;
  return true;
}

} // namespace lcc::run
