//===- Status.h - the one error type of lcc's C++ code ----------*- C++ -*-===//
//
// Everything that can fail outside the C ABI compiled code calls returns a
// Status: OK, or a one-line message that says what failed and why, which
// callers prefix with their context ("checkpoint 'x': ...") and tools print
// as "error: <message>". Its interface is absl::Status's (ok(), message()),
// plus a test in conditions; it is not absl::Status itself because the
// runtime also builds alone, with nothing but a C++ compiler and CMake, on
// the GPU machines that run train.bin files (LCC_RUNTIME_ONLY).
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_STATUS_H
#define LCC_RUNTIME_STATUS_H

#include <string>
#include <utility>

namespace lcc {

class [[nodiscard]] Status {
public:
  /// OK.
  Status() = default;
  /// A failure with `message` (one line, no trailing period).
  static Status failure(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  /// Empty when ok().
  const std::string &message() const { return message_; }

private:
  explicit Status(std::string message) : failed_(true), message_(std::move(message)) {}
  bool failed_ = false;
  std::string message_;
};

} // namespace lcc

#endif
