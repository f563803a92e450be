//===- LccCost.cpp - static cost estimates of lcc ops ---------------------===//
//
// Coarse numbers for reports and partitioning decisions; they count the work
// of a straightforward kernel, not of any particular fused implementation.
//
//===----------------------------------------------------------------------===//
#include "dialects/lcc/LccOps.h"

using namespace mlir;

namespace lcc {

static int64_t numElements(Type type) {
  auto shaped = llvm::dyn_cast<ShapedType>(type);
  return shaped && shaped.hasStaticShape() ? shaped.getNumElements() : 0;
}

int64_t staticBytes(Type type) {
  auto shaped = llvm::dyn_cast<ShapedType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return 0;
  int64_t bits = shaped.getElementType().getIntOrFloatBitWidth();
  return shaped.getNumElements() * ((bits + 7) / 8);
}

int64_t defaultElementwiseFlops(Operation *op) {
  int64_t n = 0;
  for (Type t : op->getResultTypes())
    n += numElements(t);
  return n;
}

int64_t defaultBytesAccessed(Operation *op) {
  int64_t n = 0;
  for (Type t : op->getOperandTypes())
    n += staticBytes(t);
  for (Type t : op->getResultTypes())
    n += staticBytes(t);
  return n;
}

// Reductions touch every input element once.
template <typename Op> static int64_t reduceFlops(Op op) {
  return numElements(op.getInput().getType());
}
int64_t ReduceSumOp::getFlops() { return reduceFlops(*this); }
int64_t ReduceMeanOp::getFlops() { return reduceFlops(*this); }
int64_t ReduceMaxOp::getFlops() { return reduceFlops(*this); }

// max, subtract, exp, sum, divide (or log): five passes over the elements.
int64_t SoftmaxOp::getFlops() { return 5 * numElements(getType()); }
int64_t LogSoftmaxOp::getFlops() { return 5 * numElements(getType()); }
// mean, centre, square, sum, scale, affine.
int64_t LayerNormOp::getFlops() { return 8 * numElements(getType()); }
int64_t RmsNormOp::getFlops() { return 5 * numElements(getType()); }
int64_t CrossEntropyOp::getFlops() { return 5 * numElements(getLogits().getType()); }

int64_t MatmulOp::getFlops() {
  auto lhs = getLhs().getType();
  auto result = getType();
  int64_t k = getTransposeLhs() ? lhs.getDimSize(lhs.getRank() - 2)
                                : lhs.getDimSize(lhs.getRank() - 1);
  return 2 * numElements(result) * k;
}

int64_t AttentionOp::getFlops() {
  auto q = getQuery().getType();
  auto k = getKey().getType();
  int64_t tk = k.getDimSize(2);
  // Two matmuls of 2*Tq*Tk*D each per head, plus the softmax over the scores.
  int64_t scores = q.getDimSize(0) * q.getDimSize(1) * q.getDimSize(2) * tk;
  return 4 * scores * q.getDimSize(3) + 5 * scores;
}

// The backward recomputes the scores (one matmul) and does four more (dP,
// dV, dQ, dK), plus the softmax's elementwise work twice.
int64_t AttentionGradOp::getFlops() {
  auto q = getQuery().getType();
  int64_t scores =
      q.getDimSize(0) * q.getDimSize(1) * q.getDimSize(2) * getKey().getType().getDimSize(2);
  return 10 * scores * q.getDimSize(3) + 10 * scores;
}

// One add per update element (the result's zero fill is a write, not a flop).
int64_t ScatterAddOp::getFlops() { return numElements(getUpdates().getType()); }

} // namespace lcc
