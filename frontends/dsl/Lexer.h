//===- Lexer.h - tokens of the Transformer DSL -----------------*- C++ -*-===//
#ifndef LCC_FRONTENDS_DSL_LEXER_H
#define LCC_FRONTENDS_DSL_LEXER_H

#include "frontends/dsl/Diag.h"
#include <string_view>

namespace lcc::dsl {

enum class Tok {
  Ident, Keyword, Int, Float, String,
  LParen, RParen, LBracket, RBracket, LBrace, RBrace,
  Comma, Colon, Semicolon, Assign, Plus, Minus, Star, Slash, SlashSlash, Percent, At,
  Dot, DotDot, Lt, Le, Gt, Ge, EqEq, Ne,
  Newline, Eof,
};

struct Token {
  Tok kind;
  std::string text; // identifier/keyword/string contents, or the operator spelling
  SrcLoc loc;
  int64_t intValue = 0;
  double floatValue = 0;
};

/// How a token kind is named in "expected ..." diagnostics.
const char *tokName(Tok kind);

/// Splits `source` into tokens ending with Eof. Newlines are tokens only
/// outside parentheses and brackets, so long expressions may wrap freely while
/// statements need no terminator. Returns false after reporting to `diag`.
bool lex(std::string_view source, Diag &diag, std::vector<Token> &tokens);

} // namespace lcc::dsl

#endif
