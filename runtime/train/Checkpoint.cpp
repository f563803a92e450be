//===- Checkpoint.cpp - checkpoint directories of lcc-run -----------------===//
#include "runtime/train/Checkpoint.h"

#include "runtime/support/AtomicFile.h"
#include "runtime/support/Crc32c.h"
#include "runtime/support/Sharding.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace lcc {

std::string checkpointFileName(int64_t step) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "step-%08lld.safetensors", static_cast<long long>(step));
  return buf;
}

std::string checkpointStepDirName(int64_t step) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "step-%08lld.d", static_cast<long long>(step));
  return buf;
}

std::string checkpointRankFileName(int rank, int world) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "rank-%05d-of-%05d.safetensors", rank, world);
  return buf;
}

static bool endsWith(const std::string &s, const char *suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

static bool isCheckpointName(const std::string &n) {
  return n.rfind("step-", 0) == 0 && n.size() > 17 && endsWith(n, ".safetensors");
}

static bool isStepDirName(const std::string &n) {
  return n.rfind("step-", 0) == 0 && n.size() > 7 && endsWith(n, ".d");
}

static std::string baseName(const std::string &path) {
  return path.substr(path.find_last_of('/') + 1);
}

/// Names in `dir` for which `keep` is true, sorted.
template <typename Pred>
static std::vector<std::string> listDir(const std::string &dir, Pred keep) {
  std::vector<std::string> names;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d))
      if (keep(std::string(e->d_name)))
        names.push_back(e->d_name);
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

void removeCheckpointDir(const std::string &dir) {
  for (const std::string &n : listDir(dir, [](const std::string &n) {
         return n != "." && n != "..";
       }))
    unlink((dir + "/" + n).c_str());
  rmdir(dir.c_str());
}

Status commitCheckpoint(const std::string &dir, const std::string &name, int64_t keep) {
  std::string latest = name + "\n";
  if (Status st = writeFileAtomically(dir + "/latest", latest.data(), latest.size()); !st)
    return st;
  // Zero-padded steps sort numerically; files and step directories of the
  // same step sort together, so the newest `keep` of either layout stay.
  std::vector<std::string> all = listDir(dir, [](const std::string &n) {
    return isCheckpointName(n) || isStepDirName(n);
  });
  for (size_t i = 0; i + size_t(std::max<int64_t>(keep, 1)) < all.size(); ++i) {
    if (all[i] == name)
      continue;
    if (isStepDirName(all[i]))
      removeCheckpointDir(dir + "/" + all[i]);
    else
      unlink((dir + "/" + all[i]).c_str());
  }
  return {};
}

// Per tensor "lcc.crc32c.<name>"; "lcc.crc32c" covers the other metadata
// (step, data seed and order), so that a flipped bit anywhere in the file
// is found: in the data, a name, a sum, or the metadata.
static const char kCrcKey[] = "lcc.crc32c.", kMetadataCrcKey[] = "lcc.crc32c";

static std::string hex8(uint32_t crc) {
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", crc);
  return hex;
}

/// The CRC-32C of the metadata entries that are not sums, "key=value\n" in
/// key order.
static std::string metadataCrc(const SafetensorsFile &file) {
  uint32_t crc = 0;
  for (const auto &[key, value] : file.metadata) {
    if (key.rfind(kMetadataCrcKey, 0) == 0)
      continue;
    std::string line = key + "=" + value + "\n";
    crc = crc32c(line.data(), line.size(), crc);
  }
  return hex8(crc);
}

static std::string tensorCrc(const HostTensor &t) {
  return hex8(crc32c(t.rawData(), t.byteSize()));
}

void addChecksums(SafetensorsFile &file) {
  for (const auto &[name, t] : file.tensors)
    file.metadata[kCrcKey + name] = tensorCrc(t);
  file.metadata[kMetadataCrcKey] = metadataCrc(file);
}

Status verifyChecksums(const SafetensorsFile &file, const std::string &path, bool &checked) {
  checked = false;
  for (const auto &[key, value] : file.metadata)
    checked |= key.rfind(kMetadataCrcKey, 0) == 0;
  if (!checked)
    return {};
  auto sum = file.metadata.find(kMetadataCrcKey);
  if (sum == file.metadata.end() || sum->second != metadataCrc(file))
    return Status::failure(path + ": its metadata (step, data seed, ...) is corrupt or altered: "
                                  "their CRC-32C does not match the one recorded");
  for (const auto &[name, t] : file.tensors) {
    auto it = file.metadata.find(kCrcKey + name);
    if (it == file.metadata.end())
      return Status::failure(path + ": tensor '" + name +
                             "' has no checksum while the others have (the file was altered)");
    std::string hex = tensorCrc(t);
    if (it->second != hex)
      return Status::failure(path + ": tensor '" + name + "' is corrupt: its bytes' CRC-32C is " +
                             hex + ", the checkpoint recorded " + it->second +
                             " (a damaged file or disk; resume from an earlier checkpoint)");
  }
  return {};
}

