//===- Reductions.cpp - reduce_sum, reduce_mean, reduce_max ---------------===//
//
// One linalg.generic with reduction iterators over the reduced axes. The
// accumulator is the compute type (f32 for half inputs, so long sums do not
// stall), reduced dims are dropped and `keepdim` re-inserts them as a view.
//
//===----------------------------------------------------------------------===//
#include "dialects/lcc/lowering/Utils.h"

#include <limits>

using namespace mlir;

namespace lcc::lowering {
namespace {

enum class Kind { Sum, Mean, Max };

template <typename OpTy, Kind kind> struct ReduceLowering : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto in = op.getInput().getType();
    int64_t rank = in.getRank();
    Type elem = in.getElementType();
    Type ct = computeType(elem);
    SmallVector<bool> reduced(rank, false);
    int64_t count = 1;
    for (int64_t a : op.getAxes()) {
      int64_t n = normalizeAxis(a, rank);
      if (n < 0)
        return rewriter.notifyMatchFailure(op, "axis out of range");
      reduced[n] = true;
      count *= in.getDimSize(n);
    }
    double init = kind == Kind::Max ? -std::numeric_limits<double>::infinity() : 0.0;
    Value acc = buildReduction(rewriter, loc, in.getShape(), reduced, ValueRange{op.getInput()},
                               {rewriter.getMultiDimIdentityMap(rank)}, ct, init,
                               [&](OpBuilder &b, Location l, ValueRange a) {
                                 Value x = castFloat(b, l, a[0], ct);
                                 if (kind == Kind::Max)
                                   return Value(arith::MaximumFOp::create(b, l, x, a[1]));
                                 return Value(arith::AddFOp::create(b, l, x, a[1]));
                               });
    if (kind == Kind::Mean) {
      auto accShape = tensorType(acc).getShape();
      acc = buildElementwise(rewriter, loc, accShape, elem, ValueRange{acc},
                             [&](OpBuilder &b, Location l, ValueRange a) {
                               Value n = scalarConstant(b, l, ct, double(count));
                               Value m = arith::DivFOp::create(b, l, a[0], n);
                               return castFloat(b, l, m, elem);
                             });
    } else {
      acc = convertTensor(rewriter, loc, acc, elem);
    }
    rewriter.replaceOp(op, reshapeTensor(rewriter, loc, acc, op.getType().getShape()));
    return success();
  }
};

} // namespace

void populateReductionPatterns(RewritePatternSet &patterns) {
  patterns.add<ReduceLowering<ReduceSumOp, Kind::Sum>, ReduceLowering<ReduceMeanOp, Kind::Mean>,
               ReduceLowering<ReduceMaxOp, Kind::Max>>(patterns.getContext());
}

} // namespace lcc::lowering
