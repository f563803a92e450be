//===- TempDir.h - a scratch directory for tests ----------------*- C++ -*-===//
//
// Shared by the runtime, data and AOT tests (header only; test/unit/common
// has no CMakeLists.txt, so it is no test target of its own).
//
//===----------------------------------------------------------------------===//
#ifndef LCC_TEST_UNIT_COMMON_TEMPDIR_H
#define LCC_TEST_UNIT_COMMON_TEMPDIR_H

#include <cstdio>
#include <dirent.h>
#include <stdlib.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace lcc::test {

/// A fresh directory under /tmp, removed at the end with what it holds
/// (files, and directories of files, one level deep: checkpoint dirs).
struct TempDir {
  std::string path;
  explicit TempDir(const std::string &tag = "lcc-test") {
    std::string tmpl = "/tmp/" + tag + "-XXXXXX";
    std::vector<char> name(tmpl.begin(), tmpl.end());
    name.push_back(0);
    path = ::mkdtemp(name.data()) ? name.data() : "";
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  std::string file(const std::string &name) const { return path + "/" + name; }

  /// Entry names in `dir` (default: this directory), without "." and "..".
  std::vector<std::string> files(const std::string &dir = "") const {
    std::vector<std::string> out;
    if (DIR *d = ::opendir((dir.empty() ? path : dir).c_str())) {
      while (dirent *e = ::readdir(d))
        if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
          out.push_back(e->d_name);
      ::closedir(d);
    }
    return out;
  }

  ~TempDir() {
    for (const std::string &f : files()) {
      std::string p = file(f);
      if (std::remove(p.c_str()) != 0) { // a directory
        for (const std::string &g : files(p))
          std::remove((p + "/" + g).c_str());
        ::rmdir(p.c_str());
      }
    }
    ::rmdir(path.c_str());
  }
};

} // namespace lcc::test

#endif
