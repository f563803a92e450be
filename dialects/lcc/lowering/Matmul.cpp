//===- Matmul.cpp - batched matmul with transposes and broadcasting -------===//
//
// One linalg.generic (batch..., m, n parallel; k reduction) covers every
// variant: transposes are swapped map results and broadcast batch dims (a
// rank-2 weight against rank-3/4 activations) are dropped or constant-0 map
// results, so no operand is copied. A backend that wants named ops can
// specialize the plain cases (`linalg-specialize-generic-ops`).
//
//===----------------------------------------------------------------------===//
#include "dialects/lcc/lowering/Utils.h"

using namespace mlir;

namespace lcc::lowering {
namespace {

struct MatmulLowering : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatmulOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto type = op.getType();
    Type elem = type.getElementType(), ct = computeType(elem);
    int64_t nb = type.getRank() - 2;
    unsigned numLoops = nb + 3;
    AffineExpr m = getAffineDimExpr(nb, ctx), n = getAffineDimExpr(nb + 1, ctx),
               k = getAffineDimExpr(nb + 2, ctx);
    ArrayRef<int64_t> batch = type.getShape().take_front(nb);

    auto operandMap = [&](Value v, bool transpose, AffineExpr outer, AffineExpr inner) {
      auto t = tensorType(v);
      AffineMap bmap = broadcastMap(ctx, t.getShape().drop_back(2), batch);
      SmallVector<AffineExpr> exprs;
      for (AffineExpr e : bmap.getResults())
        exprs.push_back(e);
      exprs.push_back(transpose ? inner : outer);
      exprs.push_back(transpose ? outer : inner);
      return AffineMap::get(numLoops, 0, exprs, ctx);
    };
    AffineMap lhsMap = operandMap(op.getLhs(), op.getTransposeLhs(), m, k);
    AffineMap rhsMap = operandMap(op.getRhs(), op.getTransposeRhs(), k, n);
    SmallVector<AffineExpr> outExprs;
    for (unsigned d = 0; d < nb + 2; ++d)
      outExprs.push_back(getAffineDimExpr(d, ctx));
    AffineMap outMap = AffineMap::get(numLoops, 0, outExprs, ctx);

    SmallVector<utils::IteratorType> iters = parallelIterators(nb + 2);
    iters.push_back(utils::IteratorType::reduction);
    Value acc =
        filledTensor(rewriter, loc, type.getShape(), ct, scalarConstant(rewriter, loc, ct, 0.0));
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{acc.getType()}, ValueRange{op.getLhs(), op.getRhs()},
        ValueRange{acc}, SmallVector<AffineMap>{lhsMap, rhsMap, outMap}, iters,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value p =
              arith::MulFOp::create(b, l, castFloat(b, l, a[0], ct), castFloat(b, l, a[1], ct));
          linalg::YieldOp::create(b, l, ValueRange{arith::AddFOp::create(b, l, a[2], p)});
        });
    rewriter.replaceOp(op, convertTensor(rewriter, loc, generic.getResult(0), elem));
    return success();
  }
};

} // namespace

void populateMatmulPatterns(RewritePatternSet &patterns) {
  patterns.add<MatmulLowering>(patterns.getContext());
}

} // namespace lcc::lowering
