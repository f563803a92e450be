//===- SemaBuiltins.cpp - the builtin functions of the DSL ---------------===//
//
// One builtin per lcc op (plus a few conveniences such as embedding and
// arange). Each binds its arguments by name, checks them and appends nodes
// through the checked builders in SemaOps.cpp.
//
//===----------------------------------------------------------------------===//
#include "frontends/dsl/Sema.h"

#include <cmath>
#include <set>

namespace lcc::dsl {

static const std::set<std::string> &unaryNames() {
  static const std::set<std::string> s = {"exp",  "log",  "tanh",    "erf", "sqrt",
                                          "rsqrt", "relu", "sigmoid", "silu"};
  return s;
}

static const std::set<std::string> &otherNames() {
  static const std::set<std::string> s = {
      "gelu",        "pow",       "maximum",   "minimum",     "where",     "float",
      "sum",         "mean",      "max",       "softmax",     "log_softmax", "layer_norm",
      "rms_norm",    "matmul",    "rope",      "causal_mask", "attention", "cross_entropy",
      "reshape",     "transpose", "slice",     "concat",      "broadcast_to", "embedding",
      "gather",      "arange",    "iota",      "full",        "zeros",     "ones",
      "normal",      "uniform"};
  return s;
}

bool Sema::isBuiltin(const std::string &name) {
  return otherNames().count(name) || unaryNames().count(name);
}

std::vector<std::string> Sema::builtinNames() {
  std::vector<std::string> out(unaryNames().begin(), unaryNames().end());
  out.insert(out.end(), otherNames().begin(), otherNames().end());
  return out;
}

static NodeAttr intAttr(const char *name, int64_t v) {
  NodeAttr a{NodeAttr::Int, name};
  a.i = v;
  return a;
}
static NodeAttr floatAttr(const char *name, double v) {
  NodeAttr a{NodeAttr::Float, name};
  a.f = v;
  return a;
}
static NodeAttr boolAttr(const char *name, bool v) {
  NodeAttr a{NodeAttr::Bool, name};
  a.b = v;
  return a;
}
static NodeAttr intsAttr(const char *name, std::vector<int64_t> v) {
  NodeAttr a{NodeAttr::Ints, name};
  a.ints = std::move(v);
  return a;
}

static std::optional<Value> tensor(std::optional<int> n) {
  if (!n || *n < 0)
    return std::nullopt;
  return Value::ofTensor(*n);
}

static double evalUnaryNumber(const std::string &f, double x) {
  if (f == "exp") return std::exp(x);
  if (f == "log") return x > 0 ? std::log(x) : NAN;
  if (f == "tanh") return std::tanh(x);
  if (f == "erf") return std::erf(x);
  if (f == "sqrt") return x >= 0 ? std::sqrt(x) : NAN;
  if (f == "rsqrt") return x > 0 ? 1 / std::sqrt(x) : NAN;
  if (f == "relu") return x > 0 ? x : 0;
  if (f == "sigmoid") return 1 / (1 + std::exp(-x));
  return x / (1 + std::exp(-x)); // silu
}

std::optional<Value> Sema::callBuiltin(const Expr &e, Frame &frame) {
  const std::string &f = e.text;
  std::vector<const Expr *> a;
  auto bind = [&](std::vector<const char *> names) { return bindArgs(e, names, a); };
  auto optNumber = [&](size_t i, double dflt, const std::string &what) -> std::optional<double> {
    return a[i] ? evalNumber(*a[i], frame, what) : std::optional<double>(dflt);
  };
  auto optInt = [&](size_t i, int64_t dflt, const std::string &what) -> std::optional<int64_t> {
    return a[i] ? evalInt(*a[i], frame, what) : std::optional<int64_t>(dflt);
  };
  auto optBool = [&](size_t i, bool dflt, const std::string &what) -> std::optional<bool> {
    return a[i] ? evalBool(*a[i], frame, what) : std::optional<bool>(dflt);
  };
  auto argLoc = [&](size_t i) { return a[i] ? a[i]->loc : e.loc; };
  auto floatTensor = [&](size_t i, const std::string &what) -> std::optional<int> {
    auto t = evalTensor(*a[i], frame, what);
    if (t && typeOf(*t).dtype != DType::F32)
      return error(a[i]->loc, what + " must be an f32 tensor, got " + typeString(typeOf(*t)) +
                                  " (convert it with float(x))"), std::nullopt;
    return t;
  };

  if (unaryNames().count(f)) {
    if (!bind({"x"}))
      return std::nullopt;
    auto v = eval(*a[0], frame);
    if (!v)
      return std::nullopt;
    if (v->isNumber()) {
      double r = evalUnaryNumber(f, v->number());
      if (!std::isfinite(r))
        return error(e.loc, f + " of " + describeValue(*v, g) + " is not a finite number, "
                            "the argument is outside the function's domain"), std::nullopt;
      return Value::ofFloat(r);
    }
    if (v->kind != Value::Tensor)
      return error(a[0]->loc, f + " needs a tensor or a number, got " + describeValue(*v, g)),
             std::nullopt;
    return tensor(unaryOp(f, v->node, e.loc));
  }
  if (f == "gelu") {
    if (!bind({"x", "approximate?"}))
      return std::nullopt;
    auto x = floatTensor(0, "the input of gelu");
    if (!x)
      return std::nullopt;
    std::string approx = "none";
    if (a[1]) {
      auto v = eval(*a[1], frame);
      if (!v)
        return std::nullopt;
      if (v->kind != Value::Str || (v->s != "none" && v->s != "tanh"))
        return error(a[1]->loc, "unknown approximate=" + describeValue(*v, g) +
                                    ", gelu takes \"none\" (erf) or \"tanh\""), std::nullopt;
      approx = v->s;
    }
    NodeAttr s{NodeAttr::Str, "approximate"};
    s.s = approx;
    return tensor(emit("gelu", {*x}, typeOf(*x), e.loc, {s}));
  }
  if (f == "pow" || f == "maximum" || f == "minimum") {
    if (!bind({"a", "b"}))
      return std::nullopt;
    auto x = eval(*a[0], frame);
    auto y = x ? eval(*a[1], frame) : std::nullopt;
    if (!y)
      return std::nullopt;
    if (x->isNumber() && y->isNumber()) {
      double p = x->number(), q = y->number();
      double r = f == "pow" ? std::pow(p, q) : f == "maximum" ? std::max(p, q) : std::min(p, q);
      if (x->kind == Value::Int && y->kind == Value::Int && f != "pow")
        return Value::ofInt(f == "maximum" ? std::max(x->i, y->i) : std::min(x->i, y->i));
      return Value::ofFloat(r);
    }
    auto tx = toTensor(*x, DType::F32, a[0]->loc, "the first argument of " + f);
    auto ty = tx ? toTensor(*y, DType::F32, a[1]->loc, "the second argument of " + f)
                 : std::nullopt;
    if (!ty)
      return std::nullopt;
    return tensor(broadcastOp(f, *tx, *ty, e.loc));
  }
  if (f == "where") {
    if (!bind({"cond", "a", "b"}))
      return std::nullopt;
    auto c = evalTensor(*a[0], frame, "the condition of where");
    if (!c)
      return std::nullopt;
    if (typeOf(*c).dtype != DType::I1)
      return error(a[0]->loc, "the condition of where must be a boolean tensor (a comparison "
                              "such as x > 0), got " + typeString(typeOf(*c))), std::nullopt;
    auto x = eval(*a[1], frame);
    auto y = x ? eval(*a[2], frame) : std::nullopt;
    if (!y)
      return std::nullopt;
    auto tx = toTensor(*x, DType::F32, a[1]->loc, "the second argument of where");
    auto ty = tx ? toTensor(*y, DType::F32, a[2]->loc, "the third argument of where")
                 : std::nullopt;
    if (!ty)
      return std::nullopt;
    // Check the branches with the arithmetic rules, then the condition against them.
    const TensorType &p = typeOf(*tx), &q = typeOf(*ty), &ct = typeOf(*c);
    if (p.dtype != DType::F32 || q.dtype != DType::F32)
      return error(e.loc, "the branches of where must be f32, got " + typeString(p) + " and " +
                              typeString(q)), std::nullopt;
    std::vector<int64_t> shape = ct.shape;
    for (const TensorType *t : {&p, &q}) {
      std::vector<int64_t> out;
      size_t rank = std::max(shape.size(), t->shape.size());
      for (size_t k = 1; k <= rank; ++k) {
        int64_t u = k <= shape.size() ? shape[shape.size() - k] : 1;
        int64_t w = k <= t->shape.size() ? t->shape[t->shape.size() - k] : 1;
        if (u != w && u != 1 && w != 1)
          return error(e.loc, "cannot broadcast " + shapeString(ct.shape) + ", " +
                                  shapeString(p.shape) + " and " + shapeString(q.shape) +
                                  " in where, dimension -" + std::to_string(k) + " is " +
                                  std::to_string(u) + " vs " + std::to_string(w)), std::nullopt;
        out.insert(out.begin(), u == 1 ? w : u);
      }
      shape = out;
    }
    return tensor(emit("where", {*c, *tx, *ty}, TensorType{DType::F32, shape}, e.loc));
  }
  if (f == "float") {
    if (!bind({"x"}))
      return std::nullopt;
    auto v = eval(*a[0], frame);
    if (!v)
      return std::nullopt;
    if (v->isNumber())
      return Value::ofFloat(v->number());
    if (v->kind != Value::Tensor)
      return error(a[0]->loc, "float needs a tensor or a number, got " + describeValue(*v, g)),
             std::nullopt;
    if (typeOf(v->node).dtype == DType::F32)
      return v;
    return tensor(emit("convert", {v->node}, TensorType{DType::F32, typeOf(v->node).shape},
                       e.loc));
  }
  if (f == "sum" || f == "mean" || f == "max") {
    if (!bind({"x", "axes?", "keepdim?"}))
      return std::nullopt;
    auto x = floatTensor(0, "the input of " + f);
    if (!x)
      return std::nullopt;
    const std::vector<int64_t> shape = typeOf(*x).shape;
    if (shape.empty())
      return error(e.loc, f + " needs a tensor of rank >= 1, the input is a scalar"),
             std::nullopt;
    std::vector<int64_t> axes;
    if (a[1]) {
      auto l = evalIntList(*a[1], frame, "the axes of " + f);
      if (!l)
        return std::nullopt;
      axes = *l;
    } else {
      for (size_t i = 0; i < shape.size(); ++i)
        axes.push_back(int64_t(i));
    }
    auto keep = optBool(2, false, "keepdim");
    if (!keep)
      return std::nullopt;
    std::vector<bool> reduced(shape.size(), false);
    for (int64_t &ax : axes) {
      int64_t given = ax;
      if (!normAxis(ax, shape.size(), argLoc(1), "the input of " + f))
        return std::nullopt;
      if (reduced[ax])
        return error(argLoc(1), "axis " + std::to_string(given) + " is listed twice, each "
                                "axis can be reduced once"), std::nullopt;
      reduced[ax] = true;
    }
    if (axes.empty())
      return error(argLoc(1), f + " needs at least one axis to reduce"), std::nullopt;
    std::vector<int64_t> out;
    for (size_t i = 0; i < shape.size(); ++i)
      if (!reduced[i])
        out.push_back(shape[i]);
      else if (*keep)
        out.push_back(1);
    std::vector<NodeAttr> attrs{intsAttr("axes", axes)};
    if (*keep)
      attrs.push_back(boolAttr("keepdim", true));
    return tensor(emit("reduce_" + f, {*x}, TensorType{DType::F32, out}, e.loc, attrs));
  }
  if (f == "softmax" || f == "log_softmax") {
    if (!bind({"x", "axis?"}))
      return std::nullopt;
    auto x = floatTensor(0, "the input of " + f);
    auto axis = x ? optInt(1, -1, "the axis of " + f) : std::nullopt;
    if (!axis)
      return std::nullopt;
    if (!normAxis(*axis, typeOf(*x).shape.size(), argLoc(1), "the input of " + f))
      return std::nullopt;
    return tensor(emit(f, {*x}, typeOf(*x), e.loc, {intAttr("axis", *axis)}));
  }
  if (f == "layer_norm" || f == "rms_norm") {
    bool ln = f == "layer_norm";
    if (!bind(ln ? std::vector<const char *>{"x", "weight", "bias", "eps?"}
                 : std::vector<const char *>{"x", "weight", "eps?"}))
      return std::nullopt;
    auto x = floatTensor(0, "the input of " + f);
    if (!x)
      return std::nullopt;
    const std::vector<int64_t> shape = typeOf(*x).shape;
    if (shape.empty())
      return error(e.loc, f + " needs an input of rank >= 1, got a scalar"), std::nullopt;
    std::vector<int> operands{*x};
    for (size_t i = 1; i < (ln ? 3u : 2u); ++i) {
      const char *what = i == 1 ? "weight" : "bias";
      auto p = floatTensor(i, std::string("the ") + what + " of " + f);
      if (!p)
        return std::nullopt;
      if (typeOf(*p).shape != std::vector<int64_t>{shape.back()})
        return error(a[i]->loc, f + " " + what + " has shape " + shapeString(typeOf(*p).shape) +
                                    ", expected [" + std::to_string(shape.back()) +
                                    "] (the size of the input's last dimension)"), std::nullopt;
      operands.push_back(*p);
    }
    size_t epsIdx = ln ? 3 : 2;
    auto eps = optNumber(epsIdx, ln ? 1e-5 : 1e-6, "eps");
    if (!eps)
      return std::nullopt;
    if (!(*eps > 0))
      return error(argLoc(epsIdx), "eps must be positive, it keeps the division away from "
                                   "zero"), std::nullopt;
    return tensor(emit(f, operands, typeOf(*x), e.loc, {floatAttr("eps", *eps)}));
  }
  if (f == "matmul") {
    if (!bind({"a", "b", "transpose_a?", "transpose_b?"}))
      return std::nullopt;
    auto x = evalTensor(*a[0], frame, "the first operand of matmul");
    auto y = x ? evalTensor(*a[1], frame, "the second operand of matmul") : std::nullopt;
    auto ta = y ? optBool(2, false, "transpose_a") : std::nullopt;
    auto tb = ta ? optBool(3, false, "transpose_b") : std::nullopt;
    if (!tb)
      return std::nullopt;
    return tensor(matmul(*x, *y, *ta, *tb, e.loc));
  }
  if (f == "rope") {
    if (!bind({"x", "theta?", "offset?"}))
      return std::nullopt;
    auto x = floatTensor(0, "the input of rope");
    auto theta = x ? optNumber(1, 10000.0, "theta") : std::nullopt;
    auto offset = theta ? optInt(2, 0, "offset") : std::nullopt;
    if (!offset)
      return std::nullopt;
    const std::vector<int64_t> &s = typeOf(*x).shape;
    if (s.size() < 2 || s.back() % 2 != 0)
      return error(e.loc, "rope needs an input [..., T, D] with an even head size D, got " +
                              shapeString(s)), std::nullopt;
    if (!(*theta > 0) || *offset < 0)
      return error(e.loc, "rope needs theta > 0 and offset >= 0, they define the rotation "
                          "frequencies and the first position"), std::nullopt;
    return tensor(emit("rope", {*x}, typeOf(*x), e.loc,
                       {floatAttr("theta", *theta), intAttr("offset", *offset)}));
  }
  if (f == "causal_mask") {
    if (!bind({"x", "fill?"}))
      return std::nullopt;
    auto x = floatTensor(0, "the input of causal_mask");
    if (!x)
      return std::nullopt;
    if (typeOf(*x).shape.size() < 2)
      return error(e.loc, "causal_mask needs scores [..., Tq, Tk] of rank >= 2, got " +
                              shapeString(typeOf(*x).shape)), std::nullopt;
    std::vector<NodeAttr> attrs;
    if (a[1]) {
      auto fill = evalNumber(*a[1], frame, "the fill value");
      if (!fill)
        return std::nullopt;
      attrs.push_back(floatAttr("fill", *fill));
    }
    return tensor(emit("causal_mask", {*x}, typeOf(*x), e.loc, attrs));
  }
  if (f == "attention") {
    if (!bind({"q", "k", "v", "causal?", "scale?"}))
      return std::nullopt;
    auto q = floatTensor(0, "the query of attention");
    auto k = q ? floatTensor(1, "the key of attention") : std::nullopt;
    auto v = k ? floatTensor(2, "the value of attention") : std::nullopt;
    auto causal = v ? optBool(3, false, "causal") : std::nullopt;
    if (!causal)
      return std::nullopt;
    const auto &sq = typeOf(*q).shape, &sk = typeOf(*k).shape, &sv = typeOf(*v).shape;
    std::string shapes = shapeString(sq) + ", " + shapeString(sk) + " and " + shapeString(sv);
    if (sq.size() != 4 || sk.size() != 4 || sv.size() != 4)
      return error(e.loc, "attention needs q, k and v of shape [B, H, T, D], got " + shapes),
             std::nullopt;
    if (sk != sv)
      return error(e.loc, "attention key " + shapeString(sk) + " and value " + shapeString(sv) +
                              " differ, they must have the same shape"), std::nullopt;
    if (sq[0] != sk[0] || sq[3] != sk[3])
      return error(e.loc, "attention query " + shapeString(sq) + " and key " + shapeString(sk) +
                              " differ in batch (dim 0) or head size (dim 3)"), std::nullopt;
    if (sq[1] % sk[1] != 0)
      return error(e.loc, "attention has " + std::to_string(sq[1]) + " query heads and " +
                              std::to_string(sk[1]) + " key/value heads, the query heads must "
                              "be a multiple of the key/value heads"), std::nullopt;
    std::vector<NodeAttr> attrs;
    if (*causal)
      attrs.push_back(boolAttr("causal", true));
    if (a[4]) {
      auto s = evalNumber(*a[4], frame, "the attention scale");
      if (!s)
        return std::nullopt;
      attrs.push_back(floatAttr("scale", *s));
    }
    return tensor(emit("attention", {*q, *k, *v}, typeOf(*q), e.loc, attrs));
  }
  if (f == "cross_entropy") {
    if (!bind({"logits", "targets", "ignore_index?"}))
      return std::nullopt;
    auto l = floatTensor(0, "the logits of cross_entropy");
    auto t = l ? evalTensor(*a[1], frame, "the targets of cross_entropy") : std::nullopt;
    auto ig = t ? optInt(2, -100, "ignore_index") : std::nullopt;
    if (!ig)
      return std::nullopt;
    const TensorType &lt = typeOf(*l), &tt = typeOf(*t);
    if (tt.dtype != DType::I32 && tt.dtype != DType::I64)
      return error(a[1]->loc, "cross_entropy targets must be class indices (i32 or i64), got " +
                                  typeString(tt)), std::nullopt;
    std::vector<int64_t> want(lt.shape.begin(), lt.shape.end() - (lt.shape.empty() ? 0 : 1));
    if (lt.shape.empty() || tt.shape != want)
      return error(e.loc, "cross_entropy targets " + shapeString(tt.shape) +
                              " do not match logits " + shapeString(lt.shape) +
                              ", expected targets " + shapeString(want) +
                              " (the logits without their last dimension)"), std::nullopt;
    return tensor(emit("cross_entropy", {*l, *t}, TensorType{DType::F32, {}}, e.loc,
                       {intAttr("ignore_index", *ig)}));
  }
  if (f == "reshape" || f == "broadcast_to") {
    if (!bind({"x", "shape"}))
      return std::nullopt;
    auto x = evalTensor(*a[0], frame, "the input of " + f);
    if (!x)
      return std::nullopt;
    // A copy: evaluating the shape below may append nodes and move the graph.
    const TensorType t = typeOf(*x);
    if (f == "broadcast_to") {
      auto target = evalShape(*a[1], frame, "the shape of broadcast_to");
      if (!target)
        return std::nullopt;
      std::vector<int64_t> out;
      bool good = target->size() >= t.shape.size();
      for (size_t k = 1; good && k <= t.shape.size(); ++k) {
        int64_t d = t.shape[t.shape.size() - k];
        good = d == 1 || d == (*target)[target->size() - k];
      }
      if (!good)
        return error(e.loc, "cannot broadcast " + shapeString(t.shape) + " to " +
                                shapeString(*target) + ", each dimension must equal the "
                                "target's or be 1"), std::nullopt;
      if (*target == t.shape)
        return Value::ofTensor(*x);
      return tensor(emit("broadcast_to", {*x}, TensorType{t.dtype, *target}, e.loc));
    }
    auto shape = evalIntList(*a[1], frame, "the shape of reshape");
    if (!shape)
      return std::nullopt;
    // One -1 takes whatever size keeps the element count, as in PyTorch.
    int64_t known = 1, inferred = -1, total = 1;
    for (int64_t d : t.shape)
      total *= d;
    for (size_t i = 0; i < shape->size(); ++i) {
      int64_t d = (*shape)[i];
      if (d == -1 && inferred < 0) {
        inferred = int64_t(i);
      } else if (d <= 0 || __builtin_mul_overflow(known, d, &known)) {
        return error(a[1]->loc, "invalid reshape target " + shapeString(*shape) +
                                    ", dimensions must be positive (one may be -1)"),
               std::nullopt;
      }
    }
    if (inferred >= 0) {
      if (total % known != 0)
        return error(a[1]->loc, "cannot reshape " + shapeString(t.shape) + " (" +
                                    std::to_string(total) + " elements) to " +
                                    shapeString(*shape) + ", " + std::to_string(total) +
                                    " is not a multiple of " + std::to_string(known)),
               std::nullopt;
      (*shape)[inferred] = total / known;
    }
    return tensor(reshape(*x, *shape, e.loc));
  }
  if (f == "transpose") {
    if (!bind({"x", "perm"}))
      return std::nullopt;
    auto x = evalTensor(*a[0], frame, "the input of transpose");
    auto perm = x ? evalIntList(*a[1], frame, "the permutation of transpose") : std::nullopt;
    if (!perm)
      return std::nullopt;
    return tensor(transpose(*x, *perm, a[1]->loc));
  }
  if (f == "slice") {
    if (!bind({"x", "axis", "start", "end", "step?"}))
      return std::nullopt;
    auto x = evalTensor(*a[0], frame, "the input of slice");
    auto axis = x ? evalInt(*a[1], frame, "the axis of slice") : std::nullopt;
    auto start = axis ? evalInt(*a[2], frame, "the start of slice") : std::nullopt;
    auto end = start ? evalInt(*a[3], frame, "the end of slice") : std::nullopt;
    auto step = end ? optInt(4, 1, "the step of slice") : std::nullopt;
    if (!step)
      return std::nullopt;
    const std::vector<int64_t> shape = typeOf(*x).shape;
    if (!normAxis(*axis, shape.size(), a[1]->loc, "the input of slice"))
      return std::nullopt;
    int64_t n = shape[*axis];
    std::vector<int64_t> lo(shape.size(), 0), hi(shape), st(shape.size(), 1);
    lo[*axis] = *start < 0 ? *start + n : *start;
    hi[*axis] = *end < 0 ? *end + n : *end;
    st[*axis] = *step;
    return tensor(slice(*x, lo, hi, st, e.loc));
  }
  if (f == "concat") {
    if (!bind({"xs", "axis?"}))
      return std::nullopt;
    auto list = eval(*a[0], frame);
    if (!list)
      return std::nullopt;
    if (list->kind != Value::List || list->list.empty())
      return error(a[0]->loc, "concat takes a non-empty list of tensors, as in concat([a, b], "
                              "axis=-1)"), std::nullopt;
    std::vector<int> xs;
    for (const Value &v : list->list) {
      if (v.kind != Value::Tensor)
        return error(a[0]->loc, "concat takes a list of tensors, got an element that is " +
                                    describeValue(v, g)), std::nullopt;
      xs.push_back(v.node);
    }
    auto axis = optInt(1, 0, "the axis of concat");
    if (!axis)
      return std::nullopt;
    const TensorType first = typeOf(xs[0]);
    if (!normAxis(*axis, first.shape.size(), argLoc(1), "the inputs of concat"))
      return std::nullopt;
    std::vector<int64_t> shape = first.shape;
    for (size_t i = 1; i < xs.size(); ++i) {
      const TensorType &t = typeOf(xs[i]);
      bool good = t.dtype == first.dtype && t.shape.size() == first.shape.size();
      for (size_t d = 0; good && d < t.shape.size(); ++d)
        good = int64_t(d) == *axis || t.shape[d] == first.shape[d];
      if (!good)
        return error(e.loc, "cannot concatenate " + typeString(first) + " and " + typeString(t) +
                                ", inputs must agree in element type and in every dimension "
                                "except axis " + std::to_string(*axis)), std::nullopt;
      if (__builtin_add_overflow(shape[*axis], t.shape[*axis], &shape[*axis]))
        return error(e.loc, "the concatenation is too large, its size along axis " +
                                std::to_string(*axis) + " does not fit in 64 bits"), std::nullopt;
    }
    if (xs.size() == 1)
      return Value::ofTensor(xs[0]);
    return tensor(emit("concat", xs, TensorType{first.dtype, shape}, e.loc,
                       {intAttr("axis", *axis)}));
  }
  if (f == "embedding" || f == "gather") {
    bool emb = f == "embedding";
    if (!bind(emb ? std::vector<const char *>{"table", "indices"}
                  : std::vector<const char *>{"x", "indices", "axis?"}))
      return std::nullopt;
    auto x = evalTensor(*a[0], frame, "the table of " + f);
    auto idx = x ? evalTensor(*a[1], frame, "the indices of " + f) : std::nullopt;
    auto axis = idx ? (emb ? std::optional<int64_t>(0) : optInt(2, 0, "the axis of gather"))
                    : std::nullopt;
    if (!axis)
      return std::nullopt;
    const TensorType t = typeOf(*x), it = typeOf(*idx);
    if (it.dtype != DType::I32 && it.dtype != DType::I64)
      return error(a[1]->loc, f + " indices must be an integer tensor (i32 or i64), got " +
                                  typeString(it)), std::nullopt;
    if (!normAxis(*axis, t.shape.size(), argLoc(2 < a.size() ? 2 : 0), "the table of " + f))
      return std::nullopt;
    std::vector<int64_t> shape(t.shape.begin(), t.shape.begin() + *axis);
    shape.insert(shape.end(), it.shape.begin(), it.shape.end());
    shape.insert(shape.end(), t.shape.begin() + *axis + 1, t.shape.end());
    return tensor(emit("gather", {*x, *idx}, TensorType{t.dtype, shape}, e.loc,
                       {intAttr("axis", *axis)}));
  }
  if (f == "arange") {
    if (!bind({"start", "end?"}))
      return std::nullopt;
    auto first = evalInt(*a[0], frame, "the size of arange");
    auto second = first ? optInt(1, -1, "the end of arange") : std::nullopt;
    if (!second)
      return std::nullopt;
    int64_t lo = a[1] ? *first : 0, hi = a[1] ? *second : *first;
    if (lo < 0 || hi <= lo || hi > INT32_MAX)
      return error(e.loc, "arange range " + std::to_string(lo) + ".." + std::to_string(hi) +
                              " is empty or out of bounds, it must satisfy 0 <= start < end "
                              "< 2^31"), std::nullopt;
    int n = emit("iota", {}, TensorType{DType::I32, {hi}}, e.loc, {intAttr("dim", 0)});
    if (n < 0)
      return std::nullopt;
    return tensor(slice(n, {lo}, {hi}, {1}, e.loc));
  }
  if (f == "iota") {
    if (!bind({"shape", "dim?", "dtype?"}))
      return std::nullopt;
    auto shape = evalShape(*a[0], frame, "the shape of iota");
    auto dim = shape ? optInt(1, 0, "the dim of iota") : std::nullopt;
    if (!dim)
      return std::nullopt;
    DType dt = DType::I32;
    if (a[2]) {
      auto v = eval(*a[2], frame);
      if (!v)
        return std::nullopt;
      if (v->kind == Value::Str && (v->s == "i32" || v->s == "i64" || v->s == "f32"))
        dt = v->s == "i32" ? DType::I32 : v->s == "i64" ? DType::I64 : DType::F32;
      else
        return error(a[2]->loc, "unknown dtype " + describeValue(*v, g) + ", iota makes "
                                "\"i32\", \"i64\" or \"f32\" tensors"), std::nullopt;
    }
    if (!normAxis(*dim, shape->size(), argLoc(1), "the shape of iota"))
      return std::nullopt;
    return tensor(emit("iota", {}, TensorType{dt, *shape}, e.loc, {intAttr("dim", *dim)}));
  }
  if (f == "full" || f == "zeros" || f == "ones") {
    if (!bind(f == "full" ? std::vector<const char *>{"shape", "value"}
                          : std::vector<const char *>{"shape"}))
      return std::nullopt;
    auto shape = evalShape(*a[0], frame, "the shape of " + f);
    auto value = shape ? (f == "full" ? evalNumber(*a[1], frame, "the fill value")
                                      : std::optional<double>(f == "ones" ? 1.0 : 0.0))
                       : std::nullopt;
    if (!value)
      return std::nullopt;
    return tensor(emit("fill", {}, TensorType{DType::F32, *shape}, e.loc,
                       {floatAttr("value", *value)}));
  }
  // normal and uniform
  return error(e.loc, f + "(...) is a parameter initializer, it can only follow "
                          "`param NAME: [shape] =`"), std::nullopt;
}

} // namespace lcc::dsl
