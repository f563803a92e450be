//===- OnnxOpsHost.cpp - mask, position and table ops, mostly folded ------===//
//
// Ops that exported language models use to build masks, position ids and
// RoPE tables (And/Or/Xor, CumSum, Cos/Sin, ...) and sdpa's guard against
// fully masked rows (IsNaN). Once batch and sequence are fixed, the mask and
// table subgraphs depend only on constants, so most of these fold on the
// host; the logic ops and the value tests also run in kernels.
//
// Ops marked "compile time only" have no lcc kernel: a graph that feeds them
// run-time data gets an error naming the input, not a wrong program.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxOps.h"
#include "lcc_onnx.pb.h"

#include "dialects/lcc/LccOps.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

using namespace mlir;

namespace lcc::onnx_import {
namespace {

/// Input i of an op lcc evaluates only at compile time.
llvm::Expected<const HostTensor *> hostOnly(NodeCtx &c, unsigned i = 0) {
  if (!c.has(i))
    return c.error("input " + llvm::Twine(i) + " is missing");
  if (!c.isConstant(i))
    return c.unsupported(c.node.op_type() + " runs only at compile time in lcc (mask, position "
                         "and RoPE-table subgraphs), but input '" + c.node.input(int(i)) +
                         "' depends on the model's inputs");
  return &c.known(i);
}

/// A float function of a float tensor, folded (Cos, Sin, Floor, ...).
OpHandler hostMath(double (*f)(double)) {
  return [f](NodeCtx &c) -> llvm::Error {
    auto x = hostOnly(c);
    if (!x)
      return x.takeError();
    if (!isFloatType((*x)->elementType()))
      return c.error("expects a float tensor");
    const HostTensor &in = **x;
    c.setOutput(0, HostTensor::generate(in.elementType(), in.shape(),
                                        [&](int64_t i) { return f(in.getDouble(i)); }));
    return llvm::Error::success();
  };
}

/// And ('&'), Or ('|'), Xor ('^') of bool tensors, broadcast.
OpHandler logical(char kind) {
  return [kind](NodeCtx &c) -> llvm::Error {
    for (unsigned i = 0; i < 2; ++i)
      if (!c.type(i).getElementType().isInteger(1))
        return c.error("input " + llvm::Twine(i) + " is not a bool tensor");
    auto shape = broadcastShape(c.shape(0), c.shape(1));
    if (!shape)
      return c.error("operand shapes do not broadcast");
    if (c.allConstant())
      return foldToBool(c, *shape, [&](const HostTensor &x, int64_t i, const HostTensor &y,
                                       int64_t j) {
        bool a = x.getInt(i) != 0, b = y.getInt(j) != 0;
        return kind == '&' ? a && b : kind == '|' ? a || b : a != b;
      });
    auto boolType = RankedTensorType::get(*shape, c.b.getI1Type());
    if (kind == '^') {
      c.setOutput(0, lcc::CmpOp::create(c.b, c.loc, boolType, c.tensor(0), c.tensor(1),
                                        c.b.getStringAttr("ne"))
                         .getResult());
      return llvm::Error::success();
    }
    // Kernels have no bool arithmetic: count the true operands in f32
    // (exact: 0, 1 or 2), both true for And, any for Or.
    Type f32 = c.b.getF32Type();
    auto count = [&](unsigned i) -> Value {
      return lcc::ConvertOp::create(c.b, c.loc, RankedTensorType::get(c.shape(i), f32),
                                    c.tensor(i));
    };
    auto countType = RankedTensorType::get(*shape, f32);
    Value n = kind == '&'
                  ? Value(lcc::MulOp::create(c.b, c.loc, countType, count(0), count(1)))
                  : Value(lcc::AddOp::create(c.b, c.loc, countType, count(0), count(1)));
    c.setOutput(0, lcc::CmpOp::create(c.b, c.loc, boolType, n, c.scalar(f32, 0.0),
                                      c.b.getStringAttr("ne"))
                       .getResult());
    return llvm::Error::success();
  };
}

/// IsNaN, and IsInf with its detect_positive / detect_negative attributes.
OpHandler valueTest(bool nan) {
  return [nan](NodeCtx &c) -> llvm::Error {
    bool pos = nan || c.attrInt("detect_positive", 1) != 0;
    bool neg = nan || c.attrInt("detect_negative", 1) != 0;
    double inf = std::numeric_limits<double>::infinity();
    if (c.isConstant(0)) {
      const HostTensor &x = c.known(0);
      c.setOutput(0, HostTensor::generate(ElementType::I1, x.shape(), [&](int64_t i) {
                    double v = x.getDouble(i);
                    return nan ? std::isnan(v) : (pos && v == inf) || (neg && v == -inf);
                  }));
      return llvm::Error::success();
    }
    Type et = c.type(0).getElementType();
    if (!llvm::isa<FloatType>(et))
      return c.error("expects a float tensor");
    auto boolType = RankedTensorType::get(c.shape(0), c.b.getI1Type());
    auto cmp = [&](const char *predicate, Value lhs, Value rhs) {
      return lcc::CmpOp::create(c.b, c.loc, boolType, lhs, rhs, c.b.getStringAttr(predicate))
          .getResult();
    };
    Value x = c.tensor(0);
    if (nan) // only NaN compares unequal to itself (unordered "ne")
      c.setOutput(0, cmp("ne", x, x));
    else if (pos && neg) // |x| = max(x, -x) is +inf for either infinity
      c.setOutput(0, cmp("eq",
                         lcc::MaximumOp::create(c.b, c.loc, c.type(0), x,
                                                lcc::NegOp::create(c.b, c.loc, x)),
                         c.scalar(et, inf)));
    else if (pos || neg)
      c.setOutput(0, cmp("eq", x, c.scalar(et, pos ? inf : -inf)));
    else // detects nothing: nothing is below -inf, so all false
      c.setOutput(0, cmp("lt", x, c.scalar(et, -inf)));
    return llvm::Error::success();
  };
}

/// CumSum (compile time only): running sums along `axis` (input 1), in the
/// tensor's own arithmetic (wrapping int64, f32 rounded at every step).
llvm::Error cumSum(NodeCtx &c) {
  auto x = hostOnly(c);
  if (!x)
    return x.takeError();
  auto axisT = c.constant(1, "axis");
  if (!axisT)
    return axisT.takeError();
  const HostTensor &in = **x;
  std::vector<int64_t> axisV = toInts(**axisT);
  int64_t rank = int64_t(in.shape().size());
  std::optional<int64_t> axis =
      axisV.size() == 1 ? normalizeAxis(axisV[0], rank) : std::nullopt;
  if (!axis)
    return c.error("axis must be one value in [-rank, rank)");
  bool exclusive = c.attrInt("exclusive", 0) != 0, reverse = c.attrInt("reverse", 0) != 0;
  int64_t n = in.shape()[*axis], inner = 1;
  for (int64_t d = *axis + 1; d < rank; ++d)
    inner *= in.shape()[d];
  int64_t outer = n && inner ? in.numElements() / (n * inner) : 0;
  if (in.elementType() == ElementType::I1)
    return c.error("expects a numeric tensor, not bool");
  HostTensor out(in.elementType(), in.shape());
  bool ints = !isFloatType(in.elementType());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      int64_t accInt = 0;
      double acc = 0.0;
      for (int64_t s = 0; s < n; ++s) {
        int64_t k = reverse ? n - 1 - s : s;
        int64_t i = (o * n + k) * inner + j;
        auto store = [&]() {
          if (in.elementType() == ElementType::I64)
            out.data<int64_t>()[i] = accInt;
          else if (ints) // int32 wraps like int32 arithmetic
            out.data<int32_t>()[i] = int32_t(uint32_t(uint64_t(accInt)));
          else
            out.setDouble(i, acc);
        };
        if (exclusive)
          store();
        if (ints)
          accInt = int64_t(uint64_t(accInt) + uint64_t(in.getInt(i)));
        else if (in.elementType() == ElementType::F32)
          acc = double(float(acc + in.getDouble(i))); // one f32 rounding per add
        else
          acc += in.getDouble(i);
        if (!exclusive)
          store();
      }
    }
  c.setOutput(0, std::move(out));
  return llvm::Error::success();
}

/// `d` laid out in `shape`, one dimension at a time: output coordinate x of
/// dimension k reads d's coordinate at(k, x); where that is negative for any
/// dimension, the element is `fill` (Tile, Pad).
HostTensor remapByDimension(const HostTensor &d, const std::vector<int64_t> &shape,
                            llvm::function_ref<int64_t(int64_t, int64_t)> at, double fill = 0) {
  return remap(
      d, shape,
      [&](int64_t i) -> int64_t {
        int64_t from = 0, stride = 1;
        for (int64_t dim = d.rank() - 1; dim >= 0; --dim) {
          int64_t x = at(dim, i % shape[size_t(dim)]);
          if (x < 0)
            return -1;
          i /= shape[size_t(dim)];
          from += x * stride;
          stride *= d.shape()[size_t(dim)];
        }
        return from;
      },
      fill);
}

/// Where each index tuple of GatherND/ScatterND points: for tuple t, the
/// element offset of the slice it selects in `data` (rank r, the first
/// `batch` dimensions shared with `indices`). Slices are the trailing
/// dimensions past the tuple's.
struct IndexTuples {
  int64_t count = 0, slice = 1;
  std::vector<int64_t> offsets;
};

llvm::Expected<IndexTuples> indexTuples(NodeCtx &c, llvm::ArrayRef<int64_t> ds,
                                        const HostTensor &indices, int64_t batch) {
  int64_t r = int64_t(ds.size()), q = indices.rank();
  if (r < 1 || q < 1)
    return c.error("data and indices must have rank >= 1");
  if (isFloatType(indices.elementType()))
    return c.error("indices must be integers");
  int64_t k = indices.shape()[q - 1];
  if (batch < 0 || batch >= std::min(q, r))
    return c.error("batch_dims must be in [0, min(rank(data), rank(indices)))");
  if (k < 1 || k > r - batch)
    return c.error("the last dimension of indices must be in [1, rank(data) - batch_dims]");
  for (int64_t i = 0; i < batch; ++i)
    if (indices.shape()[i] != ds[i])
      return c.error("batch dimension " + llvm::Twine(i) + " differs between data and indices");
  llvm::ArrayRef<int64_t> is = indices.shape();
  IndexTuples t;
  t.count = product(is.drop_back());
  t.slice = product(ds.drop_front(batch + k));
  int64_t perBatch = product(is.drop_back().drop_front(batch));
  int64_t batchSize = product(ds.drop_front(batch));
  for (int64_t n = 0; n < t.count; ++n) {
    int64_t off = (perBatch ? n / perBatch : 0) * batchSize;
    for (int64_t j = 0; j < k; ++j) {
      int64_t dim = ds[batch + j], v = indices.getInt(n * k + j);
      if (v < -dim || v >= dim)
        return c.error("index " + llvm::Twine(v) + " is out of range for dimension " +
                       llvm::Twine(batch + j) + " of size " + llvm::Twine(dim));
      off += (v < 0 ? v + dim : v) * product(ds.drop_front(batch + j + 1));
    }
    t.offsets.push_back(off);
  }
  return t;
}

/// GatherND. Indices are needed at compile time; data may be a run-time
/// tensor (Falcon's `fused_qkv[..., [-2], :]`): each index tuple selects a
/// row of data viewed as [rows, slice], so the op is a row gather.
llvm::Error gatherND(NodeCtx &c) {
  auto indices = hostOnly(c, 1);
  if (!indices)
    return indices.takeError();
  const HostTensor &ix = **indices;
  std::vector<int64_t> ds = c.shape(0);
  int64_t batch = c.attrInt("batch_dims", 0);
  auto tuples = indexTuples(c, ds, ix, batch);
  if (!tuples)
    return tuples.takeError();
  std::vector<int64_t> shape(ix.shape().begin(), ix.shape().end() - 1);
  int64_t k = ix.shape().back();
  shape.insert(shape.end(), ds.begin() + batch + k, ds.end());
  int64_t slice = tuples->slice;
  if (c.isConstant(0)) {
    if (llvm::Error e = c.checkShape(shape, true))
      return e;
    c.setOutput(0, remap(c.known(0), shape, [&](int64_t i) {
                   return tuples->offsets[size_t(i / slice)] + i % slice;
                 }));
    return llvm::Error::success();
  }
  if (llvm::Error e = c.checkShape(shape, false))
    return e;
  if (product(shape) == 0)
    return c.unsupported("zero-size tensors are not supported at run time");
  HostTensor rows(ElementType::I64, {tuples->count});
  for (int64_t t = 0; t < tuples->count; ++t)
    rows.data<int64_t>()[t] = tuples->offsets[size_t(t)] / slice;
  Type element = c.type(0).getElementType();
  Value table = reshapeValue(c, c.tensor(0), {product(ds) / slice, slice});
  Value picked = lcc::GatherOp::create(c.b, c.loc,
                                       RankedTensorType::get({tuples->count, slice}, element),
                                       table, c.materialize(rows), c.b.getI64IntegerAttr(0));
  c.setOutput(0, reshapeValue(c, picked, shape));
  return llvm::Error::success();
}

/// ScatterND (compile time only), with its `reduction` attribute.
llvm::Error scatterND(NodeCtx &c) {
  auto data = hostOnly(c, 0), indices = hostOnly(c, 1), updates = hostOnly(c, 2);
  for (auto *in : {&data, &indices, &updates})
    if (!*in)
      return in->takeError();
  const HostTensor &d = **data, &ix = **indices, &u = **updates;
  auto tuples = indexTuples(c, d.shape(), ix, 0);
  if (!tuples)
    return tuples.takeError();
  if (u.elementType() != d.elementType() || u.numElements() != tuples->count * tuples->slice)
    return c.error("updates must have data's element type and one slice per index tuple");
  std::string reduction = c.attrString("reduction", "none");
  static const char *const kinds[] = {"none", "add", "mul", "max", "min"};
  const char *const *kind = llvm::find(kinds, reduction);
  if (kind == std::end(kinds))
    return c.error("reduction '" + reduction + "' is not one of none, add, mul, max, min");
  char op = "=+*><"[kind - std::begin(kinds)];
  // int64 exactly, wrapping like int64 arithmetic; the rest through double.
  auto combine = [op](auto a, auto b) {
    using T = decltype(a);
    if constexpr (std::is_same_v<T, int64_t>) {
      if (op == '+')
        return int64_t(uint64_t(a) + uint64_t(b));
      if (op == '*')
        return int64_t(uint64_t(a) * uint64_t(b));
    }
    return op == '+' ? a + b : op == '*' ? a * b : op == '>' ? std::max(a, b)
                                          : op == '<' ? std::min(a, b) : b;
  };
  HostTensor out = d;
  bool i64 = d.elementType() == ElementType::I64;
  for (int64_t n = 0; n < tuples->count; ++n)
    for (int64_t s = 0; s < tuples->slice; ++s) {
      int64_t at = tuples->offsets[n] + s, from = n * tuples->slice + s;
      if (i64)
        out.data<int64_t>()[at] = combine(out.data<int64_t>()[at], u.data<int64_t>()[from]);
      else
        out.setDouble(at, combine(out.getDouble(at), u.getDouble(from)));
    }
  c.setOutput(0, std::move(out));
  return llvm::Error::success();
}

/// Tile (compile time only): `repeats` copies along each dimension.
llvm::Error tile(NodeCtx &c) {
  auto data = hostOnly(c, 0);
  if (!data)
    return data.takeError();
  auto repeatsT = c.constant(1, "repeats");
  if (!repeatsT)
    return repeatsT.takeError();
  const HostTensor &d = **data;
  std::vector<int64_t> repeats = toInts(**repeatsT);
  if (int64_t(repeats.size()) != d.rank())
    return c.error("repeats must have one value per dimension of the input");
  std::vector<int64_t> shape;
  for (int64_t i = 0; i < d.rank(); ++i) {
    if (repeats[i] < 0)
      return c.error("repeats must be >= 0");
    if (repeats[i] > 0 && d.shape()[i] > (int64_t(1) << 40) / repeats[i])
      return c.error("a tensor would have more than 2^40 elements");
    shape.push_back(d.shape()[i] * repeats[i]);
  }
  if (llvm::Error e = c.checkShape(shape, true))
    return e;
  c.setOutput(0, remapByDimension(d, shape, [&](int64_t dim, int64_t x) {
                 return x % d.shape()[size_t(dim)];
               }));
  return llvm::Error::success();
}

/// Pad (compile time only): modes constant, edge, reflect and wrap; pads
/// from the attribute (opset < 11) or input 1, optionally on `axes` (18).
llvm::Error pad(NodeCtx &c) {
  auto data = hostOnly(c, 0);
  if (!data)
    return data.takeError();
  const HostTensor &d = **data;
  int64_t rank = d.rank();
  std::string mode = c.attrString("mode", "constant");
  if (!llvm::is_contained({"constant", "edge", "reflect", "wrap"}, mode))
    return c.error("mode '" + mode + "' is not one of constant, edge, reflect, wrap");
  std::vector<int64_t> pads;
  double value = 0;
  std::vector<int64_t> axes;
  if (c.opset() < 11) {
    auto attr = c.attrInts("pads");
    if (!attr)
      return c.error("the pads attribute is missing");
    pads = *attr;
    value = c.attrFloat("value", 0.0);
  } else {
    auto padsT = c.constant(1, "pads");
    if (!padsT)
      return padsT.takeError();
    pads = toInts(**padsT);
    if (c.has(2) && c.node.input(2) != "") {
      auto v = c.constant(2, "constant_value");
      if (!v)
        return v.takeError();
      if ((*v)->numElements() > 0)
        value = (*v)->getDouble(0);
    }
    if (c.has(3) && c.node.input(3) != "") {
      auto a = c.constant(3, "axes");
      if (!a)
        return a.takeError();
      for (int64_t axis : toInts(**a)) {
        auto n = normalizeAxis(axis, rank);
        if (!n)
          return c.error("axis " + llvm::Twine(axis) + " is out of range");
        axes.push_back(*n);
      }
    }
  }
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  if (pads.size() != 2 * axes.size())
    return c.error("pads must have two values per padded axis");
  std::vector<int64_t> begin(size_t(rank), 0), end(size_t(rank), 0), shape = d.shape();
  for (size_t i = 0; i < axes.size(); ++i) {
    begin[size_t(axes[i])] = pads[i];
    end[size_t(axes[i])] = pads[i + axes.size()];
  }
  for (int64_t i = 0; i < rank; ++i) {
    shape[size_t(i)] += begin[size_t(i)] + end[size_t(i)];
    if (mode != "constant" && d.shape()[size_t(i)] == 0 && shape[size_t(i)] > 0)
      return c.error("mode '" + mode + "' cannot pad an empty dimension");
  }
  if (llvm::Error e = c.checkShape(shape, true))
    return e;
  char how = mode[0]; // constant, edge, reflect, wrap
  c.setOutput(0, remapByDimension(
                     d, shape,
                     [&](int64_t dim, int64_t x) -> int64_t {
                       int64_t n = d.shape()[size_t(dim)], at = x - begin[size_t(dim)];
                       if (at >= 0 && at < n)
                         return at;
                       if (how == 'c')
                         return -1;
                       if (how == 'e')
                         return at < 0 ? 0 : n - 1;
                       if (how == 'w')
                         return ((at % n) + n) % n;
                       // reflect: mirror about the edge elements, period 2 (n - 1)
                       int64_t period = std::max<int64_t>(2 * (n - 1), 1);
                       at = ((at % period) + period) % period;
                       return at >= n ? period - at : at;
                     },
                     value));
  return llvm::Error::success();
}

} // namespace

