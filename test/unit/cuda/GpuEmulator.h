//===- GpuEmulator.h - run lcc's CUDA C++ kernels on the CPU ----*- C++ -*-===//
//
// The host side of runtime/cuda/kernels/GxDevice.cuh: include this before a
// kernel header and the kernel compiles as plain C++. `launch` runs every
// block of a grid in turn, each as 128 real threads: __syncthreads and
// __syncwarp are real barriers, shuffles exchange through the warp, shared
// memory is one buffer per block. What it checks that a GPU would not
// report: WMMA pointers aligned to 32 bytes and leading dimensions of 16
// bytes (misaligned tiles are undefined behaviour on the device), and that a
// kernel stays within the shared memory it was launched with (guard bytes).
//
// WMMA tiles are emulated per warp-collective semantics: every lane holds the
// whole 16x16 tile (a GPU spreads it over the lanes in an unspecified way, so
// kernels never index fragments), every lane computes the full product, and
// only lane 0 stores it. A kernel that reads a tile before a __syncwarp after
// the store can therefore read stale data here, as it could on the device.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_TEST_UNIT_CUDA_GPUEMULATOR_H
#define LCC_TEST_UNIT_CUDA_GPUEMULATOR_H

#include "runtime/cpu/CpuKernels.h"

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#define GX_FN inline
#define GX_HD
#define LCC_GX_DEFINED 1

namespace gx {

struct bf16 {
  uint16_t bits;
};
struct f16 {
  uint16_t bits;
};

/// A reusable barrier for `count` threads.
class Barrier {
public:
  explicit Barrier(int count) : count_(count) {}
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    long generation = generation_;
    if (++waiting_ == count_) {
      waiting_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return generation != generation_; });
  }

private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int count_, waiting_ = 0;
  long generation_ = 0;
};

struct Warp {
  Barrier barrier{32};
  float slots[32];
};
struct Block {
  Barrier barrier{128};
  Warp warps[4];
  int x = 0, y = 0;
};

struct Context {
  Block *block = nullptr;
  int thread = 0;
};
inline thread_local Context tContext;
/// Problems found while emulating (misaligned tiles, shared-memory overruns).
inline std::mutex gErrorsMutex;
inline std::vector<std::string> gErrors;
inline void reportError(const std::string &what) {
  std::lock_guard<std::mutex> lock(gErrorsMutex);
  if (gErrors.size() < 20)
    gErrors.push_back(what);
}

inline int threadId() { return tContext.thread; }
inline int blockX() { return tContext.block->x; }
inline int blockY() { return tContext.block->y; }
inline void syncThreads() { tContext.block->barrier.wait(); }
inline int lane() { return tContext.thread % 32; }
inline Warp &warp() { return tContext.block->warps[tContext.thread / 32]; }
inline void syncWarp() { warp().barrier.wait(); }
inline float shflXor(float v, int laneMask) {
  Warp &w = warp();
  w.slots[lane()] = v;
  w.barrier.wait();
  float r = w.slots[lane() ^ laneMask];
  w.barrier.wait();
  return r;
}
inline float exp(float x) { return std::exp(x); }
inline float log(float x) { return std::log(x); }

inline float toFloat(bf16 x) { return lcc::widenBfloat16(x.bits); }
inline float toFloat(f16 x) { return lcc::widenHalf(x.bits); }
template <typename T> T fromFloat(float x);
template <> inline bf16 fromFloat<bf16>(float x) { return bf16{lcc::roundToBfloat16(x)}; }
template <> inline f16 fromFloat<f16>(float x) { return f16{lcc::roundToHalf(x)}; }

struct Tile {
  float x[16][16];
};
template <typename T> struct FragA : Tile {};
template <typename T> struct FragBRow : Tile {};
template <typename T> struct FragBCol : Tile {};
struct FragC : Tile {};

