//===- Lowering.h - lcc op lowering patterns --------------------*- C++ -*-===//
#ifndef LCC_DIALECTS_LCC_LOWERING_LOWERING_H
#define LCC_DIALECTS_LCC_LOWERING_LOWERING_H

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/PatternMatch.h"

namespace lcc {
/// Patterns rewriting lcc ops into linalg/tensor/arith/math on tensors.
void populateLccToLinalgPatterns(mlir::RewritePatternSet &patterns);

/// Whether `op` is a collective (all_reduce, ...): these stay lcc ops through
/// the linalg phase and become runtime calls during bufferization.
bool isCollective(mlir::Operation *op);

/// One-shot bufferization models of the collectives (lowering/Collectives.cpp).
void registerCollectiveBufferization(mlir::DialectRegistry &registry);
} // namespace lcc

#endif
