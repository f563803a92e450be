//===- Graph.h - the shape-checked, fully unrolled model -------*- C++ -*-===//
//
// Sema evaluates the program (config arithmetic, block instantiation, loop
// unrolling, shape checks) into this flat list of ops; the importer only
// translates it into the lcc dialect. Keeping the two apart means no MLIR is
// built for a model that has an error, and Sema can be tested on its own.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_FRONTENDS_DSL_GRAPH_H
#define LCC_FRONTENDS_DSL_GRAPH_H

#include "frontends/dsl/Diag.h"
#include <string>
#include <vector>

namespace lcc::dsl {

enum class DType { F32, I32, I64, I1 };
const char *dtypeName(DType t);

struct TensorType {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
};

/// An attribute of an lcc op, typed so the importer can build the MLIR attribute.
struct NodeAttr {
  enum Kind { Int, Float, Bool, Str, Ints } kind;
  std::string name;
  NodeAttr(Kind kind, std::string name) : kind(kind), name(std::move(name)) {}
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s;
  std::vector<int64_t> ints;
};

enum class NodeKind { Param, Input, Op };

struct Node {
  NodeKind kind = NodeKind::Op;
  int index = 0;  // into Graph::params or Graph::inputs
  std::string op; // lcc op mnemonic ("add", "matmul", ...) for NodeKind::Op
  std::vector<int> operands;
  std::vector<NodeAttr> attrs;
  TensorType type;
  SrcLoc loc;
  /// The loop iterations the op was made in, "h.3." for `for h in ...` (""
  /// outside loops): the importer puts it in the op's location, which is how
  /// lcc-outline-layers finds a model's repeated layers.
  std::string layer;
};

struct ParamInfo {
  std::string name; // dotted: "h.0.attn.c_attn.weight"
  std::vector<int64_t> shape;
  enum Init { Normal, Uniform, Fill } init = Fill;
  double a = 0, b = 0; // normal: mean, std; uniform: low, high; fill: value
  SrcLoc loc;
  int node = -1;
  bool frozen = false; // no gradient, no optimizer state (`frozen` flag or train.frozen)
  enum Decay { Default, NoDecay, ForceDecay } decay = Default; // over the rank rule
};

struct InputInfo {
  std::string name;
  TensorType type;
  SrcLoc loc;
  int node = -1;
};

struct ConfigValue {
  std::string name;
  bool isFloat = false;
  bool isBool = false;
  bool isString = false; // hf section values only
  int64_t i = 0; // also the bool
  double f = 0;
  std::string s;
};

struct Graph {
  std::string modelName;
  SrcLoc modelLoc;
  std::vector<ConfigValue> config;
  std::string hfArchitecture; // empty without an hf section
  std::vector<ConfigValue> hfConfig;
  std::vector<ParamInfo> params;
  std::vector<InputInfo> inputs;
  std::vector<Node> nodes;
  int result = -1; // the scalar loss
};

} // namespace lcc::dsl

#endif
