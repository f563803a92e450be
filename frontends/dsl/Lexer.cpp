//===- Lexer.cpp - tokens of the Transformer DSL -------------------------===//
#include "frontends/dsl/Lexer.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace lcc::dsl {

static const char *const keywords[] = {"model", "config", "input", "block", "param", "return",
                                       "for",   "in",     "if",    "else",  "true",  "false",
                                       "as"};

const char *tokName(Tok kind) {
  switch (kind) {
  case Tok::Ident: return "a name";
  case Tok::Keyword: return "a keyword";
  case Tok::Int: return "an integer";
  case Tok::Float: return "a number";
  case Tok::String: return "a string";
  case Tok::LParen: return "'('";
  case Tok::RParen: return "')'";
  case Tok::LBracket: return "'['";
  case Tok::RBracket: return "']'";
  case Tok::LBrace: return "'{'";
  case Tok::RBrace: return "'}'";
  case Tok::Comma: return "','";
  case Tok::Colon: return "':'";
  case Tok::Semicolon: return "';'";
  case Tok::Assign: return "'='";
  case Tok::Plus: return "'+'";
  case Tok::Minus: return "'-'";
  case Tok::Star: return "'*'";
  case Tok::Slash: return "'/'";
  case Tok::SlashSlash: return "'//'";
  case Tok::Percent: return "'%'";
  case Tok::At: return "'@'";
  case Tok::Dot: return "'.'";
  case Tok::DotDot: return "'..'";
  case Tok::Lt: return "'<'";
  case Tok::Le: return "'<='";
  case Tok::Gt: return "'>'";
  case Tok::Ge: return "'>='";
  case Tok::EqEq: return "'=='";
  case Tok::Ne: return "'!='";
  case Tok::Newline: return "end of line";
  case Tok::Eof: return "end of file";
  }
  return "a token";
}

namespace {
class Lexer {
public:
  Lexer(std::string_view src, Diag &diag, std::vector<Token> &out)
      : src(src), diag(diag), out(out) {}

  bool run() {
    while (true) {
      skipSpaceAndComments();
      if (pos >= src.size())
        break;
      if (!lexOne())
        return false;
    }
    push(Tok::Newline, "", here());
    push(Tok::Eof, "", here());
    return true;
  }

private:
  std::string_view src;
  Diag &diag;
  std::vector<Token> &out;
  size_t pos = 0;
  uint32_t line = 1, col = 1;
  int depth = 0; // open ( and [; newlines inside them are whitespace

