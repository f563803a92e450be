//===- FoldZeroConcats.cpp - sums of zero-padded gradients become concats -===//
//
// See Passes.td (lcc-fold-zero-concats). The VJP of a slice pads the slice's
// gradient back with zeros (a concat with lcc.fill 0 parts), so a tensor
// sliced three ways (a fused q/k/v projection) gets the gradient
//   add(add(concat(gq, 0), concat(0, gk, 0)), concat(0, gv))
// which lowers to zero fills, copies and full-size adds. This pass rewrites
// an add of two concats along the same axis as one concat of the segments:
// where one side is zero the other side's part is taken as is, where both
// are zero the segment is a (smaller) fill, and only where both carry values
// do they add. A zero part can be split at the other side's boundaries; a
// part with values cannot, so the rewrite applies only when every such part
// lies exactly on a segment. The sum is the same: x + 0 = x exactly, except
// that -0 + 0 gives +0 where the rewrite keeps -0 (a sign of zero no
// consumer of a gradient can observe).
//
//===----------------------------------------------------------------------===//
#include "dialects/lcc/LccOps.h"
#include "passes/tensor/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <map>

namespace lcc {
#define GEN_PASS_DEF_LCCFOLDZEROCONCATSPASS
#include "passes/tensor/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {

/// One part of a concat along the axis: [start, start + size), its value
/// (null for a zero fill).
struct Part {
  int64_t start, size;
  Value value;
};

bool isZeroFill(Value v) {
  auto fill = v.getDefiningOp<lcc::FillOp>();
  return fill && fill.getValue().convertToDouble() == 0.0;
}

std::vector<Part> partsOf(lcc::ConcatOp concat, int64_t axis) {
  std::vector<Part> parts;
  int64_t at = 0;
  for (Value input : concat.getInputs()) {
    int64_t size = llvm::cast<RankedTensorType>(input.getType()).getDimSize(axis);
    parts.push_back({at, size, isZeroFill(input) ? Value() : input});
    at += size;
  }
  return parts;
}

/// The part of `parts` covering [lo, hi): its value, or null for zeros;
/// failure when a part with values does not coincide with the segment.
FailureOr<Value> segment(const std::vector<Part> &parts, int64_t lo, int64_t hi) {
  for (const Part &p : parts) {
    if (p.start + p.size <= lo || p.start >= hi)
      continue;
    if (!p.value)
      return Value();
    if (p.start != lo || p.start + p.size != hi)
      return failure();
    return p.value;
  }
  return failure();
}

struct FoldAddOfZeroPaddedConcats : OpRewritePattern<lcc::AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(lcc::AddOp op, PatternRewriter &rewriter) const override {
    auto lhs = op.getLhs().getDefiningOp<lcc::ConcatOp>();
    auto rhs = op.getRhs().getDefiningOp<lcc::ConcatOp>();
    auto type = llvm::dyn_cast<RankedTensorType>(op.getType());
    if (!lhs || !rhs || !type || !type.hasStaticShape() || lhs.getType() != type ||
        rhs.getType() != type || lhs.getAxis() != rhs.getAxis())
      return rewriter.notifyMatchFailure(op, "not an add of two concats along one axis");
    int64_t axis = int64_t(lhs.getAxis());
    std::vector<Part> a = partsOf(lhs, axis), b = partsOf(rhs, axis);
    // Nothing to gain unless some part is zero.
    if (llvm::all_of(a, [](const Part &p) { return p.value; }) &&
        llvm::all_of(b, [](const Part &p) { return p.value; }))
      return rewriter.notifyMatchFailure(op, "no zero part");
    std::map<int64_t, bool> cuts;
    for (const std::vector<Part> *side : {&a, &b})
      for (const Part &p : *side)
        cuts[p.start] = cuts[p.start + p.size] = true;
    std::vector<int64_t> bounds;
    for (auto &[at, _] : cuts)
      bounds.push_back(at);

    Location loc = op.getLoc();
    SmallVector<Value> parts;
    int64_t zeroStart = -1; // a run of segments zero on both sides
    auto flushZeros = [&](int64_t end) {
      if (zeroStart < 0)
        return;
      SmallVector<int64_t> shape(type.getShape());
      shape[size_t(axis)] = end - zeroStart;
      parts.push_back(lcc::FillOp::create(rewriter, loc, type.clone(shape),
                                          rewriter.getF64FloatAttr(0.0)));
      zeroStart = -1;
    };
    for (size_t i = 0; i + 1 < bounds.size(); ++i) {
      FailureOr<Value> x = segment(a, bounds[i], bounds[i + 1]);
      FailureOr<Value> y = segment(b, bounds[i], bounds[i + 1]);
      if (failed(x) || failed(y))
        return rewriter.notifyMatchFailure(op, "a part with values straddles a boundary");
      if (!*x && !*y) {
        if (zeroStart < 0)
          zeroStart = bounds[i];
        continue;
      }
      flushZeros(bounds[i]);
      if (*x && *y)
        parts.push_back(
            lcc::AddOp::create(rewriter, loc, (*x).getType(), *x, *y).getResult());
      else
        parts.push_back(*x ? *x : *y);
    }
    flushZeros(bounds.back());
    if (parts.size() == 1)
      rewriter.replaceOp(op, parts.front());
    else
      rewriter.replaceOpWithNewOp<lcc::ConcatOp>(op, type, parts, lhs.getAxisAttr());
    return success();
  }
};

struct LccFoldZeroConcatsPass : lcc::impl::LccFoldZeroConcatsPassBase<LccFoldZeroConcatsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldAddOfZeroPaddedConcats>(&getContext());
    // Only this rewrite (dead concats and fills go with it); folding is
    // canonicalize's job later.
    GreedyRewriteConfig config;
    config.enableFolding(false);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns), config))) {
      getOperation()->emitError() << "lcc-fold-zero-concats: did not converge";
      return signalPassFailure();
    }
    // What was left as a full-size add although zeros were involved, and
    // why (lcc-opt shows remarks; the lcc driver does not print them).
    getOperation()->walk([](lcc::AddOp op) {
      auto lhs = op.getLhs().getDefiningOp<lcc::ConcatOp>();
      auto rhs = op.getRhs().getDefiningOp<lcc::ConcatOp>();
      if (!lhs || !rhs || lhs.getAxis() != rhs.getAxis() || lhs.getType() != rhs.getType())
        return;
      auto zero = [](lcc::ConcatOp c) { return llvm::any_of(c.getInputs(), isZeroFill); };
      if (zero(lhs) || zero(rhs))
        op.emitRemark() << "lcc-fold-zero-concats: left as an add: a part with values spans "
                           "a boundary of the other concat";
    });
  }
};

} // namespace
