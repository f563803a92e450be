//===- OnnxOps.cpp - elementwise, matmul, reduction, normalization ops -----===//
//
// Each handler computes on the host when all its inputs are constants (shape
// arithmetic, attention scales) and emits lcc ops otherwise. Run-time
// arithmetic is on floats only (lcc's integer tensors are indices and masks).
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxOps.h"

#include "lcc_onnx.pb.h"

#include "dialects/lcc/LccOps.h"

#include <cmath>
#include <cstring>

using namespace mlir;

namespace lcc::onnx_import {
namespace {

bool isFloat(Type t) { return llvm::isa<FloatType>(t); }

/// `x op y` broadcast to `shape`, folded on the host: exact int64 when both
/// are int64 and `hostInt` is given, else through double.
HostTensor foldBroadcast(const HostTensor &x, const HostTensor &y, llvm::ArrayRef<int64_t> shape,
                         double (*host)(double, double), int64_t (*hostInt)(int64_t, int64_t)) {
  HostTensor out(x.elementType(), shape);
  bool ints = x.elementType() == ElementType::I64 && y.elementType() == ElementType::I64 &&
              hostInt;
  for (int64_t i = 0; i < out.numElements(); ++i) {
    int64_t a = broadcastIndex(x, shape, i), b = broadcastIndex(y, shape, i);
    if (ints)
      out.data<int64_t>()[i] = hostInt(x.data<int64_t>()[a], y.data<int64_t>()[b]);
    else
      out.setDouble(i, host(x.getDouble(a), y.getDouble(b)));
  }
  return out;
}

/// A run-time float operand, or an error naming the element type.
llvm::Error needFloat(NodeCtx &c, unsigned i) {
  Type et = c.type(i).getElementType();
  if (isFloat(et))
    return llvm::Error::success();
  std::string s;
  llvm::raw_string_ostream os(s);
  os << et;
  return c.unsupported("run-time " + c.node.op_type() + " on " + s +
                       " tensors is not supported (only float arithmetic runs in lcc "
                       "kernels; integer arithmetic must fold at compile time)");
}

// --- Elementwise -----------------------------------------------------------

template <typename Op>
OpHandler unary(double (*host)(double), int64_t (*hostInt)(int64_t) = nullptr) {
  return [host, hostInt](NodeCtx &c) -> llvm::Error {
    if (c.isConstant(0)) {
      const HostTensor &x = c.known(0);
      if (x.elementType() == ElementType::I64) { // exact beyond 2^53
        if (!hostInt)
          return c.unsupported(c.node.op_type() + " of int64 values");
        HostTensor out(ElementType::I64, x.shape());
        for (int64_t i = 0; i < x.numElements(); ++i)
          out.data<int64_t>()[i] = hostInt(x.data<int64_t>()[i]);
        c.setOutput(0, std::move(out));
        return llvm::Error::success();
      }
      c.setOutput(0, HostTensor::generate(x.elementType(), x.shape(),
                                          [&](int64_t i) { return host(x.getDouble(i)); }));
      return llvm::Error::success();
    }
    if (llvm::Error e = needFloat(c, 0))
      return e;
    c.setOutput(0, Op::create(c.b, c.loc, c.tensor(0)).getResult());
    return llvm::Error::success();
  };
}

/// A binary op on broadcast operands: host (int64 or double) or lcc.
template <typename Op>
OpHandler binary(double (*host)(double, double), int64_t (*hostInt)(int64_t, int64_t)) {
  return [host, hostInt](NodeCtx &c) -> llvm::Error {
    auto shape = broadcastShape(c.shape(0), c.shape(1));
    if (!shape)
      return c.error("operand shapes do not broadcast");
    if (c.allConstant()) {
      if (llvm::Error e = c.checkShape(*shape, true))
        return e;
      c.setOutput(0, foldBroadcast(c.known(0), c.known(1), *shape, host, hostInt));
      return llvm::Error::success();
    }
    if (llvm::Error e = needFloat(c, 0))
      return e;
    Value lhs = c.tensor(0), rhs = c.tensor(1);
    Type et = c.type(0).getElementType();
    if (c.type(1).getElementType() != et) // Pow's exponent may be any numeric type
      rhs = lcc::ConvertOp::create(c.b, c.loc, RankedTensorType::get(c.shape(1), et), rhs);
    c.setOutput(0, Op::create(c.b, c.loc, RankedTensorType::get(*shape, et), lhs, rhs).getResult());
    return llvm::Error::success();
  };
}

/// Max/Min with any number of inputs: a chain of broadcasting binary ops.
template <typename Op>
OpHandler variadic(double (*host)(double, double), int64_t (*hostInt)(int64_t, int64_t)) {
  OpHandler two = binary<Op>(host, hostInt);
  return [two, host, hostInt](NodeCtx &c) -> llvm::Error {
    if (c.numInputs() == 2)
      return two(c);
    if (c.allConstant()) {
      HostTensor acc = c.known(0);
      for (unsigned i = 1; i < c.numInputs(); ++i) {
        const HostTensor &y = c.known(i);
        auto shape = broadcastShape(acc.shape(), y.shape());
        if (!shape)
          return c.error("operand shapes do not broadcast");
        if (llvm::Error e = c.checkShape(*shape, true))
          return e;
        acc = foldBroadcast(acc, y, *shape, host, hostInt);
      }
      c.setOutput(0, std::move(acc));
      return llvm::Error::success();
    }
    Value acc = c.tensor(0);
    for (unsigned i = 0; i < c.numInputs(); ++i)
      if (llvm::Error e = needFloat(c, i))
        return e;
    for (unsigned i = 1; i < c.numInputs(); ++i) {
      auto at = llvm::cast<RankedTensorType>(acc.getType());
      auto shape = broadcastShape(at.getShape(), c.shape(i));
      if (!shape)
        return c.error("operand shapes do not broadcast");
      acc = Op::create(c.b, c.loc, RankedTensorType::get(*shape, at.getElementType()), acc,
                       c.tensor(i));
    }
    c.setOutput(0, acc);
    return llvm::Error::success();
  };
}

template <typename T>
bool holds(llvm::StringRef predicate, T a, T b) {
  if (predicate == "eq")
    return a == b;
  if (predicate == "lt")
    return a < b;
  if (predicate == "le")
    return a <= b;
  if (predicate == "gt")
    return a > b;
  return a >= b; // "ge"
}

OpHandler compare(const char *predicate) {
  return [=](NodeCtx &c) -> llvm::Error {
    auto shape = broadcastShape(c.shape(0), c.shape(1));
    if (!shape)
      return c.error("operand shapes do not broadcast");
    if (c.allConstant()) {
      bool ints = c.known(0).elementType() == ElementType::I64 &&
                  c.known(1).elementType() == ElementType::I64;
      return foldToBool(c, *shape, [&](const HostTensor &x, int64_t a, const HostTensor &y,
                                       int64_t b) {
        return ints ? holds(predicate, x.data<int64_t>()[a], y.data<int64_t>()[b])
                    : holds(predicate, x.getDouble(a), y.getDouble(b));
      });
    }
    if (c.type(0).getElementType() != c.type(1).getElementType())
      return c.error("compares different element types");
    c.setOutput(0, lcc::CmpOp::create(c.b, c.loc, RankedTensorType::get(*shape, c.b.getI1Type()),
                                      c.tensor(0), c.tensor(1), c.b.getStringAttr(predicate))
                       .getResult());
    return llvm::Error::success();
  };
}

llvm::Error notOp(NodeCtx &c) {
  if (c.isConstant(0)) {
    const HostTensor &x = c.known(0);
    c.setOutput(0, HostTensor::generate(ElementType::I1, x.shape(),
                                        [&](int64_t i) { return x.getDouble(i) == 0; }));
    return llvm::Error::success();
  }
  HostTensor f = HostTensor::scalar<bool>(false);
  Value zero = c.materialize(f);
  c.setOutput(0, lcc::CmpOp::create(c.b, c.loc, c.type(0), c.tensor(0), zero,
                                    c.b.getStringAttr("eq"))
                     .getResult());
  return llvm::Error::success();
}

llvm::Error where(NodeCtx &c) {
  auto s = broadcastShape(c.shape(1), c.shape(2));
  auto shape = s ? broadcastShape(*s, c.shape(0)) : std::nullopt;
  if (!shape)
    return c.error("condition and branch shapes do not broadcast");
  if (c.allConstant()) {
    const HostTensor &cond = c.known(0), &x = c.known(1),
                     &y = c.known(2);
    if (x.elementType() != y.elementType())
      return c.error("X and Y have different element types");
    if (llvm::Error e = c.checkShape(*shape, true))
      return e;
    HostTensor out(x.elementType(), *shape);
    for (int64_t i = 0; i < out.numElements(); ++i) {
      bool take = cond.getDouble(broadcastIndex(cond, *shape, i)) != 0;
      const HostTensor &from = take ? x : y;
      int64_t j = broadcastIndex(from, *shape, i);
      if (out.elementType() == ElementType::I64)
        out.data<int64_t>()[i] = from.data<int64_t>()[j];
      else
        out.setDouble(i, from.getDouble(j));
    }
    c.setOutput(0, std::move(out));
    return llvm::Error::success();
  }
  if (llvm::Error e = needFloat(c, 1))
    return e;
  Type et = c.type(1).getElementType();
  c.setOutput(0, lcc::WhereOp::create(c.b, c.loc, RankedTensorType::get(*shape, et), c.tensor(0),
                                      c.tensor(1), c.tensor(2))
                     .getResult());
  return llvm::Error::success();
}

/// Cast (to = attribute) and CastLike (to = input 1's type).
llvm::Error cast(NodeCtx &c, int32_t to) {
  std::optional<ElementType> et = elementTypeOf(to);
  if (!et)
    return c.unsupported("cast to " + onnxTypeName(to) + " is not supported");
  if (c.isConstant(0)) {
    const HostTensor &x = c.known(0);
    HostTensor out(*et, x.shape());
    for (int64_t i = 0; i < x.numElements(); ++i) {
      if (*et == ElementType::I1) {
        out.setDouble(i, x.getDouble(i) != 0);
        continue;
      }
      if (isFloatType(*et)) {
        out.setDouble(i, x.getDouble(i));
        continue;
      }
      // To an integer: integers wrap (as the run-time truncation does),
      // floats truncate toward zero and must fit.
      int64_t v;
      if (x.elementType() == ElementType::I64) {
        v = x.data<int64_t>()[i];
      } else {
        double d = std::trunc(x.getDouble(i));
        if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
          return c.error("cannot cast " + std::to_string(x.getDouble(i)) + " to an integer");
        v = int64_t(d);
      }
      if (*et == ElementType::I64)
        out.data<int64_t>()[i] = v;
      else
        out.data<int32_t>()[i] = int32_t(uint32_t(uint64_t(v)));
    }
    c.setOutput(0, std::move(out));
    return llvm::Error::success();
  }
  Type target = c.elementType(*et);
  if (c.type(0).getElementType() == target) {
    c.setOutput(0, c.tensor(0));
    return llvm::Error::success();
  }
  c.setOutput(0, lcc::ConvertOp::create(c.b, c.loc, RankedTensorType::get(c.shape(0), target),
                                        c.tensor(0))
                     .getResult());
  return llvm::Error::success();
}

llvm::Error reciprocal(NodeCtx &c) {
  if (c.isConstant(0)) {
    const HostTensor &x = c.known(0);
    c.setOutput(0, HostTensor::generate(x.elementType(), x.shape(),
                                        [&](int64_t i) { return 1.0 / x.getDouble(i); }));
    return llvm::Error::success();
  }
  if (llvm::Error e = needFloat(c, 0))
    return e;
  c.setOutput(0, lcc::DivOp::create(c.b, c.loc, c.type(0),
                                    c.scalar(c.type(0).getElementType(), 1.0), c.tensor(0))
                     .getResult());
  return llvm::Error::success();
}

llvm::Error abs(NodeCtx &c) {
  if (c.isConstant(0) && c.known(0).elementType() == ElementType::I64) {
    HostTensor out = c.known(0);
    for (int64_t i = 0; i < out.numElements(); ++i)
      if (out.data<int64_t>()[i] < 0)
        out.data<int64_t>()[i] = int64_t(0 - uint64_t(out.data<int64_t>()[i]));
    c.setOutput(0, std::move(out));
    return llvm::Error::success();
  }
  if (c.isConstant(0)) {
    const HostTensor &x = c.known(0);
    c.setOutput(0, HostTensor::generate(x.elementType(), x.shape(),
                                        [&](int64_t i) { return std::fabs(x.getDouble(i)); }));
    return llvm::Error::success();
  }
  if (llvm::Error e = needFloat(c, 0))
    return e;
  // |x| = max(x, -x), exact.
  Value x = c.tensor(0), neg = lcc::NegOp::create(c.b, c.loc, x);
  c.setOutput(0, lcc::MaximumOp::create(c.b, c.loc, c.type(0), x, neg).getResult());
  return llvm::Error::success();
}

llvm::Error gelu(NodeCtx &c) {
  if (llvm::Error e = needFloat(c, 0))
    return e;
  std::string approximate = c.attrString("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    return c.error("approximate = '" + approximate + "'; expected 'none' or 'tanh'");
  c.setOutput(0, lcc::GeluOp::create(c.b, c.loc, c.tensor(0), c.b.getStringAttr(approximate))
                     .getResult());
  return llvm::Error::success();
}

llvm::Error identity(NodeCtx &c) {
  if (c.isConstant(0))
    c.setOutput(0, c.known(0));
  else
    c.setOutput(0, c.tensor(0));
  return llvm::Error::success();
}

/// Inference-mode Dropout (training_mode absent or false, or ratio 0): the
/// identity, and an all-true mask.
llvm::Error dropout(NodeCtx &c) {
  if (c.has(2)) {
    auto training = c.constant(2, "training_mode");
    if (!training)
      return training.takeError();
    if ((*training)->numElements() != 1 || (c.isConstant(1) && c.known(1).numElements() != 1))
      return c.error("ratio and training_mode must be scalars");
    double ratio = 0.5;
    if (c.has(1)) {
      auto r = c.constant(1, "ratio");
      if (!r)
        return r.takeError();
      ratio = (*r)->getDouble(0);
    }
    if ((*training)->getDouble(0) != 0 && ratio != 0)
      return c.unsupported("training-mode dropout is not supported (lcc trains without "
                           "dropout)");
  }
  if (llvm::Error e = identity(c))
    return e;
  if (c.wantsOutput(1)) {
    if (llvm::Error e = c.checkShape(c.shape(0), true))
      return e;
    c.setOutput(1, HostTensor::generate(ElementType::I1, c.shape(0), [](int64_t) { return 1; }));
  }
  return llvm::Error::success();
}

// --- Matmul ----------------------------------------------------------------

llvm::Error matmul(NodeCtx &c) {
  if (llvm::Error e = needFloat(c, 0))
    return e;
  std::vector<int64_t> a = c.shape(0), bs = c.shape(1);
  if (a.empty() || bs.empty())
    return c.error("MatMul operands must have rank >= 1");
  // NumPy semantics: a 1-D lhs is a row, a 1-D rhs a column, removed after.
  Value lhs = c.tensor(0), rhs = c.tensor(1);
  bool rowVec = a.size() == 1, colVec = bs.size() == 1;
  if (rowVec)
    a.insert(a.begin(), 1), lhs = reshapeValue(c, lhs, a);
  if (colVec)
    bs.push_back(1), rhs = reshapeValue(c, rhs, bs);
  if (a.back() != bs[bs.size() - 2])
    return c.error("inner dimensions differ: " + llvm::Twine(a.back()) + " and " +
                   llvm::Twine(bs[bs.size() - 2]));
  auto batch = broadcastShape(llvm::ArrayRef<int64_t>(a).drop_back(2),
                              llvm::ArrayRef<int64_t>(bs).drop_back(2));
  if (!batch)
    return c.error("batch dimensions do not broadcast");
  std::vector<int64_t> out = *batch;
  out.push_back(a[a.size() - 2]);
  out.push_back(bs.back());
  std::vector<int64_t> final(out);
  if (colVec)
    final.pop_back();
  if (rowVec)
    final.erase(final.end() - (colVec ? 1 : 2));
  // Constant operands (RoPE's inv_freq times the positions) fold, each
  // element summed in double and rounded once, unless that is much work.
  int64_t k = a.back();
  double work = double(k);
  for (int64_t d : out)
    work *= double(d);
  if (c.allConstant() && work <= double(int64_t(1) << 26)) {
    if (llvm::Error e = c.checkShape(out, true))
      return e;
    const HostTensor &x = c.known(0), &y = c.known(1);
    int64_t m = a[a.size() - 2], n = bs.back();
    // Operands as [.., m, k] and [.., k, n], broadcast over the batch dims.
    std::vector<int64_t> xs(*batch), ys(*batch);
    xs.push_back(m), xs.push_back(k), ys.push_back(k), ys.push_back(n);
    HostTensor result(x.elementType(), final);
    // The operands with their vector dimensions made explicit.
    HostTensor xv(x.elementType(), a), yv(y.elementType(), bs);
    std::memcpy(xv.rawData(), x.rawData(), x.byteSize());
    std::memcpy(yv.rawData(), y.rawData(), y.byteSize());
    int64_t batches = 1;
    for (int64_t d : *batch)
      batches *= d;
    for (int64_t t = 0; t < batches; ++t)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double sum = 0;
          for (int64_t l = 0; l < k; ++l) {
            int64_t flatX = (t * m + i) * k + l, flatY = (t * k + l) * n + j;
            sum += xv.getDouble(broadcastIndex(xv, xs, flatX)) *
                   yv.getDouble(broadcastIndex(yv, ys, flatY));
          }
          result.setDouble((t * m + i) * n + j, sum);
        }
    c.setOutput(0, std::move(result));
    return llvm::Error::success();
  }
  Type et = c.type(0).getElementType();
  Value r = lcc::MatmulOp::create(c.b, c.loc, RankedTensorType::get(out, et), lhs, rhs, false,
                                  false);
  c.setOutput(0, reshapeValue(c, r, final));
  return llvm::Error::success();
}

/// Y = alpha * A' B' + beta * C (A, B 2-D; A' = A^T with transA).
llvm::Error gemm(NodeCtx &c) {
  if (llvm::Error e = needFloat(c, 0))
    return e;
  std::vector<int64_t> a = c.shape(0), bs = c.shape(1);
  if (a.size() != 2 || bs.size() != 2)
    return c.error("Gemm operands must be 2-D");
  bool ta = c.attrInt("transA", 0), tb = c.attrInt("transB", 0);
  int64_t m = ta ? a[1] : a[0], k = ta ? a[0] : a[1], kb = tb ? bs[1] : bs[0],
          n = tb ? bs[0] : bs[1];
  if (k != kb)
    return c.error("inner dimensions differ: " + llvm::Twine(k) + " and " + llvm::Twine(kb));
  Type et = c.type(0).getElementType();
  auto type = RankedTensorType::get({m, n}, et);
  Value y = lcc::MatmulOp::create(c.b, c.loc, type, c.tensor(0), c.tensor(1), ta, tb);
  double alpha = c.attrFloat("alpha", 1.0), beta = c.attrFloat("beta", 1.0);
  if (alpha != 1.0)
    y = lcc::MulOp::create(c.b, c.loc, type, y, c.scalar(et, alpha));
  if (c.has(2) && beta != 0.0) {
    Value bias = c.tensor(2);
    if (broadcastShape(c.shape(2), {m, n}) != std::vector<int64_t>{m, n})
      return c.error("C does not broadcast to [M, N]");
    if (beta != 1.0)
      bias = lcc::MulOp::create(c.b, c.loc, c.type(2), bias, c.scalar(et, beta));
    y = lcc::AddOp::create(c.b, c.loc, type, y, bias);
  }
  c.setOutput(0, y);
  return llvm::Error::success();
}

// --- Softmax, reductions, normalization -------------------------------------

/// Softmax/LogSoftmax. Before opset 13 the input is coerced to 2-D at `axis`
/// (default 1) and normalized over the flattened trailing part.
template <typename Op>
OpHandler softmax(bool coerce2d) {
  return [coerce2d](NodeCtx &c) -> llvm::Error {
    if (llvm::Error e = needFloat(c, 0))
      return e;
    std::vector<int64_t> shape = c.shape(0);
    int64_t rank = int64_t(shape.size());
    auto axis = normalizeAxis(c.attrInt("axis", coerce2d ? 1 : -1), rank);
    if (!axis)
      return c.error("axis is out of range for rank " + llvm::Twine(rank));
    if (!coerce2d) {
      c.setOutput(0, Op::create(c.b, c.loc, c.tensor(0), c.b.getI64IntegerAttr(*axis))
                         .getResult());
      return llvm::Error::success();
    }
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < rank; ++d)
      (d < *axis ? outer : inner) *= shape[d];
    Value flat = reshapeValue(c, c.tensor(0), {outer, inner});
    Value r = Op::create(c.b, c.loc, flat, c.b.getI64IntegerAttr(1));
    c.setOutput(0, reshapeValue(c, r, shape));
    return llvm::Error::success();
  };
}

/// ReduceMean/Sum/Max: axes from the attribute (older opsets) or input 1.
template <typename Op>
OpHandler reduce(bool axesInput) {
  return [axesInput](NodeCtx &c) -> llvm::Error {
    std::vector<int64_t> shape = c.shape(0);
    int64_t rank = int64_t(shape.size());
    auto given = c.axes(axesInput);
    if (!given)
      return given.takeError();
    std::vector<int64_t> axes = given->value_or(std::vector<int64_t>());
    bool keep = c.attrInt("keepdims", 1) != 0;
    if (axes.empty() && c.attrInt("noop_with_empty_axes", 0))
      return identity(c);
    if (axes.empty())
      for (int64_t d = 0; d < rank; ++d)
        axes.push_back(d);
    std::vector<bool> reduced(rank, false);
    for (int64_t &a : axes) {
      auto n = normalizeAxis(a, rank);
      if (!n)
        return c.error("axis " + llvm::Twine(a) + " is out of range for rank " +
                       llvm::Twine(rank));
      a = *n;
      reduced[a] = true;
    }
    if (llvm::Error e = needFloat(c, 0))
      return e;
    std::vector<int64_t> out;
    for (int64_t d = 0; d < rank; ++d)
      if (!reduced[d] || keep)
        out.push_back(reduced[d] ? 1 : shape[d]);
    std::sort(axes.begin(), axes.end());
    axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
    c.setOutput(0, Op::create(c.b, c.loc, RankedTensorType::get(out, c.type(0).getElementType()),
                              c.tensor(0), c.b.getDenseI64ArrayAttr(axes), c.b.getBoolAttr(keep))
                       .getResult());
    return llvm::Error::success();
  };
}

/// LayerNormalization. Over the last dimension with only Y wanted it is one
/// lcc.layer_norm; otherwise (axis before the last, Mean/InvStdDev wanted) it
/// is spelled out with reductions, as the ONNX function body defines it.
llvm::Error layerNorm(NodeCtx &c) {
  if (llvm::Error e = needFloat(c, 0))
    return e;
  std::vector<int64_t> shape = c.shape(0);
  int64_t rank = int64_t(shape.size());
  auto axis = normalizeAxis(c.attrInt("axis", -1), rank);
  if (!axis)
    return c.error("axis is out of range");
  std::vector<int64_t> normalized(shape.begin() + *axis, shape.end());
  for (unsigned i = 1; i < 3; ++i)
    if (c.has(i) && (!broadcastShape(c.shape(i), normalized) ||
                     *broadcastShape(c.shape(i), normalized) != normalized))
      return c.error("Scale and B must broadcast to the normalized dimensions");
  RankedTensorType type = c.type(0);
  Type et = type.getElementType();
  double eps = c.attrFloat("epsilon", 1e-5);
  int64_t d = shape.back();
  bool fullParams = (!c.has(1) || c.type(1).getNumElements() == d) &&
                    (!c.has(2) || c.type(2).getNumElements() == d);
  if (*axis == rank - 1 && !c.wantsOutput(1) && !c.wantsOutput(2) && fullParams) {
    auto param = [&](unsigned i) -> Value {
      if (!c.has(i))
        return c.materialize(HostTensor(hostElementType(et), {d}));
      return reshapeValue(c, c.tensor(i), {d});
    };
    c.setOutput(0, lcc::LayerNormOp::create(c.b, c.loc, type, c.tensor(0), param(1), param(2),
                                            c.b.getF64FloatAttr(eps))
                       .getResult());
    return llvm::Error::success();
  }
  std::vector<int64_t> axes, statShape(shape);
  for (int64_t d = *axis; d < rank; ++d) {
    axes.push_back(d);
    statShape[d] = 1;
  }
  auto statType = RankedTensorType::get(statShape, et);
  auto mean = [&](Value v) -> Value {
    return lcc::ReduceMeanOp::create(c.b, c.loc, statType, v, c.b.getDenseI64ArrayAttr(axes),
                                     c.b.getBoolAttr(true));
  };
  Value x = c.tensor(0), mu = mean(x);
  Value centered = lcc::SubOp::create(c.b, c.loc, type, x, mu);
  Value var = mean(lcc::MulOp::create(c.b, c.loc, type, centered, centered));
  Value inv = lcc::RsqrtOp::create(
      c.b, c.loc, lcc::AddOp::create(c.b, c.loc, statType, var, c.scalar(et, eps)));
  Value y = lcc::MulOp::create(c.b, c.loc, type, centered, inv);
  if (c.has(1))
    y = lcc::MulOp::create(c.b, c.loc, type, y, c.tensor(1));
  if (c.has(2))
    y = lcc::AddOp::create(c.b, c.loc, type, y, c.tensor(2));
  c.setOutput(0, y);
  if (c.wantsOutput(1))
    c.setOutput(1, mu);
  if (c.wantsOutput(2))
    c.setOutput(2, inv);
  return llvm::Error::success();
}

double hPow(double a, double b) { return std::pow(a, b); }
// Folded int64 arithmetic wraps around (two's complement) instead of
// overflowing, which C++ leaves undefined.
int64_t iAdd(int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); }
int64_t iSub(int64_t a, int64_t b) { return int64_t(uint64_t(a) - uint64_t(b)); }
int64_t iMul(int64_t a, int64_t b) { return int64_t(uint64_t(a) * uint64_t(b)); }
int64_t iDiv(int64_t a, int64_t b) {
  if (b == 0)
    return 0;
  if (b == -1)
    return int64_t(0 - uint64_t(a));
  return a / b;
}
int64_t iPow(int64_t a, int64_t b) {
  if (b < 0)
    return a == 1 ? 1 : a == -1 ? (b % 2 ? -1 : 1) : 0;
  uint64_t r = 1, base = uint64_t(a);
  for (; b; b >>= 1, base *= base)
    if (b & 1)
      r *= base;
  return int64_t(r);
}
int64_t iNeg(int64_t a) { return int64_t(0 - uint64_t(a)); }
int64_t iRelu(int64_t a) { return a > 0 ? a : 0; }
int64_t iMax(int64_t a, int64_t b) { return std::max(a, b); }
int64_t iMin(int64_t a, int64_t b) { return std::min(a, b); }

} // namespace

