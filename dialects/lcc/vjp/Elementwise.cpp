//===- Elementwise.cpp - VJPs of unary, binary, where and convert ---------===//
//
// Derivatives reuse the forward result where that is both cheaper and at
// least as accurate (exp, tanh, sigmoid, sqrt: y instead of recomputing).
// Binary ops broadcast, so each operand gradient is summed back to the
// operand's shape (vjp::sumToShape).
//
// Conventions at non-differentiable points (documented, tested):
// - relu'(0) = 0 (as PyTorch).
// - maximum/minimum: on a tie the whole gradient goes to lhs (the sum over
//   both operands stays g; PyTorch splits it in half instead).
// - pow: d/d rhs = y log(lhs), defined as 0 where lhs == 0 (as PyTorch);
//   NaN for lhs < 0 (log of a negative number), as PyTorch.
//
//===----------------------------------------------------------------------===//
#include "dialects/lcc/vjp/VjpUtils.h"

#include <cmath>

using namespace mlir;

namespace lcc {
namespace {

/// The common shape of a one-operand VJP: nothing to do unless the operand
/// is needed and a gradient reaches the result.
template <typename Fn>
LogicalResult unaryVjp(Operation *op, ArrayRef<Value> resultGrads, ArrayRef<bool> needed,
                       SmallVectorImpl<Value> &operandGrads, Fn dx) {
  operandGrads.assign(op->getNumOperands(), Value());
  if (needed[0] && resultGrads[0])
    operandGrads[0] = dx(op->getLoc(), op->getOperand(0), op->getResult(0), resultGrads[0]);
  return success();
}

/// Two operands `lhs`, `rhs` whose result broadcasts them: `dl`/`dr` build
/// the gradient at the broadcast shape; it is summed back to each operand.
template <typename FnL, typename FnR>
LogicalResult binaryVjp(Operation *op, OpBuilder &b, ArrayRef<Value> resultGrads,
                        ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads, FnL dl,
                        FnR dr) {
  operandGrads.assign(op->getNumOperands(), Value());
  Value g = resultGrads[0];
  if (!g)
    return success();
  Location loc = op->getLoc();
  unsigned first = op->getNumOperands() - 2; // where has the condition first
  if (needed[first])
    operandGrads[first] = vjp::sumToShape(b, loc, dl(loc, g), op->getOperand(first).getType());
  if (needed[first + 1])
    operandGrads[first + 1] =
        vjp::sumToShape(b, loc, dr(loc, g), op->getOperand(first + 1).getType());
  return success();
}

Value broadcastPow(OpBuilder &b, Location loc, Value base, Value exponent) {
  auto shape = broadcastShapes(vjp::tensorType(base).getShape(),
                               vjp::tensorType(exponent).getShape());
  return PowOp::create(b, loc,
                       RankedTensorType::get(*shape, vjp::tensorType(base).getElementType()),
                       base, exponent);
}

/// 1 - v
Value oneMinus(OpBuilder &b, Location loc, Value v) {
  return vjp::sub(b, loc, vjp::scalar(b, loc, v, 1.0), v);
}

} // namespace

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

LogicalResult NegOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &out) {
  return unaryVjp(*this, rg, needed, out,
                  [&](Location loc, Value, Value, Value g) { return vjp::neg(b, loc, g); });
}

LogicalResult ExpOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &out) {
  return unaryVjp(*this, rg, needed, out,
                  [&](Location loc, Value, Value y, Value g) { return vjp::mul(b, loc, g, y); });
}

LogicalResult LogOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &out) {
  return unaryVjp(*this, rg, needed, out,
                  [&](Location loc, Value x, Value, Value g) { return vjp::div(b, loc, g, x); });
}

LogicalResult TanhOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                               SmallVectorImpl<Value> &out) {
  // 1 - y^2 from the result: no second tanh.
  return unaryVjp(*this, rg, needed, out, [&](Location loc, Value, Value y, Value g) {
    return vjp::mul(b, loc, g, oneMinus(b, loc, vjp::mul(b, loc, y, y)));
  });
}

LogicalResult ErfOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &out) {
  // erf'(x) = 2/sqrt(pi) e^{-x^2}
  return unaryVjp(*this, rg, needed, out, [&](Location loc, Value x, Value, Value g) {
    Value e = ExpOp::create(b, loc, x.getType(), vjp::neg(b, loc, vjp::mul(b, loc, x, x)));
    return vjp::mul(b, loc, vjp::scale(b, loc, g, 2.0 / std::sqrt(M_PI)), e);
  });
}

