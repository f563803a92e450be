//===- StatusAssert.h - lcc::Status in GoogleTest assertions ----*- C++ -*-===//
//
// ASSERT_TRUE(isOk(f())) fails with f's message (header only, like TempDir.h).
//
//===----------------------------------------------------------------------===//
#ifndef LCC_TEST_UNIT_COMMON_STATUSASSERT_H
#define LCC_TEST_UNIT_COMMON_STATUSASSERT_H

#include "runtime/support/Status.h"

#include <gtest/gtest.h>

namespace lcc::test {

inline ::testing::AssertionResult isOk(const Status &status) {
  if (status.ok())
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << status.message();
}

} // namespace lcc::test

#endif
