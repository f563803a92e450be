//===- Decompose.cpp - split composite lcc ops ----------------------------===//
#include "passes/Passes.h"
#include "dialects/lcc/LccOps.h"

namespace lcc {
#define GEN_PASS_DEF_LCCDECOMPOSEPASS
#include "passes/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {
struct LccDecomposePass : lcc::impl::LccDecomposePassBase<LccDecomposePass> {
  void runOnOperation() override {
    // TODO(helper): attention decomposition.
  }
};
} // namespace