LogicalResult SqrtOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                               SmallVectorImpl<Value> &out) {
  // d sqrt(x) = 1 / (2 y)
  return unaryVjp(*this, rg, needed, out, [&](Location loc, Value, Value y, Value g) {
    return vjp::div(b, loc, vjp::scale(b, loc, g, 0.5), y);
  });
}

LogicalResult RsqrtOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                                SmallVectorImpl<Value> &out) {
  // d x^{-1/2} = -1/2 x^{-3/2} = -1/2 y / x
  return unaryVjp(*this, rg, needed, out, [&](Location loc, Value x, Value y, Value g) {
    return vjp::div(b, loc, vjp::mul(b, loc, vjp::scale(b, loc, g, -0.5), y), x);
  });
}

LogicalResult ReluOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                               SmallVectorImpl<Value> &out) {
  // A select, not a multiply by a 0/1 mask: g = inf at x <= 0 must give 0.
  return unaryVjp(*this, rg, needed, out, [&](Location loc, Value x, Value, Value g) {
    Value zero = vjp::scalar(b, loc, x, 0.0);
    return vjp::select(b, loc, vjp::cmp(b, loc, "gt", x, zero), g, zero);
  });
}

LogicalResult SigmoidOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                                  SmallVectorImpl<Value> &out) {
  // s' = s (1 - s), from the result.
  return unaryVjp(*this, rg, needed, out, [&](Location loc, Value, Value y, Value g) {
    return vjp::mul(b, loc, vjp::mul(b, loc, g, y), oneMinus(b, loc, y));
  });
}

LogicalResult SiluOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                               SmallVectorImpl<Value> &out) {
  // (x s)' = s (1 + x (1 - s)), s = sigmoid(x) recomputed (y / x loses it at x = 0).
  return unaryVjp(*this, rg, needed, out, [&](Location loc, Value x, Value, Value g) {
    Value s = SigmoidOp::create(b, loc, x.getType(), x);
    Value inner = vjp::add(b, loc, vjp::scalar(b, loc, x, 1.0),
                           vjp::mul(b, loc, x, oneMinus(b, loc, s)));
    return vjp::mul(b, loc, vjp::mul(b, loc, g, s), inner);
  });
}

LogicalResult GeluOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                               SmallVectorImpl<Value> &out) {
  bool tanhForm = getApproximate() == "tanh";
  return unaryVjp(*this, rg, needed, out, [&](Location loc, Value x, Value, Value g) {
    Type t = x.getType();
    Value dydx;
    if (!tanhForm) {
      // y = x Phi(x): y' = Phi(x) + x phi(x), Phi = (1 + erf(x/sqrt2)) / 2,
      // phi = e^{-x^2/2} / sqrt(2 pi).
      Value erf = ErfOp::create(b, loc, t, vjp::scale(b, loc, x, M_SQRT1_2));
      Value cdf = vjp::scale(b, loc, vjp::add(b, loc, vjp::scalar(b, loc, x, 1.0), erf), 0.5);
      Value pdf = ExpOp::create(b, loc, t, vjp::scale(b, loc, vjp::mul(b, loc, x, x), -0.5));
      pdf = vjp::scale(b, loc, pdf, 1.0 / std::sqrt(2.0 * M_PI));
      dydx = vjp::add(b, loc, cdf, vjp::mul(b, loc, x, pdf));
    } else {
      // y = x (1 + tanh(u)) / 2, u = k (x + c x^3):
      // y' = (1 + t) / 2 + x (1 - t^2) k (1 + 3 c x^2) / 2.
      const double k = std::sqrt(2.0 / M_PI), c = 0.044715;
      Value x2 = vjp::mul(b, loc, x, x);
      Value u = vjp::scale(b, loc, vjp::add(b, loc, x, vjp::scale(b, loc, vjp::mul(b, loc, x2, x), c)), k);
      Value th = TanhOp::create(b, loc, t, u);
      Value left = vjp::scale(b, loc, vjp::add(b, loc, vjp::scalar(b, loc, x, 1.0), th), 0.5);
      Value du = vjp::add(b, loc, vjp::scalar(b, loc, x, k), vjp::scale(b, loc, x2, 3.0 * c * k));
      Value right = vjp::mul(b, loc, vjp::mul(b, loc, vjp::scale(b, loc, x, 0.5),
                                              oneMinus(b, loc, vjp::mul(b, loc, th, th))),
                             du);
      dydx = vjp::add(b, loc, left, right);
    }
    return vjp::mul(b, loc, g, dydx);
  });
}

//===----------------------------------------------------------------------===//
// Binary
//===----------------------------------------------------------------------===//

LogicalResult AddOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &out) {
  auto same = [](Location, Value g) { return g; };
  return binaryVjp(*this, b, rg, needed, out, same, same);
}