llvm::Error foldToBool(NodeCtx &c, llvm::ArrayRef<int64_t> shape,
                       llvm::function_ref<bool(const HostTensor &, int64_t, const HostTensor &,
                                               int64_t)>
                           f) {
  if (llvm::Error e = c.checkShape(shape, true))
    return e;
  const HostTensor &x = c.known(0), &y = c.known(1);
  c.setOutput(0, HostTensor::generate(ElementType::I1, shape, [&](int64_t i) {
                return f(x, broadcastIndex(x, shape, i), y, broadcastIndex(y, shape, i));
              }));
  return llvm::Error::success();
}

Value reshapeValue(NodeCtx &c, Value v, llvm::ArrayRef<int64_t> shape) {
  auto t = llvm::cast<RankedTensorType>(v.getType());
  if (t.getShape() == shape)
    return v;
  return lcc::ReshapeOp::create(c.b, c.loc, RankedTensorType::get(shape, t.getElementType()), v);
}

void addMathOps(std::vector<OpEntry> &t) {
  t.push_back({"Neg", 1, unary<lcc::NegOp>([](double x) { return -x; }, iNeg)});
  t.push_back({"Exp", 1, unary<lcc::ExpOp>([](double x) { return std::exp(x); })});
  t.push_back({"Log", 1, unary<lcc::LogOp>([](double x) { return std::log(x); })});
  t.push_back({"Tanh", 1, unary<lcc::TanhOp>([](double x) { return std::tanh(x); })});
  t.push_back({"Erf", 9, unary<lcc::ErfOp>([](double x) { return std::erf(x); })});
  t.push_back({"Sqrt", 1, unary<lcc::SqrtOp>([](double x) { return std::sqrt(x); })});
  t.push_back({"Relu", 1, unary<lcc::ReluOp>([](double x) { return x > 0 ? x : 0.0; }, iRelu)});
  t.push_back({"Sigmoid", 1,
               unary<lcc::SigmoidOp>([](double x) { return 1.0 / (1.0 + std::exp(-x)); })});
  t.push_back({"Reciprocal", 1, reciprocal});
  t.push_back({"Abs", 1, abs});
  t.push_back({"Gelu", 20, gelu});
  t.push_back({"Identity", 1, identity});
  t.push_back({"Dropout", 1, dropout, {1, 2}});
  t.push_back({"Add", 7,
               binary<lcc::AddOp>([](double a, double b) { return a + b; }, iAdd), {}, 2});
  t.push_back({"Sub", 7,
               binary<lcc::SubOp>([](double a, double b) { return a - b; }, iSub), {}, 2});
  t.push_back({"Mul", 7,
               binary<lcc::MulOp>([](double a, double b) { return a * b; }, iMul), {}, 2});
  t.push_back({"Div", 7,
               binary<lcc::DivOp>([](double a, double b) { return a / b; }, iDiv), {}, 2});
  t.push_back({"Pow", 7, binary<lcc::PowOp>(hPow, iPow), {}, 2});
  t.push_back({"Max", 8,
               variadic<lcc::MaximumOp>([](double a, double b) { return std::fmax(a, b); },
                                        iMax), {}, -1});
  t.push_back({"Min", 8,
               variadic<lcc::MinimumOp>([](double a, double b) { return std::fmin(a, b); },
                                        iMin), {}, -1});
  t.push_back({"Equal", 7, compare("eq"), {}, 2});
  t.push_back({"Less", 7, compare("lt"), {}, 2});
  t.push_back({"LessOrEqual", 12, compare("le"), {}, 2});
  t.push_back({"Greater", 7, compare("gt"), {}, 2});
  t.push_back({"GreaterOrEqual", 12, compare("ge"), {}, 2});
  t.push_back({"Not", 1, notOp});
  t.push_back({"Where", 9, where, {}, 3});
  t.push_back({"Cast", 6, [](NodeCtx &c) { return cast(c, int32_t(c.attrInt("to", 0))); }});
  t.push_back({"CastLike", 15, [](NodeCtx &c) {
                 return cast(c, onnxTypeOf(hostElementType(c.type(1).getElementType())));
               }, {}, 2});
  t.push_back({"MatMul", 1, matmul, {}, 2});
  t.push_back({"Gemm", 7, gemm, {}, 2});
  t.push_back({"Softmax", 1, softmax<lcc::SoftmaxOp>(true)});
  t.push_back({"Softmax", 13, softmax<lcc::SoftmaxOp>(false)});
  t.push_back({"LogSoftmax", 1, softmax<lcc::LogSoftmaxOp>(true)});
  t.push_back({"LogSoftmax", 13, softmax<lcc::LogSoftmaxOp>(false)});
  t.push_back({"ReduceMean", 1, reduce<lcc::ReduceMeanOp>(false)});
  t.push_back({"ReduceMean", 18, reduce<lcc::ReduceMeanOp>(true), {1}});
  t.push_back({"ReduceMax", 1, reduce<lcc::ReduceMaxOp>(false)});
  t.push_back({"ReduceMax", 18, reduce<lcc::ReduceMaxOp>(true), {1}});
  t.push_back({"ReduceSum", 1, reduce<lcc::ReduceSumOp>(false)});
  t.push_back({"ReduceSum", 13, reduce<lcc::ReduceSumOp>(true), {1}});
  t.push_back({"LayerNormalization", 17, layerNorm, {}, 2});
}

} // namespace lcc::onnx_import
