//===- AppendFile.cpp - a file that only grows, a record per write --------===//
#include "tools/lcc-run/AppendFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace lcc {

namespace {

Status errnoFailure(const std::string &path, const char *what) {
  return Status::failure(path + ": " + what + ": " + std::strerror(errno));
}

} // namespace

AppendFile::~AppendFile() { (void)close(); }

AppendFile &AppendFile::operator=(AppendFile &&other) noexcept {
  if (this != &other) {
    (void)close();
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

Status AppendFile::open(const std::string &path, bool createNew, AppendFile &out) {
  (void)out.close();
  int flags = O_WRONLY | O_APPEND | O_CLOEXEC | (createNew ? O_CREAT | O_EXCL : 0);
  int fd = ::open(path.c_str(), flags, 0666);
  if (fd < 0)
    return errnoFailure(path, createNew ? "cannot create" : "cannot open for appending");
  out.path_ = path;
  out.fd_ = fd;
  return Status();
}

Status AppendFile::write(const std::string &bytes) {
  if (fd_ < 0)
    return Status::failure(path_ + ": the file is not open");
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t w = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return errnoFailure(path_, "write failed");
    }
    done += size_t(w);
  }
  return Status();
}

Status AppendFile::close() {
  if (fd_ < 0)
    return Status();
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0)
    return errnoFailure(path_, "close failed");
  return Status();
}

bool readWholeFile(const std::string &path, std::string &out) {
  out.clear();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  char buf[1 << 16];
  for (;;) {
    ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      int err = errno;
      ::close(fd);
      errno = err;
      return false;
    }
    if (r == 0)
      break;
    out.append(buf, static_cast<size_t>(r));
  }
  ::close(fd);
  return true;
}

} // namespace lcc
