//===- TestFiles.h - temporary files for the data tests ---------*- C++ -*-===//
#ifndef LCC_TEST_UNIT_DATA_TESTFILES_H
#define LCC_TEST_UNIT_DATA_TESTFILES_H

#include "test/unit/common/TempDir.h"

#include <cstdint>
#include <cstdio>
#include <dirent.h>
#include <fstream>
#include <iterator>
#include <stdlib.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace lcc::test {


inline void writeBytes(const std::string &path, const std::vector<uint8_t> &bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline void writeText(const std::string &path, const std::string &text) {
  writeBytes(path, std::vector<uint8_t>(text.begin(), text.end()));
}

inline std::vector<uint8_t> readBytes(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

inline std::string readText(const std::string &path) {
  std::vector<uint8_t> b = readBytes(path);
  return std::string(b.begin(), b.end());
}

/// Little-endian encoding of `values` with `width` bytes each.
template <typename T> std::vector<uint8_t> leBytes(const std::vector<T> &values, int width) {
  std::vector<uint8_t> out;
  for (T v : values)
    for (int k = 0; k < width; ++k)
      out.push_back(static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * k)));
  return out;
}

} // namespace lcc::test

#endif // LCC_TEST_UNIT_DATA_TESTFILES_H
