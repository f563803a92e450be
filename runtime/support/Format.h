//===- Format.h - numbers in the reports lcc and lcc-run print --*- C++ -*-===//
#ifndef LCC_RUNTIME_FORMAT_H
#define LCC_RUNTIME_FORMAT_H

#include <cstdint>
#include <string>

namespace lcc {

/// 124439808 -> "124,439,808" (counts of parameters and bytes, n >= 0).
inline std::string withCommas(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

} // namespace lcc

#endif // LCC_RUNTIME_FORMAT_H
