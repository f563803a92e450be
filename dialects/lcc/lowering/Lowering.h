//===- Lowering.h - lcc op lowering patterns --------------------*- C++ -*-===//
#ifndef LCC_DIALECTS_LCC_LOWERING_LOWERING_H
#define LCC_DIALECTS_LCC_LOWERING_LOWERING_H

#include "mlir/IR/PatternMatch.h"

namespace lcc {
/// Patterns rewriting lcc ops into linalg/tensor/arith/math on tensors.
void populateLccToLinalgPatterns(mlir::RewritePatternSet &patterns);
} // namespace lcc

#endif
