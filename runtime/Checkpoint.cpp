//===- Checkpoint.cpp - checkpoint directories of lcc-run -----------------===//
#include "runtime/Checkpoint.h"

#include "runtime/AtomicFile.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
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

static bool isCheckpointName(const std::string &n) {
  return n.rfind("step-", 0) == 0 && n.size() > 17 &&
         n.compare(n.size() - 12, 12, ".safetensors") == 0;
}

bool saveCheckpoint(const std::string &dir, int64_t step, const SafetensorsFile &file,
                    int64_t keep, std::string &error) {
  if (mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) {
    error = "cannot create checkpoint directory '" + dir + "': " + std::strerror(errno);
    return false;
  }
  std::string name = checkpointFileName(step);
  SafetensorsStatus st = writeSafetensors(dir + "/" + name, file);
  if (!st)
    return error = st.error, false;
  std::string latest = name + "\n";
  if (!writeFileAtomically(dir + "/latest", latest.data(), latest.size(), error))
    return false;
  std::vector<std::string> all;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d))
      if (isCheckpointName(e->d_name))
        all.push_back(e->d_name);
    closedir(d);
  }
  std::sort(all.begin(), all.end()); // zero-padded steps sort numerically
  for (size_t i = 0; i + size_t(std::max<int64_t>(keep, 1)) < all.size(); ++i)
    if (all[i] != name)
      unlink((dir + "/" + all[i]).c_str());
  return true;
}

bool loadCheckpoint(const std::string &path, SafetensorsFile &file, std::string &used,
                    std::string &error) {
  struct stat sb;
  used = path;
  if (stat(path.c_str(), &sb) != 0) {
    error = "cannot read checkpoint '" + path + "': " + std::strerror(errno);
    return false;
  }
  if (S_ISDIR(sb.st_mode)) {
    FILE *f = std::fopen((path + "/latest").c_str(), "r");
    if (!f) {
      error = path + ": no 'latest' file, not a checkpoint directory written by lcc-run";
      return false;
    }
    char buf[256] = {0};
    size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    std::string name(buf, n);
    while (!name.empty() && (name.back() == '\n' || name.back() == '\r'))
      name.pop_back();
    if (!isCheckpointName(name) || name.find('/') != std::string::npos) {
      error = path + "/latest does not name a checkpoint file";
      return false;
    }
    used = path + "/" + name;
  }
  SafetensorsStatus st = readSafetensors(used, file);
  if (!st)
    return error = st.error, false;
  return true;
}

} // namespace lcc
