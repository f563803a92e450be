//===- AppendFile.h - a file that only grows, a record per write -*- C++ -*-===//
//
// What lcc-run's logs (the metrics CSV, TensorBoard event files) have in
// common: an O_APPEND descriptor, so each record reaches the kernel in one
// write(2) and lands at the end in one piece (a crash loses at most the
// record being written), completed in a loop on a short write (disk full).
// Move-only; closes on destruction. Errors are one line, prefixed with the
// path.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_TOOLS_LCC_RUN_APPENDFILE_H
#define LCC_TOOLS_LCC_RUN_APPENDFILE_H

#include "runtime/support/Status.h"

#include <string>
#include <utility>

namespace lcc {

class AppendFile {
public:
  AppendFile() = default;
  ~AppendFile();
  AppendFile(AppendFile &&other) noexcept { *this = std::move(other); }
  AppendFile &operator=(AppendFile &&other) noexcept;
  AppendFile(const AppendFile &) = delete;
  AppendFile &operator=(const AppendFile &) = delete;

  /// Opens an existing `path` for appending, or with `createNew` creates it
  /// (failing if it exists: never another run's file). Closes what `out` had.
  static Status open(const std::string &path, bool createNew, AppendFile &out);
  /// All of `bytes`, one write(2) unless the kernel takes fewer.
  Status write(const std::string &bytes);
  /// Closes the file; later writes fail. Also done by the destructor (a
  /// close that fails there has no caller to tell: callers that care close).
  Status close();

  bool isOpen() const { return fd_ >= 0; }
  const std::string &path() const { return path_; }

private:
  std::string path_;
  int fd_ = -1;
};

/// Reads all of `path` into `out` (what the logs and lcc-run's other
/// inputs read back); false with errno set on failure.
bool readWholeFile(const std::string &path, std::string &out);

} // namespace lcc

#endif // LCC_TOOLS_LCC_RUN_APPENDFILE_H
