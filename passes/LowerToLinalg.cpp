//===- LowerToLinalg.cpp - lcc to linalg on tensors -----------------------===//
#include "passes/Passes.h"
#include "dialects/lcc/LccOps.h"

namespace lcc {
#define GEN_PASS_DEF_LCCLOWERTOLINALGPASS
#include "passes/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {
struct LccLowerToLinalgPass : lcc::impl::LccLowerToLinalgPassBase<LccLowerToLinalgPass> {
  void runOnOperation() override {}
};
} // namespace
