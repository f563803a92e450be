//===- Utils.cpp - shared helpers of the lcc lowering patterns ------------===//
#include "dialects/lcc/lowering/Utils.h"

#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/AffineMap.h"

using namespace mlir;

namespace lcc::lowering {

Type computeType(Type elementType) {
  if (elementType.isBF16() || elementType.isF16())
    return Float32Type::get(elementType.getContext());
  return elementType;
}

Value castFloat(OpBuilder &b, Location loc, Value v, Type to) {
  auto from = llvm::cast<FloatType>(v.getType());
  auto target = llvm::cast<FloatType>(to);
  if (from == target)
    return v;
  if (from.getWidth() < target.getWidth())
    return arith::ExtFOp::create(b, loc, to, v);
  // bf16 <-> f16 have the same width: go through f32.
  if (from.getWidth() == target.getWidth())
    return castFloat(b, loc, castFloat(b, loc, v, b.getF32Type()), to);
  return arith::TruncFOp::create(b, loc, to, v);
}

Value castScalar(OpBuilder &b, Location loc, Value v, Type to) {
  Type from = v.getType();
  if (from == to)
    return v;
  bool fromFloat = llvm::isa<FloatType>(from), toFloat = llvm::isa<FloatType>(to);
  if (fromFloat && toFloat)
    return castFloat(b, loc, v, to);
  if (!fromFloat && toFloat) {
    // i1 holds booleans: true must become 1, not -1.
    if (from.isInteger(1))
      return arith::UIToFPOp::create(b, loc, to, v);
    return arith::SIToFPOp::create(b, loc, to, v);
  }
  if (fromFloat && !toFloat) {
    if (to.isInteger(1)) {
      Value zero = scalarConstant(b, loc, from, 0.0);
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, v, zero);
    }
    return arith::FPToSIOp::create(b, loc, to, v);
  }
  unsigned fw = from.getIntOrFloatBitWidth(), tw = to.getIntOrFloatBitWidth();
  if (tw == 1) {
    Value zero = scalarConstant(b, loc, from, 0.0);
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v, zero);
  }
  if (fw < tw)
    return fw == 1 ? Value(arith::ExtUIOp::create(b, loc, to, v))
                   : Value(arith::ExtSIOp::create(b, loc, to, v));
  return arith::TruncIOp::create(b, loc, to, v);
}

Value scalarConstant(OpBuilder &b, Location loc, Type type, double value) {
  if (auto ft = llvm::dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(b, loc, type, b.getFloatAttr(ft, value));
  if (type.isIndex())
    return arith::ConstantIndexOp::create(b, loc, static_cast<int64_t>(value));
  if (type.isInteger(1))
    return arith::ConstantOp::create(b, loc, type, b.getIntegerAttr(type, value != 0.0));
  return arith::ConstantOp::create(b, loc, type,
                                   b.getIntegerAttr(type, static_cast<int64_t>(value)));
}

Value emptyTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Type elementType) {
  return tensor::EmptyOp::create(b, loc, shape, elementType);
}

Value filledTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Type elementType,
                   Value value) {
  Value empty = emptyTensor(b, loc, shape, elementType);
  return linalg::FillOp::create(b, loc, ValueRange{value}, ValueRange{empty}).getResult(0);
}

AffineMap broadcastMap(MLIRContext *ctx, ArrayRef<int64_t> operandShape,
                       ArrayRef<int64_t> resultShape) {
  unsigned n = resultShape.size(), r = operandShape.size();
  assert(r <= n && "operand rank exceeds result rank");
  SmallVector<AffineExpr> exprs;
  for (unsigned i = 0; i < r; ++i) {
    unsigned loop = n - r + i;
    if (operandShape[i] == 1 && resultShape[loop] != 1)
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(getAffineDimExpr(loop, ctx));
  }
  return AffineMap::get(n, 0, exprs, ctx);
}

AffineMap dropDimsMap(MLIRContext *ctx, unsigned numLoops, ArrayRef<bool> dropped) {
  SmallVector<AffineExpr> exprs;
  for (unsigned i = 0; i < numLoops; ++i)
    if (!dropped[i])
      exprs.push_back(getAffineDimExpr(i, ctx));
  return AffineMap::get(numLoops, 0, exprs, ctx);
}

SmallVector<utils::IteratorType> parallelIterators(unsigned n) {
  return SmallVector<utils::IteratorType>(n, utils::IteratorType::parallel);
}

