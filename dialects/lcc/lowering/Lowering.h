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

/// Whether `op` stays an lcc op through the linalg phase and becomes a
/// runtime call during bufferization: a collective, or the attention (and its
/// gradient) that lcc-decompose kept whole for the fused kernels.
bool becomesRuntimeCall(mlir::Operation *op);

/// One-shot bufferization models of the ops that become runtime calls: the
/// collectives (lowering/Collectives.cpp) and, kept whole by lcc-decompose,
/// lcc.attention and lcc.attention_grad (lowering/Attention.cpp).
void registerCollectiveBufferization(mlir::DialectRegistry &registry);
void registerAttentionBufferization(mlir::DialectRegistry &registry);
} // namespace lcc

#endif
