//===- Elementwise.cpp - unary, binary, cmp, where, convert ---------------===//
//
// Each op becomes one linalg.generic whose operands broadcast through their
// indexing maps (size-1 and missing dims read index 0), so no broadcast copy
// is materialized. Half-precision inputs are widened to f32 inside the body.
//
//===----------------------------------------------------------------------===//
#include "dialects/lcc/lowering/Utils.h"

#include <cmath>

using namespace mlir;

namespace lcc::lowering {
namespace {

/// Scalar math on values already in the compute type; `op` gives access to
/// attributes (gelu's approximation).
using ScalarFn = Value (*)(OpBuilder &, Location, ValueRange, Operation *);

Value cst(OpBuilder &b, Location loc, Value like, double v) {
  return scalarConstant(b, loc, like.getType(), v);
}

template <typename OpTy> struct FloatElementwiseLowering : OpRewritePattern<OpTy> {
  FloatElementwiseLowering(MLIRContext *ctx, ScalarFn fn) : OpRewritePattern<OpTy>(ctx), fn(fn) {}

  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &rewriter) const override {
    auto resultType = llvm::cast<RankedTensorType>(op->getResult(0).getType());
    Type elem = resultType.getElementType();
    Type ct = computeType(elem);
    Operation *raw = op.getOperation();
    Value result =
        buildElementwise(rewriter, op.getLoc(), resultType.getShape(), elem, op->getOperands(),
                         [&](OpBuilder &b, Location loc, ValueRange args) {
                           SmallVector<Value> wide;
                           for (Value a : args)
                             wide.push_back(castFloat(b, loc, a, ct));
                           return castFloat(b, loc, fn(b, loc, wide, raw), elem);
                         });
    rewriter.replaceOp(op, result);
    return success();
  }

