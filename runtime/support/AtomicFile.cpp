//===- AtomicFile.cpp - replace a file atomically -------------------------===//
#include "runtime/support/AtomicFile.h"

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace lcc {
namespace {

/// A random-looking suffix for the temporary name. mkstemp would do the same,
/// but it creates the file 0600 and fixing the mode afterwards needs the umask,
/// which can only be read by setting it (racy in a multi-threaded runtime).
/// Creating the file ourselves with O_EXCL and mode 0666 lets the kernel apply
/// the umask.
std::string tempSuffix() {
  static std::atomic<uint64_t> counter{0};
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t x = (static_cast<uint64_t>(::getpid()) << 32) ^
               (static_cast<uint64_t>(ts.tv_sec) * 1000000007u) ^
               static_cast<uint64_t>(ts.tv_nsec) ^ (counter.fetch_add(1) << 48);
  // splitmix64 finalizer: spreads the bits so names differ in every position.
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(x));
  return buf;
}

} // namespace

Status writeFileAtomically(const std::string &path, const std::vector<FilePiece> &pieces) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);

  int fd = -1;
  std::string tmpPath;
  // A name collision is astronomically unlikely; retrying a few times covers
  // a stale temporary left by a crashed writer with the same name.
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    tmpPath = path + ".tmp." + tempSuffix();
    fd = ::open(tmpPath.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST)
      break;
  }
  if (fd < 0)
    return Status::failure(path + ": cannot create a temporary file: " + std::strerror(errno));
  auto fail = [&](const char *what) {
    Status failed = Status::failure(path + ": " + what + ": " + std::strerror(errno));
    if (fd >= 0)
      ::close(fd);
    ::unlink(tmpPath.c_str());
    return failed;
  };

  for (const FilePiece &piece : pieces) {
    const uint8_t *p = static_cast<const uint8_t *>(piece.data);
    size_t done = 0;
    while (done < piece.size) {
      ssize_t w = ::write(fd, p + done, piece.size - done);
      if (w < 0) {
        if (errno == EINTR)
          continue;
        return fail("write failed");
      }
      done += static_cast<size_t>(w);
    }
  }
  // The data must be on disk before the rename publishes it; otherwise a
  // crash could leave the new name pointing at an empty or partial file.
  if (::fsync(fd) != 0)
    return fail("fsync failed");
  if (::close(fd) != 0) {
    fd = -1;
    return fail("close failed");
  }
  fd = -1;
  if (::rename(tmpPath.c_str(), path.c_str()) != 0)
    return fail("rename failed");
  // Make the rename itself durable. Errors are ignored: some file systems do
  // not support fsync on a directory, and the new file is already complete.
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return {};
}

Status writeFileAtomically(const std::string &path, const void *data, size_t size) {
  return writeFileAtomically(path, std::vector<FilePiece>{{data, size}});
}

} // namespace lcc
