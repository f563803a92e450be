//===- Decompose.cpp - split composite lcc ops ----------------------------===//
//
// lcc.attention becomes
//   s = matmul(q, k, transpose_rhs) * scale  [-> causal_mask]  -> softmax(-1)
//   o = matmul(s, v)
// Grouped-query key/value heads [B, Hkv, T, D] are repeated to [B, H, T, D]
// by reshape [B, Hkv, 1, T, D] -> broadcast_to [B, Hkv, G, T, D] -> reshape,
// so query head h = hkv * G + g reads key/value head h / G, as documented.
//
// lcc.attention_grad recomputes the probabilities P the same way and gives
// dV = P^T dO, dS = P (dP - rowsum(dP P)) scale with dP = dO V^T,
// dQ = dS K, dK = dS^T Q. It needs no repeated heads: q [B, H, Tq, D] is,
// row-major, [B, Hkv, G * Tq, D] (query head h = hkv * G + g), so every
// product is a batched matmul over [B, Hkv], and contracting over G * Tq in
// dK and dV is exactly the sum over the group's query heads. The causal mask
// needs (Tq, Tk) last, so it runs on a [B, Hkv, G, Tq, Tk] view.
//
// With keep-attention both stay whole (the runtime's fused kernels).
//
//===----------------------------------------------------------------------===//
#include "dialects/lcc/LccOps.h"
#include "dialects/lcc/vjp/VjpUtils.h"
#include "passes/tensor/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include <limits>

namespace lcc {
#define GEN_PASS_DEF_LCCDECOMPOSEPASS
#include "passes/tensor/Passes.h.inc"
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

/// Whether an attention with these query and key types stays whole: its
/// Tq * Tk is at least `minScores` (> 0), where the fused kernels beat the
/// decomposition's [Tq, Tk] matrices.
bool keptWhole(RankedTensorType q, RankedTensorType k, int64_t minScores) {
  return minScores > 0 && q.hasStaticShape() && k.hasStaticShape() &&
         q.getDimSize(2) * k.getDimSize(2) >= minScores;
}

struct DecomposeAttention : OpRewritePattern<lcc::AttentionOp> {
  DecomposeAttention(MLIRContext *ctx, int64_t minScores)
      : OpRewritePattern(ctx), minScores(minScores) {}
  int64_t minScores;

