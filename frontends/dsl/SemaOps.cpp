//===- SemaOps.cpp - checked op builders and value helpers ---------------===//
//
// Every builder checks what the lcc verifier would check, but reports it in
// the user's terms at the DSL expression, before any IR exists.
//
//===----------------------------------------------------------------------===//
#include "frontends/dsl/Sema.h"

namespace lcc::dsl {

/// NumPy broadcasting; on failure `bad` is the failing dimension counted from
/// the end (-1 is the last) with the two sizes in `da`, `db`.
static bool broadcastShapes(const std::vector<int64_t> &a, const std::vector<int64_t> &b,
                            std::vector<int64_t> &out, int &bad, int64_t &da, int64_t &db) {
  size_t rank = std::max(a.size(), b.size());
  out.assign(rank, 1);
  for (size_t k = 1; k <= rank; ++k) {
    int64_t x = k <= a.size() ? a[a.size() - k] : 1;
    int64_t y = k <= b.size() ? b[b.size() - k] : 1;
    if (x != y && x != 1 && y != 1) {
      bad = -int(k);
      da = x;
      db = y;
      return false;
    }
    out[rank - k] = x == 1 ? y : x;
  }
  return true;
}

static int64_t numElements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d; // shapes are checked against overflow when they are made
  return n;
}

int Sema::emit(const std::string &op, std::vector<int> operands, TensorType type, SrcLoc loc,
               std::vector<NodeAttr> attrs) {
  if (int64_t(g.nodes.size()) >= kMaxNodes) {
    error(loc, "the model is too large, it has more than " + std::to_string(kMaxNodes) +
                   " ops and parameters");
    return -1;
  }
  int64_t count = 1;
  for (int64_t d : type.shape)
    if (__builtin_mul_overflow(count, d, &count)) {
      error(loc, "the result " + shapeString(type.shape) + " has too many elements, the count "
                 "must fit in 64 bits");
      return -1;
    }
  Node n;
  n.op = op;
  n.operands = std::move(operands);
  n.type = std::move(type);
  n.loc = loc;
  n.attrs = std::move(attrs);
  n.layer = layer;
  g.nodes.push_back(std::move(n));
  return int(g.nodes.size()) - 1;
}

static std::optional<int> ok(int node) {
  if (node < 0)
    return std::nullopt;
  return node;
}

std::optional<int> Sema::toTensor(const Value &v, DType like, SrcLoc loc,
                                  const std::string &what) {
  if (v.kind == Value::Tensor)
    return v.node;
  if (!v.isNumber())
    return error(loc, "expected a tensor or a number for " + what + ", got " +
                          describeValue(v, g)), std::nullopt;
  if (like == DType::I1 || (like != DType::F32 && v.kind == Value::Float))
    return error(loc, "cannot combine " + describeValue(v, g) + " with an " + dtypeName(like) +
                          " tensor, convert the tensor with float(x)"), std::nullopt;
  NodeAttr a(like == DType::F32 ? NodeAttr::Float : NodeAttr::Int, "value");
  a.f = v.number();
  a.i = v.i;
  return ok(emit("constant", {}, TensorType{like, {}}, loc, {a}));
}

static const char *verbOf(const std::string &op) {
  if (op == "add") return "add";
  if (op == "sub") return "subtract";
  if (op == "mul") return "multiply";
  if (op == "div") return "divide";
  if (op == "pow") return "raise";
  if (op == "maximum") return "take the maximum of";
  if (op == "minimum") return "take the minimum of";
  return "compare";
}