Value buildMapped(OpBuilder &b, Location loc, ArrayRef<int64_t> resultShape, Type resultElementType,
                  ValueRange inputs, ArrayRef<AffineMap> inputMaps, BodyFn body) {
  unsigned n = resultShape.size();
  Value init = emptyTensor(b, loc, resultShape, resultElementType);
  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(b.getMultiDimIdentityMap(n));
  auto resultType = RankedTensorType::get(resultShape, resultElementType);
  unsigned numInputs = inputs.size();
  auto generic = linalg::GenericOp::create(b, loc, TypeRange{resultType}, inputs, ValueRange{init},
                                           maps, parallelIterators(n),
                                           [&](OpBuilder &nb, Location nloc, ValueRange args) {
                                             Value r = body(nb, nloc, args.take_front(numInputs));
                                             linalg::YieldOp::create(nb, nloc, r);
                                           });
  return generic.getResult(0);
}

Value buildElementwise(OpBuilder &b, Location loc, ArrayRef<int64_t> resultShape,
                       Type resultElementType, ValueRange inputs, BodyFn body) {
  SmallVector<AffineMap> maps;
  for (Value v : inputs)
    maps.push_back(broadcastMap(b.getContext(), tensorType(v).getShape(), resultShape));
  return buildMapped(b, loc, resultShape, resultElementType, inputs, maps, body);
}

Value buildReduction(OpBuilder &b, Location loc, ArrayRef<int64_t> loopShape,
                     ArrayRef<bool> reduced, ValueRange inputs, ArrayRef<AffineMap> inputMaps,
                     Type accType, double init, BodyFn body) {
  unsigned n = loopShape.size();
  SmallVector<int64_t> outShape;
  SmallVector<utils::IteratorType> iters;
  for (unsigned i = 0; i < n; ++i) {
    iters.push_back(reduced[i] ? utils::IteratorType::reduction : utils::IteratorType::parallel);
    if (!reduced[i])
      outShape.push_back(loopShape[i]);
  }
  Value acc = filledTensor(b, loc, outShape, accType, scalarConstant(b, loc, accType, init));
  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(dropDimsMap(b.getContext(), n, reduced));
  auto generic =
      linalg::GenericOp::create(b, loc, TypeRange{acc.getType()}, inputs, ValueRange{acc}, maps,
                                iters, [&](OpBuilder &nb, Location nloc, ValueRange args) {
                                  linalg::YieldOp::create(nb, nloc, body(nb, nloc, args));
                                });
  return generic.getResult(0);
}

Value convertTensor(OpBuilder &b, Location loc, Value tensor, Type to) {
  auto type = tensorType(tensor);
  if (type.getElementType() == to)
    return tensor;
  return buildElementwise(b, loc, type.getShape(), to, ValueRange{tensor},
                          [&](OpBuilder &nb, Location nloc, ValueRange args) {
                            return castScalar(nb, nloc, args[0], to);
                          });
}

Value reshapeTensor(OpBuilder &b, Location loc, Value tensor, ArrayRef<int64_t> shape) {
  auto type = tensorType(tensor);
  if (type.getShape() == shape)
    return tensor;
  auto resultType = RankedTensorType::get(shape, type.getElementType());
  // Rank 0 <-> all-ones shapes: the empty reassociation.
  if (type.getRank() == 0)
    return tensor::ExpandShapeOp::create(b, loc, resultType, tensor,
                                         ArrayRef<ReassociationIndices>{});
  if (shape.empty())
    return tensor::CollapseShapeOp::create(b, loc, resultType, tensor,
                                           ArrayRef<ReassociationIndices>{});
  // A single collapse or expand when one shape refines the other.
  if (resultType.getRank() < type.getRank()) {
    if (auto re = getReassociationIndicesForCollapse(type.getShape(), shape))
      return tensor::CollapseShapeOp::create(b, loc, resultType, tensor, *re);
  } else if (resultType.getRank() > type.getRank()) {
    if (auto re = getReassociationIndicesForCollapse(shape, type.getShape()))
      return tensor::ExpandShapeOp::create(b, loc, resultType, tensor, *re);
  }
  Value flat = tensor;
  if (type.getRank() != 1) {
    ReassociationIndices all;
    for (int64_t i = 0; i < type.getRank(); ++i)
      all.push_back(i);
    auto flatType = RankedTensorType::get({type.getNumElements()}, type.getElementType());
    flat = tensor::CollapseShapeOp::create(b, loc, flatType, tensor,
                                           ArrayRef<ReassociationIndices>{all});
  }
  if (shape.size() == 1)
    return flat;
  ReassociationIndices all;
  for (size_t i = 0; i < shape.size(); ++i)
    all.push_back(i);
  return tensor::ExpandShapeOp::create(b, loc, resultType, flat,
                                       ArrayRef<ReassociationIndices>{all});
}

Value indexI64(OpBuilder &b, Location loc, int64_t dim) {
  Value idx = linalg::IndexOp::create(b, loc, dim);
  return arith::IndexCastOp::create(b, loc, b.getI64Type(), idx);
}

RankedTensorType tensorType(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

} // namespace lcc::lowering
