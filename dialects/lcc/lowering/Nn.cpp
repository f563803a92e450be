//===- Nn.cpp - softmax, norms, cross_entropy, rope, causal_mask ----------===//
//
// The composite ops lower to a few linalg.generic ops each, in their
// numerically stable forms: softmax-like ops subtract the row maximum, norms
// use the two-pass variance mean((x - mean)^2) (biased, as PyTorch), and all
// statistics accumulate in the compute type (f32 for half inputs).
//
//===----------------------------------------------------------------------===//
#include "dialects/lcc/lowering/Utils.h"

#include <limits>

using namespace mlir;

namespace lcc::lowering {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// The two reductions every stable softmax-like lowering starts with: the
/// maximum over the `mask` dims and sum(exp(x - max)), both in `ct`.
std::pair<Value, Value> buildMaxAndSumExp(OpBuilder &rewriter, Location loc, Value x,
                                          ArrayRef<int64_t> shape, ArrayRef<bool> mask, Type ct,
                                          AffineMap id, AffineMap row) {
  Value max = buildReduction(
      rewriter, loc, shape, mask, ValueRange{x}, {id}, ct, kNegInf,
      [&](OpBuilder &b, Location l, ValueRange a) {
        return Value(arith::MaximumFOp::create(b, l, castFloat(b, l, a[0], ct), a[1]));
      });
  Value sumExp = buildReduction(
      rewriter, loc, shape, mask, ValueRange{x, max}, {id, row}, ct, 0.0,
      [&](OpBuilder &b, Location l, ValueRange a) {
        Value d = arith::SubFOp::create(b, l, castFloat(b, l, a[0], ct), a[1]);
        return Value(arith::AddFOp::create(b, l, math::ExpOp::create(b, l, d), a[2]));
      });
  return {max, sumExp};
}

template <typename OpTy, bool isLog> struct SoftmaxLowering : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getInput();
    auto type = tensorType(x);
    int64_t rank = type.getRank();
    int64_t axis = normalizeAxis(op.getAxis(), rank);
    if (axis < 0)
      return rewriter.notifyMatchFailure(op, "axis out of range");
    Type elem = type.getElementType(), ct = computeType(elem);
    SmallVector<bool> mask(rank, false);
    mask[axis] = true;
    MLIRContext *ctx = rewriter.getContext();
    AffineMap id = rewriter.getMultiDimIdentityMap(rank);
    AffineMap row = dropDimsMap(ctx, rank, mask);

