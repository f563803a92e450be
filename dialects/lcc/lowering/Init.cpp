//===- Init.cpp - constant, fill, random_normal, random_uniform, iota -----===//
//
// The random initializers are counter-based, so an element's value depends
// only on (seed, row-major index): the same on every target, thread count and
// tiling. The algorithm is a contract (test/unit reimplements it in C++):
//
//   splitmix64(x): z = x + 0x9E3779B97F4A7C15
//                  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
//                  z = (z ^ (z >> 27)) * 0x94D049BB133111EB
//                  return z ^ (z >> 31)            (uint64, wrapping)
//   U(s, k) = ((double)(splitmix64(s * 0x100000001B3 ^ k) >> 11) + 0.5) * 2^-53
//             -- strictly inside (0, 1)
//   random_uniform[i] = low + (high - low) * U(s, i)
//   random_normal[i]  = mean + std * sqrt(-2 ln U(s, 2i)) * cos(2 pi U(s, 2i+1))
//
// for the linear row-major index i (int64) and seed s; all of it in f64, then
// rounded once to the element type.
//
//===----------------------------------------------------------------------===//
#include "dialects/lcc/lowering/Utils.h"

#include "mlir/IR/Matchers.h"

#include <cmath>

using namespace mlir;

namespace lcc::lowering {
namespace {

struct ConstantLowering : OpRewritePattern<ConstantOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConstantOp op, PatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, op.getType(),
                                                   llvm::cast<TypedAttr>(op.getValue()));
    return success();
  }
};

struct FillLowering : OpRewritePattern<FillOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(FillOp op, PatternRewriter &rewriter) const override {
    auto type = op.getType();
    Value v = scalarConstant(rewriter, op.getLoc(), type.getElementType(),
                             op.getValue().convertToDouble());
    rewriter.replaceOp(
        op, filledTensor(rewriter, op.getLoc(), type.getShape(), type.getElementType(), v));
    return success();
  }
};

Value i64Const(OpBuilder &b, Location loc, uint64_t v) {
  return arith::ConstantOp::create(b, loc, b.getI64Type(),
                                   b.getIntegerAttr(b.getI64Type(), static_cast<int64_t>(v)));
}

/// splitmix64's finalizer on i64 (arith's muli/xori/shrui wrap as uint64).
Value splitmix64(OpBuilder &b, Location loc, Value x) {
  Value z = arith::AddIOp::create(b, loc, x, i64Const(b, loc, 0x9E3779B97F4A7C15ull));
  auto mix = [&](Value v, uint64_t shift, uint64_t mul) {
    Value s = arith::ShRUIOp::create(b, loc, v, i64Const(b, loc, shift));
    Value x2 = arith::XOrIOp::create(b, loc, v, s);
    return Value(arith::MulIOp::create(b, loc, x2, i64Const(b, loc, mul)));
  };
  z = mix(z, 30, 0xBF58476D1CE4E5B9ull);
  z = mix(z, 27, 0x94D049BB133111EBull);
  Value s = arith::ShRUIOp::create(b, loc, z, i64Const(b, loc, 31));
  return arith::XOrIOp::create(b, loc, z, s);
}

/// U(s, k) in f64; `seedMul` is s * 0x100000001B3.
Value uniform01(OpBuilder &b, Location loc, Value seedMul, Value k) {
  Value h = splitmix64(b, loc, arith::XOrIOp::create(b, loc, seedMul, k));
  Value top = arith::ShRUIOp::create(b, loc, h, i64Const(b, loc, 11));
  // top < 2^53: exact in f64, and signed conversion equals unsigned.
  Value f = arith::SIToFPOp::create(b, loc, b.getF64Type(), top);
  f = arith::AddFOp::create(b, loc, f, scalarConstant(b, loc, b.getF64Type(), 0.5));
  return arith::MulFOp::create(b, loc, f,
                               scalarConstant(b, loc, b.getF64Type(), std::ldexp(1.0, -53)));
}

