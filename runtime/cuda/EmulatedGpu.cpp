//===- EmulatedGpu.cpp - a CUDA train.bin's kernels on the CPU ------------===//
#include "runtime/cuda/EmulatedGpu.h"
#include "runtime/cpu/Attention.h"
#include "runtime/cpu/CpuKernels.h"
#include "runtime/dist/Collectives.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <tuple>
#include <ucontext.h>

namespace lcc {

/// A block whose threads synchronize (barriers, warp shuffles), run as
/// fibers on the calling thread: each GPU thread runs until it reaches a
/// barrier, then the next one runs; a barrier opens when every thread it
/// waits for has arrived. (Host threads per GPU thread cost a futex storm
/// per barrier: 30 s per gpt-tiny step on 2 cores.)
struct EmulatedBlock {
  enum State { Runnable, AtBarrier, AtWarp, Done };
  int64_t threads = 0;
  std::vector<ucontext_t> fibers;
  std::vector<std::unique_ptr<char[]>> stacks;
  std::vector<State> state;
  std::vector<float> slots;        // the shuffles' exchange, one per thread
  std::vector<int64_t> warpWaiting; // threads of each warp at its barrier
  int64_t blockWaiting = 0;
  ucontext_t scheduler;
  int64_t current = 0;
  static constexpr size_t kStack = 256 * 1024;

  /// Parks the current thread at the block's (or its warp's) barrier; back
  /// when the barrier opened.
  void arrive(bool warpOnly) {
    if (warpOnly) {
      int64_t warp = current / 32;
      state[size_t(current)] = AtWarp;
      if (++warpWaiting[size_t(warp)] == 32) {
        warpWaiting[size_t(warp)] = 0;
        for (int64_t t = warp * 32; t < warp * 32 + 32; ++t)
          state[size_t(t)] = Runnable;
      }
    } else {
      state[size_t(current)] = AtBarrier;
      if (++blockWaiting == threads) {
        blockWaiting = 0;
        for (State &s : state)
          s = Runnable;
      }
    }
    swapcontext(&fibers[size_t(current)], &scheduler);
  }
};

namespace {

// What a running kernel asks of its thread (passes/gpu/EmulateGpuKernels.cpp).
thread_local int64_t tlsThread = 0, tlsBlock = 0, tlsBlockDim = 1, tlsGridDim = 1;
thread_local EmulatedBlock *tlsSync = nullptr;

[[noreturn]] void misuse(const char *what) {
  std::fprintf(stderr, "lcc-run: internal error: an emulated kernel called %s %s\n", what,
               tlsSync ? "" : "without synchronizing threads (compiler bug)");
  std::abort();
}

} // namespace

extern "C" {
__attribute__((visibility("default"))) int64_t lcc_emu_thread_id() { return tlsThread; }
__attribute__((visibility("default"))) int64_t lcc_emu_block_id() { return tlsBlock; }
__attribute__((visibility("default"))) int64_t lcc_emu_block_dim() { return tlsBlockDim; }
__attribute__((visibility("default"))) int64_t lcc_emu_grid_dim() { return tlsGridDim; }
__attribute__((visibility("default"))) void lcc_emu_barrier() {
  if (!tlsSync)
    misuse("gpu.barrier");
  tlsSync->arrive(/*warpOnly=*/false);
}
/// Every lane of the warp calls it (lcc shuffles whole warps): each posts its
/// value, all wait, each reads its partner's, all wait again before the
/// slots are reused.
__attribute__((visibility("default"))) float lcc_emu_shuffle_xor(float value, int32_t offset) {
  if (!tlsSync)
    misuse("gpu.shuffle");
  EmulatedBlock &b = *tlsSync;
  int64_t warp = tlsThread / 32, lane = tlsThread % 32;
  b.slots[size_t(tlsThread)] = value;
  b.arrive(/*warpOnly=*/true);
  float other = b.slots[size_t(warp * 32 + (lane ^ int64_t(offset)))];
  b.arrive(/*warpOnly=*/true);
  return other;
}
}

Status EmulatedGpu::create(const Program &program, std::unique_ptr<EmulatedGpu> &out) {
  auto gpu = std::unique_ptr<EmulatedGpu>(new EmulatedGpu());
  gpu->program_ = &program;
  gpu->kernels_ = static_cast<const Kernel *>(program.codeSymbol("lcc_emu_kernels"));
  gpu->synchronizes_ = static_cast<const int8_t *>(program.codeSymbol("lcc_emu_kernel_sync"));
  auto *count = static_cast<const int64_t *>(program.codeSymbol("lcc_emu_kernel_count"));
  if (!program.isCuda() || program.cudaArch() != "emulated" || !gpu->kernels_ ||
      !gpu->synchronizes_ || !count)
    return Status::failure("not a train.bin compiled with lcc --target=cuda --arch=emulated");
  gpu->count_ = *count;
  const char *order = std::getenv("LCC_EMU_ORDER");
  gpu->reverse_ = order && std::string(order) == "reverse";
  if (gpu->count_ != int64_t(program.cudaKernels().size()))
    return Status::failure("the emulated kernel table has " + std::to_string(gpu->count_) +
                           " kernels, the manifest lists " +
                           std::to_string(program.cudaKernels().size()));
  out = std::move(gpu);
  return {};
}

EmulatedGpu::EmulatedGpu() : block_(std::make_unique<EmulatedBlock>()) {}

EmulatedGpu::~EmulatedGpu() {
  for (void *p : allocations_)
    std::free(p);
}

std::string EmulatedGpu::description() const {
  return "emulated GPU (" + std::to_string(count_) + " kernels on the CPU)";
}

uint64_t EmulatedGpu::allocate(size_t bytes) {
  size_t rounded = (std::max<size_t>(bytes, 1) + 255) / 256 * 256;
  void *p = std::aligned_alloc(256, rounded);
  if (!p) {
    if (error_.empty())
      error_ = "out of memory allocating " + std::to_string(bytes) + " bytes";
    return 0;
  }
  std::memset(p, 0, rounded);
  allocations_.push_back(p);
  return reinterpret_cast<uint64_t>(p);
}

void EmulatedGpu::release(uint64_t buffer) {
  auto it = std::find(allocations_.begin(), allocations_.end(), reinterpret_cast<void *>(buffer));
  if (it == allocations_.end())
    return;
  std::free(*it);
  allocations_.erase(it);
}

void EmulatedGpu::upload(uint64_t device, const void *host, size_t bytes) {
  std::memcpy(reinterpret_cast<void *>(device), host, bytes);
}

void EmulatedGpu::download(void *host, uint64_t device, size_t bytes) {
  std::memcpy(host, reinterpret_cast<const void *>(device), bytes);
}

Status EmulatedGpu::synchronize() { return error_.empty() ? Status() : Status::failure(error_); }

void *EmulatedGpu::allocateHost(size_t bytes) {
  void *p = std::aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) / 64 * 64);
  if (p)
    allocations_.push_back(p);
  return p;
}

