//===- LoopNest.h - linalg ops as loops with register accumulators -*- C++ -*-===//
//
// The loop form lcc's CPU kernels are generated in (used by
// lcc-outline-kernels). Like upstream's linalgOpToLoops, one scf.for per
// iteration dimension in order, but a trailing run of reduction dimensions
// (softmax's sum over the row, layer norm's mean, a dot product) accumulates
// in loop-carried values instead of loading and storing the output every
// iteration. With the output out of memory, LLVM keeps the accumulator in a
// register, hoists what the row loop does not change, and (the combiner is
// marked reassociable) vectorizes the reduction.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_LOOPNEST_H
#define LCC_PASSES_LOOPNEST_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace lcc {

/// Replaces `op` (buffer semantics, static loop ranges) by its loop nest;
/// returns the loops, loop i iterating dimension i. Fails (changing nothing)
/// for dynamic ranges or ops with tensor semantics.
mlir::FailureOr<llvm::SmallVector<mlir::scf::ForOp>> lowerToLoopNest(mlir::OpBuilder &b,
                                                                     mlir::linalg::LinalgOp op);

/// The same with the first `outer.size()` dimensions not looped over but
/// fixed to the given index values (a GPU thread's or block's coordinates,
/// passes/gpu/GpuKernels.cpp); their entries in the result are null. The
/// caller guarantees that different values of them write different outputs.
mlir::FailureOr<llvm::SmallVector<mlir::scf::ForOp>>
lowerToLoopNest(mlir::OpBuilder &b, mlir::linalg::LinalgOp op, mlir::ValueRange outer);

/// Whether loop dimension `d` of `op` is parallel and indexes every output
/// directly (a plain dimension of each output map): different values of it
/// write different output elements, so they can run on different threads.
bool ownsOutputs(mlir::linalg::LinalgOp op, unsigned d);

/// Indices into an operand with indexing map `map` for loop variables `ivs`
/// (null entries: loops not built yet, which the map must not use).
llvm::SmallVector<mlir::Value> indicesFor(mlir::OpBuilder &b, mlir::Location loc,
                                          mlir::AffineMap map, mlir::ValueRange ivs);

/// Clones `op`'s body at `b` with its block arguments bound to `args` and
/// linalg.index to `ivs`; returns the yielded values. `reassociate` marks the
/// yielded combiners reassoc (a reduction LLVM may vectorize).
llvm::SmallVector<mlir::Value> cloneBody(mlir::OpBuilder &b, mlir::linalg::LinalgOp op,
                                         mlir::ValueRange args, mlir::ValueRange ivs,
                                         bool reassociate);

} // namespace lcc

#endif