std::optional<int> Sema::broadcastOp(const std::string &op, int a, int b, SrcLoc loc) {
  const TensorType &ta = typeOf(a), &tb = typeOf(b);
  bool compare = op == "lt" || op == "le" || op == "gt" || op == "ge" || op == "eq" || op == "ne";
  if (compare ? ta.dtype != tb.dtype : (ta.dtype != DType::F32 || tb.dtype != DType::F32)) {
    const TensorType &bad = ta.dtype != DType::F32 ? ta : tb;
    return error(loc, std::string("cannot ") + verbOf(op) + " " + typeString(ta) + " and " +
                          typeString(tb) + ", " +
                          (compare ? "both sides need the same element type"
                                   : "arithmetic needs f32 tensors (convert " +
                                         std::string(dtypeName(bad.dtype)) +
                                         " with float(x))")), std::nullopt;
  }
  std::vector<int64_t> shape;
  int bad;
  int64_t da, db;
  if (!broadcastShapes(ta.shape, tb.shape, shape, bad, da, db))
    return error(loc, std::string("cannot ") + verbOf(op) + " " + shapeString(ta.shape) + " and " +
                          shapeString(tb.shape) + ", dimension " + std::to_string(bad) + " is " +
                          std::to_string(da) + " vs " + std::to_string(db)), std::nullopt;
  if (compare) {
    NodeAttr p{NodeAttr::Str, "predicate"};
    p.s = op;
    return ok(emit("cmp", {a, b}, TensorType{DType::I1, shape}, loc, {p}));
  }
  return ok(emit(op, {a, b}, TensorType{DType::F32, shape}, loc));
}

std::optional<int> Sema::matmul(int a, int b, bool ta, bool tb, SrcLoc loc) {
  const TensorType &xa = typeOf(a), &xb = typeOf(b);
  // The shapes as the user sees them, after any requested transpose.
  std::vector<int64_t> sa = xa.shape, sb = xb.shape;
  if (ta && sa.size() >= 2)
    std::swap(sa[sa.size() - 1], sa[sa.size() - 2]);
  if (tb && sb.size() >= 2)
    std::swap(sb[sb.size() - 1], sb[sb.size() - 2]);
  std::string both = shapeString(sa) + " @ " + shapeString(sb);
  if (xa.dtype != DType::F32 || xb.dtype != DType::F32)
    return error(loc, "cannot multiply " + typeString(xa) + " @ " + typeString(xb) +
                          ", matmul needs f32 tensors"), std::nullopt;
  if (sa.size() < 2 || sb.size() < 2)
    return error(loc, "cannot multiply " + both + ", matmul needs operands of rank >= 2"),
           std::nullopt;
  int64_t k1 = sa.back(), k2 = sb[sb.size() - 2];
  if (k1 != k2)
    return error(loc, "cannot multiply " + both + ", the inner dimensions " + std::to_string(k1) +
                          " and " + std::to_string(k2) + " differ"), std::nullopt;
  std::vector<int64_t> ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2), shape;
  int bad;
  int64_t da, db;
  if (!broadcastShapes(ba, bb, shape, bad, da, db))
    return error(loc, "cannot multiply " + both + ", the batch dimensions " + shapeString(ba) +
                          " and " + shapeString(bb) + " do not broadcast"), std::nullopt;
  shape.push_back(sa[sa.size() - 2]);
  shape.push_back(sb.back());
  std::vector<NodeAttr> attrs;
  if (ta) {
    NodeAttr t{NodeAttr::Bool, "transpose_lhs"};
    t.b = true;
    attrs.push_back(t);
  }
  if (tb) {
    NodeAttr t{NodeAttr::Bool, "transpose_rhs"};
    t.b = true;
    attrs.push_back(t);
  }
  return ok(emit("matmul", {a, b}, TensorType{DType::F32, shape}, loc, attrs));
}

std::optional<int> Sema::reshape(int x, std::vector<int64_t> shape, SrcLoc loc) {
  const TensorType &t = typeOf(x);
  int64_t from = numElements(t.shape), to = 1;
  for (int64_t d : shape)
    if (d <= 0 || __builtin_mul_overflow(to, d, &to))
      return error(loc, "invalid target shape " + shapeString(shape) + ", dimensions must be "
                        "positive and the element count must fit in 64 bits"), std::nullopt;
  if (from != to)
    return error(loc, "cannot reshape " + shapeString(t.shape) + " (" + std::to_string(from) +
                          " elements) to " + shapeString(shape) + " (" + std::to_string(to) +
                          " elements), the element counts differ"), std::nullopt;
  if (shape == t.shape)
    return x;
  return ok(emit("reshape", {x}, TensorType{t.dtype, shape}, loc));
}

