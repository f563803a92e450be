//===- ShardUtils.h - shared pieces of the sharding passes ------*- C++ -*-===//
//
// Data parallelism and ZeRO both start where lcc-build-train-step marks each
// parameter's gradient (lcc.gradient), both reduce the loss over the
// data-parallel ranks, and both group small gradients into buckets so each
// collective moves enough bytes to run near the network's bandwidth. ZeRO
// partitions a tensor the way the ZeRO paper (and DeepSpeed) does: flattened
// to one dimension, zero-padded to a multiple of the group size N, and cut
// into N equal contiguous parts; rank r owns part r. Flattening makes every
// tensor shardable whatever its shape; the padding is zeros, which every
// optimizer formula maps to zeros, and it is cut off again when gathering.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_SHARDUTILS_H
#define LCC_PASSES_SHARDUTILS_H

#include "dialects/lcc/LccOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace lcc::shard {

/// Adds `group = size` to the module's lcc.process_groups; an error when the
/// group is already declared with another size.
mlir::LogicalResult declareGroup(mlir::ModuleOp module, llvm::StringRef group, int64_t size,
                                 llvm::StringRef pass);

/// The forward function a tensor-parallel pass splits before autodiff:
/// @`function`, if it exists, tp >= 1 and its backward (@`function`_grad)
/// does not exist yet; otherwise an error naming `pass` (and `what` it
/// splits) and null.
mlir::func::FuncOp forwardToSplit(mlir::ModuleOp module, llvm::StringRef function, int64_t tp,
                                  llvm::StringRef pass, llvm::StringRef what);

/// How a tensor of type `full` is cut into `parts` flat parts.
struct FlatLayout {
  mlir::RankedTensorType full;
  int64_t numel = 0; // elements of `full`
  int64_t parts = 1; // N
  int64_t shard = 0; // elements per part: ceil(numel / N)
  int64_t padded() const { return parts * shard; }
  mlir::RankedTensorType shardType() const;
};
FlatLayout flatLayout(mlir::RankedTensorType full, int64_t parts);

/// `full` flattened and zero-padded to layout.padded() elements.
mlir::Value flattenPadded(mlir::OpBuilder &b, mlir::Location loc, mlir::Value full,
                          const FlatLayout &layout);
/// This rank's part of a tensor every rank holds (no communication).
mlir::Value toShard(mlir::OpBuilder &b, mlir::Location loc, mlir::Value full,
                    const FlatLayout &layout, llvm::StringRef group);
/// The whole tensor from every rank's part: all_gather, unpad, reshape.
mlir::Value fromShard(mlir::OpBuilder &b, mlir::Location loc, mlir::Value shard,
                      const FlatLayout &layout, llvm::StringRef group);

/// The sharding attribute written on a partitioned argument or result
/// (`lcc.shard = {group = "dp", parts = N, shape = [full shape]}`); the
/// packager copies it into the manifest so the runtime can cut and
/// reassemble checkpoints.
mlir::DictionaryAttr shardAttr(mlir::MLIRContext *ctx, const FlatLayout &layout,
                               llvm::StringRef group);
/// The attribute of a tensor split along one dimension (tensor
/// parallelism): `{group, parts, dim, blocks, shape = [whole shape]}`.
mlir::DictionaryAttr splitAttr(mlir::MLIRContext *ctx, llvm::StringRef group, int64_t parts,
                               int64_t dim, int64_t blocks, llvm::ArrayRef<int64_t> shape);
/// The same for a part of a tensor that is itself a tensor-parallel piece
/// (`within`, its lcc.shard): `{..., within = {group = "tp", ...}}`, so the
/// runtime cuts the whole tensor by tp first, then by dp. A null `within`
/// gives shardAttr's.
mlir::DictionaryAttr shardAttr(mlir::MLIRContext *ctx, const FlatLayout &layout,
                               llvm::StringRef group, mlir::DictionaryAttr within);

/// The gradient markers of `step`, ordered by when their gradient is ready
/// (the position of the value's definition; backward runs last layer first).
llvm::SmallVector<GradientOp> markersByReadiness(mlir::func::FuncOp step);

/// Consecutive tensors (given by type) grouped so each group holds at most
/// `bytes` of one element type (a tensor larger than that is a group of its
/// own); `apart(first, i)`, when given, also starts a new group at i. Returns
/// the indices of each group.
llvm::SmallVector<llvm::SmallVector<size_t>>
bucketIndices(llvm::ArrayRef<mlir::RankedTensorType> types, int64_t bytes,
              llvm::function_ref<bool(size_t first, size_t i)> apart = nullptr);

/// Consecutive markers grouped so each group holds at most `bytes` of
/// gradients of one element type (bucketIndices).
llvm::SmallVector<llvm::SmallVector<GradientOp>> buckets(llvm::ArrayRef<GradientOp> markers,
                                                         int64_t bytes);

/// The point right after the last definition of `values` in `block` (the
/// block's start when all are arguments): where a collective over them can
/// be issued as soon as they are all computed.
void setInsertionAfterAll(mlir::OpBuilder &b, mlir::Block *block, mlir::ValueRange values);

/// `values` all-reduced (`reduction`) over `group` in one collective: one
/// value as it is; several flattened end to end into one buffer, reduced
/// once and cut again (a bucket of gradients). The results, in order.
llvm::SmallVector<mlir::Value> allReduceTogether(mlir::OpBuilder &b, mlir::Location loc,
                                                 mlir::ValueRange values, llvm::StringRef group,
                                                 llvm::StringRef reduction);

/// Replaces `fn`'s result tagged {lcc.output = "loss"} (or its only rank-0
/// result) with its mean over `group`, so every rank reports the global loss.
void averageLoss(mlir::func::FuncOp fn, llvm::StringRef group);

/// Ops that compute each result element from the same-position elements of
/// their operands (with broadcasting): unary math and convert, binary
/// arithmetic, cmp and where. A split or partition of the operands carries
/// over to the result.
bool isElementwise(mlir::Operation *op);

/// Bytes of a tensor type's elements.
int64_t byteSize(mlir::RankedTensorType type);

} // namespace lcc::shard

#endif