  ScalarFn fn;
};

Value sigmoid(OpBuilder &b, Location loc, Value x) {
  // 1 / (1 + e^-x): e^-x overflows to inf for very negative x, giving the
  // correct limit 0 instead of NaN.
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
  Value den = arith::AddFOp::create(b, loc, cst(b, loc, x, 1.0), e);
  return arith::DivFOp::create(b, loc, cst(b, loc, x, 1.0), den);
}

Value gelu(OpBuilder &b, Location loc, ValueRange a, Operation *op) {
  Value x = a[0];
  Value inner;
  if (llvm::cast<GeluOp>(op).getApproximate() == "tanh") {
    // tanh(sqrt(2/pi) * (x + 0.044715 x^3)), as GPT-2.
    Value x3 = arith::MulFOp::create(b, loc, x, arith::MulFOp::create(b, loc, x, x));
    Value poly = arith::AddFOp::create(b, loc, x,
                                       arith::MulFOp::create(b, loc, cst(b, loc, x, 0.044715), x3));
    Value scaled = arith::MulFOp::create(b, loc, cst(b, loc, x, std::sqrt(2.0 / M_PI)), poly);
    inner = math::TanhOp::create(b, loc, scaled);
  } else {
    Value scaled = arith::MulFOp::create(b, loc, x, cst(b, loc, x, M_SQRT1_2));
    inner = math::ErfOp::create(b, loc, scaled);
  }
  Value onePlus = arith::AddFOp::create(b, loc, cst(b, loc, x, 1.0), inner);
  Value half = arith::MulFOp::create(b, loc, cst(b, loc, x, 0.5), x);
  return arith::MulFOp::create(b, loc, half, onePlus);
}

template <typename MathOp> Value unaryMath(OpBuilder &b, Location loc, ValueRange a, Operation *) {
  return MathOp::create(b, loc, a[0]);
}

template <typename ArithOp>
Value binaryArith(OpBuilder &b, Location loc, ValueRange a, Operation *) {
  return ArithOp::create(b, loc, a[0], a[1]);
}

struct CmpLowering : OpRewritePattern<CmpOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CmpOp op, PatternRewriter &rewriter) const override {
    Type elem = op.getLhs().getType().getElementType();
    StringRef p = op.getPredicate();
    bool isFloat = llvm::isa<FloatType>(elem);
    // Ordered float predicates, except ne: NaN != NaN is true (IEEE, PyTorch).
    arith::CmpFPredicate fp = llvm::StringSwitch<arith::CmpFPredicate>(p)
                                  .Case("eq", arith::CmpFPredicate::OEQ)
                                  .Case("ne", arith::CmpFPredicate::UNE)
                                  .Case("lt", arith::CmpFPredicate::OLT)
                                  .Case("le", arith::CmpFPredicate::OLE)
                                  .Case("gt", arith::CmpFPredicate::OGT)
                                  .Default(arith::CmpFPredicate::OGE);
    // Booleans compare unsigned (false < true); other integers signed.
    bool boolean = elem.isInteger(1);
    arith::CmpIPredicate ip =
        llvm::StringSwitch<arith::CmpIPredicate>(p)
            .Case("eq", arith::CmpIPredicate::eq)
            .Case("ne", arith::CmpIPredicate::ne)
            .Case("lt", boolean ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt)
            .Case("le", boolean ? arith::CmpIPredicate::ule : arith::CmpIPredicate::sle)
            .Case("gt", boolean ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::sgt)
            .Default(boolean ? arith::CmpIPredicate::uge : arith::CmpIPredicate::sge);
    Value result = buildElementwise(
        rewriter, op.getLoc(), op.getType().getShape(), rewriter.getI1Type(),
        ValueRange{op.getLhs(), op.getRhs()}, [&](OpBuilder &b, Location loc, ValueRange a) {
          if (!isFloat)
            return Value(arith::CmpIOp::create(b, loc, ip, a[0], a[1]));
          Type ct = computeType(elem);
          return Value(arith::CmpFOp::create(b, loc, fp, castFloat(b, loc, a[0], ct),
                                             castFloat(b, loc, a[1], ct)));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct WhereLowering : OpRewritePattern<WhereOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(WhereOp op, PatternRewriter &rewriter) const override {
    Value result = buildElementwise(
        rewriter, op.getLoc(), op.getType().getShape(), op.getType().getElementType(),
        ValueRange{op.getCond(), op.getLhs(), op.getRhs()},
        [](OpBuilder &b, Location loc, ValueRange a) {
          return Value(arith::SelectOp::create(b, loc, a[0], a[1], a[2]));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct ConvertLowering : OpRewritePattern<ConvertOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConvertOp op, PatternRewriter &rewriter) const override {
    rewriter.replaceOp(
        op, convertTensor(rewriter, op.getLoc(), op.getInput(), op.getType().getElementType()));
    return success();
  }
};

/// Only autodiff sees a difference; the value is its input.
struct StopGradientLowering : OpRewritePattern<StopGradientOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(StopGradientOp op, PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, op.getInput());
    return success();
  }
};

} // namespace

void populateElementwisePatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  auto add = [&](auto tag, ScalarFn fn) {
    using OpTy = typename decltype(tag)::type;
    patterns.add<FloatElementwiseLowering<OpTy>>(ctx, fn);
  };
  auto lam = [](auto f) { return static_cast<ScalarFn>(f); };
  add(llvm::type_identity<NegOp>{}, unaryMath<arith::NegFOp>);
  add(llvm::type_identity<ExpOp>{}, unaryMath<math::ExpOp>);
  add(llvm::type_identity<LogOp>{}, unaryMath<math::LogOp>);
  add(llvm::type_identity<TanhOp>{}, unaryMath<math::TanhOp>);
  add(llvm::type_identity<ErfOp>{}, unaryMath<math::ErfOp>);
  add(llvm::type_identity<SqrtOp>{}, unaryMath<math::SqrtOp>);
  add(llvm::type_identity<RsqrtOp>{}, unaryMath<math::RsqrtOp>);
  add(llvm::type_identity<GeluOp>{}, gelu);
  // maximumf propagates NaN, as torch.relu does.
  add(llvm::type_identity<ReluOp>{},
      lam([](OpBuilder &b, Location loc, ValueRange a, Operation *) -> Value {
        return arith::MaximumFOp::create(b, loc, a[0], cst(b, loc, a[0], 0.0));
      }));
  add(llvm::type_identity<SigmoidOp>{},
      lam([](OpBuilder &b, Location loc, ValueRange a, Operation *) -> Value {
        return sigmoid(b, loc, a[0]);
      }));
  add(llvm::type_identity<SiluOp>{},
      lam([](OpBuilder &b, Location loc, ValueRange a, Operation *) -> Value {
        return arith::MulFOp::create(b, loc, a[0], sigmoid(b, loc, a[0]));
      }));
  add(llvm::type_identity<AddOp>{}, binaryArith<arith::AddFOp>);
  add(llvm::type_identity<SubOp>{}, binaryArith<arith::SubFOp>);
  add(llvm::type_identity<MulOp>{}, binaryArith<arith::MulFOp>);
  add(llvm::type_identity<DivOp>{}, binaryArith<arith::DivFOp>);
  add(llvm::type_identity<PowOp>{}, binaryArith<math::PowFOp>);
  add(llvm::type_identity<MaximumOp>{}, binaryArith<arith::MaximumFOp>);
  add(llvm::type_identity<MinimumOp>{}, binaryArith<arith::MinimumFOp>);
  patterns.add<CmpLowering, WhereLowering, ConvertLowering, StopGradientLowering>(ctx);
}

} // namespace lcc::lowering