/// Row-major linear index of the current element of a generic over `shape`.
Value linearIndex(OpBuilder &b, Location loc, ArrayRef<int64_t> shape) {
  Value acc;
  int64_t stride = 1;
  for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
    Value term = indexI64(b, loc, d);
    if (stride != 1)
      term = arith::MulIOp::create(b, loc, term, i64Const(b, loc, stride));
    acc = acc ? Value(arith::AddIOp::create(b, loc, acc, term)) : term;
    stride *= shape[d];
  }
  return acc ? acc : i64Const(b, loc, 0);
}

template <typename OpTy> struct RandomLowering : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &rewriter) const override {
    auto type = op.getType();
    Type elem = type.getElementType();
    constexpr uint64_t kSeedPrime = 0x100000001B3ull;
    // A constant seed (an @init that is not outlined) is mixed in at compile
    // time; one passed in (a layer function's argument) is multiplied once,
    // outside the loop nest.
    APInt constSeed;
    Value seedMulOutside;
    if (!matchPattern(op.getSeed(), m_ConstantInt(&constSeed)))
      seedMulOutside = arith::MulIOp::create(rewriter, op.getLoc(), op.getSeed(),
                                             i64Const(rewriter, op.getLoc(), kSeedPrime));
    Value r = buildElementwise(
        rewriter, op.getLoc(), type.getShape(), elem, ValueRange{},
        [&](OpBuilder &b, Location l, ValueRange) {
          Type f64 = b.getF64Type();
          Value seedMul = seedMulOutside ? seedMulOutside
                                         : i64Const(b, l, constSeed.getZExtValue() * kSeedPrime);
          Value i = linearIndex(b, l, type.getShape());
          Value v;
          if constexpr (std::is_same_v<OpTy, RandomUniformOp>) {
            double low = op.getLow().convertToDouble(), high = op.getHigh().convertToDouble();
            Value u = uniform01(b, l, seedMul, i);
            v = arith::AddFOp::create(
                b, l, scalarConstant(b, l, f64, low),
                arith::MulFOp::create(b, l, scalarConstant(b, l, f64, high - low), u));
          } else {
            Value k1 = arith::MulIOp::create(b, l, i, i64Const(b, l, 2));
            Value k2 = arith::AddIOp::create(b, l, k1, i64Const(b, l, 1));
            Value u1 = uniform01(b, l, seedMul, k1), u2 = uniform01(b, l, seedMul, k2);
            Value radius =
                math::SqrtOp::create(b, l,
                                     arith::MulFOp::create(b, l, scalarConstant(b, l, f64, -2.0),
                                                           math::LogOp::create(b, l, u1)));
            Value angle = arith::MulFOp::create(b, l, scalarConstant(b, l, f64, 2.0 * M_PI), u2);
            Value n = arith::MulFOp::create(b, l, radius, math::CosOp::create(b, l, angle));
            v = arith::AddFOp::create(
                b, l, scalarConstant(b, l, f64, op.getMean().convertToDouble()),
                arith::MulFOp::create(b, l,
                                      scalarConstant(b, l, f64, op.getStd().convertToDouble()), n));
          }
          return castFloat(b, l, v, elem);
        });
    rewriter.replaceOp(op, r);
    return success();
  }
};

struct IotaLowering : OpRewritePattern<IotaOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(IotaOp op, PatternRewriter &rewriter) const override {
    auto type = op.getType();
    Type elem = type.getElementType();
    int64_t dim = normalizeAxis(op.getDim(), type.getRank());
    Value r = buildElementwise(rewriter, op.getLoc(), type.getShape(), elem, ValueRange{},
                               [&](OpBuilder &b, Location l, ValueRange) {
                                 Value i = indexI64(b, l, dim);
                                 return castScalar(b, l, i, elem);
                               });
    rewriter.replaceOp(op, r);
    return success();
  }
};

} // namespace

void populateInitPatterns(RewritePatternSet &patterns) {
  patterns.add<ConstantLowering, FillLowering, RandomLowering<RandomNormalOp>,
               RandomLowering<RandomUniformOp>, IotaLowering>(patterns.getContext());
}

} // namespace lcc::lowering
