//===- Parallel.h - the runtime's one thread pool ----------------*- C++ -*-===//
//
// Compiled kernels and the GEMM wrappers split their outermost parallel loop
// over one process-wide pool: the caller runs the first part, the pool's
// other threads the rest, then the caller waits. Parts are fixed (part i of
// T gets [n*i/T, n*(i+1)/T)), so results never depend on timing: a run is
// bitwise reproducible for a given thread count.
//
// Waiting threads spin briefly (the next kernel usually follows within
// microseconds), then sleep on a condition variable. The BLAS runs single-
// threaded inside the parts, so there is one set of threads, not two
// competing for the same cores.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_PARALLEL_H
#define LCC_RUNTIME_PARALLEL_H

#include <cstdint>

extern "C" {
/// The body of a parallel loop: iterations [lo, hi) of the loop, with `ctx`
/// the caller's captured state (for compiled kernels: their arguments).
typedef void (*lcc_task_fn)(void *ctx, int64_t lo, int64_t hi);

/// Runs fn over [0, n) split into at most lcc_num_threads() parts, returning
/// when all are done. Called from inside a part it runs serially.
void lcc_parallel_for(lcc_task_fn fn, void *ctx, int64_t n);
}

namespace lcc {

/// Threads used by lcc_parallel_for (including the caller): set by
/// setNumThreads, else $LCC_NUM_THREADS, else the CPUs this process may use.
int numThreads();

/// $LCC_NUM_THREADS, else the CPUs this process may use: the pool's default
/// size, without starting the pool (for callers that only need the count).
int defaultNumThreads();

/// Changes the pool's size (>= 1); the old workers are joined first. Not to be
/// called while a parallel loop runs.
void setNumThreads(int threads);

} // namespace lcc

#endif
