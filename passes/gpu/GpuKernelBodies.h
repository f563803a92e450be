//===- GpuKernelBodies.h - thread mappings of lcc's CUDA kernels -*- C++ -*-===//
//
// How lcc-gpu-kernels maps one outlined kernel onto CUDA threads. Each
// mapping is chosen from the kernel's linalg op, so the same target-neutral
// IR the CPU loops come from gives the GPU code:
//
//  - "threads": one thread per point of the leading parallel dimensions
//    that index every output, flattened row-major, so consecutive threads
//    touch consecutive elements of the innermost dimension (coalesced);
//    what remains (reductions, inner dims) is the CPU's loop nest
//    (passes/kernels/LoopNest.h) inside the thread.
//  - "rows": one block per output element of a reduction (layer norm's
//    statistics, softmax's max and sum, cross-entropy's log-sum-exp, a
//    column sum): the block's threads stride over the reduced elements
//    (contiguous reductions read coalesced), then combine their partials
//    by warp shuffles and one shared-memory step. The order is fixed, so
//    results are deterministic.
//  - "slices": an scf.for of row updates (the embedding gradient's scatter
//    add): one thread per element of the updated row, each walking all
//    rows in order (deterministic, no atomics, no races).
//  - "serial": anything else, on one thread: correct, slow, and reported.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_GPUKERNELBODIES_H
#define LCC_PASSES_GPUKERNELBODIES_H

#include "passes/Modes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <string>

namespace lcc {

struct GpuLaunchShape {
  int64_t grid = 1, block = 1;
  GpuMapping mapping = GpuMapping::Serial;
  int64_t lanes = 1; // neighbouring innermost elements per thread (threads)
};

/// Builds the gpu.func for `kernel` (memref arguments, one op with regions)
/// at `b` (inside a gpu.module); returns how to launch it. `blockSize`:
/// threads per block; `minBlockReduction`: the smallest reduction given a
/// whole block ("rows"); `argAlignment`: bytes each argument's pointer is
/// known to be aligned to at every launch (1: unknown). An elementwise
/// "threads" kernel whose innermost dimension is a multiple of `lanes` gives
/// each thread `lanes` neighbouring elements, so that with aligned
/// arguments (memref.assume_alignment) LLVM's load/store vectorizer makes
/// their accesses single 128-bit loads and stores.
mlir::FailureOr<GpuLaunchShape> buildGpuKernel(mlir::OpBuilder &b, mlir::func::FuncOp kernel,
                                               int64_t blockSize, int64_t minBlockReduction,
                                               llvm::ArrayRef<int64_t> argAlignment,
                                               int64_t lanes);

} // namespace lcc

#endif