Status EmulatedGpu::beginCapture() {
  capturing_ = true;
  recording_.clear();
  return {};
}

Status EmulatedGpu::endCapture(int slot) {
  capturing_ = false;
  graphs_[slot] = std::move(recording_);
  recording_.clear();
  return {};
}

Status EmulatedGpu::replay(int slot) {
  for (const std::function<void()> &work : graphs_.at(slot))
    work();
  return error_.empty() ? Status() : Status::failure(error_);
}

void EmulatedGpu::issue(std::function<void()> work) {
  if (capturing_)
    recording_.push_back(std::move(work));
  else
    work();
}

void EmulatedGpu::launch(int64_t kernel, int64_t grid, int64_t block, const uint64_t *args,
                         int64_t argc) {
  if (kernel < 0 || kernel >= count_) {
    if (error_.empty())
      error_ = "the code launched kernel #" + std::to_string(kernel) + ", which does not exist";
    return;
  }
  // The pointers are copied now: the host code reuses its argv array.
  std::vector<void *> argv(static_cast<size_t>(argc));
  for (int64_t i = 0; i < argc; ++i)
    argv[size_t(i)] = reinterpret_cast<void *>(args[i]);
  issue([this, kernel, grid, block, argv = std::move(argv)] { run(kernel, grid, block, argv); });
}