void addHostOps(std::vector<OpEntry> &t) {
  t.push_back({"And", 7, logical('&'), {}, 2});
  t.push_back({"Or", 7, logical('|'), {}, 2});
  t.push_back({"Xor", 7, logical('^'), {}, 2});
  t.push_back({"IsNaN", 9, valueTest(true)});
  t.push_back({"IsInf", 10, valueTest(false)});
  t.push_back({"CumSum", 11, cumSum, {0, 1}, 2});
  t.push_back({"GatherND", 11, gatherND, {1}, 2});
  t.push_back({"ScatterND", 11, scatterND, {0, 1, 2}, 3});
  t.push_back({"Tile", 6, tile, {0, 1}, 2});
  t.push_back({"Pad", 2, pad, {0}});
  t.push_back({"Pad", 11, pad, {0, 1, 2, 3}});
  // Compile time only (input 0 constant: the conformance runner gives it so).
  struct Fn {
    const char *op;
    int64_t since;
    double (*f)(double);
  };
  static const Fn math[] = {
      {"Cos", 7, [](double x) { return std::cos(x); }},
      {"Sin", 7, [](double x) { return std::sin(x); }},
      {"Tan", 7, [](double x) { return std::tan(x); }},
      {"Acos", 7, [](double x) { return std::acos(x); }},
      {"Asin", 7, [](double x) { return std::asin(x); }},
      {"Atan", 7, [](double x) { return std::atan(x); }},
      {"Cosh", 9, [](double x) { return std::cosh(x); }},
      {"Sinh", 9, [](double x) { return std::sinh(x); }},
      {"Asinh", 9, [](double x) { return std::asinh(x); }},
      {"Acosh", 9, [](double x) { return std::acosh(x); }},
      {"Atanh", 9, [](double x) { return std::atanh(x); }},
      {"Floor", 6, [](double x) { return std::floor(x); }},
      {"Ceil", 6, [](double x) { return std::ceil(x); }},
      {"Round", 11, [](double x) { return std::nearbyint(x); }}, // half to even
  };
  for (const Fn &m : math)
    t.push_back({m.op, m.since, hostMath(m.f), {0}});
}

} // namespace lcc::onnx_import
