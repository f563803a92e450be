//===- Sema.cpp - statements, names and operators of the DSL -------------===//
#include "frontends/dsl/Sema.h"

#include "llvm/ADT/StringRef.h"
#include <cmath>
#include <cstdio>

namespace lcc::dsl {

const char *dtypeName(DType t) {
  switch (t) {
  case DType::F32: return "f32";
  case DType::I32: return "i32";
  case DType::I64: return "i64";
  case DType::I1: return "i1";
  }
  return "?";
}

std::string typeString(const TensorType &t) {
  return std::string(dtypeName(t.dtype)) + " tensor " + shapeString(t.shape);
}

std::string describeValue(const Value &v, const Graph &g) {
  switch (v.kind) {
  case Value::None: return "nothing";
  case Value::Int: return "integer " + std::to_string(v.i);
  case Value::Float: {
    char buf[32];
    snprintf(buf, sizeof buf, "%g", v.f);
    return std::string("number ") + buf;
  }
  case Value::Bool: return v.b ? "true" : "false";
  case Value::Str: return "string \"" + v.s + "\"";
  case Value::Tensor: return typeString(g.nodes[v.node].type);
  case Value::List: return "list";
  }
  return "value";
}

static std::string str(SrcLoc l) { return std::to_string(l.line) + ":" + std::to_string(l.col); }

/// " (did you mean 'dim'?)" for the closest candidate within a small edit
/// distance, since most unknown names are typos.
std::string didYouMean(const std::string &name, const std::vector<std::string> &candidates) {
  unsigned best = std::max<unsigned>(1, unsigned(name.size()) / 3) + 1;
  std::string pick;
  for (const std::string &c : candidates) {
    unsigned d = llvm::StringRef(name).edit_distance(c, true, best);
    if (d < best) {
      best = d;
      pick = c;
    }
  }
  return pick.empty() ? "" : " (did you mean '" + pick + "'?)";
}

bool analyze(const File &file, const std::map<std::string, int64_t> &overrides, Diag &diag,
             Graph &graph) {
  return Sema(file, diag, graph).run(overrides);
}

bool Sema::run(const std::map<std::string, int64_t> &overrides) {
  const ModelDef &model = *file.model;
  g.modelName = model.name;
  g.modelLoc = model.loc;
  for (const auto &b : file.blocks) {
    if (isBuiltin(b->name))
      return error(b->loc, "block '" + b->name + "' has the name of a builtin function, "
                           "rename the block"), false;
    auto [it, fresh] = blocks.emplace(b->name, b.get());
    if (!fresh)
      return error(b->loc, "block '" + b->name + "' is defined twice, the first definition is at " +
                               str(it->second->loc)), false;
  }
  if (!evalConfig(overrides) || !declareInputs())
    return false;
  Frame top;
  Value ret;
  if (!execBody(model.body, top, &ret, /*topLevel=*/true))
    return false;
  if (ret.kind == Value::None)
    return error(model.endLoc, "model '" + model.name + "' does not return a value, its body "
                               "must end with `return LOSS` (a scalar f32 tensor) or "
                               "`return LOGITS`"), false;
  // The train section (SemaTrain.cpp) turns the returned value into the loss and
  // marks frozen / decay parameters.
  return applyTrainSection(top, ret) && applyHfSection(top);
}

bool Sema::evalConfig(const std::map<std::string, int64_t> &overrides) {
  for (const auto &[name, value] : overrides) {
    bool known = false;
    for (const ConfigEntry &c : file.config)
      known |= c.name == name;
    if (!known) {
      std::string names;
      for (const ConfigEntry &c : file.config)
        names += (names.empty() ? "" : ", ") + c.name;
      return error({1, 1}, "unknown config constant '" + name + "' in the overrides, the "
                           "model's config defines: " + (names.empty() ? "nothing" : names)),
             false;
    }
  }
  Frame empty;
  for (const ConfigEntry &c : file.config) {
    if (globals.count(c.name))
      return error(c.loc, "config constant '" + c.name + "' is defined twice, each constant "
                          "needs a distinct name"), false;
    Value v;
    auto o = overrides.find(c.name);
    if (o != overrides.end()) {
      // An override keeps the constant's kind: a float constant stays a float.
      v = c.value->kind == ExprKind::Float  ? Value::ofFloat(double(o->second))
          : c.value->kind == ExprKind::Bool ? Value::ofBool(o->second != 0)
                                            : Value::ofInt(o->second);
    } else {
      auto r = eval(*c.value, empty);
      if (!r)
        return false;
      v = *r;
    }
    if (v.kind != Value::Int && v.kind != Value::Float && v.kind != Value::Bool)
      return error(c.value->loc, "config constant '" + c.name + "' cannot hold " +
                                     describeValue(v, g) +
                                     ", config constants must be numbers or true/false"), false;
    globals[c.name] = v;
    ConfigValue cv;
    cv.name = c.name;
    cv.isFloat = v.kind == Value::Float;
    cv.isBool = v.kind == Value::Bool;
    cv.i = v.kind == Value::Bool ? v.b : v.i;
    cv.f = v.f;
    g.config.push_back(cv);
  }
  return true;
}

bool Sema::declareInputs() {
  Frame empty;
  for (const InputDecl &in : file.inputs) {
    if (globals.count(in.name))
      return error(in.loc, "input '" + in.name + "' is declared twice or has the name of a "
                           "config constant, inputs need distinct names"), false;
    InputInfo info;
    info.name = in.name;
    info.loc = in.loc;
    if (in.dtype == "i32")
      info.type.dtype = DType::I32;
    else if (in.dtype == "i64")
      info.type.dtype = DType::I64;
    else if (in.dtype == "f32")
      info.type.dtype = DType::F32;
    else
      return error(in.dtypeLoc, "unknown element type '" + in.dtype + "' for input '" + in.name +
                                    "', inputs are i32, i64 or f32"), false;
    auto shape = evalShape(*in.shape, empty, "the shape of input '" + in.name + "'");
    if (!shape)
      return false;
    info.type.shape = *shape;
    info.node = int(g.nodes.size());
    Node n;
    n.kind = NodeKind::Input;
    n.index = int(g.inputs.size());
    n.type = info.type;
    n.loc = in.loc;
    g.nodes.push_back(n);
    g.inputs.push_back(info);
    globals[in.name] = Value::ofTensor(info.node);
  }
  return true;
}

bool Sema::execBody(const Body &body, Frame &frame, Value *ret, bool topLevel) {
  for (size_t i = 0; i < body.size(); ++i)
    if (!execStmt(*body[i], frame, ret, topLevel, i + 1 == body.size()))
      return false;
  return true;
}

bool Sema::execStmt(const Stmt &s, Frame &frame, Value *ret, bool topLevel, bool last) {
  if (++steps > kMaxSteps)
    return error(s.loc, "the model takes too long to evaluate, more than " +
                            std::to_string(kMaxSteps) + " statements ran"), false;
  switch (s.kind) {
  case StmtKind::Param:
    return declareParam(s, frame);
  case StmtKind::Assign: {
    auto g1 = globals.find(s.name);
    if (g1 != globals.end())
      return error(s.nameLoc, "cannot assign to '" + s.name + "', it is " +
                                  (g1->second.kind == Value::Tensor
                                       ? "an input"
                                       : "a config constant (override it from the command line)")),
             false;
    auto v = eval(*s.value, frame);
    if (!v)
      return false;
    if (v->kind == Value::None)
      return error(s.value->loc, "the expression has no value, the block it calls ends "
                                 "without `return`"), false;
    frame.vars[s.name] = std::move(*v);
    return true;
  }
  case StmtKind::ExprStmt:
    return eval(*s.value, frame).has_value();
  case StmtKind::Return: {
    if (!topLevel)
      return error(s.loc, "return inside `for` or `if` is not supported, return once at the "
                          "end of the body"), false;
    if (!last)
      return error(s.loc, "return must be the last statement of its body, the statements "
                          "after it would never run"), false;
    auto v = eval(*s.value, frame);
    if (!v)
      return false;
    *ret = std::move(*v);
    returnLoc = s.loc;
    return true;
  }
  case StmtKind::If: {
    auto c = evalBool(*s.value, frame, "the condition of `if`");
    if (!c)
      return false;
    return execBody(*c ? s.body : s.elseBody, frame, ret, false);
  }
  case StmtKind::For: {
    auto from = evalInt(*s.value, frame, "the start of the loop range");
    auto to = from ? evalInt(*s.shape, frame, "the end of the loop range") : std::nullopt;
    if (!to)
      return false;
    if (*to > *from && uint64_t(*to) - uint64_t(*from) > 100000)
      return error(s.loc, "the loop runs " + std::to_string(uint64_t(*to) - uint64_t(*from)) +
                              " times, loops are unrolled and may run at most 100000 times"),
             false;
    std::optional<Value> saved;
    if (auto it = frame.vars.find(s.name); it != frame.vars.end())
      saved = it->second;
    std::string outer = frame.prefix, outerLayer = layer;
    for (int64_t i = *from; i < *to; ++i) {
      frame.vars[s.name] = Value::ofInt(i);
      // The loop variable names the stack of layers: `for h in ...` gives
      // "h.0.", "h.1.", ... to the parameters and to the ops (Node::layer).
      std::string iteration = s.name + "." + std::to_string(i) + ".";
      frame.prefix = outer + iteration;
      layer = outerLayer + iteration;
      if (!execBody(s.body, frame, ret, false))
        return false;
    }
    frame.prefix = outer;
    layer = outerLayer;
    if (saved)
      frame.vars[s.name] = *saved;
    else
      frame.vars.erase(s.name);
    return true;
  }
  }
  return true;
}

bool Sema::declareParam(const Stmt &s, Frame &frame) {
  std::string name = frame.prefix + s.name;
  if (globals.count(s.name))
    return error(s.nameLoc, "param '" + s.name + "' has the name of a config constant or "
                            "input, parameters need their own names"), false;
  auto shape = evalShape(*s.shape, frame, "the shape of param '" + s.name + "'");
  if (!shape)
    return false;
  ParamInfo p;
  p.name = name;
  p.shape = *shape;
  p.loc = s.nameLoc;
  const Expr &init = *s.value;
  std::string callee = init.kind == ExprKind::Name || init.kind == ExprKind::Call ? init.text : "";
  std::vector<const Expr *> args;
  auto number = [&](const Expr *e, double dflt, const char *what) -> std::optional<double> {
    if (!e)
      return dflt;
    return evalNumber(*e, frame, what);
  };
  if ((callee == "zeros" || callee == "ones") &&
      (init.kind == ExprKind::Name || bindArgs(init, {}, args))) {
    p.init = ParamInfo::Fill;
    p.a = callee == "ones" ? 1.0 : 0.0;
  } else if (callee == "full" && init.kind == ExprKind::Call) {
    if (!bindArgs(init, {"value"}, args))
      return false;
    auto v = number(args[0], 0, "the fill value");
    if (!v)
      return false;
    p.init = ParamInfo::Fill;
    p.a = *v;
  } else if (callee == "normal" && init.kind == ExprKind::Call) {
    if (!bindArgs(init, {"mean?", "std?"}, args))
      return false;
    auto mean = number(args[0], 0.0, "the mean of normal()");
    auto stdev = mean ? number(args[1], 1.0, "the std of normal()") : std::nullopt;
    if (!stdev)
      return false;
    if (!(*stdev >= 0))
      return error(args[1]->loc, "negative standard deviation, normal(mean, std) needs "
                                 "std >= 0"), false;
    p.init = ParamInfo::Normal;
    p.a = *mean;
    p.b = *stdev;
  } else if (callee == "uniform" && init.kind == ExprKind::Call) {
    if (!bindArgs(init, {"low?", "high?"}, args))
      return false;
    auto lo = number(args[0], 0.0, "the low bound of uniform()");
    auto hi = lo ? number(args[1], 1.0, "the high bound of uniform()") : std::nullopt;
    if (!hi)
      return false;
    if (!(*lo < *hi))
      return error(init.loc, "empty uniform range, uniform(low, high) needs low < high"), false;
    p.init = ParamInfo::Uniform;
    p.a = *lo;
    p.b = *hi;
  } else {
    if (diag.hasError())
      return false;
    return error(init.loc, "unknown initializer, expected normal(mean, std), "
                           "uniform(low, high), zeros, ones or full(value)"), false;
  }
  for (const auto &[flag, loc] : s.flags) {
    if (flag == "frozen") {
      p.frozen = true;
      continue;
    }
    auto want = flag == "decay" ? ParamInfo::ForceDecay : ParamInfo::NoDecay;
    if (p.decay != ParamInfo::Default && p.decay != want)
      return error(loc, "param '" + s.name + "' is flagged both decay and no_decay, keep one"),
             false;
    p.decay = want;
  }
  SrcLoc site = callSites.empty() ? s.nameLoc : callSites.back();
  auto [it, fresh] = paramSites.emplace(name, site);
  if (!fresh)
    return error(site, "duplicate parameter '" + name + "', it was already declared " +
                           (callSites.empty() ? "at " : "by the call at ") + str(it->second) +
                           "; give repeated block calls distinct names with `as`"), false;
  if (int64_t(g.nodes.size()) >= kMaxNodes)
    return error(s.loc, "the model is too large, it has more than " + std::to_string(kMaxNodes) +
                            " ops and parameters"), false;
  p.node = int(g.nodes.size());
  Node n;
  n.kind = NodeKind::Param;
  n.index = int(g.params.size());
  n.type.shape = p.shape;
  n.loc = s.nameLoc;
  g.nodes.push_back(n);
  g.params.push_back(p);
  frame.vars[s.name] = Value::ofTensor(p.node);
  return true;
}

std::optional<Value> Sema::eval(const Expr &e, Frame &frame) {
  struct DepthGuard {
    int &d;
    ~DepthGuard() { --d; }
  } guard{++evalDepth};
  if (evalDepth > kMaxEvalDepth)
    return error(e.loc, "nesting is too deep, expressions nested through block calls may nest "
                        "at most " + std::to_string(kMaxEvalDepth) + " levels"), std::nullopt;
  return evalUnchecked(e, frame);
}

std::optional<Value> Sema::evalUnchecked(const Expr &e, Frame &frame) {
  switch (e.kind) {
  case ExprKind::Int:
    return Value::ofInt(e.intValue);
  case ExprKind::Float:
    return Value::ofFloat(e.floatValue);
  case ExprKind::Bool:
    return Value::ofBool(e.boolValue);
  case ExprKind::String: {
    Value v;
    v.kind = Value::Str;
    v.s = e.text;
    return v;
  }
  case ExprKind::Name:
    return evalName(e, frame);
  case ExprKind::List: {
    Value v;
    v.kind = Value::List;
    for (const ExprPtr &a : e.args) {
      auto x = eval(*a, frame);
      if (!x)
        return std::nullopt;
      v.list.push_back(std::move(*x));
    }
    return v;
  }
  case ExprKind::Unary:
    return evalUnary(e, frame);
  case ExprKind::Binary:
    return evalBinary(e, frame);
  case ExprKind::Call: {
    if (isBuiltin(e.text)) {
      if (!e.instance.empty())
        return error(e.instanceLoc, "`as` names block instances, '" + e.text +
                                        "' is a builtin function"), std::nullopt;
      return callBuiltin(e, frame);
    }
    auto b = blocks.find(e.text);
    if (b != blocks.end())
      return callBlock(e, *b->second, frame);
    std::vector<std::string> names;
    for (const auto &[n, b] : blocks)
      names.push_back(n);
    if (!e.instance.empty())
      return error(e.loc, "unknown block '" + e.text + "', no `block " + e.text +
                              "(...)` is defined in this file" + didYouMean(e.text, names)),
             std::nullopt;
    for (const std::string &n : builtinNames())
      names.push_back(n);
    return error(e.loc, "unknown function '" + e.text + "', it is neither a builtin nor a "
                        "block defined in this file" + didYouMean(e.text, names)),
           std::nullopt;
  }
  case ExprKind::Index:
    return evalIndex(e, frame);
  case ExprKind::Member:
    return evalMember(e, frame);
  }
  return std::nullopt;
}

std::optional<Value> Sema::evalName(const Expr &e, Frame &frame) {
  if (auto it = frame.vars.find(e.text); it != frame.vars.end())
    return it->second;
  if (auto it = globals.find(e.text); it != globals.end())
    return it->second;
  if (e.text == "inf")
    return Value::ofFloat(INFINITY);
  if (e.text == "pi")
    return Value::ofFloat(M_PI);
  if (blocks.count(e.text) || isBuiltin(e.text))
    return error(e.loc, "'" + e.text + "' is a " + (blocks.count(e.text) ? "block" : "function") +
                            ", call it as " + e.text + "(...)"), std::nullopt;
  std::vector<std::string> names;
  for (const auto &[n, v] : frame.vars)
    names.push_back(n);
  for (const auto &[n, v] : globals)
    names.push_back(n);
  return error(e.loc, "unknown identifier '" + e.text + "', it is not a variable, parameter, "
                      "input or config constant in scope" + didYouMean(e.text, names)),
         std::nullopt;
}

std::optional<Value> Sema::evalUnary(const Expr &e, Frame &frame) {
  auto v = eval(*e.lhs, frame);
  if (!v)
    return std::nullopt;
  if (v->kind == Value::Int) {
    if (v->i == INT64_MIN)
      return error(e.loc, "integer overflow in negation, the result does not fit in 64 bits"),
             std::nullopt;
    return Value::ofInt(-v->i);
  }
  if (v->kind == Value::Float)
    return Value::ofFloat(-v->f);
  if (v->kind == Value::Tensor) {
    auto n = unaryOp("neg", v->node, e.loc);
    if (!n)
      return std::nullopt;
    return Value::ofTensor(*n);
  }
  return error(e.loc, "cannot negate " + describeValue(*v, g) +
                          ", '-' applies to numbers and float tensors"), std::nullopt;
}

const char *opSpelling(Tok t) {
  switch (t) {
  case Tok::Plus: return "+";
  case Tok::Minus: return "-";
  case Tok::Star: return "*";
  case Tok::Slash: return "/";
  case Tok::SlashSlash: return "//";
  case Tok::Percent: return "%";
  case Tok::At: return "@";
  case Tok::Lt: return "<";
  case Tok::Le: return "<=";
  case Tok::Gt: return ">";
  case Tok::Ge: return ">=";
  case Tok::EqEq: return "==";
  case Tok::Ne: return "!=";
  default: return "?";
  }
}

bool isComparison(Tok t) {
  return t == Tok::Lt || t == Tok::Le || t == Tok::Gt || t == Tok::Ge || t == Tok::EqEq ||
         t == Tok::Ne;
}

std::optional<Value> Sema::evalBinary(const Expr &e, Frame &frame) {
  if (e.op == Tok::At) {
    // `a @ w.T` folds the transpose into the matmul instead of materializing it.
    auto operand = [&](const Expr &x, bool &t) -> std::optional<int> {
      t = x.kind == ExprKind::Member && x.text == "T";
      return evalTensor(t ? *x.lhs : x, frame, "an operand of '@'");
    };
    bool ta, tb;
    auto a = operand(*e.lhs, ta);
    auto b = a ? operand(*e.rhs, tb) : std::nullopt;
    if (!b)
      return std::nullopt;
    auto n = matmul(*a, *b, ta, tb, e.loc);
    if (!n)
      return std::nullopt;
    return Value::ofTensor(*n);
  }
  auto a = eval(*e.lhs, frame);
  auto b = a ? eval(*e.rhs, frame) : std::nullopt;
  if (!b)
    return std::nullopt;
  if (a->kind != Value::Tensor && b->kind != Value::Tensor)
    return numberBinary(e, *a, *b);
  std::string op;
  switch (e.op) {
  case Tok::Plus: op = "add"; break;
  case Tok::Minus: op = "sub"; break;
  case Tok::Star: op = "mul"; break;
  case Tok::Slash: op = "div"; break;
  case Tok::Lt: op = "lt"; break;
  case Tok::Le: op = "le"; break;
  case Tok::Gt: op = "gt"; break;
  case Tok::Ge: op = "ge"; break;
  case Tok::EqEq: op = "eq"; break;
  case Tok::Ne: op = "ne"; break;
  default:
    return error(e.loc, std::string("'") + opSpelling(e.op) + "' does not apply to tensors, "
                        "it needs two integers"), std::nullopt;
  }
  DType like = a->kind == Value::Tensor ? typeOf(a->node).dtype : typeOf(b->node).dtype;
  std::string what = std::string("an operand of '") + opSpelling(e.op) + "'";
  auto ta = toTensor(*a, like, e.loc, what);
  auto tb = ta ? toTensor(*b, like, e.loc, what) : std::nullopt;
  if (!tb)
    return std::nullopt;
  auto n = broadcastOp(op, *ta, *tb, e.loc);
  if (!n)
    return std::nullopt;
  return Value::ofTensor(*n);
}

std::optional<Value> Sema::evalIndex(const Expr &e, Frame &frame) {
  auto base = eval(*e.lhs, frame);
  if (!base)
    return std::nullopt;
  if (base->kind == Value::List) {
    if (e.items.size() != 1 || e.items[0].isRange)
      return error(e.loc, "a list takes one integer index, as in shape[-1]"), std::nullopt;
    auto i = evalInt(*e.items[0].single, frame, "a list index");
    if (!i)
      return std::nullopt;
    int64_t n = int64_t(base->list.size());
    if (*i < -n || *i >= n)
      return error(e.items[0].loc, "index " + std::to_string(*i) + " is out of range, the list "
                                   "has " + std::to_string(n) + " elements"), std::nullopt;
    return base->list[*i < 0 ? *i + n : *i];
  }
  if (base->kind != Value::Tensor)
    return error(e.loc, "cannot subscript " + describeValue(*base, g) +
                            ", only tensors and lists can be indexed"), std::nullopt;
  const std::vector<int64_t> shape = typeOf(base->node).shape;
  if (e.items.size() > shape.size())
    return error(e.loc, "too many subscripts, the tensor " + shapeString(shape) + " has rank " +
                            std::to_string(shape.size())), std::nullopt;
  std::vector<int64_t> start(shape.size(), 0), limit(shape), step(shape.size(), 1), kept;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d >= e.items.size()) {
      kept.push_back(shape[d]);
      continue;
    }
    const IndexItem &it = e.items[d];
    int64_t n = shape[d];
    auto bound = [&](const Expr *x, int64_t dflt, const char *what) -> std::optional<int64_t> {
      if (!x)
        return dflt;
      auto v = evalInt(*x, frame, what);
      if (v && *v < 0)
        *v += n; // Python-style: -1 is the last element
      return v;
    };
    auto outOfRange = [&](const std::string &what, const char *why) {
      error(it.loc, what + " is out of range for dimension " + std::to_string(d) + " of size " +
                        std::to_string(n) + ", " + why);
    };
    if (!it.isRange) {
      auto i = bound(it.single.get(), 0, "a tensor index");
      if (!i)
        return std::nullopt;
      if (*i < 0 || *i >= n)
        return outOfRange("index " + std::to_string(*i < 0 ? *i - n : *i),
                          "indices count from 0 (or back from -1)"), std::nullopt;
      start[d] = *i;
      limit[d] = *i + 1;
      continue;
    }
    auto lo = bound(it.lo.get(), 0, "the start of a slice");
    auto hi = lo ? bound(it.hi.get(), n, "the end of a slice") : std::nullopt;
    auto st = hi ? (it.step ? evalInt(*it.step, frame, "the step of a slice")
                            : std::optional<int64_t>(1))
                 : std::nullopt;
    if (!st)
      return std::nullopt;
    if (*st <= 0)
      return error(it.loc, "slice step " + std::to_string(*st) + " is not positive, slices "
                           "step forward"), std::nullopt;
    if (*lo < 0 || *hi > n || *lo >= *hi)
      return outOfRange("slice " + std::to_string(*lo) + ":" + std::to_string(*hi),
                        "a slice must be a non-empty range inside the tensor"), std::nullopt;
    start[d] = *lo;
    limit[d] = *hi;
    step[d] = *st;
    kept.push_back((*hi - *lo + *st - 1) / *st);
  }
  auto s = slice(base->node, start, limit, step, e.loc);
  if (!s)
    return std::nullopt;
  int node = *s;
  // Integer subscripts drop their dimension, as in NumPy.
  if (kept.size() != shape.size()) {
    auto r = reshape(node, kept, e.loc);
    if (!r)
      return std::nullopt;
    node = *r;
  }
  return Value::ofTensor(node);
}

