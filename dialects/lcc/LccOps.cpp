//===- LccOps.cpp - verifiers and folders of lcc ops ----------------------===//
//
// Verifier messages say what was found and what was expected, because they are
// what a DSL or ONNX user sees when a model is malformed.
//
//===----------------------------------------------------------------------===//
#include "dialects/lcc/LccOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include <cstdio>
#include "llvm/Support/raw_ostream.h"
#include <cmath>

using namespace mlir;

namespace lcc {

std::optional<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < 0)
    axis += rank;
  return axis >= 0 && axis < rank ? axis : -1;
}

static std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(shape, os);
  os << "]";
  return s;
}

/// Numbers in messages as a person writes them (0.5, not 5.000000e-01).
static std::string fmtNum(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

static std::string shapeStr(Type t) { return shapeStr(llvm::cast<ShapedType>(t).getShape()); }

/// Result must have the broadcast shape of `operands` and, unless
/// `resultElementType` is given, their (common) element type.
static LogicalResult verifyBroadcast(Operation *op, ArrayRef<Value> operands, Type resultType,
                                     Type resultElementType = {}) {
  SmallVector<int64_t> shape;
  for (Value v : operands) {
    auto t = llvm::cast<RankedTensorType>(v.getType());
    auto b = broadcastShapes(shape, t.getShape());
    if (!b)
      return op->emitOpError() << "operand shapes " << shapeStr(shape) << " and "
                               << shapeStr(t) << " do not broadcast; expected each pair of "
                               << "trailing dimensions to be equal or 1";
    shape = *b;
  }
  auto result = llvm::cast<RankedTensorType>(resultType);
  if (result.getShape() != ArrayRef<int64_t>(shape))
    return op->emitOpError() << "result shape " << shapeStr(result)
                             << " does not match the broadcast shape " << shapeStr(shape)
                             << " of the operands";
  if (!resultElementType) {
    for (Value v : operands) {
      Type et = llvm::cast<ShapedType>(v.getType()).getElementType();
      if (et != result.getElementType())
        return op->emitOpError() << "operand element type " << et
                                 << " differs from result element type "
                                 << result.getElementType() << "; insert lcc.convert";
    }
  } else if (result.getElementType() != resultElementType) {
    return op->emitOpError() << "result element type must be " << resultElementType;
  }
  return success();
}

#define LCC_BINARY_VERIFIER(OP)                                                                  \
  LogicalResult OP::verify() {                                                                   \
    return verifyBroadcast(*this, {getLhs(), getRhs()}, getType());                              \
  }
LCC_BINARY_VERIFIER(AddOp)
LCC_BINARY_VERIFIER(SubOp)
LCC_BINARY_VERIFIER(MulOp)
LCC_BINARY_VERIFIER(DivOp)
LCC_BINARY_VERIFIER(PowOp)
LCC_BINARY_VERIFIER(MaximumOp)
LCC_BINARY_VERIFIER(MinimumOp)
#undef LCC_BINARY_VERIFIER

LogicalResult CmpOp::verify() {
  static const char *preds[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  if (!llvm::is_contained(preds, getPredicate()))
    return emitOpError() << "unknown predicate '" << getPredicate()
                         << "'; expected one of eq, ne, lt, le, gt, ge";
  if (getLhs().getType().getElementType() != getRhs().getType().getElementType())
    return emitOpError() << "compares " << getLhs().getType().getElementType() << " with "
                         << getRhs().getType().getElementType()
                         << "; expected the same element type";
  return verifyBroadcast(*this, {getLhs(), getRhs()}, getType(),
                         IntegerType::get(getContext(), 1));
}

LogicalResult WhereOp::verify() {
  auto cond = getCond().getType();
  auto b = broadcastShapes(getLhs().getType().getShape(), getRhs().getType().getShape());
  if (!b || !broadcastShapes(*b, cond.getShape()))
    return emitOpError() << "shapes " << shapeStr(cond) << ", " << shapeStr(getLhs().getType())
                         << " and " << shapeStr(getRhs().getType())
                         << " do not broadcast together";
  if (getLhs().getType().getElementType() != getRhs().getType().getElementType())
    return emitOpError() << "branches have element types " << getLhs().getType().getElementType()
                         << " and " << getRhs().getType().getElementType()
                         << "; expected the same";
  // Broadcast shape of the two branches and the condition.
  auto full = broadcastShapes(*b, cond.getShape());
  if (getType().getShape() != ArrayRef<int64_t>(*full) ||
      getType().getElementType() != getLhs().getType().getElementType())
    return emitOpError() << "result type " << getType() << " does not match the broadcast shape "
                         << shapeStr(*full) << " with element type "
                         << getLhs().getType().getElementType();
  return success();
}

LogicalResult ConvertOp::verify() {
  if (getInput().getType().getShape() != getType().getShape())
    return emitOpError() << "changes the shape from " << shapeStr(getInput().getType()) << " to "
                         << shapeStr(getType()) << "; convert changes only the element type";
  return success();
}

LogicalResult GeluOp::verify() {
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError() << "approximate = \"" << getApproximate()
                         << "\" is not known; expected \"none\" (erf) or \"tanh\"";
  return success();
}

//===----------------------------------------------------------------------===//
// Initializers
//===----------------------------------------------------------------------===//

LogicalResult RandomNormalOp::verify() {
  if (!(getStd().convertToDouble() >= 0.0))
    return emitOpError() << "std must be >= 0, got " << fmtNum(getStd().convertToDouble());
  return success();
}

LogicalResult RandomUniformOp::verify() {
  if (!(getLow().convertToDouble() < getHigh().convertToDouble()))
    return emitOpError() << "needs low < high, got ["
                         << fmtNum(getLow().convertToDouble()) << ", "
                         << fmtNum(getHigh().convertToDouble()) << ")";
  return success();
}

LogicalResult IotaOp::verify() {
  int64_t dim = getDim();
  if (normalizeAxis(dim, getType().getRank()) < 0)
    return emitOpError() << "dim " << dim << " is out of range for rank "
                         << getType().getRank();
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

/// Shape after reducing `axes` of `shape`; fails (with a diagnostic) on bad axes.
static FailureOr<SmallVector<int64_t>> reducedShape(Operation *op, ArrayRef<int64_t> shape,
                                                    ArrayRef<int64_t> axes, bool keepdim) {
  int64_t rank = shape.size();
  SmallVector<bool> reduced(rank, false);
  for (int64_t a : axes) {
    int64_t n = normalizeAxis(a, rank);
    if (n < 0)
      return op->emitOpError() << "axis " << a << " is out of range for an input of rank "
                               << rank;
    if (reduced[n])
      return op->emitOpError() << "axis " << a << " is listed twice";
    reduced[n] = true;
  }
  SmallVector<int64_t> out;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[i])
      out.push_back(shape[i]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

template <typename Op> static LogicalResult verifyReduce(Op op) {
  auto in = op.getInput().getType();
  if (op.getAxes().empty())
    return op.emitOpError() << "needs at least one axis to reduce";
  auto shape = reducedShape(op, in.getShape(), op.getAxes(), op.getKeepdim());
  if (failed(shape))
    return failure();
  if (op.getType().getShape() != ArrayRef<int64_t>(*shape) ||
      op.getType().getElementType() != in.getElementType())
    return op.emitOpError() << "result type " << op.getType() << " is wrong; expected shape "
                            << shapeStr(*shape) << " with element type " << in.getElementType();
  return success();
}
LogicalResult ReduceSumOp::verify() { return verifyReduce(*this); }
LogicalResult ReduceMeanOp::verify() { return verifyReduce(*this); }
LogicalResult ReduceMaxOp::verify() { return verifyReduce(*this); }

template <typename Op> static LogicalResult verifySoftmax(Op op) {
  int64_t axis = op.getAxis();
  if (normalizeAxis(axis, op.getType().getRank()) < 0)
    return op.emitOpError() << "axis " << axis << " is out of range for rank "
                            << op.getType().getRank();
  return success();
}
LogicalResult SoftmaxOp::verify() { return verifySoftmax(*this); }
LogicalResult LogSoftmaxOp::verify() { return verifySoftmax(*this); }

/// weight/bias of a norm must be 1-D of the input's last dimension.
static LogicalResult verifyNormParam(Operation *op, StringRef name, RankedTensorType input,
                                     RankedTensorType param) {
  int64_t last = input.getRank() ? input.getShape().back() : 0;
  if (input.getRank() == 0)
    return op->emitOpError() << "input must have rank >= 1";
  if (param.getRank() != 1 || param.getDimSize(0) != last)
    return op->emitOpError() << name << " has shape " << shapeStr(param)
                             << "; expected [" << last
                             << "] (the size of the input's last dimension)";
  if (param.getElementType() != input.getElementType())
    return op->emitOpError() << name << " element type " << param.getElementType()
                             << " differs from input element type " << input.getElementType();
  return success();
}

LogicalResult LayerNormOp::verify() {
  if (failed(verifyNormParam(*this, "weight", getInput().getType(), getWeight().getType())) ||
      failed(verifyNormParam(*this, "bias", getInput().getType(), getBias().getType())))
    return failure();
  if (!(getEps().convertToDouble() > 0))
    return emitOpError() << "eps must be > 0";
  return success();
}

LogicalResult RmsNormOp::verify() {
  if (failed(verifyNormParam(*this, "weight", getInput().getType(), getWeight().getType())))
    return failure();
  if (!(getEps().convertToDouble() > 0))
    return emitOpError() << "eps must be > 0";
  return success();
}

//===----------------------------------------------------------------------===//
// Linear algebra and attention
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  auto lhs = getLhs().getType(), rhs = getRhs().getType();
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return emitOpError() << "operands must have rank >= 2, got " << shapeStr(lhs) << " and "
                         << shapeStr(rhs);
  if (lhs.getElementType() != rhs.getElementType() ||
      lhs.getElementType() != getType().getElementType())
    return emitOpError() << "element types " << lhs.getElementType() << ", "
                         << rhs.getElementType() << " -> " << getType().getElementType()
                         << " must all be equal";
  int64_t lr = lhs.getRank(), rr = rhs.getRank();
  int64_t m = lhs.getDimSize(getTransposeLhs() ? lr - 1 : lr - 2);
  int64_t k = lhs.getDimSize(getTransposeLhs() ? lr - 2 : lr - 1);
  int64_t k2 = rhs.getDimSize(getTransposeRhs() ? rr - 1 : rr - 2);
  int64_t n = rhs.getDimSize(getTransposeRhs() ? rr - 2 : rr - 1);
  if (k != k2)
    return emitOpError() << "contraction sizes differ: lhs " << shapeStr(lhs) << " has K = " << k
                         << " but rhs " << shapeStr(rhs) << " has K = " << k2;
  auto batch = broadcastShapes(lhs.getShape().drop_back(2), rhs.getShape().drop_back(2));
  if (!batch)
    return emitOpError() << "batch dimensions of " << shapeStr(lhs) << " and " << shapeStr(rhs)
                         << " do not broadcast";
  SmallVector<int64_t> expected = *batch;
  expected.push_back(m);
  expected.push_back(n);
  if (getType().getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "result shape " << shapeStr(getType()) << " is wrong; expected "
                         << shapeStr(expected);
  return success();
}

LogicalResult RopeOp::verify() {
  auto t = getType();
  if (t.getRank() < 2 || t.getShape().back() % 2 != 0)
    return emitOpError() << "input " << shapeStr(t)
                         << " must be [..., T, D] with an even head dimension D";
  if (int64_t(getOffset()) < 0)
    return emitOpError() << "offset must be >= 0";
  return success();
}

LogicalResult CausalMaskOp::verify() {
  if (getType().getRank() < 2)
    return emitOpError() << "input " << shapeStr(getType())
                         << " must have rank >= 2 ([..., Tq, Tk] scores)";
  return success();
}

/// The softmax scale of an attention: `scale`, or 1/sqrt(head dim).
static double attentionScale(std::optional<APFloat> scale, RankedTensorType query) {
  if (scale)
    return scale->convertToDouble();
  return 1.0 / std::sqrt(double(query.getShape().back()));
}

double AttentionOp::getScaleOrDefault() { return attentionScale(getScale(), getQuery().getType()); }

LogicalResult AttentionOp::verify() {
  auto q = getQuery().getType(), k = getKey().getType(), v = getValue().getType();
  if (q.getRank() != 4 || k.getRank() != 4 || v.getRank() != 4)
    return emitOpError() << "query, key and value must be [B, H, T, D]; got " << shapeStr(q)
                         << ", " << shapeStr(k) << ", " << shapeStr(v);
  if (k != v)
    return emitOpError() << "key " << shapeStr(k) << " and value " << shapeStr(v)
                         << " must have the same type";
  if (k.getElementType() != q.getElementType())
    return emitOpError() << "query and key element types differ";
  if (q.getDimSize(0) != k.getDimSize(0) || q.getDimSize(3) != k.getDimSize(3))
    return emitOpError() << "query " << shapeStr(q) << " and key " << shapeStr(k)
                         << " must agree on batch (dim 0) and head size (dim 3)";
  if (k.getDimSize(1) == 0 || q.getDimSize(1) % k.getDimSize(1) != 0)
    return emitOpError() << "query heads (" << q.getDimSize(1)
                         << ") must be a multiple of key/value heads (" << k.getDimSize(1) << ")";
  return success();
}

double AttentionGradOp::getScaleOrDefault() {
  // The forward's scale, as the VJP copied its attributes.
  return attentionScale(getScale(), getQuery().getType());
}

LogicalResult AttentionGradOp::verify() {
  // The forward's rules, then: out and grad_out are the forward's result,
  // and each gradient has its operand's type.
  auto q = getQuery().getType(), k = getKey().getType(), v = getValue().getType();
  if (q.getRank() != 4 || k != v || k.getRank() != 4 || k.getElementType() != q.getElementType() ||
      q.getDimSize(0) != k.getDimSize(0) || q.getDimSize(3) != k.getDimSize(3) ||
      k.getDimSize(1) == 0 || q.getDimSize(1) % k.getDimSize(1) != 0)
    return emitOpError() << "query " << shapeStr(q) << ", key " << shapeStr(k) << " and value "
                         << shapeStr(v) << " are not valid lcc.attention operands";
  if (getOut().getType() != q || getGradOut().getType() != q)
    return emitOpError() << "out and grad_out must have the query's type " << q;
  if (getGradQuery().getType() != q || getGradKey().getType() != k ||
      getGradValue().getType() != v)
    return emitOpError() << "gradients must have the types of query, key and value";
  return success();
}

LogicalResult CrossEntropyOp::verify() {
  auto logits = getLogits().getType(), targets = getTargets().getType();
  if (logits.getRank() < 1 ||
      logits.getShape().drop_back() != targets.getShape())
    return emitOpError() << "logits " << shapeStr(logits) << " and targets " << shapeStr(targets)
                         << " do not match; expected logits [..., V] with targets [...]";
  if (getType().getElementType() != logits.getElementType())
    return emitOpError() << "result element type must be the logits' "
                         << logits.getElementType();
  return success();
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

static LogicalResult sameElementType(Operation *op, Type in, Type out) {
  auto a = llvm::cast<ShapedType>(in).getElementType();
  auto b = llvm::cast<ShapedType>(out).getElementType();
  if (a != b)
    return op->emitOpError() << "changes the element type from " << a << " to " << b
                             << "; use lcc.convert";
  return success();
}

LogicalResult ReshapeOp::verify() {
  auto in = getInput().getType();
  if (in.getNumElements() != getType().getNumElements())
    return emitOpError() << "cannot reshape " << shapeStr(in) << " (" << in.getNumElements()
                         << " elements) to " << shapeStr(getType()) << " ("
                         << getType().getNumElements() << " elements)";
  return sameElementType(*this, in, getType());
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto dense = llvm::dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    return dense.reshape(getType());
  return {};
}

LogicalResult TransposeOp::verify() {
  auto in = getInput().getType();
  ArrayRef<int64_t> perm = getPerm();
  if (int64_t(perm.size()) != in.getRank())
    return emitOpError() << "perm has " << perm.size() << " entries; expected " << in.getRank()
                         << " (the input rank)";
  SmallVector<bool> seen(in.getRank(), false);
  SmallVector<int64_t> expected;
  for (int64_t p : perm) {
    if (p < 0 || p >= in.getRank() || seen[p])
      return emitOpError() << "perm " << shapeStr(perm) << " is not a permutation of 0.."
                           << in.getRank() - 1;
    seen[p] = true;
    expected.push_back(in.getDimSize(p));
  }
  if (getType().getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "result shape " << shapeStr(getType()) << " is wrong; expected "
                         << shapeStr(expected);
  return sameElementType(*this, in, getType());
}

LogicalResult SliceOp::verify() {
  auto in = getInput().getType();
  int64_t rank = in.getRank();
  ArrayRef<int64_t> start = getStart(), limit = getLimit();
  SmallVector<int64_t> step(rank, 1);
  if (auto s = getStep())
    step.assign(s->begin(), s->end());
  if (int64_t(start.size()) != rank || int64_t(limit.size()) != rank ||
      int64_t(step.size()) != rank)
    return emitOpError() << "start, limit and step need one entry per input dimension ("
                         << rank << ")";
  SmallVector<int64_t> expected;
  for (int64_t d = 0; d < rank; ++d) {
    if (step[d] <= 0)
      return emitOpError() << "step " << step[d] << " of dim " << d << " must be positive";
    if (start[d] < 0 || start[d] > limit[d] || limit[d] > in.getDimSize(d))
      return emitOpError() << "dim " << d << ": range [" << start[d] << ", " << limit[d]
                           << ") is not within [0, " << in.getDimSize(d) << "]";
    expected.push_back((limit[d] - start[d] + step[d] - 1) / step[d]);
  }
  if (getType().getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "result shape " << shapeStr(getType()) << " is wrong; expected "
                         << shapeStr(expected);
  return sameElementType(*this, in, getType());
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "needs at least one input";
  auto first = llvm::cast<RankedTensorType>(getInputs().front().getType());
  int64_t axis = normalizeAxis(int64_t(getAxis()), first.getRank());
  if (axis < 0)
    return emitOpError() << "axis " << int64_t(getAxis()) << " is out of range for rank "
                         << first.getRank();
  SmallVector<int64_t> expected(first.getShape());
  expected[axis] = 0;
  for (auto [i, v] : llvm::enumerate(getInputs())) {
    auto t = llvm::cast<RankedTensorType>(v.getType());
    if (t.getRank() != first.getRank() || t.getElementType() != first.getElementType())
      return emitOpError() << "input " << i << " has type " << t << "; expected rank "
                           << first.getRank() << " and element type " << first.getElementType();
    for (int64_t d = 0; d < t.getRank(); ++d)
      if (d != axis && t.getDimSize(d) != first.getDimSize(d))
        return emitOpError() << "input " << i << " has shape " << shapeStr(t)
                             << "; all inputs must match " << shapeStr(first)
                             << " except along axis " << axis;
    expected[axis] += t.getDimSize(axis);
  }
  if (getType().getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "result shape " << shapeStr(getType()) << " is wrong; expected "
                         << shapeStr(expected);
  return sameElementType(*this, first, getType());
}

LogicalResult BroadcastToOp::verify() {
  auto in = getInput().getType();
  auto b = broadcastShapes(in.getShape(), getType().getShape());
  if (in.getRank() > getType().getRank() || !b || ArrayRef<int64_t>(*b) != getType().getShape())
    return emitOpError() << "cannot broadcast " << shapeStr(in) << " to " << shapeStr(getType())
                         << "; each input dimension must equal the target's or be 1";
  return sameElementType(*this, in, getType());
}

LogicalResult GatherOp::verify() {
  auto in = getInput().getType(), idx = getIndices().getType();
  int64_t axis = normalizeAxis(int64_t(getAxis()), in.getRank());
  if (axis < 0)
    return emitOpError() << "axis " << int64_t(getAxis()) << " is out of range for rank " << in.getRank();
  SmallVector<int64_t> expected(in.getShape().take_front(axis));
  llvm::append_range(expected, idx.getShape());
  llvm::append_range(expected, in.getShape().drop_front(axis + 1));
  if (getType().getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "result shape " << shapeStr(getType()) << " is wrong; expected "
                         << shapeStr(expected) << " (input.shape[:axis] + indices.shape + "
                         << "input.shape[axis+1:])";
  return sameElementType(*this, in, getType());
}

//===----------------------------------------------------------------------===//
// scatter_add (gather's adjoint)
//===----------------------------------------------------------------------===//

LogicalResult ScatterAddOp::verify() {
  auto upd = getUpdates().getType(), idx = getIndices().getType();
  auto result = getType();
  int64_t axis = normalizeAxis(int64_t(getAxis()), result.getRank());
  if (axis < 0)
    return emitOpError() << "axis " << int64_t(getAxis()) << " is out of range for a result of rank "
                         << result.getRank();
  // Every update needs a slot to land in once its index is clamped.
  if (result.getDimSize(axis) < 1)
    return emitOpError() << "result " << shapeStr(result) << " has size "
                         << result.getDimSize(axis) << " along axis " << axis
                         << "; expected at least 1";
  SmallVector<int64_t> expected(result.getShape().take_front(axis));
  llvm::append_range(expected, idx.getShape());
  llvm::append_range(expected, result.getShape().drop_front(axis + 1));
  if (upd.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "updates shape " << shapeStr(upd) << " is wrong for result "
                         << shapeStr(result) << " and indices " << shapeStr(idx) << "; expected "
                         << shapeStr(expected)
                         << " (result.shape[:axis] + indices.shape + result.shape[axis+1:])";
  return sameElementType(*this, upd, result);
}

} // namespace lcc

#define GET_OP_CLASSES
#include "dialects/lcc/LccOps.cpp.inc"

#include "dialects/lcc/LccInterfaces.cpp.inc"