std::optional<int> Sema::transpose(int x, std::vector<int64_t> perm, SrcLoc loc) {
  const TensorType &t = typeOf(x);
  size_t r = t.shape.size();
  std::vector<bool> seen(r, false);
  std::vector<int64_t> shape;
  for (int64_t p : perm) {
    if (perm.size() != r || p < 0 || p >= int64_t(r) || seen[p])
      return error(loc, "invalid permutation " + shapeString(perm) + " for a tensor of rank " +
                            std::to_string(r) + ", it must list each of 0.." +
                            std::to_string(int64_t(r) - 1) + " exactly once"), std::nullopt;
    seen[p] = true;
    shape.push_back(t.shape[p]);
  }
  if (perm.size() != r)
    return error(loc, "invalid permutation " + shapeString(perm) + " for a tensor of rank " +
                          std::to_string(r) + ", it must list each of 0.." +
                          std::to_string(int64_t(r) - 1) + " exactly once"), std::nullopt;
  NodeAttr a{NodeAttr::Ints, "perm"};
  a.ints = perm;
  return ok(emit("transpose", {x}, TensorType{t.dtype, shape}, loc, {a}));
}

std::optional<int> Sema::slice(int x, std::vector<int64_t> start, std::vector<int64_t> limit,
                               std::vector<int64_t> step, SrcLoc loc) {
  const TensorType &t = typeOf(x);
  std::vector<int64_t> shape;
  bool unitSteps = true;
  for (size_t d = 0; d < t.shape.size(); ++d) {
    if (step[d] <= 0 || start[d] < 0 || start[d] >= limit[d] || limit[d] > t.shape[d])
      return error(loc, "slice " + std::to_string(start[d]) + ":" + std::to_string(limit[d]) +
                            ":" + std::to_string(step[d]) + " is out of range for dimension " +
                            std::to_string(d) + " of size " + std::to_string(t.shape[d]) +
                            ", it must be a non-empty range inside the tensor"), std::nullopt;
    shape.push_back((limit[d] - start[d] + step[d] - 1) / step[d]);
    unitSteps &= step[d] == 1;
  }
  if (shape == t.shape)
    return x;
  NodeAttr s{NodeAttr::Ints, "start"}, l{NodeAttr::Ints, "limit"}, st{NodeAttr::Ints, "step"};
  s.ints = start;
  l.ints = limit;
  st.ints = step;
  std::vector<NodeAttr> attrs{s, l};
  if (!unitSteps)
    attrs.push_back(st);
  return ok(emit("slice", {x}, TensorType{t.dtype, shape}, loc, attrs));
}

std::optional<int> Sema::unaryOp(const std::string &op, int x, SrcLoc loc) {
  const TensorType &t = typeOf(x);
  if (t.dtype != DType::F32)
    return error(loc, op + " needs an f32 tensor, got " + typeString(t) +
                          " (convert it with float(x))"), std::nullopt;
  return ok(emit(op, {x}, t, loc));
}

