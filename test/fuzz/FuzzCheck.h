//===- FuzzCheck.h - a fuzz target's own invariants -------------*- C++ -*-===//
//
// What a target checks beyond the sanitizers (a result that must verify, a
// round trip that must hold): a failed check aborts, which libFuzzer reports
// as a crash and saves the input.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_TEST_FUZZ_FUZZCHECK_H
#define LCC_TEST_FUZZ_FUZZCHECK_H

#include <cstdio>
#include <cstdlib>

namespace lcc::fuzz {

inline void check(bool ok, const char *target, const char *what) {
  if (!ok) {
    std::fprintf(stderr, "%s: %s\n", target, what);
    std::abort();
  }
}

} // namespace lcc::fuzz

#endif
