//===- Sema.h - evaluation and shape checking of the DSL -------*- C++ -*-===//
//
// Sema runs the program at compile time: config constants are numbers, block
// calls are instantiated (fresh parameters under the instance's name prefix),
// `for` loops are unrolled, and every tensor op is shape-checked as it is
// appended to the Graph. Sema.cpp holds statements and operators,
// SemaBuiltins.cpp the builtin functions.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_FRONTENDS_DSL_SEMA_H
#define LCC_FRONTENDS_DSL_SEMA_H

#include "frontends/dsl/Ast.h"
#include "frontends/dsl/Graph.h"
#include <map>
#include <optional>

namespace lcc::dsl {

/// Limits that keep hostile input from exhausting time or memory.
constexpr int kMaxCallDepth = 64;
/// Expression evaluation depth summed over nested block calls; bounds the
/// native stack, which each level (a builtin call is several KiB) consumes.
constexpr int kMaxEvalDepth = 200;
constexpr int64_t kMaxNodes = 2000000;
constexpr int64_t kMaxSteps = 10000000;

/// Evaluates `file` into `graph`; false after reporting the first error.
bool analyze(const File &file, const std::map<std::string, int64_t> &overrides, Diag &diag,
             Graph &graph);

/// A compile-time value: a number, a flag, a string, a list, or a tensor (a Graph node).
struct Value {
  enum Kind { None, Int, Float, Bool, Str, Tensor, List } kind = None;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s;
  int node = -1;
  std::vector<Value> list;

  static Value ofInt(int64_t v) { Value r; r.kind = Int; r.i = v; return r; }
  static Value ofFloat(double v) { Value r; r.kind = Float; r.f = v; return r; }
  static Value ofBool(bool v) { Value r; r.kind = Bool; r.b = v; return r; }
  static Value ofTensor(int n) { Value r; r.kind = Tensor; r.node = n; return r; }
  bool isNumber() const { return kind == Int || kind == Float; }
  double number() const { return kind == Int ? double(i) : f; }
};

class Sema {
public:
  Sema(const File &file, Diag &diag, Graph &graph) : file(file), diag(diag), g(graph) {}
  bool run(const std::map<std::string, int64_t> &overrides);

private:
  struct Frame {
    std::map<std::string, Value> vars;
    std::string prefix; // parameter name prefix, "h.0.attn."
  };

  const File &file;
  Diag &diag;
  Graph &g;
  std::map<std::string, Value> globals; // config constants and inputs
  std::map<std::string, const BlockDef *> blocks;
  /// Where each parameter was introduced: its declaration, or for one inside a
  /// block the innermost block call, which is where the user adds `as NAME`.
  std::map<std::string, SrcLoc> paramSites;
  std::vector<SrcLoc> callSites;
  /// The loop iterations being evaluated ("h.3."), recorded in every op.
  std::string layer;
  SrcLoc returnLoc; // of the last `return` run: the model's, when the body is done
  int callDepth = 0;
  int evalDepth = 0;
  int64_t steps = 0;

  // Sema.cpp: statements, names, operators.
  bool evalConfig(const std::map<std::string, int64_t> &overrides);
  bool declareInputs();
  bool execBody(const Body &body, Frame &frame, Value *ret, bool topLevel);
  bool execStmt(const Stmt &s, Frame &frame, Value *ret, bool topLevel, bool last);
  bool declareParam(const Stmt &s, Frame &frame);
  std::optional<Value> eval(const Expr &e, Frame &frame);
  std::optional<Value> evalUnchecked(const Expr &e, Frame &frame);
  std::optional<Value> evalName(const Expr &e, Frame &frame);
  std::optional<Value> evalUnary(const Expr &e, Frame &frame);
  std::optional<Value> evalBinary(const Expr &e, Frame &frame);
  std::optional<Value> numberBinary(const Expr &e, const Value &a, const Value &b);
  std::optional<Value> evalIndex(const Expr &e, Frame &frame);
  std::optional<Value> evalMember(const Expr &e, Frame &frame);
  std::optional<Value> callBlock(const Expr &e, const BlockDef &b, Frame &frame);

  // SemaTrain.cpp: the train section (loss choice, frozen and decay patterns).
  bool applyTrainSection(Frame &top, const Value &ret);
  std::optional<int> defaultLoss(int output);
  bool markParams(const ConfigEntry &entry, Frame &frame);
  // The hf section: which Hugging Face architecture, and its config values
  // (compiler/package/HfNames.h checks them against the parameters).
  bool applyHfSection(Frame &top);

  // SemaBuiltins.cpp: the builtin functions; SemaOps.cpp: the checked op builders.
public:
  static bool isBuiltin(const std::string &name);
  static std::vector<std::string> builtinNames();

private:
  std::optional<Value> callBuiltin(const Expr &e, Frame &frame);
  /// Binds a call's positional and keyword arguments to `names` (a trailing
  /// '?' marks an optional one); `out[i]` is null for an absent optional.
  bool bindArgs(const Expr &call, const std::vector<const char *> &names,
                std::vector<const Expr *> &out);

  // Checked builders: each verifies shapes and reports at `loc` before appending a node.
  int emit(const std::string &op, std::vector<int> operands, TensorType type, SrcLoc loc,
           std::vector<NodeAttr> attrs = {});
  std::optional<int> toTensor(const Value &v, DType like, SrcLoc loc, const std::string &what);
  std::optional<int> broadcastOp(const std::string &op, int a, int b, SrcLoc loc);
  std::optional<int> matmul(int a, int b, bool ta, bool tb, SrcLoc loc);
  std::optional<int> reshape(int x, std::vector<int64_t> shape, SrcLoc loc);
  std::optional<int> transpose(int x, std::vector<int64_t> perm, SrcLoc loc);
  std::optional<int> slice(int x, std::vector<int64_t> start, std::vector<int64_t> limit,
                           std::vector<int64_t> step, SrcLoc loc);
  std::optional<int> unaryOp(const std::string &op, int x, SrcLoc loc);

  // Value helpers.
  const TensorType &typeOf(int node) const { return g.nodes[node].type; }
  std::optional<int64_t> evalInt(const Expr &e, Frame &frame, const std::string &what);
  std::optional<double> evalNumber(const Expr &e, Frame &frame, const std::string &what);
  std::optional<bool> evalBool(const Expr &e, Frame &frame, const std::string &what);
  std::optional<int> evalTensor(const Expr &e, Frame &frame, const std::string &what);
  std::optional<std::vector<int64_t>> evalIntList(const Expr &e, Frame &frame,
                                                  const std::string &what);
  std::optional<std::vector<int64_t>> evalShape(const Expr &e, Frame &frame,
                                                const std::string &what);
  bool normAxis(int64_t &axis, size_t rank, SrcLoc loc, const std::string &what);
  void error(SrcLoc loc, const std::string &msg) { diag.error(loc, msg); }
};

/// "i32 tensor [4, 32]", "integer 3", ...: how values are named in diagnostics.
std::string describeValue(const Value &v, const Graph &g);
std::string typeString(const TensorType &t);
/// " (did you mean 'dim'?)" for the closest candidate, or "".
std::string didYouMean(const std::string &name, const std::vector<std::string> &candidates);
/// "+", "//", ...: how an operator token is spelled in diagnostics.
const char *opSpelling(Tok t);
bool isComparison(Tok t);

} // namespace lcc::dsl

#endif