    auto [max, sum] = buildMaxAndSumExp(rewriter, loc, x, type.getShape(), mask, ct, id, row);
    Value result = buildMapped(
        rewriter, loc, type.getShape(), elem, ValueRange{x, max, sum}, {id, row, row},
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value d = arith::SubFOp::create(b, l, castFloat(b, l, a[0], ct), a[1]);
          Value r = isLog ? Value(arith::SubFOp::create(b, l, d, math::LogOp::create(b, l, a[2])))
                          : Value(arith::DivFOp::create(b, l, math::ExpOp::create(b, l, d), a[2]));
          return castFloat(b, l, r, elem);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Shared by layer_norm and rms_norm: maps for a [..., D] input normalized
/// over its last dim.
struct NormMaps {
  SmallVector<bool> mask;
  AffineMap id, row, param;
};

NormMaps normMaps(OpBuilder &b, RankedTensorType type) {
  int64_t rank = type.getRank();
  NormMaps m;
  m.mask.assign(rank, false);
  m.mask.back() = true;
  m.id = b.getMultiDimIdentityMap(rank);
  m.row = dropDimsMap(b.getContext(), rank, m.mask);
  m.param = AffineMap::get(rank, 0, {b.getAffineDimExpr(rank - 1)}, b.getContext());
  return m;
}

/// 1 / sqrt(sum * invN + eps): the inverse standard deviation (layer_norm) or
/// root mean square (rms_norm) from a row's sum of squares.
Value rsqrtMeanPlusEps(OpBuilder &b, Location l, Value sumSq, double invN, double eps, Type ct) {
  Value mean = arith::MulFOp::create(b, l, sumSq, scalarConstant(b, l, ct, invN));
  return math::RsqrtOp::create(b, l,
                               arith::AddFOp::create(b, l, mean, scalarConstant(b, l, ct, eps)));
}

struct LayerNormLowering : OpRewritePattern<LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LayerNormOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getInput();
    auto type = tensorType(x);
    Type elem = type.getElementType(), ct = computeType(elem);
    NormMaps m = normMaps(rewriter, type);
    double invN = 1.0 / double(type.getShape().back());
    double eps = op.getEps().convertToDouble();

    Value sum =
        buildReduction(rewriter, loc, type.getShape(), m.mask, ValueRange{x}, {m.id}, ct, 0.0,
                       [&](OpBuilder &b, Location l, ValueRange a) {
                         return Value(arith::AddFOp::create(b, l, castFloat(b, l, a[0], ct), a[1]));
                       });
    auto centered = [&](OpBuilder &b, Location l, Value xv, Value s) {
      Value mean = arith::MulFOp::create(b, l, s, scalarConstant(b, l, ct, invN));
      return Value(arith::SubFOp::create(b, l, castFloat(b, l, xv, ct), mean));
    };
    Value sq = buildReduction(rewriter, loc, type.getShape(), m.mask, ValueRange{x, sum},
                              {m.id, m.row}, ct, 0.0, [&](OpBuilder &b, Location l, ValueRange a) {
                                Value d = centered(b, l, a[0], a[1]);
                                Value d2 = arith::MulFOp::create(b, l, d, d);
                                return Value(arith::AddFOp::create(b, l, d2, a[2]));
                              });
    Value result = buildMapped(
        rewriter, loc, type.getShape(), elem, ValueRange{x, sum, sq, op.getWeight(), op.getBias()},
        {m.id, m.row, m.row, m.param, m.param}, [&](OpBuilder &b, Location l, ValueRange a) {
          Value d = centered(b, l, a[0], a[1]);
          Value inv = rsqrtMeanPlusEps(b, l, a[2], invN, eps, ct);
          Value y = arith::MulFOp::create(b, l, d, inv);
          y = arith::MulFOp::create(b, l, y, castFloat(b, l, a[3], ct));
          y = arith::AddFOp::create(b, l, y, castFloat(b, l, a[4], ct));
          return castFloat(b, l, y, elem);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct RmsNormLowering : OpRewritePattern<RmsNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RmsNormOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getInput();
    auto type = tensorType(x);
    Type elem = type.getElementType(), ct = computeType(elem);
    NormMaps m = normMaps(rewriter, type);
    double invN = 1.0 / double(type.getShape().back());
    double eps = op.getEps().convertToDouble();
    Value sq = buildReduction(rewriter, loc, type.getShape(), m.mask, ValueRange{x}, {m.id}, ct,
                              0.0, [&](OpBuilder &b, Location l, ValueRange a) {
                                Value xv = castFloat(b, l, a[0], ct);
                                Value x2 = arith::MulFOp::create(b, l, xv, xv);
                                return Value(arith::AddFOp::create(b, l, x2, a[1]));
                              });
    Value result =
        buildMapped(rewriter, loc, type.getShape(), elem, ValueRange{x, sq, op.getWeight()},
                    {m.id, m.row, m.param}, [&](OpBuilder &b, Location l, ValueRange a) {
                      Value inv = rsqrtMeanPlusEps(b, l, a[1], invN, eps, ct);
                      Value y = arith::MulFOp::create(b, l, castFloat(b, l, a[0], ct), inv);
                      y = arith::MulFOp::create(b, l, y, castFloat(b, l, a[2], ct));
                      return castFloat(b, l, y, elem);
                    });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// mean over rows with target != ignore_index of logsumexp(row) - row[target].
struct CrossEntropyLowering : OpRewritePattern<CrossEntropyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CrossEntropyOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value logits = op.getLogits(), targets = op.getTargets();
    auto type = tensorType(logits);
    int64_t rank = type.getRank();
    int64_t vocab = type.getShape().back();
    Type elem = type.getElementType(), ct = computeType(elem);
    Type idxElem = tensorType(targets).getElementType();
    MLIRContext *ctx = rewriter.getContext();
    SmallVector<bool> mask(rank, false);
    mask.back() = true;
    AffineMap id = rewriter.getMultiDimIdentityMap(rank);
    AffineMap row = dropDimsMap(ctx, rank, mask);

    auto [max, sumExp] =
        buildMaxAndSumExp(rewriter, loc, logits, type.getShape(), mask, ct, id, row);

    // The loss sum and the count of counted targets, each its own reduction
    // to a rank-0 tensor: a single-output `acc + f(row)` reduction is what
    // the GPU runs as a block of threads with warp shuffles (a two-output one
    // would be one thread); on the CPU the count pass reads only the targets.
    int64_t rows = rank - 1;
    AffineMap rowId = rewriter.getMultiDimIdentityMap(rows);
    AffineMap scalarMap = AffineMap::get(rows, 0, {}, ctx);
    Value zero = scalarConstant(rewriter, loc, ct, 0.0);
    SmallVector<utils::IteratorType> iters(rows, utils::IteratorType::reduction);
    int64_t ignore = op.getIgnoreIndex();
    auto isCounted = [&](OpBuilder &b, Location l, Value t) -> Value {
      return arith::CmpIOp::create(b, l, arith::CmpIPredicate::ne, t,
                                   scalarConstant(b, l, idxElem, double(ignore)));
    };
    auto sum = linalg::GenericOp::create(
        rewriter, loc, TypeRange{RankedTensorType::get({}, ct)}, ValueRange{targets, max, sumExp},
        ValueRange{filledTensor(rewriter, loc, {}, ct, zero)},
        SmallVector<AffineMap>{rowId, rowId, rowId, scalarMap}, iters,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value t = a[0];
          // Out-of-range targets are clamped so the load cannot fault.
          Value ti = arith::IndexCastOp::create(b, l, b.getIndexType(), t);
          ti = arith::MaxSIOp::create(b, l, ti, arith::ConstantIndexOp::create(b, l, 0));
          ti = arith::MinSIOp::create(b, l, ti, arith::ConstantIndexOp::create(b, l, vocab - 1));
          SmallVector<Value> idx;
          for (int64_t d = 0; d < rows; ++d)
            idx.push_back(linalg::IndexOp::create(b, l, d));
          idx.push_back(ti);
          Value picked = castFloat(b, l, tensor::ExtractOp::create(b, l, logits, idx), ct);
          Value lse = arith::AddFOp::create(b, l, math::LogOp::create(b, l, a[2]), a[1]);
          Value loss = arith::SubFOp::create(b, l, lse, picked);
          Value z = scalarConstant(b, l, ct, 0.0);
          linalg::YieldOp::create(
              b, l,
              ValueRange{arith::AddFOp::create(
                  b, l, a[3], arith::SelectOp::create(b, l, isCounted(b, l, t), loss, z))});
        });
    auto count = linalg::GenericOp::create(
        rewriter, loc, TypeRange{RankedTensorType::get({}, ct)}, ValueRange{targets},
        ValueRange{filledTensor(rewriter, loc, {}, ct, zero)},
        SmallVector<AffineMap>{rowId, scalarMap}, iters,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value z = scalarConstant(b, l, ct, 0.0), one = scalarConstant(b, l, ct, 1.0);
          linalg::YieldOp::create(
              b, l,
              ValueRange{arith::AddFOp::create(
                  b, l, a[1], arith::SelectOp::create(b, l, isCounted(b, l, a[0]), one, z))});
        });
    // 0 / 0 = NaN when every target is ignored, as PyTorch.
    Value result = buildElementwise(
        rewriter, loc, {}, elem, ValueRange{sum.getResult(0), count.getResult(0)},
        [&](OpBuilder &b, Location l, ValueRange a) {
          return castFloat(b, l, arith::DivFOp::create(b, l, a[0], a[1]), elem);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Rotate-half RoPE: for position p and i < D/2, angle = p * theta^(-2i/D);
/// out[i] = x[i] cos - x[i+D/2] sin, out[i+D/2] = x[i+D/2] cos + x[i] sin.
struct RopeLowering : OpRewritePattern<RopeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RopeOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getInput();
    auto type = tensorType(x);
    int64_t rank = type.getRank(), dim = type.getShape().back(), half = dim / 2;
    Type elem = type.getElementType(), ct = computeType(elem);
    double theta = op.getTheta().convertToDouble();
    int64_t offset = op.getOffset();
    Value result = buildElementwise(
        rewriter, loc, type.getShape(), elem, ValueRange{x},
        [&](OpBuilder &b, Location l, ValueRange a) {
          SmallVector<Value> idx;
          for (int64_t d = 0; d < rank; ++d)
            idx.push_back(linalg::IndexOp::create(b, l, d));
          Value d = idx.back();
          Value halfV = arith::ConstantIndexOp::create(b, l, half);
          Value lo = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, d, halfV);
          Value i = arith::SelectOp::create(b, l, lo, d, arith::SubIOp::create(b, l, d, halfV));
          idx.back() = arith::SelectOp::create(b, l, lo, arith::AddIOp::create(b, l, d, halfV),
                                               arith::SubIOp::create(b, l, d, halfV));
          Value partner = castFloat(b, l, tensor::ExtractOp::create(b, l, x, idx), ct);
          auto toFloat = [&](Value index) {
            Value i64 = arith::IndexCastOp::create(b, l, b.getI64Type(), index);
            return Value(arith::SIToFPOp::create(b, l, ct, i64));
          };
          Value pos = arith::AddFOp::create(b, l, toFloat(idx[rank - 2]),
                                            scalarConstant(b, l, ct, double(offset)));
          Value twoI = arith::MulFOp::create(b, l, toFloat(i), scalarConstant(b, l, ct, 2.0));
          Value expo = arith::NegFOp::create(
              b, l, arith::DivFOp::create(b, l, twoI, scalarConstant(b, l, ct, double(dim))));
          Value freq = math::PowFOp::create(b, l, scalarConstant(b, l, ct, theta), expo);
          Value angle = arith::MulFOp::create(b, l, pos, freq);
          Value c = math::CosOp::create(b, l, angle), s = math::SinOp::create(b, l, angle);
          Value xc = arith::MulFOp::create(b, l, castFloat(b, l, a[0], ct), c);
          Value ps = arith::MulFOp::create(b, l, partner, s);
          Value r = arith::SelectOp::create(b, l, lo, arith::SubFOp::create(b, l, xc, ps),
                                            arith::AddFOp::create(b, l, xc, ps));
          return castFloat(b, l, r, elem);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct CausalMaskLowering : OpRewritePattern<CausalMaskOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CausalMaskOp op, PatternRewriter &rewriter) const override {
    auto type = op.getType();
    int64_t rank = type.getRank();
    int64_t shift = type.getShape()[rank - 1] - type.getShape()[rank - 2];
    Type elem = type.getElementType();
    double fill = op.getFill().convertToDouble();
    Value result = buildElementwise(
        rewriter, op.getLoc(), type.getShape(), elem, ValueRange{op.getInput()},
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value i = indexI64(b, l, rank - 2), j = indexI64(b, l, rank - 1);
          Value limit =
              arith::AddIOp::create(b, l, i, scalarConstant(b, l, b.getI64Type(), double(shift)));
          Value masked = arith::CmpIOp::create(b, l, arith::CmpIPredicate::sgt, j, limit);
          return Value(
              arith::SelectOp::create(b, l, masked, scalarConstant(b, l, elem, fill), a[0]));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void populateNnPatterns(RewritePatternSet &patterns) {
  patterns.add<SoftmaxLowering<SoftmaxOp, false>, SoftmaxLowering<LogSoftmaxOp, true>,
               LayerNormLowering, RmsNormLowering, CrossEntropyLowering, RopeLowering,
               CausalMaskLowering>(patterns.getContext());
}

} // namespace lcc::lowering