LogicalResult SubOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &out) {
  return binaryVjp(
      *this, b, rg, needed, out, [](Location, Value g) { return g; },
      [&](Location loc, Value g) { return vjp::neg(b, loc, g); });
}

LogicalResult MulOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &out) {
  return binaryVjp(
      *this, b, rg, needed, out,
      [&](Location loc, Value g) { return vjp::mul(b, loc, g, getRhs()); },
      [&](Location loc, Value g) { return vjp::mul(b, loc, g, getLhs()); });
}

LogicalResult DivOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &out) {
  // d(a/b)/db = -a/b^2 = -y/b, from the result (no b^2 to overflow).
  return binaryVjp(
      *this, b, rg, needed, out,
      [&](Location loc, Value g) { return vjp::div(b, loc, g, getRhs()); },
      [&](Location loc, Value g) {
        return vjp::neg(b, loc, vjp::div(b, loc, vjp::mul(b, loc, g, getResult()), getRhs()));
      });
}

LogicalResult PowOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &out) {
  return binaryVjp(
      *this, b, rg, needed, out,
      [&](Location loc, Value g) {
        // b a^(b-1): also right at a = 0 (where y * b / a is 0/0).
        Value bm1 = vjp::sub(b, loc, getRhs(), vjp::scalar(b, loc, getRhs(), 1.0));
        return vjp::mul(b, loc, vjp::mul(b, loc, g, getRhs()), broadcastPow(b, loc, getLhs(), bm1));
      },
      [&](Location loc, Value g) {
        Value d = vjp::mul(b, loc, vjp::mul(b, loc, g, getResult()),
                           LogOp::create(b, loc, getLhs().getType(), getLhs()));
        Value zero = vjp::scalar(b, loc, d, 0.0);
        return vjp::select(b, loc, vjp::cmp(b, loc, "eq", getLhs(), zero), zero, d);
      });
}

/// maximum/minimum: the side that was selected (lhs on ties) gets g.
template <typename Op>
static LogicalResult extremumVjp(Op op, StringRef lhsWins, OpBuilder &b, ArrayRef<Value> rg,
                                 ArrayRef<bool> needed, SmallVectorImpl<Value> &out) {
  Value mask;
  auto getMask = [&](Location loc) {
    if (!mask)
      mask = vjp::cmp(b, loc, lhsWins, op.getLhs(), op.getRhs());
    return mask;
  };
  return binaryVjp(
      op, b, rg, needed, out,
      [&](Location loc, Value g) {
        return vjp::select(b, loc, getMask(loc), g, vjp::scalar(b, loc, g, 0.0));
      },
      [&](Location loc, Value g) {
        return vjp::select(b, loc, getMask(loc), vjp::scalar(b, loc, g, 0.0), g);
      });
}

LogicalResult MaximumOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                                  SmallVectorImpl<Value> &out) {
  return extremumVjp(*this, "ge", b, rg, needed, out);
}

LogicalResult MinimumOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                                  SmallVectorImpl<Value> &out) {
  return extremumVjp(*this, "le", b, rg, needed, out);
}

//===----------------------------------------------------------------------===//
// where, convert
//===----------------------------------------------------------------------===//

LogicalResult WhereOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                                SmallVectorImpl<Value> &out) {
  // The condition (i1) is not differentiable: isDifferentiableOperand's
  // default already says so, so needed[0] is false.
  return binaryVjp(
      *this, b, rg, needed, out,
      [&](Location loc, Value g) {
        return vjp::select(b, loc, getCond(), g, vjp::scalar(b, loc, g, 0.0));
      },
      [&](Location loc, Value g) {
        return vjp::select(b, loc, getCond(), vjp::scalar(b, loc, g, 0.0), g);
      });
}

// Nothing flows back: autodiff never asks, since the operand is not
// differentiable, but a caller that does gets no gradient rather than an error.
LogicalResult StopGradientOp::buildVjp(OpBuilder &, ArrayRef<Value>, ArrayRef<bool>,
                                       SmallVectorImpl<Value> &out) {
  out.assign(1, Value());
  return success();
}

bool StopGradientOp::isDifferentiableOperand(unsigned) { return false; }

LogicalResult ConvertOp::buildVjp(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> needed,
                                  SmallVectorImpl<Value> &out) {
  // float -> float: convert the gradient back; an integer input is not
  // differentiable (needed[0] is false for it).
  return unaryVjp(*this, rg, needed, out, [&](Location loc, Value x, Value, Value g) -> Value {
    return ConvertOp::create(b, loc, x.getType(), g);
  });
}

} // namespace lcc
