//===- VjpUtils.h - builders shared by the VJPs of lcc ops ------*- C++ -*-===//
//
// VJPs are written with lcc ops only, so the backward goes through the same
// decomposition, lowering, fusion and sharding as the forward. These helpers
// infer result types (NumPy broadcasting, reductions) so each VJP reads as
// its formula. Scalars are rank-0 tensors: they broadcast against anything
// and lower to a constant inside the consuming linalg.generic.
//
// Files of the VJPs (all compiled into LccDialect, listed explicitly in
// dialects/lcc/CMakeLists.txt): Elementwise.cpp, Reductions.cpp, Shape.cpp,
// and Nn.cpp, Matmul.cpp, Gather.cpp (picked up when present).
//
//===----------------------------------------------------------------------===//
#ifndef LCC_DIALECTS_LCC_VJP_VJPUTILS_H
#define LCC_DIALECTS_LCC_VJP_VJPUTILS_H

#include "dialects/lcc/LccOps.h"
#include "mlir/IR/Builders.h"

namespace lcc::vjp {

mlir::RankedTensorType tensorType(mlir::Value v);

/// lcc.fill: a tensor of `type` (a RankedTensorType) with every element `value`.
mlir::Value fill(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type, double value);
/// A rank-0 tensor of `like`'s element type holding `value`.
mlir::Value scalar(mlir::OpBuilder &b, mlir::Location loc, mlir::Value like, double value);

/// Broadcasting binary ops; the result type is the broadcast shape with the
/// element type of `lhs`.
mlir::Value add(mlir::OpBuilder &b, mlir::Location loc, mlir::Value lhs, mlir::Value rhs);
mlir::Value sub(mlir::OpBuilder &b, mlir::Location loc, mlir::Value lhs, mlir::Value rhs);
mlir::Value mul(mlir::OpBuilder &b, mlir::Location loc, mlir::Value lhs, mlir::Value rhs);
mlir::Value div(mlir::OpBuilder &b, mlir::Location loc, mlir::Value lhs, mlir::Value rhs);
/// lhs * c for a double constant c.
mlir::Value scale(mlir::OpBuilder &b, mlir::Location loc, mlir::Value lhs, double c);
mlir::Value neg(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v);
/// lcc.cmp (i1 result, broadcast shape).
mlir::Value cmp(mlir::OpBuilder &b, mlir::Location loc, llvm::StringRef predicate,
                mlir::Value lhs, mlir::Value rhs);
/// lcc.where(cond, lhs, rhs) with broadcasting.
mlir::Value select(mlir::OpBuilder &b, mlir::Location loc, mlir::Value cond, mlir::Value lhs,
                   mlir::Value rhs);

mlir::Value reshape(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                    llvm::ArrayRef<int64_t> shape);
mlir::Value broadcastTo(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                        llvm::ArrayRef<int64_t> shape);
/// lcc.reduce_sum over `axes` (non-negative, non-empty).
mlir::Value reduceSum(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                      llvm::ArrayRef<int64_t> axes, bool keepdim);
/// lcc.slice along one axis: [start, limit) with step 1.
mlir::Value sliceAxis(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v, int64_t axis,
                      int64_t start, int64_t limit);
/// lcc.concat of non-empty `parts` along `axis` (a single part is returned as is).
mlir::Value concat(mlir::OpBuilder &b, mlir::Location loc, llvm::ArrayRef<mlir::Value> parts,
                   int64_t axis);

/// The gradient of a broadcast: sums `grad` (of the broadcast shape) over
/// the dimensions that NumPy broadcasting added or stretched, giving a value
/// of `target`'s type. Returns `grad` itself when the shapes already match.
mlir::Value sumToShape(mlir::OpBuilder &b, mlir::Location loc, mlir::Value grad,
                       mlir::Type target);

/// The gradient of a reduction over `axes` (normalized): `grad` (reduced,
/// with or without kept dims) broadcast back to `inputShape`.
mlir::Value unreduce(mlir::OpBuilder &b, mlir::Location loc, mlir::Value grad,
                     llvm::ArrayRef<int64_t> inputShape, llvm::ArrayRef<int64_t> axes);

/// Normalized, sorted reduction axes of a reduce op (`axes` may be negative).
llvm::SmallVector<int64_t> normalizedAxes(llvm::ArrayRef<int64_t> axes, int64_t rank);

} // namespace lcc::vjp

#endif // LCC_DIALECTS_LCC_VJP_VJPUTILS_H
