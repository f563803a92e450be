//===- TensorBoard.cpp - training metrics as TensorBoard event files ------===//
#include "tools/lcc-run/TensorBoard.h"

#include "runtime/support/Crc32c.h"

#ifndef LCC_NO_TENSORBOARD_PROTO
#include "tensorboard_event.pb.h"
#endif

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace lcc {

namespace {

void putLittle(std::string &out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(char((v >> (8 * i)) & 0xff));
}

uint64_t getLittle(const unsigned char *p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= uint64_t(p[i]) << (8 * i);
  return v;
}

[[maybe_unused]] double wallTime() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

#ifndef LCC_NO_TENSORBOARD_PROTO
std::string serialized(const tensorboard::Event &event) {
  std::string bytes;
  event.SerializeToString(&bytes);
  return frameEventRecord(bytes);
}
#endif

Status errnoFailure(const std::string &path, const char *what) {
  return Status::failure(path + ": " + what + ": " + std::strerror(errno));
}

/// mkdir -p.
[[maybe_unused]] Status makeDirectories(const std::string &dir) {
  for (size_t at = 1; at <= dir.size(); ++at) {
    if (at < dir.size() && dir[at] != '/')
      continue;
    std::string prefix = dir.substr(0, at);
    struct stat st;
    if (::stat(prefix.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode))
        return Status::failure(prefix + ": not a directory");
      continue;
    }
    if (::mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST)
      return errnoFailure(prefix, "cannot create the directory");
  }
  return Status();
}

} // namespace

std::string frameEventRecord(const std::string &payload) {
  std::string out;
  out.reserve(payload.size() + 16);
  putLittle(out, payload.size(), 8);
  putLittle(out, maskCrc32c(crc32c(out.data(), 8)), 4);
  out += payload;
  putLittle(out, maskCrc32c(crc32c(payload.data(), payload.size())), 4);
  return out;
}

Status readEventFile(const std::string &path, std::vector<std::string> &records, bool &truncated) {
  records.clear();
  truncated = false;
  std::string data;
  if (!readWholeFile(path, data))
    return errnoFailure(path, "cannot read");
  const auto *p = reinterpret_cast<const unsigned char *>(data.data());
  size_t at = 0;
  while (at < data.size()) {
    auto where = [&](const char *what) {
      return Status::failure(path + ": record " + std::to_string(records.size()) + " at byte " +
                             std::to_string(at) + ": " + what);
    };
    if (data.size() - at < 12) {
      truncated = true;
      break;
    }
    uint64_t length = getLittle(p + at, 8);
    if (uint32_t(getLittle(p + at + 8, 4)) != maskCrc32c(crc32c(p + at, 8)))
      return where("the length's CRC-32C does not match (a corrupted file)");
    if (length > data.size() - at - 12 || data.size() - at - 12 - length < 4) {
      truncated = true;
      break;
    }
    const unsigned char *payload = p + at + 12;
    if (uint32_t(getLittle(payload + length, 4)) != maskCrc32c(crc32c(payload, length)))
      return where("the data's CRC-32C does not match (a corrupted file)");
    records.emplace_back(reinterpret_cast<const char *>(payload), length);
    at += 12 + length + 4;
  }
  return Status();
}

Status TensorBoardWriter::open(const std::string &dir, int64_t firstStep, TensorBoardWriter &out) {
#ifdef LCC_NO_TENSORBOARD_PROTO
  return Status::failure("--tensorboard: this lcc-run was built without protobuf");
#else
  if (Status st = makeDirectories(dir); !st)
    return st;
  char host[256] = "localhost";
  (void)::gethostname(host, sizeof host - 1);
  double now = wallTime();
  std::string path = dir + "/events.out.tfevents." + std::to_string(int64_t(now)) + "." + host +
                     "." + std::to_string(::getpid()) + ".lcc";
  TensorBoardWriter w;
  if (Status st = AppendFile::open(path, /*createNew=*/true, w.file_); !st)
    return st;
  tensorboard::Event version;
  version.set_wall_time(now);
  version.set_file_version("brain.Event:2");
  std::string bytes = serialized(version);
  if (firstStep > 1) {
    tensorboard::Event start;
    start.set_wall_time(now);
    start.set_step(firstStep);
    start.mutable_session_log()->set_status(tensorboard::SessionLog::START);
    bytes += serialized(start);
  }
  if (Status st = w.file_.write(bytes); !st)
    return st;
  out = std::move(w);
  return Status();
#endif
}

Status TensorBoardWriter::scalars(int64_t step, const std::vector<ScalarPoint> &points) {
#ifdef LCC_NO_TENSORBOARD_PROTO
  return Status::failure(path() + ": built without protobuf");
#else
  tensorboard::Event event;
  event.set_wall_time(wallTime());
  event.set_step(step);
  for (const auto &[tag, value] : points) {
    tensorboard::Summary::Value *v = event.mutable_summary()->add_value();
    v->set_tag(tag);
    v->set_simple_value(float(value));
  }
  return file_.write(serialized(event));
#endif
}

} // namespace lcc
