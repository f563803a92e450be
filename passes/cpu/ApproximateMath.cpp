//===- ApproximateMath.cpp - inline polynomials for f32 libm calls --------===//
//
// See Passes.td (lcc-approximate-math) for what and why. Upstream has the
// patterns but no pass that runs them (only a test pass), so this one selects
// them by function name and applies them greedily.
//
//===----------------------------------------------------------------------===//
#include "passes/cpu/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/StringSet.h"

namespace lcc {
#define GEN_PASS_DEF_LCCAPPROXIMATEMATHPASS
#include "passes/cpu/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {

// The functions upstream approximates for f32. erfc and exp2 are missing on
// purpose: nothing in lcc emits them yet, and every name here is tested.
constexpr llvm::StringLiteral kKnown[] = {"exp", "expm1", "tanh", "erf", "log", "log1p", "log2"};

struct LccApproximateMathPass
    : lcc::impl::LccApproximateMathPassBase<LccApproximateMathPass> {
  using Base::Base;

  void runOnOperation() override {
    llvm::StringSet<> chosen;
    if (functions.empty()) {
      for (llvm::StringRef name : kKnown)
        chosen.insert(("math." + name).str());
    }
    for (const std::string &name : functions) {
      if (!llvm::is_contained(kKnown, llvm::StringRef(name))) {
        std::string known;
        for (llvm::StringRef k : kKnown)
          known += (known.empty() ? "" : ", ") + k.str();
        getOperation()->emitError() << "lcc-approximate-math: no polynomial for '" << name
                                    << "'; known: " << known;
        return signalPassFailure();
      }
      chosen.insert("math." + name);
    }
    // Only the chosen ops and what their rewrites create: a greedy rewrite of
    // the whole module would also fold and simplify every other op, work
    // nobody asked for on the step's hundreds of thousands of ops.
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (chosen.contains(op->getName().getStringRef()))
        ops.push_back(op);
    });
    if (ops.empty())
      return;
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(
        patterns, [&](llvm::StringRef op) { return chosen.contains(op); });
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
    config.enableFolding(false);
    if (failed(applyOpPatternsGreedily(ops, std::move(patterns), config)))
      return signalPassFailure();
  }
};

} // namespace
