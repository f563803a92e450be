//===- Parser.h - recursive-descent parser of the DSL ----------*- C++ -*-===//
#ifndef LCC_FRONTENDS_DSL_PARSER_H
#define LCC_FRONTENDS_DSL_PARSER_H

#include "frontends/dsl/Ast.h"

namespace lcc::dsl {

/// Deepest nesting of expressions and statement bodies the parser accepts; it
/// keeps recursion (here and in Sema) bounded on hostile input.
constexpr int kMaxNesting = 100;

/// Parses a whole file. Returns null after reporting the first error to `diag`.
std::unique_ptr<File> parse(const std::vector<Token> &tokens, Diag &diag);

} // namespace lcc::dsl

#endif