  SrcLoc here() const { return {line, col}; }
  char peek(size_t ahead = 0) const {
    return pos + ahead < src.size() ? src[pos + ahead] : '\0';
  }
  void advance() {
    if (src[pos] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
    ++pos;
  }
  void push(Tok kind, std::string text, SrcLoc loc) {
    // Blank lines and a newline right after '{' carry no meaning.
    if (kind == Tok::Newline &&
        (out.empty() || out.back().kind == Tok::Newline || out.back().kind == Tok::LBrace))
      return;
    out.push_back(Token{kind, std::move(text), loc});
  }

  void skipSpaceAndComments() {
    while (pos < src.size()) {
      char c = peek();
      if (c == '#') {
        while (pos < src.size() && peek() != '\n')
          advance();
      } else if (c == '\n') {
        if (depth == 0)
          push(Tok::Newline, "", here());
        advance();
      } else if (c == ' ' || c == '\t' || c == '\r') {
        advance();
      } else {
        break;
      }
    }
  }

  static bool isIdentStart(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  }
  static bool isDigit(char c) { return c >= '0' && c <= '9'; }

  bool lexOne() {
    SrcLoc loc = here();
    char c = peek();
    if (isIdentStart(c)) {
      size_t start = pos;
      while (isIdentStart(peek()) || isDigit(peek()))
        advance();
      std::string text(src.substr(start, pos - start));
      bool kw = false;
      for (const char *k : keywords)
        kw |= text == k;
      push(kw ? Tok::Keyword : Tok::Ident, text, loc);
      return true;
    }
    if (isDigit(c))
      return lexNumber(loc);
    if (c == '"') {
      advance();
      size_t start = pos;
      while (pos < src.size() && peek() != '"' && peek() != '\n')
        advance();
      if (peek() != '"') {
        diag.error(loc, "unterminated string, a string must close with '\"' on the same line");
        return false;
      }
      std::string text(src.substr(start, pos - start));
      advance();
      push(Tok::String, text, loc);
      return true;
    }
    struct Punct {
      const char *spelling;
      Tok kind;
    };
    // Longest spellings first so "//" wins over "/".
    static const Punct puncts[] = {
        {"//", Tok::SlashSlash}, {"..", Tok::DotDot}, {"<=", Tok::Le}, {">=", Tok::Ge},
        {"==", Tok::EqEq},       {"!=", Tok::Ne},     {"(", Tok::LParen}, {")", Tok::RParen},
        {"[", Tok::LBracket},    {"]", Tok::RBracket}, {"{", Tok::LBrace}, {"}", Tok::RBrace},
        {",", Tok::Comma},       {":", Tok::Colon},   {";", Tok::Semicolon}, {"=", Tok::Assign},
        {"+", Tok::Plus},        {"-", Tok::Minus},   {"*", Tok::Star},   {"/", Tok::Slash},
        {"%", Tok::Percent},     {"@", Tok::At},      {".", Tok::Dot},    {"<", Tok::Lt},
        {">", Tok::Gt},
    };
    for (const Punct &p : puncts) {
      size_t n = std::strlen(p.spelling);
      if (src.substr(pos, n) != p.spelling)
        continue;
      for (size_t i = 0; i < n; ++i)
        advance();
      if (p.kind == Tok::LParen || p.kind == Tok::LBracket)
        ++depth;
      if ((p.kind == Tok::RParen || p.kind == Tok::RBracket) && depth > 0)
        --depth;
      // A newline before '}' ends the last statement of the block.
      if (p.kind == Tok::RBrace)
        push(Tok::Newline, "", loc);
      push(p.kind, p.spelling, loc);
      return true;
    }
    std::string shown;
    unsigned char uc = static_cast<unsigned char>(c);
    if (c == '\'') {
      shown = "\"'\"";
    } else if (uc >= 0x20 && uc < 0x7f) {
      shown = std::string("'") + c + "'";
    } else {
      static const char hex[] = "0123456789abcdef";
      shown = std::string("byte 0x") + hex[uc >> 4] + hex[uc & 15];
    }
    diag.error(loc, "unexpected character " + shown + ", it cannot start a token");
    return false;
  }

  bool lexNumber(SrcLoc loc) {
    size_t start = pos;
    bool isFloat = false;
    while (isDigit(peek()))
      advance();
    // "0..n" is a range, so a '.' is a decimal point only when a digit follows.
    if (peek() == '.' && isDigit(peek(1))) {
      isFloat = true;
      advance();
      while (isDigit(peek()))
        advance();
    }
    if (peek() == 'e' || peek() == 'E') {
      size_t save = 1;
      if (peek(1) == '+' || peek(1) == '-')
        save = 2;
      if (isDigit(peek(save))) {
        isFloat = true;
        for (size_t i = 0; i < save; ++i)
          advance();
        while (isDigit(peek()))
          advance();
      }
    }
    if (isIdentStart(peek())) {
      diag.error(here(), "unexpected character '" + std::string(1, peek()) +
                             "' after a number, a name cannot start with a digit");
      return false;
    }
    std::string text(src.substr(start, pos - start));
    Token t{isFloat ? Tok::Float : Tok::Int, text, loc};
    errno = 0;
    if (isFloat) {
      t.floatValue = std::strtod(text.c_str(), nullptr);
    } else {
      unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
      if (errno == ERANGE || v > uint64_t(INT64_MAX)) {
        diag.error(loc, "integer " + text + " is too large, integers must fit in 64 bits");
        return false;
      }
      t.intValue = int64_t(v);
    }
    out.push_back(std::move(t));
    return true;
  }
};
} // namespace

bool lex(std::string_view source, Diag &diag, std::vector<Token> &tokens) {
  return Lexer(source, diag, tokens).run();
}

} // namespace lcc::dsl