std::optional<Value> Sema::numberBinary(const Expr &e, const Value &a, const Value &b) {
  std::string sp = opSpelling(e.op);
  if (isComparison(e.op) && a.kind == Value::Bool && b.kind == Value::Bool &&
      (e.op == Tok::EqEq || e.op == Tok::Ne))
    return Value::ofBool((a.b == b.b) == (e.op == Tok::EqEq));
  if (!a.isNumber() || !b.isNumber())
    return error(e.loc, "cannot apply '" + sp + "' to " + describeValue(a, g) + " and " +
                            describeValue(b, g) + ", it needs numbers or tensors"), std::nullopt;
  if (isComparison(e.op)) {
    double x = a.number(), y = b.number();
    bool both = a.kind == Value::Int && b.kind == Value::Int;
    int c = both ? (a.i < b.i ? -1 : a.i > b.i) : (x < y ? -1 : x > y);
    bool r = e.op == Tok::Lt   ? c < 0
             : e.op == Tok::Le ? c <= 0
             : e.op == Tok::Gt ? c > 0
             : e.op == Tok::Ge ? c >= 0
             : e.op == Tok::EqEq ? c == 0
                                 : c != 0;
    return Value::ofBool(r);
  }
  if (e.op == Tok::At)
    return error(e.loc, "'@' multiplies tensors, use '*' for numbers"), std::nullopt;
  bool divide = e.op == Tok::Slash || e.op == Tok::SlashSlash || e.op == Tok::Percent;
  if (divide && b.number() == 0)
    return error(e.loc, "division by zero, the right side of '" + sp + "' is 0"), std::nullopt;
  if (a.kind == Value::Int && b.kind == Value::Int) {
    int64_t x = a.i, y = b.i, r = 0;
    bool overflow = false;
    switch (e.op) {
    case Tok::Plus: overflow = __builtin_add_overflow(x, y, &r); break;
    case Tok::Minus: overflow = __builtin_sub_overflow(x, y, &r); break;
    case Tok::Star: overflow = __builtin_mul_overflow(x, y, &r); break;
    default:
      if (x == INT64_MIN && y == -1) {
        overflow = true;
        break;
      }
      if (e.op == Tok::Slash && x % y != 0)
        return error(e.loc, std::to_string(x) + " / " + std::to_string(y) +
                                " is not an integer, '/' of two integers must divide exactly "
                                "(use // to round down)"), std::nullopt;
      if (e.op == Tok::Percent) {
        r = x % y;
        if (r != 0 && ((r < 0) != (y < 0)))
          r += y;
      } else {
        r = x / y;
        if (e.op == Tok::SlashSlash && (x % y != 0) && ((x < 0) != (y < 0)))
          --r;
      }
    }
    if (overflow)
      return error(e.loc, "integer overflow in '" + sp + "', the result does not fit in 64 bits"),
             std::nullopt;
    return Value::ofInt(r);
  }
  double x = a.number(), y = b.number();
  switch (e.op) {
  case Tok::Plus: return Value::ofFloat(x + y);
  case Tok::Minus: return Value::ofFloat(x - y);
  case Tok::Star: return Value::ofFloat(x * y);
  case Tok::Slash: return Value::ofFloat(x / y);
  default:
    return error(e.loc, "'" + sp + "' needs two integers, got " + describeValue(a, g) + " and " +
                            describeValue(b, g)), std::nullopt;
  }
}

bool Sema::normAxis(int64_t &axis, size_t rank, SrcLoc loc, const std::string &what) {
  int64_t r = int64_t(rank);
  if (axis < -r || axis >= r) {
    error(loc, "axis " + std::to_string(axis) + " is out of range for " + what + " of rank " +
                   std::to_string(r) + ", valid axes are " + std::to_string(-r) + ".." +
                   std::to_string(r - 1));
    return false;
  }
  if (axis < 0)
    axis += r;
  return true;
}

std::optional<int64_t> Sema::evalInt(const Expr &e, Frame &frame, const std::string &what) {
  auto v = eval(e, frame);
  if (!v)
    return std::nullopt;
  if (v->kind != Value::Int)
    return error(e.loc, "expected an integer for " + what + ", got " + describeValue(*v, g)),
           std::nullopt;
  return v->i;
}

std::optional<double> Sema::evalNumber(const Expr &e, Frame &frame, const std::string &what) {
  auto v = eval(e, frame);
  if (!v)
    return std::nullopt;
  if (!v->isNumber())
    return error(e.loc, "expected a number for " + what + ", got " + describeValue(*v, g)),
           std::nullopt;
  return v->number();
}

std::optional<bool> Sema::evalBool(const Expr &e, Frame &frame, const std::string &what) {
  auto v = eval(e, frame);
  if (!v)
    return std::nullopt;
  if (v->kind != Value::Bool)
    return error(e.loc, "expected true or false for " + what + ", got " + describeValue(*v, g)),
           std::nullopt;
  return v->b;
}

std::optional<int> Sema::evalTensor(const Expr &e, Frame &frame, const std::string &what) {
  auto v = eval(e, frame);
  if (!v)
    return std::nullopt;
  if (v->kind != Value::Tensor)
    return error(e.loc, "expected a tensor for " + what + ", got " + describeValue(*v, g)),
           std::nullopt;
  return v->node;
}

