//===- ParallelTest.cpp - the runtime's thread pool -----------------------===//
//
// lcc_parallel_for must run every iteration exactly once, in the fixed parts
// the header promises (part i of T is [n*i/T, n*(i+1)/T)), whatever n and the
// thread count; run nested loops serially; and keep working when its threads
// have gone to sleep between loops.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/Parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <gtest/gtest.h>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace {

struct Record {
  std::vector<std::atomic<int>> hits;
  std::mutex mutex;
  std::vector<std::pair<int64_t, int64_t>> parts;
  explicit Record(int64_t n) : hits(size_t(n)) {}
  static void task(void *self, int64_t lo, int64_t hi) {
    auto &r = *static_cast<Record *>(self);
    for (int64_t i = lo; i < hi; ++i)
      r.hits[size_t(i)].fetch_add(1);
    std::lock_guard<std::mutex> lock(r.mutex);
    r.parts.emplace_back(lo, hi);
  }
};

TEST(Parallel, EveryIterationOnceInTheDocumentedParts) {
  for (int threads : {1, 2, 3, 5}) {
    lcc::setNumThreads(threads);
    ASSERT_EQ(lcc::numThreads(), threads);
    for (int64_t n : {0, 1, 2, 3, 7, 1000}) {
      Record r(n);
      lcc_parallel_for(&Record::task, &r, n);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(r.hits[size_t(i)].load(), 1) << "n=" << n << " threads=" << threads;
      std::vector<std::pair<int64_t, int64_t>> want;
      int64_t parts = std::min<int64_t>(n, threads);
      for (int64_t p = 0; p < parts; ++p)
        want.emplace_back(n * p / parts, n * (p + 1) / parts);
      std::sort(r.parts.begin(), r.parts.end());
      EXPECT_EQ(r.parts, want) << "n=" << n << " threads=" << threads;
    }
  }
  lcc::setNumThreads(2);
}

// Loops of fewer parts than threads, back to back with wider ones: a worker
// without a part in one loop must not take part in the next one early (it
// once could, running a part twice; ./dev.sh tsan shows the race itself).
TEST(Parallel, NarrowLoopsBetweenWideOnes) {
  lcc::setNumThreads(4);
  for (int round = 0; round < 20000; ++round) {
    int64_t n = round % 2 ? 2 : 4;
    Record r(n);
    lcc_parallel_for(&Record::task, &r, n);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(r.hits[size_t(i)].load(), 1) << "round " << round << ", n=" << n;
  }
  lcc::setNumThreads(2);
}

struct Nested {
  std::atomic<int64_t> inner{0};
  static void innerTask(void *self, int64_t lo, int64_t hi) {
    static_cast<Nested *>(self)->inner.fetch_add(hi - lo);
  }
  static void outerTask(void *self, int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      lcc_parallel_for(&innerTask, self, 10); // serial inside a part: no deadlock
  }
};

TEST(Parallel, NestedLoopsRunSerially) {
  lcc::setNumThreads(3);
  Nested n;
  lcc_parallel_for(&Nested::outerTask, &n, 6);
  EXPECT_EQ(n.inner.load(), 60);
  lcc::setNumThreads(2);
}

TEST(Parallel, WorksAfterThreadsSleep) {
  lcc::setNumThreads(2);
  int64_t total = 0;
  for (int round = 0; round < 3; ++round) {
    // Longer than the workers spin (200 us): they are asleep on the next loop.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    Record r(64);
    lcc_parallel_for(&Record::task, &r, 64);
    for (auto &h : r.hits)
      total += h.load();
  }
  EXPECT_EQ(total, 3 * 64);
  // And back to back, as kernels run.
  for (int i = 0; i < 20000; ++i) {
    Record r(4);
    lcc_parallel_for(&Record::task, &r, 4);
    ASSERT_EQ(r.hits[0].load() + r.hits[1].load() + r.hits[2].load() + r.hits[3].load(), 4);
  }
}

} // namespace
