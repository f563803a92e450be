//===- Decompose.cpp - split composite lcc ops ----------------------------===//
//
// lcc.attention becomes
//   s = matmul(q, k, transpose_rhs) * scale  [-> causal_mask]  -> softmax(-1)
//   o = matmul(s, v)
// Grouped-query key/value heads [B, Hkv, T, D] are repeated to [B, H, T, D]
// by reshape [B, Hkv, 1, T, D] -> broadcast_to [B, Hkv, G, T, D] -> reshape,
// so query head h = hkv * G + g reads key/value head h / G, as documented.
//
//===----------------------------------------------------------------------===//
#include "dialects/lcc/LccOps.h"
#include "passes/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include <limits>

namespace lcc {
#define GEN_PASS_DEF_LCCDECOMPOSEPASS
#include "passes/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {

/// [B, Hkv, T, D] -> [B, Hkv * groups, T, D] with each head repeated `groups` times.
Value repeatHeads(PatternRewriter &rewriter, Location loc, Value kv, int64_t groups) {
  auto type = llvm::cast<RankedTensorType>(kv.getType());
  if (groups == 1)
    return kv;
  ArrayRef<int64_t> s = type.getShape();
  Type elem = type.getElementType();
  auto t5 = RankedTensorType::get({s[0], s[1], 1, s[2], s[3]}, elem);
  auto b5 = RankedTensorType::get({s[0], s[1], groups, s[2], s[3]}, elem);
  auto t4 = RankedTensorType::get({s[0], s[1] * groups, s[2], s[3]}, elem);
  Value r = lcc::ReshapeOp::create(rewriter, loc, t5, kv);
  r = lcc::BroadcastToOp::create(rewriter, loc, b5, r);
  return lcc::ReshapeOp::create(rewriter, loc, t4, r);
}

struct DecomposeAttention : OpRewritePattern<lcc::AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(lcc::AttentionOp op, PatternRewriter &rewriter) const override {
    if (!op.getQuery().getType().hasStaticShape() || !op.getKey().getType().hasStaticShape())
      return rewriter.notifyMatchFailure(op, "dynamic shapes");
    Location loc = op.getLoc();
    auto qType = op.getQuery().getType();
    auto kType = op.getKey().getType();
    Type elem = qType.getElementType();
    int64_t b = qType.getDimSize(0), h = qType.getDimSize(1), tq = qType.getDimSize(2);
    int64_t tk = kType.getDimSize(2);
    int64_t groups = h / kType.getDimSize(1);

    Value key = repeatHeads(rewriter, loc, op.getKey(), groups);
    Value value =
        op.getValue() == op.getKey() ? key : repeatHeads(rewriter, loc, op.getValue(), groups);

    auto scoresType = RankedTensorType::get({b, h, tq, tk}, elem);
    Value scores = lcc::MatmulOp::create(rewriter, loc, scoresType, op.getQuery(), key,
                                         /*transpose_lhs=*/false, /*transpose_rhs=*/true);
    auto scalarType = RankedTensorType::get({}, elem);
    auto scaleAttr = DenseElementsAttr::get(
        scalarType, rewriter.getFloatAttr(elem, op.getScaleOrDefault()).getValue());
    Value scale = lcc::ConstantOp::create(rewriter, loc, scalarType, scaleAttr);
    scores = lcc::MulOp::create(rewriter, loc, scoresType, scores, scale);
    if (op.getCausal())
      scores = lcc::CausalMaskOp::create(
          rewriter, loc, scoresType, scores,
          rewriter.getF64FloatAttr(-std::numeric_limits<double>::infinity()));
    Value probs =
        lcc::SoftmaxOp::create(rewriter, loc, scoresType, scores, rewriter.getI64IntegerAttr(-1));
    rewriter.replaceOpWithNewOp<lcc::MatmulOp>(op, op.getType(), probs, value,
                                               /*transpose_lhs=*/false,
                                               /*transpose_rhs=*/false);
    return success();
  }
};

struct LccDecomposePass : lcc::impl::LccDecomposePassBase<LccDecomposePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<DecomposeAttention>(&getContext());
    // Only the rewrite is wanted here; folding is canonicalize's job later.
    GreedyRewriteConfig config;
    config.enableFolding(false);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      return signalPassFailure();
    // The repeat-heads reshapes need static sizes; lcc models have them, so
    // a dynamic attention is a frontend bug worth reporting here.
    WalkResult left = getOperation()->walk([](lcc::AttentionOp op) {
      op.emitError() << "cannot decompose 'lcc.attention' with dynamic shapes "
                     << op.getQuery().getType() << " and " << op.getKey().getType()
                     << "; expected static [B, H, T, D]";
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
