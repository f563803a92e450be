//===- Diag.h - source locations and the first-error diagnostic -*- C++ -*-===//
//
// LLVM is built without exceptions, so every stage records the first error in
// a Diag and unwinds by returning a failure value; later errors are dropped
// because they are usually consequences of the first.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_FRONTENDS_DSL_DIAG_H
#define LCC_FRONTENDS_DSL_DIAG_H

#include <cstdint>
#include <string>
#include <vector>

namespace lcc::dsl {

/// 1-based line and column of a token or AST node.
struct SrcLoc {
  uint32_t line = 1;
  uint32_t col = 1;
};

class Diag {
public:
  explicit Diag(std::string filename) : filename(std::move(filename)) {}

  /// Records `message` ("WHAT, WHY") at `loc` unless an error is already recorded.
  void error(SrcLoc loc, const std::string &message) {
    if (failed)
      return;
    failed = true;
    text = filename + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col) +
           ": error: " + message;
  }
  bool hasError() const { return failed; }
  /// The full one-line diagnostic "FILE:LINE:COL: error: WHAT, WHY".
  const std::string &message() const { return text; }
  const std::string &file() const { return filename; }

private:
  std::string filename;
  std::string text;
  bool failed = false;
};

/// "[4, 32, 64]": how shapes appear in every diagnostic.
inline std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

} // namespace lcc::dsl

#endif
