//===- RuntimeCalls.h - ops that bufferize into runtime calls ---*- C++ -*-===//
//
// Collectives and the fused attention stay lcc ops on tensors and become
// calls of the runtime's C functions during one-shot bufferization. Every
// argument of those functions is an int64: buffers as the address of their
// first element, counts and codes as integers. These are the pieces both
// share.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_DIALECTS_LCC_LOWERING_RUNTIMECALLS_H
#define LCC_DIALECTS_LCC_LOWERING_RUNTIMECALLS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace lcc::lowering {

/// Declares `name(i64 x args) -> (i64 x results)` in `op`'s module once; an
/// error on a symbol of that name with another signature.
mlir::FailureOr<mlir::func::FuncOp> declareRuntime(mlir::Operation *op, llvm::StringRef name,
                                                   unsigned args, unsigned results);

/// The address of the first element of memref `buf`, as i64.
mlir::Value bufferAddress(mlir::OpBuilder &b, mlir::Location loc, mlir::Value buf);

/// `buf` itself when it is static and contiguous row-major, else a new
/// contiguous buffer holding a copy of it.
mlir::Value contiguousBuffer(mlir::OpBuilder &b, mlir::Location loc, mlir::Value buf);

mlir::Value i64Constant(mlir::OpBuilder &b, mlir::Location loc, int64_t v);

} // namespace lcc::lowering

#endif
