//===- Shape.cpp - reshape, transpose, slice, concat, broadcast_to, gather ===//
//
// Shape ops become tensor views where the layout allows (reshape, slice) so
// bufferization can alias instead of copying; data movement that cannot be a
// view is a linalg op. All of them work for any element type (ints, i1).
//
//===----------------------------------------------------------------------===//
#include "dialects/lcc/lowering/Utils.h"

using namespace mlir;

namespace lcc::lowering {
namespace {

struct ReshapeLowering : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op, PatternRewriter &rewriter) const override {
    rewriter.replaceOp(
        op, reshapeTensor(rewriter, op.getLoc(), op.getInput(), op.getType().getShape()));
    return success();
  }
};

struct TransposeLowering : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op, PatternRewriter &rewriter) const override {
    auto type = op.getType();
    Value init = emptyTensor(rewriter, op.getLoc(), type.getShape(), type.getElementType());
    // linalg.transpose uses the same convention: result dim i = input dim perm[i].
    auto t = linalg::TransposeOp::create(rewriter, op.getLoc(), op.getInput(), init, op.getPerm());
    rewriter.replaceOp(op, t->getResult(0));
    return success();
  }
};

struct SliceLowering : OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceOp op, PatternRewriter &rewriter) const override {
    auto type = op.getType();
    int64_t rank = type.getRank();
    SmallVector<OpFoldResult> offsets, sizes, strides;
    for (int64_t d = 0; d < rank; ++d) {
      offsets.push_back(rewriter.getIndexAttr(op.getStart()[d]));
      sizes.push_back(rewriter.getIndexAttr(type.getDimSize(d)));
      strides.push_back(rewriter.getIndexAttr(op.getStep() ? (*op.getStep())[d] : 1));
    }
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(op, type, op.getInput(), offsets, sizes,
                                                        strides);
    return success();
  }
};

/// Each input is written into its window of one destination tensor.
struct ConcatLowering : OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConcatOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = op.getType();
    int64_t rank = type.getRank();
    int64_t axis = normalizeAxis(op.getAxis(), rank);
    Value dest = emptyTensor(rewriter, loc, type.getShape(), type.getElementType());
    int64_t at = 0;
    for (Value in : op.getInputs()) {
      auto t = tensorType(in);
      SmallVector<OpFoldResult> offsets, sizes, strides;
      for (int64_t d = 0; d < rank; ++d) {
        offsets.push_back(rewriter.getIndexAttr(d == axis ? at : 0));
        sizes.push_back(rewriter.getIndexAttr(t.getDimSize(d)));
        strides.push_back(rewriter.getIndexAttr(1));
      }
      dest = tensor::InsertSliceOp::create(rewriter, loc, in, dest, offsets, sizes, strides);
      at += t.getDimSize(axis);
    }
    rewriter.replaceOp(op, dest);
    return success();
  }
};

struct BroadcastToLowering : OpRewritePattern<BroadcastToOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BroadcastToOp op, PatternRewriter &rewriter) const override {
    auto type = op.getType();
    Value r = buildElementwise(rewriter, op.getLoc(), type.getShape(), type.getElementType(),
                               ValueRange{op.getInput()},
                               [](OpBuilder &, Location, ValueRange a) { return a[0]; });
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// result[pre..., idx..., post...] = input[pre..., clamp(indices[idx...]), post...]
struct GatherLowering : OpRewritePattern<GatherOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GatherOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = op.getInput(), indices = op.getIndices();
    auto inType = tensorType(input);
    auto type = op.getType();
    int64_t axis = normalizeAxis(op.getAxis(), inType.getRank());
    int64_t k = tensorType(indices).getRank();
    int64_t n = type.getRank();
    int64_t limit = inType.getDimSize(axis) - 1;
    SmallVector<AffineExpr> idxExprs;
    for (int64_t d = 0; d < k; ++d)
      idxExprs.push_back(rewriter.getAffineDimExpr(axis + d));
    AffineMap idxMap = AffineMap::get(n, 0, idxExprs, rewriter.getContext());
    Value r = buildMapped(
        rewriter, loc, type.getShape(), type.getElementType(), ValueRange{indices}, {idxMap},
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value i = arith::IndexCastOp::create(b, l, b.getIndexType(), a[0]);
          i = arith::MaxSIOp::create(b, l, i, arith::ConstantIndexOp::create(b, l, 0));
          i = arith::MinSIOp::create(b, l, i, arith::ConstantIndexOp::create(b, l, limit));
          SmallVector<Value> at;
          for (int64_t d = 0; d < axis; ++d)
            at.push_back(linalg::IndexOp::create(b, l, d));
          at.push_back(i);
          for (int64_t d = axis + k; d < n; ++d)
            at.push_back(linalg::IndexOp::create(b, l, d));
          return Value(tensor::ExtractOp::create(b, l, input, at));
        });
    rewriter.replaceOp(op, r);
    return success();
  }
};

} // namespace

void populateShapePatterns(RewritePatternSet &patterns) {
  patterns.add<ReshapeLowering, TransposeLowering, SliceLowering, ConcatLowering,
               BroadcastToLowering, GatherLowering>(patterns.getContext());
}

} // namespace lcc::lowering
