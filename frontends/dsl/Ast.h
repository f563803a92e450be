//===- Ast.h - syntax tree of the Transformer DSL --------------*- C++ -*-===//
//
// One plain struct per node family instead of a class hierarchy: the tree is
// small, built once and walked once by Sema, and every node carries the
// line:col that its diagnostics and MLIR locations point at.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_FRONTENDS_DSL_AST_H
#define LCC_FRONTENDS_DSL_AST_H

#include "frontends/dsl/Lexer.h"
#include <memory>

namespace lcc::dsl {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind {
  Int, Float, String, Bool,
  Name,   // identifier
  List,   // [a, b, c]
  Unary,  // -x (op = Tok::Minus)
  Binary, // lhs op rhs
  Call,   // callee(args, key=value) [as instance]
  Index,  // base[items]
  Member, // base.name (x.shape, w.T)
};

/// One subscript of base[...]: a single index, or a range lo:hi:step with optional parts.
struct IndexItem {
  SrcLoc loc;
  bool isRange = false;
  ExprPtr single, lo, hi, step;
};

struct KeywordArg {
  std::string name;
  SrcLoc loc;
  ExprPtr value;
};

struct Expr {
  ExprKind kind;
  SrcLoc loc; // the operator for Unary/Binary, the callee for Call, '[' for Index
  int64_t intValue = 0;
  double floatValue = 0;
  bool boolValue = false;
  std::string text; // Name, String, Member name, Call callee
  Tok op = Tok::Eof;
  ExprPtr lhs, rhs; // Unary uses lhs; Index and Member use lhs as the base
  std::vector<ExprPtr> args;       // List elements, Call positional arguments
  std::vector<KeywordArg> kwargs;  // Call keyword arguments
  std::vector<IndexItem> items;    // Index subscripts
  std::string instance;            // Call: `as NAME`
  SrcLoc instanceLoc;
  uint32_t height = 1; // of the subtree; the parser bounds it
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class StmtKind {
  Param,  // param NAME: [dims] = init
  Assign, // NAME = expr
  For,    // for NAME in from..to { body }
  If,     // if cond { body } else { elseBody }
  Return, // return expr
  ExprStmt,
};

struct Stmt {
  StmtKind kind;
  SrcLoc loc;
  std::string name;
  SrcLoc nameLoc;
  ExprPtr value; // Assign/Return/ExprStmt value, Param init, If condition, For start
  ExprPtr shape; // Param shape, For end
  Body body, elseBody;
  /// Param: the words after the initializer (`frozen`, `no_decay`, `decay`).
  std::vector<std::pair<std::string, SrcLoc>> flags;
};

struct ConfigEntry {
  std::string name;
  SrcLoc loc;
  ExprPtr value;
};

struct InputDecl {
  std::string name;
  SrcLoc loc;
  std::string dtype;
  SrcLoc dtypeLoc;
  ExprPtr shape;
};

struct BlockArg {
  std::string name;
  SrcLoc loc;
  ExprPtr defaultValue; // may be null
};

struct BlockDef {
  std::string name;
  SrcLoc loc;
  std::vector<BlockArg> args;
  Body body;
};

struct ModelDef {
  std::string name;
  SrcLoc loc;
  Body body;
  SrcLoc endLoc; // the closing '}', where "missing return" points
};

/// `train { loss = ...; frozen = [...]; no_decay = [...]; decay = [...] }`: how the model
/// is trained, kept apart from the model body so one architecture serves pre-training and
/// fine-tuning.
struct TrainSection {
  SrcLoc loc;
  std::vector<ConfigEntry> entries;
};

/// `hf GPT2LMHeadModel { n_head = heads; layer_norm_epsilon = eps }`: the Hugging Face
/// architecture the model is, and the config.json values its parameter shapes do not
/// say (docs/hf.md).
struct HfSection {
  SrcLoc loc;
  std::string architecture;
  SrcLoc architectureLoc;
  std::vector<ConfigEntry> entries;
};

struct File {
  std::vector<ConfigEntry> config;
  std::unique_ptr<TrainSection> train;
  std::unique_ptr<HfSection> hf;
  std::vector<InputDecl> inputs;
  std::vector<std::unique_ptr<BlockDef>> blocks;
  std::unique_ptr<ModelDef> model;
};

} // namespace lcc::dsl

#endif
