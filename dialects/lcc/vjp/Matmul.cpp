//===- Matmul.cpp - VJP of lcc.matmul ------------------------------------===//
//
// C = op(A) op(B) with op = optional transpose of the last two dims. The
// gradients are matmuls again, with the transposes folded into the
// transpose_lhs/transpose_rhs attributes (the lowering turns them into index
// maps, so no transposed copy is ever made):
//
//   dA = g op(B)^T   stored as A is: [M, K], or [K, M] = op(B) g^T
//   dB = op(A)^T g   stored as B is: [K, N], or [N, K] = g^T op(A)
//
// Batch dims broadcast in the forward, so a gradient computed over the full
// batch is summed back to the operand's batch shape. The common case, a
// rank-2 weight under [..., M, K] activations, instead folds the batch into
// the contraction (reshape to [(... M), K] and [(... M), N]): one 2-D matmul,
// no [batch, K, N] intermediate.
//
//===----------------------------------------------------------------------===//
#include "dialects/lcc/vjp/VjpUtils.h"

using namespace mlir;

namespace lcc {
namespace {

RankedTensorType tensorOf(Value v) { return vjp::tensorType(v); }

/// lcc.matmul with its result type derived as the verifier expects it.
Value matmul(OpBuilder &b, Location loc, Value x, Value y, bool tx, bool ty) {
  auto xt = tensorOf(x), yt = tensorOf(y);
  int64_t xr = xt.getRank(), yr = yt.getRank();
  auto batch = broadcastShapes(xt.getShape().drop_back(2), yt.getShape().drop_back(2));
  assert(batch && "matmul VJP operands must broadcast");
  SmallVector<int64_t> shape = *batch;
  shape.push_back(xt.getDimSize(tx ? xr - 1 : xr - 2));
  shape.push_back(yt.getDimSize(ty ? yr - 2 : yr - 1));
  return MatmulOp::create(b, loc, RankedTensorType::get(shape, xt.getElementType()), x, y, tx,
                          ty);
}

/// [b..., R, C] -> [(b... R), C]: a row-major view.
Value foldBatch(OpBuilder &b, Location loc, Value x) {
  auto t = tensorOf(x);
  int64_t rows = t.getNumElements() / t.getShape().back();
  return vjp::reshape(b, loc, x, {rows, t.getShape().back()});
}

} // namespace

LogicalResult MatmulOp::buildVjp(OpBuilder &b, ArrayRef<Value> resultGrads, ArrayRef<bool> needed,
                                 SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign(2, Value());
  if (resultGrads.empty() || !resultGrads[0])
    return success();
  Location loc = getLoc();
  Value g = resultGrads[0], lhs = getLhs(), rhs = getRhs();
  bool ta = getTransposeLhs(), tb = getTransposeRhs();
  auto lType = getLhs().getType(), rType = getRhs().getType();
  ArrayRef<int64_t> gBatch = getType().getShape().drop_back(2);

  if (needed[0]) {
    Value full = ta ? matmul(b, loc, rhs, g, /*tx=*/tb, /*ty=*/true)   // op(B) g^T
                    : matmul(b, loc, g, rhs, /*tx=*/false, /*ty=*/!tb); // g op(B)^T
    operandGrads[0] = vjp::sumToShape(b, loc, full, lType);
  }
  if (needed[1]) {
    // A rank-2 rhs under batched, non-broadcast [..., M, K] lhs: contract
    // over (batch, M) in one 2-D matmul instead of summing a batch of them.
    if (rType.getRank() == 2 && !gBatch.empty() && !ta &&
        lType.getShape().drop_back(2) == gBatch) {
      Value a2 = foldBatch(b, loc, lhs), g2 = foldBatch(b, loc, g);
      operandGrads[1] = tb ? matmul(b, loc, g2, a2, /*tx=*/true, /*ty=*/false)  // g^T A
                           : matmul(b, loc, a2, g2, /*tx=*/true, /*ty=*/false); // A^T g
    } else {
      Value full = tb ? matmul(b, loc, g, lhs, /*tx=*/true, /*ty=*/ta)    // g^T op(A)
                      : matmul(b, loc, lhs, g, /*tx=*/!ta, /*ty=*/false); // op(A)^T g
      operandGrads[1] = vjp::sumToShape(b, loc, full, rType);
    }
  }
  return success();
}

} // namespace lcc
