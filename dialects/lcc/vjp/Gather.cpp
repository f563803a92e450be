//===- Gather.cpp - VJPs of gather and scatter_add ------------------------===//
//
// gather and scatter_add (same axis, same indices, same clamping) are each
// other's transposes: gather reads input[clamp(i)] for every index position,
// scatter_add adds every index position's slice into row clamp(i). So the
// gradient of an embedding table is a scatter_add of the output gradient,
// with repeated ids accumulating, and vice versa. Indices carry no gradient.
//
//===----------------------------------------------------------------------===//
#include "dialects/lcc/LccOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace lcc {

LogicalResult GatherOp::buildVjp(OpBuilder &b, ArrayRef<Value> resultGrads, ArrayRef<bool> needed,
                                 SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign(2, Value());
  if (resultGrads.empty() || !resultGrads[0] || !needed[0])
    return success();
  // Integer tables (gathered ids) have no gradient; the autodiff pass does
  // not ask for one (isDifferentiableOperand), this guards direct callers.
  if (!llvm::isa<FloatType>(getType().getElementType()))
    return emitOpError() << "cannot differentiate a gather of " << getType().getElementType()
                         << " values";
  operandGrads[0] = ScatterAddOp::create(b, getLoc(), getInput().getType(), resultGrads[0],
                                         getIndices(), getAxisAttr());
  return success();
}

LogicalResult ScatterAddOp::buildVjp(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign(2, Value());
  if (resultGrads.empty() || !resultGrads[0] || !needed[0])
    return success();
  operandGrads[0] = GatherOp::create(b, getLoc(), getUpdates().getType(), resultGrads[0],
                                     getIndices(), getAxisAttr());
  return success();
}

} // namespace lcc