Status saveCheckpoint(const std::string &dir, int64_t step, SafetensorsFile file, int64_t keep) {
  if (mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) {
    return Status::failure("cannot create checkpoint directory '" + dir +
                           "': " + std::strerror(errno));
  }
  std::string name = checkpointFileName(step);
  addChecksums(file);
  Status st = writeSafetensors(dir + "/" + name, file);
  if (!st)
    return st;
  return commitCheckpoint(dir, name, keep);
}

Status latestCheckpoint(const std::string &dir, std::string &name) {
  FILE *f = std::fopen((dir + "/latest").c_str(), "r");
  if (!f)
    return Status::failure(dir +
                           ": no 'latest' file, not a checkpoint directory written by lcc-run");
  char buf[256] = {0};
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  name.assign(buf, n);
  while (!name.empty() && (name.back() == '\n' || name.back() == '\r'))
    name.pop_back();
  if (!(isCheckpointName(name) || isStepDirName(name)) || name.find('/') != std::string::npos)
    return Status::failure(dir + "/latest does not name a checkpoint file or step directory");
  return {};
}

/// Reads the checkpoint file `path` and verifies its checksums; sets
/// `*unchecked` when it has none.
static Status readVerified(const std::string &path, SafetensorsFile &file, bool *unchecked) {
  bool checked = false;
  if (Status st = readSafetensors(path, file); !st)
    return st;
  if (Status st = verifyChecksums(file, path, checked); !st)
    return st;
  if (!checked && unchecked)
    *unchecked = true;
  return {};
}

/// The rank files of a step directory, assembled into whole tensors.
static Status loadStepDir(const std::string &target, SafetensorsFile &file, bool *unchecked) {
  std::vector<std::string> names = listDir(target, [](const std::string &n) {
    return n.rfind("rank-", 0) == 0 && n.find("-of-") != std::string::npos &&
           endsWith(n, ".safetensors");
  });
  if (names.empty())
    return Status::failure(target + ": no rank files in this checkpoint");
  // Every file of one checkpoint says the same world size, and all are there.
  std::string world = names.front().substr(names.front().find("-of-"));
  for (const std::string &n : names)
    if (n.substr(n.find("-of-")) != world)
      return Status::failure(target + ": files of different world sizes (" + names.front() + ", " +
                             n + ")");
  int64_t expected = std::strtoll(world.c_str() + 4, nullptr, 10);
  if (int64_t(names.size()) != expected)
    return Status::failure(target + ": has " + std::to_string(names.size()) +
                           " rank files, expected " + std::to_string(expected) +
                           " (a rank's file is missing)");
  std::vector<SafetensorsFile> files(names.size());
  for (size_t i = 0; i < names.size(); ++i)
    if (Status st = readVerified(target + "/" + names[i], files[i], unchecked); !st)
      return st;
  if (Status st = assembleShards(files, file); !st)
    return Status::failure(target + ": " + st.message());
  return {};
}

Status loadCheckpoint(const std::string &given, SafetensorsFile &file, std::string &used,
                      bool *unchecked) {
  if (unchecked)
    *unchecked = false;
  std::string path = given;
  while (path.size() > 1 && path.back() == '/')
    path.pop_back();
  struct stat sb;
  used = path;
  if (stat(path.c_str(), &sb) != 0) {
    return Status::failure("cannot read checkpoint '" + path + "': " + std::strerror(errno));
  }
  if (S_ISDIR(sb.st_mode) && !isStepDirName(baseName(path))) {
    std::string name;
    if (Status st = latestCheckpoint(path, name); !st)
      return st;
    used = path + "/" + name;
  }
  if (isStepDirName(baseName(used)))
    return loadStepDir(used, file, unchecked);
  // One file; written by one process of a ZeRO program it may still hold
  // pieces (of one part each): put them together.
  SafetensorsFile one;
  if (Status st = readVerified(used, one, unchecked); !st)
    return st;
  if (Status st = assembleShards({one}, file); !st)
    return Status::failure(used + ": " + st.message());
  return {};
}

} // namespace lcc