std::optional<Value> Sema::evalMember(const Expr &e, Frame &frame) {
  auto base = eval(*e.lhs, frame);
  if (!base)
    return std::nullopt;
  if (base->kind != Value::Tensor)
    return error(e.loc, "'." + e.text + "' needs a tensor, got " + describeValue(*base, g)),
           std::nullopt;
  const TensorType &t = typeOf(base->node);
  if (e.text == "shape") {
    Value v;
    v.kind = Value::List;
    for (int64_t d : t.shape)
      v.list.push_back(Value::ofInt(d));
    return v;
  }
  if (e.text == "rank")
    return Value::ofInt(int64_t(t.shape.size()));
  if (e.text == "T") {
    size_t r = t.shape.size();
    if (r < 2)
      return error(e.loc, "'.T' needs rank >= 2, the tensor is " + shapeString(t.shape)),
             std::nullopt;
    std::vector<int64_t> perm;
    for (size_t i = 0; i < r; ++i)
      perm.push_back(int64_t(i));
    std::swap(perm[r - 1], perm[r - 2]);
    auto n = transpose(base->node, perm, e.loc);
    if (!n)
      return std::nullopt;
    return Value::ofTensor(*n);
  }
  return error(e.loc, "unknown member '." + e.text + "', tensors have .shape, .rank and .T"),
         std::nullopt;
}

