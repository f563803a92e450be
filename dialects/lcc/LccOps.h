//===- LccOps.h - operations of the lcc dialect -----------------*- C++ -*-===//
#ifndef LCC_DIALECTS_LCC_LCCOPS_H
#define LCC_DIALECTS_LCC_LCCOPS_H

#include "dialects/lcc/LccDialect.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/IR/TypeUtilities.h"
#include <limits>
#include <optional>

namespace lcc {
/// Default cost: one flop per result element.
int64_t defaultElementwiseFlops(mlir::Operation *op);
/// Default traffic: every operand read once, every result written once.
int64_t defaultBytesAccessed(mlir::Operation *op);
/// Bytes of a statically shaped value of `type` (0 otherwise).
int64_t staticBytes(mlir::Type type);

/// NumPy broadcasting of two static shapes; std::nullopt when incompatible.
std::optional<llvm::SmallVector<int64_t>> broadcastShapes(llvm::ArrayRef<int64_t> a,
                                                          llvm::ArrayRef<int64_t> b);
/// Normalizes a possibly negative axis against `rank`; -1 when out of range.
int64_t normalizeAxis(int64_t axis, int64_t rank);
/// The process groups (`lcc.process_groups`, name -> size, names sorted) of
/// the nearest enclosing module that declares them; null when none does.
mlir::DictionaryAttr processGroups(mlir::Operation *op);

/// all_reduce, all_gather and reduce_scatter, the collectives that may run
/// asynchronously (a `ticket`, waited for by lcc.wait): their input, ticket
/// and whether they work in place (all_reduce). Nothing for any other op.
struct AsyncCollective {
  mlir::Value input;
  std::optional<uint64_t> ticket;
  bool inPlace = false;
};
std::optional<AsyncCollective> asAsyncCollective(mlir::Operation *op);
} // namespace lcc

#include "dialects/lcc/LccInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/lcc/LccOps.h.inc"

#endif
