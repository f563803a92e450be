//===- Parallel.cpp - the runtime's one thread pool -----------------------===//
#include "runtime/cpu/Parallel.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <sched.h>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define LCC_PAUSE() _mm_pause()
#else
#define LCC_PAUSE() ((void)0)
#endif

namespace {

thread_local bool insidePart = false;

class Pool {
public:
  // (At most 4096 threads: the part count must fit the epoch word's bits.)
  explicit Pool(int threads) : threads_(threads < 4096 ? threads : 4096) {
    for (int i = 1; i < threads_; ++i)
      workers_.emplace_back([this, i] { work(i); });
  }

  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread &t : workers_)
      t.join();
  }

  int size() const { return threads_; }

  void run(lcc_task_fn fn, void *ctx, int64_t n) {
    // One loop at a time: a second caller (another trainer in the process)
    // runs its loop serially rather than waiting.
    std::unique_lock<std::mutex> owner(runMutex_, std::try_to_lock);
    if (!owner.owns_lock() || insidePart || threads_ == 1 || n < 2) {
      fn(ctx, 0, n);
      return;
    }
    fn_ = fn;
    ctx_ = ctx;
    n_ = n;
    parts_ = int(n < threads_ ? n : threads_);
    pending_.store(parts_ - 1);
    // Publishes the loop (seq_cst). The part count travels in the epoch
    // word: a worker without a part must not read parts_, which the next
    // loop may be writing while it looks (ThreadSanitizer found this; a
    // late worker could even run a part of the next loop twice).
    epoch_.store((((epoch_.load() >> kPartBits) + 1) << kPartBits) | uint64_t(parts_));
    if (sleepers_.load() > 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      wake_.notify_all();
    }
    runPart(0);
    while (pending_.load(std::memory_order_acquire) > 0)
      LCC_PAUSE();
  }

private:
  void runPart(int part) {
    int64_t lo = n_ * part / parts_, hi = n_ * (part + 1) / parts_;
    insidePart = true;
    if (lo < hi)
      fn_(ctx_, lo, hi);
    insidePart = false;
  }

  void work(int index) {
    uint64_t seen = 0;
    for (;;) {
      uint64_t now = epoch_.load();
      if (now == seen) {
        // Spin for a while (kernels come back to back), then sleep.
        auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
        unsigned spins = 0;
        while ((now = epoch_.load(std::memory_order_acquire)) == seen) {
          if (stop_.load())
            return;
          LCC_PAUSE();
          if ((++spins & 255) == 0 && std::chrono::steady_clock::now() > until) {
            std::unique_lock<std::mutex> lock(mutex_);
            sleepers_.fetch_add(1);
            wake_.wait(lock, [&] { return epoch_.load() != seen || stop_.load(); });
            sleepers_.fetch_sub(1);
            if (stop_.load())
              return;
            until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
          }
        }
      }
      seen = now;
      if (index < int(now & ((uint64_t(1) << kPartBits) - 1))) {
        runPart(index);
        pending_.fetch_sub(1, std::memory_order_release);
      }
    }
  }

  static constexpr int kPartBits = 16; // parts per loop < 65536 (threads)
  const int threads_;
  std::vector<std::thread> workers_;
  std::mutex runMutex_, mutex_;
  std::condition_variable wake_;
  std::atomic<uint64_t> epoch_{0};
  std::atomic<int> pending_{0}, sleepers_{0};
  std::atomic<bool> stop_{false};
  // The loop being run; written before epoch_ is bumped, read after.
  lcc_task_fn fn_ = nullptr;
  void *ctx_ = nullptr;
  int64_t n_ = 0;
  int parts_ = 1;
};

} // namespace

int lcc::defaultNumThreads() {
  if (const char *env = getenv("LCC_NUM_THREADS")) {
    int n = atoi(env);
    if (n >= 1)
      return n;
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set);
  unsigned n = std::thread::hardware_concurrency();
  return n ? int(n) : 1;
}

namespace {

std::mutex poolMutex;
std::unique_ptr<Pool> &poolSlot() {
  static std::unique_ptr<Pool> pool;
  return pool;
}

Pool &pool() {
  std::lock_guard<std::mutex> lock(poolMutex);
  auto &p = poolSlot();
  if (!p)
    p = std::make_unique<Pool>(lcc::defaultNumThreads());
  return *p;
}

} // namespace

extern "C" __attribute__((visibility("default"))) void lcc_parallel_for(lcc_task_fn fn,
                                                                        void *ctx, int64_t n) {
  if (n <= 0)
    return;
  pool().run(fn, ctx, n);
}

namespace lcc {

int numThreads() { return pool().size(); }

void setNumThreads(int threads) {
  std::lock_guard<std::mutex> lock(poolMutex);
  auto &p = poolSlot();
  if (p && p->size() == threads)
    return;
  p.reset();
  p = std::make_unique<Pool>(threads < 1 ? 1 : threads);
}

} // namespace lcc
