//===- Utils.h - shared helpers of the lcc lowering patterns ----*- C++ -*-===//
//
// Every lowering builds linalg.generic ops over static shapes; these helpers
// keep the indexing-map and element-type bookkeeping in one place so that the
// per-family pattern files read as the math they implement.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_DIALECTS_LCC_LOWERING_UTILS_H
#define LCC_DIALECTS_LCC_LOWERING_UTILS_H

#include "dialects/lcc/LccOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace lcc::lowering {

using BodyFn = llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location, mlir::ValueRange)>;

/// The type scalar float math runs in: f32 for bf16/f16 (libm and most
/// targets have no half-precision transcendental functions, and half
/// accumulators lose too much), the element type itself otherwise.
mlir::Type computeType(mlir::Type elementType);

/// Float scalar `v` widened/narrowed to `to` (no-op when equal).
mlir::Value castFloat(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v, mlir::Type to);

/// Any supported scalar conversion: float<->float, int->float (i1 as
/// unsigned, so true becomes 1), float->int, int<->int.
mlir::Value castScalar(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v, mlir::Type to);

/// A scalar constant of float or integer type `type` holding `value`.
mlir::Value scalarConstant(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type, double value);

mlir::Value emptyTensor(mlir::OpBuilder &b, mlir::Location loc, llvm::ArrayRef<int64_t> shape,
                        mlir::Type elementType);

/// tensor.empty + linalg.fill with the scalar `value`.
mlir::Value filledTensor(mlir::OpBuilder &b, mlir::Location loc, llvm::ArrayRef<int64_t> shape,
                         mlir::Type elementType, mlir::Value value);

/// Map from the loops of a result of shape `resultShape` to an operand of
/// shape `operandShape` under NumPy broadcasting: missing leading dims are
/// dropped, size-1 dims against larger result dims read index 0.
mlir::AffineMap broadcastMap(mlir::MLIRContext *ctx, llvm::ArrayRef<int64_t> operandShape,
                             llvm::ArrayRef<int64_t> resultShape);

/// Map from `numLoops` loops to the dims that are not in `dropped`.
mlir::AffineMap dropDimsMap(mlir::MLIRContext *ctx, unsigned numLoops,
                            llvm::ArrayRef<bool> dropped);

llvm::SmallVector<mlir::utils::IteratorType> parallelIterators(unsigned n);

/// A linalg.generic producing a fresh tensor of `resultShape` x
/// `resultElementType`, reading `inputs` with broadcasting; `body` gets the
/// input scalars (not the output) and returns the result scalar.
mlir::Value buildElementwise(mlir::OpBuilder &b, mlir::Location loc,
                             llvm::ArrayRef<int64_t> resultShape, mlir::Type resultElementType,
                             mlir::ValueRange inputs, BodyFn body);

/// Same, with explicit input maps over the result's loops.
mlir::Value buildMapped(mlir::OpBuilder &b, mlir::Location loc, llvm::ArrayRef<int64_t> resultShape,
                        mlir::Type resultElementType, mlir::ValueRange inputs,
                        llvm::ArrayRef<mlir::AffineMap> inputMaps, BodyFn body);

/// A reduction over loops of `loopShape`, where `reduced[d]` marks the
/// reduction loops. `inputs` are read through `inputMaps`; the accumulator
/// (shape: loopShape without reduced dims, element `accType`) starts at
/// `init`. `body` gets the input scalars followed by the accumulator and
/// returns the new accumulator.
mlir::Value buildReduction(mlir::OpBuilder &b, mlir::Location loc,
                           llvm::ArrayRef<int64_t> loopShape, llvm::ArrayRef<bool> reduced,
                           mlir::ValueRange inputs, llvm::ArrayRef<mlir::AffineMap> inputMaps,
                           mlir::Type accType, double init, BodyFn body);

/// Elementwise conversion of a whole tensor (identity when already of `to`).
mlir::Value convertTensor(mlir::OpBuilder &b, mlir::Location loc, mlir::Value tensor,
                          mlir::Type to);

/// Row-major reshape via collapse-to-1D and expand (views, no copies).
mlir::Value reshapeTensor(mlir::OpBuilder &b, mlir::Location loc, mlir::Value tensor,
                          llvm::ArrayRef<int64_t> shape);

/// `linalg.index` of loop `dim` converted to i64.
mlir::Value indexI64(mlir::OpBuilder &b, mlir::Location loc, int64_t dim);

mlir::RankedTensorType tensorType(mlir::Value v);

// Per-family pattern registration (one file each).
void populateElementwisePatterns(mlir::RewritePatternSet &patterns);
void populateReductionPatterns(mlir::RewritePatternSet &patterns);
void populateNnPatterns(mlir::RewritePatternSet &patterns);
void populateShapePatterns(mlir::RewritePatternSet &patterns);
void populateMatmulPatterns(mlir::RewritePatternSet &patterns);
void populateInitPatterns(mlir::RewritePatternSet &patterns);
void populateScatterPatterns(mlir::RewritePatternSet &patterns);
void populateCollectivePatterns(mlir::RewritePatternSet &patterns);

} // namespace lcc::lowering

#endif