std::optional<Value> Sema::callBlock(const Expr &e, const BlockDef &b, Frame &frame) {
  if (++steps > kMaxSteps)
    return error(e.loc, "the model takes too long to evaluate, more than " +
                            std::to_string(kMaxSteps) + " statements ran"), std::nullopt;
  struct DepthGuard {
    int &d;
    ~DepthGuard() { --d; }
  } guard{++callDepth};
  if (callDepth > kMaxCallDepth)
    return error(e.loc, "block calls nest too deeply (more than " +
                            std::to_string(kMaxCallDepth) + " levels), does block '" + b.name +
                            "' call itself?"), std::nullopt;
  size_t n = b.args.size();
  if (e.args.size() > n)
    return error(e.loc, "block '" + b.name + "' takes " + std::to_string(n) + " argument" +
                            (n == 1 ? "" : "s") + ", got " + std::to_string(e.args.size())),
           std::nullopt;
  std::vector<const Expr *> given(n, nullptr);
  for (size_t i = 0; i < e.args.size(); ++i)
    given[i] = e.args[i].get();
  for (const KeywordArg &kw : e.kwargs) {
    size_t i = 0;
    while (i < n && b.args[i].name != kw.name)
      ++i;
    if (i == n)
      return error(kw.loc, "block '" + b.name + "' has no argument named '" + kw.name + "'"),
             std::nullopt;
    if (given[i])
      return error(kw.loc, "argument '" + kw.name + "' of block '" + b.name +
                               "' is given twice"), std::nullopt;
    given[i] = kw.value.get();
  }
  callSites.push_back(e.loc);
  struct SiteGuard {
    std::vector<SrcLoc> &s;
    ~SiteGuard() { s.pop_back(); }
  } siteGuard{callSites};
  Frame inner;
  inner.prefix = frame.prefix + (e.instance.empty() ? "" : e.instance + ".");
  for (size_t i = 0; i < n; ++i) {
    std::optional<Value> v;
    if (given[i])
      v = eval(*given[i], frame);
    else if (b.args[i].defaultValue)
      v = eval(*b.args[i].defaultValue, inner); // defaults may use earlier arguments
    else
      return error(e.loc, "missing argument '" + b.args[i].name + "' in the call of block '" +
                              b.name + "', it has no default value"), std::nullopt;
    if (!v)
      return std::nullopt;
    inner.vars[b.args[i].name] = std::move(*v);
  }
  Value ret;
  if (!execBody(b.body, inner, &ret, true))
    return std::nullopt;
  return ret;
}

} // namespace lcc::dsl