void EmulatedGpu::run(int64_t kernel, int64_t grid, int64_t block,
                      const std::vector<void *> &argv) {
  Kernel fn = kernels_[kernel];
  void **args = const_cast<void **>(argv.data()); // the kernel reads the pointers only
  if (!synchronizes_[kernel]) {
    // No barrier, no shuffle: each thread runs to its end on its own, in
    // order, or in reverse (LCC_EMU_ORDER=reverse): a kernel whose threads
    // depend on each other's writes gives other results then.
    tlsBlockDim = block;
    tlsGridDim = grid;
    for (int64_t i = 0; i < grid * block; ++i) {
      int64_t j = reverse_ ? grid * block - 1 - i : i;
      tlsBlock = j / block;
      tlsThread = j % block;
      fn(args);
    }
    return;
  }
  if (block % 32 != 0) {
    if (error_.empty())
      error_ = "kernel " + program_->cudaKernels()[size_t(kernel)] + " synchronizes " +
               std::to_string(block) + " threads, not whole warps";
    return;
  }
  // The block's threads as fibers; blocks one after another (the workgroup
  // memory is one global per kernel).
  EmulatedBlock &sync = *block_;
  sync.threads = block;
  if (int64_t(sync.fibers.size()) < block) {
    sync.fibers.resize(size_t(block));
    while (int64_t(sync.stacks.size()) < block)
      sync.stacks.push_back(std::make_unique<char[]>(EmulatedBlock::kStack));
  }
  sync.slots.assign(size_t(block), 0.0f);
  tlsBlockDim = block;
  tlsGridDim = grid;
  tlsSync = &sync;
  static thread_local Kernel running;
  static thread_local void **runningArgs;
  running = fn;
  runningArgs = args;
  for (int64_t i = 0; i < grid && error_.empty(); ++i) {
    int64_t b = reverse_ ? grid - 1 - i : i;
    tlsBlock = b;
    sync.state.assign(size_t(block), EmulatedBlock::Runnable);
    sync.warpWaiting.assign(size_t(block / 32), 0);
    sync.blockWaiting = 0;
    for (int64_t t = 0; t < block; ++t) {
      ucontext_t &f = sync.fibers[size_t(t)];
      getcontext(&f);
      f.uc_stack.ss_sp = sync.stacks[size_t(t)].get();
      f.uc_stack.ss_size = EmulatedBlock::kStack;
      f.uc_link = &sync.scheduler;
      makecontext(&f, reinterpret_cast<void (*)()>(+[] {
                    running(runningArgs);
                    tlsSync->state[size_t(tlsSync->current)] = EmulatedBlock::Done;
                  }),
                  0);
    }
    // Round robin until every thread is done; a round without progress is
    // a barrier some thread never reaches (a compiler bug).
    for (int64_t done = 0; done < block;) {
      bool progress = false;
      done = 0;
      for (int64_t i = 0; i < block; ++i) {
        int64_t t = reverse_ ? block - 1 - i : i;
        if (sync.state[size_t(t)] == EmulatedBlock::Done) {
          ++done;
          continue;
        }
        if (sync.state[size_t(t)] != EmulatedBlock::Runnable)
          continue;
        sync.current = t;
        tlsThread = t;
        swapcontext(&sync.scheduler, &sync.fibers[size_t(t)]);
        progress = true;
      }
      if (!progress && done < block) {
        if (error_.empty())
          error_ = "kernel " + program_->cudaKernels()[size_t(kernel)] +
                   ": threads wait at a barrier the others never reach";
        break;
      }
    }
  }
  tlsSync = nullptr;
}

void EmulatedGpu::gemm(const GemmCall &call) {
  issue([call] {
    auto *f = call.f64 ? &lcc_dgemm : call.bf16 ? &lcc_bf16gemm : call.f16 ? &lcc_hgemm
                                                                        : &lcc_sgemm;
    std::apply(f, call.abi());
  });
}

void EmulatedGpu::attention(const AttentionCall &call) {
  issue([call] {
    int64_t scaleBits;
    std::memcpy(&scaleBits, &call.scale, sizeof scaleBits);
    const auto &p = call.buffers;
    auto i = [](uint64_t v) { return int64_t(v); };
    if (!call.backward)
      lcc_attention_fwd(call.dtype, call.b, call.h, call.hkv, call.tq, call.tk, call.d,
                        call.causal, scaleBits, i(p[0]), i(p[1]), i(p[2]), i(p[3]));
    else
      lcc_attention_bwd(call.dtype, call.b, call.h, call.hkv, call.tq, call.tk, call.d,
                        call.causal, scaleBits, i(p[0]), i(p[1]), i(p[2]), i(p[3]), i(p[4]),
                        i(p[5]), i(p[6]), i(p[7]));
  });
}

// The emulated device's memory is host memory, so the groups lcc-run
// installed move it directly: a collective runs where the stream would reach
// it, through the CPU's C ABI (runtime/dist/Collectives.h: Gloo, or the copy
// of a 1-rank group), and a wait has nothing left to wait for.
void EmulatedGpu::collective(const CollectiveCall &call) {
  if (call.kind == CollectiveCall::Wait)
    return;
  issue([call] {
    int64_t in = int64_t(call.in), out = int64_t(call.out);
    switch (call.kind) {
    case CollectiveCall::AllReduce:
      return lcc_all_reduce(call.group, call.dtype, call.reduction, in, out, call.count);
    case CollectiveCall::AllGather:
      return lcc_all_gather(call.group, call.dtype, in, out, call.count);
    case CollectiveCall::ReduceScatter:
      return lcc_reduce_scatter(call.group, call.dtype, call.reduction, in, out, call.count);
    case CollectiveCall::Broadcast:
      return lcc_broadcast(call.group, call.dtype, call.peer, in, out, call.count);
    case CollectiveCall::Send:
      return lcc_send(call.group, call.dtype, call.peer, in, call.count);
    case CollectiveCall::Recv:
      return lcc_recv(call.group, call.dtype, call.peer, out, call.count);
    case CollectiveCall::GroupStart: return lcc_group_start(call.group);
    case CollectiveCall::GroupEnd:
      return call.start ? lcc_group_end_posted(call.group) : lcc_group_end(call.group);
    case CollectiveCall::Wait:
      return;
    }
  });
}

} // namespace lcc
