//===- TestFiles.h - temporary files for the data tests ---------*- C++ -*-===//
#ifndef LCC_TEST_UNIT_DATA_TESTFILES_H
#define LCC_TEST_UNIT_DATA_TESTFILES_H

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

/// A fresh directory under /tmp, removed with its files at the end.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/lcc-data-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  std::string file(const std::string &name) const { return path + "/" + name; }
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    if (DIR *d = ::opendir(path.c_str())) {
      while (dirent *e = ::readdir(d))
        if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
          out.push_back(e->d_name);
      ::closedir(d);
    }
    return out;
  }
  ~TempDir() {
    for (const std::string &f : files())
      ::unlink(file(f).c_str());
    ::rmdir(path.c_str());
  }
};

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
