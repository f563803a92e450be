//===- CallAnalysis.h - cheaper one-shot analysis of func.call --*- C++ -*-===//
//
// Upstream's func.call bufferization model answers each analysis query by
// copying the callee's per-argument sets out of the analysis state, so a
// call of K operands costs O(K^2) in one-shot analysis; lcc's steps call
// layer functions of 20-60 buffers (benchmarks/bufferize_calls.py,
// benchmarks/README.md). This installs the same answers read in place.
// The reverse query (which operands a result aliases) upstream's default
// answers by asking every operand; for a call that is a callee lookup per
// operand, for an scf.for a search of its inits per operand (O(K^2) for the
// micro-batch loop carrying K gradient sums): lcc answers it directly.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_BUFFER_CALLANALYSIS_H
#define LCC_PASSES_BUFFER_CALLANALYSIS_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace lcc {

/// When the func dialect is loaded, replaces the analysis queries of
/// func.call's BufferizableOpInterface model (read, written, aliasing
/// results and operands) with ones that give the same answers without
/// copies; when the scf dialect is loaded, scf.for's aliasing operands. Must be
/// called after upstream's func bufferization models are registered
/// (mlir::registerAllDialects): it patches the model they attach, and
/// leaves everything else (bufferize, buffer types) to it.
void registerCallAnalysis(mlir::DialectRegistry &registry);

} // namespace lcc

#endif