inline void checkTile(const void *p, int ldm, int elemBytes, const char *what) {
  if (reinterpret_cast<uintptr_t>(p) % 32 != 0)
    reportError(std::string(what) + ": pointer not 32-byte aligned");
  if ((ldm * elemBytes) % 16 != 0)
    reportError(std::string(what) + ": leading dimension not a multiple of 16 bytes");
}

template <typename T> void load(FragA<T> &f, const T *p, int ldm) {
  checkTile(p, ldm, sizeof(T), "load matrix_a");
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c)
      f.x[r][c] = toFloat(p[r * ldm + c]);
}
template <typename T> void load(FragBRow<T> &f, const T *p, int ldm) {
  checkTile(p, ldm, sizeof(T), "load matrix_b row_major");
  for (int k = 0; k < 16; ++k)
    for (int n = 0; n < 16; ++n)
      f.x[k][n] = toFloat(p[k * ldm + n]);
}
template <typename T> void load(FragBCol<T> &f, const T *p, int ldm) {
  checkTile(p, ldm, sizeof(T), "load matrix_b col_major");
  for (int k = 0; k < 16; ++k)
    for (int n = 0; n < 16; ++n)
      f.x[k][n] = toFloat(p[n * ldm + k]);
}
inline void loadAcc(FragC &f, const float *p, int ldm) {
  checkTile(p, ldm, 4, "load accumulator");
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c)
      f.x[r][c] = p[r * ldm + c];
}
inline void storeAcc(float *p, const FragC &f, int ldm) {
  checkTile(p, ldm, 4, "store accumulator");
  if (lane() != 0)
    return;
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c)
      p[r * ldm + c] = f.x[r][c];
}
inline void zero(FragC &f) { std::memset(f.x, 0, sizeof(f.x)); }
template <typename A, typename B> void mma(FragC &d, const A &a, const B &b, const FragC &c) {
  FragC out = c;
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      float acc = 0;
      for (int k = 0; k < 16; ++k)
        acc += a.x[i][k] * b.x[k][j];
      out.x[i][j] += acc;
    }
  d = out;
}

/// The most shared memory a block may opt into: Hopper's 227 KB (A100
/// allows 163 KB, sm_86/89 99 KB: the runtime checks the GPU it runs on).
constexpr size_t kMaxSharedMemory = 227 * 1024;
/// The hardware's limit on a grid's y (and z) dimension.
constexpr int kMaxGridY = 65535;

/// Runs `body(smem)` for every block of a gridX x gridY grid, 128 threads
/// each, with `smemBytes` of shared memory (followed by guard bytes that
/// must survive).
inline void launch(int gridX, int gridY, size_t smemBytes,
                   const std::function<void(unsigned char *)> &body) {
  constexpr size_t kGuard = 256;
  if (smemBytes > kMaxSharedMemory)
    reportError("a launch with " + std::to_string(smemBytes) +
                " bytes of shared memory, more than any GPU allows a block");
  if (gridY > kMaxGridY)
    reportError("a grid of " + std::to_string(gridY) + " blocks in y (at most 65535)");
  for (int y = 0; y < gridY; ++y)
    for (int x = 0; x < gridX; ++x) {
      Block block;
      block.x = x;
      block.y = y;
      auto *smem = static_cast<unsigned char *>(std::aligned_alloc(128, (smemBytes + kGuard + 127) / 128 * 128));
      std::memset(smem, 0x7f, smemBytes + kGuard); // garbage, not zeros: kernels must initialize
      std::vector<std::thread> threads;
      for (int t = 0; t < 128; ++t)
        threads.emplace_back([&, t] {
          tContext = Context{&block, t};
          body(smem);
        });
      for (std::thread &t : threads)
        t.join();
      for (size_t i = smemBytes; i < smemBytes + kGuard; ++i)
        if (smem[i] != 0x7f) {
          reportError("block (" + std::to_string(x) + ", " + std::to_string(y) +
                      ") wrote past its shared memory");
          break;
        }
      std::free(smem);
    }
}

} // namespace gx

#endif