std::optional<std::vector<int64_t>> Sema::evalIntList(const Expr &e, Frame &frame,
                                                      const std::string &what) {
  auto v = eval(e, frame);
  if (!v)
    return std::nullopt;
  if (v->kind == Value::Int)
    return std::vector<int64_t>{v->i};
  std::vector<int64_t> out;
  if (v->kind == Value::List) {
    for (size_t i = 0; i < v->list.size(); ++i) {
      const Value &x = v->list[i];
      if (x.kind != Value::Int) {
        SrcLoc loc = e.kind == ExprKind::List ? e.args[i]->loc : e.loc;
        return error(loc, "expected integers in " + what + ", got " + describeValue(x, g)),
               std::nullopt;
      }
      out.push_back(x.i);
    }
    return out;
  }
  return error(e.loc, "expected a list of integers for " + what + ", got " +
                          describeValue(*v, g)), std::nullopt;
}

std::optional<std::vector<int64_t>> Sema::evalShape(const Expr &e, Frame &frame,
                                                    const std::string &what) {
  auto v = eval(e, frame);
  if (!v)
    return std::nullopt;
  if (v->kind != Value::List)
    return error(e.loc, "expected a shape like [a, b] for " + what + ", got " +
                            describeValue(*v, g)), std::nullopt;
  std::vector<int64_t> out;
  int64_t count = 1;
  for (size_t i = 0; i < v->list.size(); ++i) {
    const Value &x = v->list[i];
    SrcLoc loc = e.kind == ExprKind::List ? e.args[i]->loc : e.loc;
    if (x.kind != Value::Int)
      return error(loc, "non-integer dimension " + describeValue(x, g) + " in " + what +
                            ", dimensions must be positive integers"), std::nullopt;
    if (x.i <= 0)
      return error(loc, "dimension " + std::to_string(x.i) + " in " + what +
                            " is not positive, dimensions must be positive integers"),
             std::nullopt;
    if (__builtin_mul_overflow(count, x.i, &count))
      return error(loc, "the shape in " + what + " has too many elements, the count must fit "
                        "in 64 bits"), std::nullopt;
    out.push_back(x.i);
  }
  return out;
}

bool Sema::bindArgs(const Expr &call, const std::vector<const char *> &names,
                    std::vector<const Expr *> &out) {
  auto describeSig = [&] {
    size_t required = 0;
    std::string list;
    for (const char *n : names) {
      std::string s(n);
      bool opt = !s.empty() && s.back() == '?';
      if (opt)
        s.pop_back();
      else
        ++required;
      list += (list.empty() ? "" : ", ") + s;
    }
    std::string count = required == names.size()
                            ? std::to_string(required)
                            : std::to_string(required) + " to " + std::to_string(names.size());
    return "'" + call.text + "' takes " + count + " argument" +
           (names.size() == 1 && required == 1 ? "" : "s") + " (" + list + ")";
  };
  out.assign(names.size(), nullptr);
  if (call.args.size() > names.size()) {
    error(call.loc, "wrong number of arguments, " + describeSig() + " but got " +
                        std::to_string(call.args.size() + call.kwargs.size()));
    return false;
  }
  for (size_t i = 0; i < call.args.size(); ++i)
    out[i] = call.args[i].get();
  for (const KeywordArg &kw : call.kwargs) {
    size_t i = 0;
    for (; i < names.size(); ++i) {
      std::string s(names[i]);
      if (!s.empty() && s.back() == '?')
        s.pop_back();
      if (s == kw.name)
        break;
    }
    if (i == names.size()) {
      error(kw.loc, "unknown keyword argument '" + kw.name + "', " + describeSig());
      return false;
    }
    if (out[i]) {
      error(kw.loc, "argument '" + kw.name + "' is given twice, " + describeSig());
      return false;
    }
    out[i] = kw.value.get();
  }
  for (size_t i = 0; i < names.size(); ++i) {
    std::string s(names[i]);
    if (!out[i] && (s.empty() || s.back() != '?')) {
      error(call.loc, "missing argument '" + s + "', " + describeSig());
      return false;
    }
  }
  return true;
}

} // namespace lcc::dsl
