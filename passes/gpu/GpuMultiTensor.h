//===- GpuMultiTensor.h - independent CUDA kernels as one launch -*- C++ -*-===//
//
// Horizontal fusion of lcc-gpu-kernels' launches: a run of consecutive
// one-thread-per-point kernels (the optimizer's per-parameter updates, the
// elementwise kernels between two GEMMs) is regrouped by dependence level,
// and each level becomes one kernel whose blocks are split among the parts
// (apex's multi_tensor_apply, derived instead of hand-written). Reordering
// within the run is what makes AdamW one launch per stage for all
// parameters: kernel k of parameter p+1 does not wait for kernel k+1 of p.
// Neighbouring elementwise kernels over the same points whose dependences are
// element for element (a parameter's new moments, then the parameter that
// reads them) become a chain, run one after the other by each thread of one
// part: the AdamW update of every parameter is one launch.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_GPUMULTITENSOR_H
#define LCC_PASSES_GPUMULTITENSOR_H

#include "passes/gpu/GpuKernelBodies.h"
#include "passes/gpu/HostBuffers.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace lcc {

/// A built kernel: its gpu.func, launch shape, and which arguments it may
/// write (the rest it only reads).
struct GpuKernelInfo {
  mlir::gpu::GPUFuncOp func;
  GpuLaunchShape shape;
  llvm::SmallVector<bool> writes;
  /// An elementwise kernel's loop ranges (empty otherwise), and which of its
  /// arguments it reads or writes only at the points a thread owns (the
  /// identity indexing): two such kernels over the same ranges can run one
  /// after the other in the same thread when they share such buffers
  /// (alignedArguments).
  llvm::SmallVector<int64_t> ranges;
  llvm::SmallVector<bool> aligned;
};

/// For an lcc.kernel function whose body is one all-parallel linalg op: its
/// loop ranges, and per argument whether every use is that op's operand
/// with the identity indexing map. Empty ranges otherwise.
void alignedArguments(mlir::func::FuncOp kernel, llvm::SmallVector<int64_t> &ranges,
                      llvm::SmallVector<bool> &aligned);

/// One launch to emit in a host function, before `anchor`.
struct GpuLaunch {
  mlir::Operation *anchor;
  llvm::SmallVector<mlir::Value> operands;
  mlir::gpu::GPUFuncOp func;
  GpuLaunchShape shape;
};

/// Which arguments of an lcc.kernel function its body may write.
llvm::SmallVector<bool> writtenArguments(mlir::func::FuncOp kernel);

/// The launches of `host`'s kernel calls (`info` is null for a call that is
/// not a kernel's). Runs of calls to "threads" kernels with nothing but
/// pure ops between them are regrouped by dependence level (two calls
/// depend when one may write bytes the other touches, by the buffers'
/// static byte ranges, `located`) and each level of two or more becomes one fused
/// gpu.func built at `gpuModule` (at most `maxArgs` arguments each).
/// Calls outside runs keep their own launch at their place.
llvm::SmallVector<GpuLaunch>
planLaunches(mlir::func::FuncOp host,
             llvm::function_ref<const GpuKernelInfo *(mlir::func::CallOp)> info,
             HostBuffers &located, mlir::OpBuilder &gpuModule, int64_t maxArgs, int64_t &fused);

} // namespace lcc

#endif