  LogicalResult matchAndRewrite(lcc::AttentionOp op, PatternRewriter &rewriter) const override {
    if (keptWhole(op.getQuery().getType(), op.getKey().getType(), minScores))
      return rewriter.notifyMatchFailure(op, "kept whole for the fused kernels");
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

struct DecomposeAttentionGrad : OpRewritePattern<lcc::AttentionGradOp> {
  DecomposeAttentionGrad(MLIRContext *ctx, int64_t minScores)
      : OpRewritePattern(ctx), minScores(minScores) {}
  int64_t minScores;

  LogicalResult matchAndRewrite(lcc::AttentionGradOp op,
                                PatternRewriter &b) const override {
    auto qType = op.getQuery().getType(), kType = op.getKey().getType();
    if (keptWhole(qType, kType, minScores))
      return b.notifyMatchFailure(op, "kept whole for the fused kernels");
    if (!qType.hasStaticShape() || !kType.hasStaticShape())
      return b.notifyMatchFailure(op, "dynamic shapes");
    Location loc = op.getLoc();
    Type elem = qType.getElementType();
    int64_t bsz = qType.getDimSize(0), heads = qType.getDimSize(1), tq = qType.getDimSize(2),
            dim = qType.getDimSize(3);
    int64_t kvHeads = kType.getDimSize(1), tk = kType.getDimSize(2);
    int64_t groups = heads / kvHeads;
    auto ty = [&](ArrayRef<int64_t> shape) { return RankedTensorType::get(shape, elem); };
    auto rowsType = ty({bsz, kvHeads, groups * tq, dim});
    auto scoresType = ty({bsz, kvHeads, groups * tq, tk});
    Value q = lcc::ReshapeOp::create(b, loc, rowsType, op.getQuery());
    Value g = lcc::ReshapeOp::create(b, loc, rowsType, op.getGradOut());
    Value k = op.getKey(), v = op.getValue();
    Value scale = lcc::vjp::scalar(b, loc, op.getQuery(), op.getScaleOrDefault());

    // P, recomputed as the forward's decomposition computes it.
    Value s = lcc::MatmulOp::create(b, loc, scoresType, q, k, /*transpose_lhs=*/false,
                                    /*transpose_rhs=*/true);
    s = lcc::vjp::mul(b, loc, s, scale);
    Value p;
    if (op.getCausal()) {
      auto groupedType = ty({bsz, kvHeads, groups, tq, tk});
      Value s5 = lcc::ReshapeOp::create(b, loc, groupedType, s);
      s5 = lcc::CausalMaskOp::create(b, loc, groupedType, s5,
                                     b.getF64FloatAttr(-std::numeric_limits<double>::infinity()));
      Value p5 = lcc::SoftmaxOp::create(b, loc, groupedType, s5, b.getI64IntegerAttr(-1));
      p = lcc::ReshapeOp::create(b, loc, scoresType, p5);
    } else {
      p = lcc::SoftmaxOp::create(b, loc, scoresType, s, b.getI64IntegerAttr(-1));
    }

    Value dv = lcc::MatmulOp::create(b, loc, kType, p, g, /*transpose_lhs=*/true,
                                     /*transpose_rhs=*/false);
    // Masked entries have P = 0 and so get no gradient; the scale is folded
    // in once here.
    Value dp = lcc::MatmulOp::create(b, loc, scoresType, g, v, /*transpose_lhs=*/false,
                                     /*transpose_rhs=*/true);
    Value dot = lcc::vjp::reduceSum(b, loc, lcc::vjp::mul(b, loc, dp, p), {3}, /*keepdim=*/true);
    Value ds = lcc::vjp::mul(b, loc, p, lcc::vjp::sub(b, loc, dp, dot));
    ds = lcc::vjp::mul(b, loc, ds, scale);
    Value dq = lcc::MatmulOp::create(b, loc, rowsType, ds, k, /*transpose_lhs=*/false,
                                     /*transpose_rhs=*/false);
    dq = lcc::ReshapeOp::create(b, loc, qType, dq);
    Value dk = lcc::MatmulOp::create(b, loc, kType, ds, q, /*transpose_lhs=*/true,
                                     /*transpose_rhs=*/false);
    b.replaceOp(op, {dq, dk, dv});
    return success();
  }
};

struct LccDecomposePass : lcc::impl::LccDecomposePassBase<LccDecomposePass> {
  using LccDecomposePassBase::LccDecomposePassBase;

  void runOnOperation() override {
    // The fused kernels take them whole (lowered at bufferization).
    if (keepAttention)
      return;
    RewritePatternSet patterns(&getContext());
    patterns.add<DecomposeAttention, DecomposeAttentionGrad>(&getContext(),
                                                             int64_t(keepAttentionMinScores));
    // Only the rewrite is wanted here; folding is canonicalize's job later.
    GreedyRewriteConfig config;
    config.enableFolding(false);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      return signalPassFailure();
    // The repeat-heads reshapes need static sizes; lcc models have them, so
    // a dynamic attention is a frontend bug worth reporting here.
    int64_t minScores = keepAttentionMinScores;
    WalkResult left = getOperation()->walk([&](Operation *op) {
      if (!llvm::isa<lcc::AttentionOp, lcc::AttentionGradOp>(op) ||
          keptWhole(llvm::cast<RankedTensorType>(op->getOperand(0).getType()),
                    llvm::cast<RankedTensorType>(op->getOperand(1).getType()), minScores))
        return WalkResult::advance();
      op->emitError() << "cannot decompose '" << op->getName() << "' with dynamic shapes "
                      << op->getOperand(0).getType() << " and " << op->getOperand(1).getType()
                      << "; expected static [B, H, T, D]";
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
