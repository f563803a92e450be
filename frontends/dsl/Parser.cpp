//===- Parser.cpp - recursive-descent parser of the DSL ------------------===//
//
// Every parse function returns null (or false) once an error is recorded, and
// callers return immediately, so the first error is the one reported.
//
//===----------------------------------------------------------------------===//
#include "frontends/dsl/Parser.h"

namespace lcc::dsl {
namespace {

std::string describe(const Token &t) {
  switch (t.kind) {
  case Tok::Ident: return "name '" + t.text + "'";
  case Tok::Keyword: return "keyword '" + t.text + "'";
  case Tok::Int: return "integer " + t.text;
  case Tok::Float: return "number " + t.text;
  case Tok::String: return "string \"" + t.text + "\"";
  default: return tokName(t.kind);
  }
}

class Parser {
public:
  Parser(const std::vector<Token> &toks, Diag &diag) : toks(toks), diag(diag) {}

  std::unique_ptr<File> parseFile() {
    auto file = std::make_unique<File>();
    skipNewlines();
    if (at(Tok::Eof)) {
      diag.error(cur().loc,
                 "empty model file, expected at least `model NAME { ... }` returning the loss");
      return nullptr;
    }
    while (!at(Tok::Eof)) {
      const Token &t = cur();
      bool ok;
      if (isKeyword("config"))
        ok = parseConfig(*file);
      else if (isKeyword("input"))
        ok = parseInput(*file);
      else if (isKeyword("block"))
        ok = parseBlock(*file);
      else if (isKeyword("model"))
        ok = parseModel(*file);
      else if (at(Tok::Ident) && t.text == "train") // contextual: `train` stays a usable name
        ok = parseTrain(*file);
      else if (at(Tok::Ident) && t.text == "hf") // contextual too
        ok = parseHf(*file);
      else
        return fail(t, "expected `config`, `input`, `block`, `model`, `train` or `hf` at the "
                       "top level"),
               nullptr;
      if (!ok)
        return nullptr;
      skipNewlines();
    }
    if (!file->model) {
      diag.error(cur().loc, "no model defined, the file must contain `model NAME { ... }` "
                            "whose body returns the loss");
      return nullptr;
    }
    return file;
  }

private:
  const std::vector<Token> &toks;
  Diag &diag;
  size_t pos = 0;
  int depth = 0;

  const Token &cur() const { return toks[pos]; }
  const Token &peekTok(size_t n = 1) const {
    return toks[std::min(pos + n, toks.size() - 1)];
  }
  bool at(Tok k) const { return cur().kind == k; }
  bool isKeyword(const char *kw) const { return at(Tok::Keyword) && cur().text == kw; }
  const Token &take() {
    const Token &t = toks[pos];
    if (t.kind != Tok::Eof)
      ++pos;
    return t;
  }
  void skipNewlines() {
    while (at(Tok::Newline) || at(Tok::Semicolon))
      ++pos;
  }
  void fail(const Token &t, const std::string &expected) {
    diag.error(t.loc, "unexpected " + describe(t) + ", " + expected);
  }
  bool expect(Tok k, const std::string &why) {
    if (at(k)) {
      take();
      return true;
    }
    fail(cur(), std::string("expected ") + tokName(k) + " " + why);
    return false;
  }
  bool expectIdent(std::string &name, SrcLoc &loc, const std::string &why) {
    if (!at(Tok::Ident)) {
      fail(cur(), "expected a name " + why);
      return false;
    }
    loc = cur().loc;
    name = take().text;
    return true;
  }
  bool endOfStatement() {
    if (at(Tok::Newline) || at(Tok::Semicolon)) {
      skipNewlines();
      return true;
    }
    fail(cur(), "expected the end of the statement (a new line or ';')");
    return false;
  }

  /// RAII nesting counter; reports once when the limit is crossed.
  struct Nest {
    Parser &p;
    bool ok;
    Nest(Parser &p, SrcLoc loc) : p(p) {
      ok = ++p.depth <= kMaxNesting;
      if (!ok)
        p.diag.error(loc, "nesting is too deep, expressions and blocks may nest at most " +
                              std::to_string(kMaxNesting) + " levels");
    }
    ~Nest() { --p.depth; }
  };

  bool parseConfig(File &file) {
    take();
    skipNewlines();
    SrcLoc open = cur().loc;
    if (!expect(Tok::LBrace, "after `config`"))
      return false;
    skipNewlines();
    while (!at(Tok::RBrace)) {
      if (at(Tok::Eof))
        return fail(cur(), "expected '}' to close the config opened at " + str(open)), false;
      ConfigEntry e;
      if (!expectIdent(e.name, e.loc, "for a config constant (NAME = value)") ||
          !expect(Tok::Assign, "after the config constant '" + e.name + "'"))
        return false;
      if (!(e.value = parseExpr()) || !endOfStatement())
        return false;
      file.config.push_back(std::move(e));
    }
    take();
    return true;
  }

  bool parseTrain(File &file) {
    const Token &kw = take();
    if (file.train)
      return diag.error(kw.loc, "second `train` section, a file has at most one (the first is "
                                "at " + str(file.train->loc) + ")"),
             false;
    auto t = std::make_unique<TrainSection>();
    t->loc = kw.loc;
    if (!parseSettings(t->entries, "train section", "`train`",
                       "for a train setting (loss, frozen, no_decay or decay)", "train setting"))
      return false;
    file.train = std::move(t);
    return true;
  }

  bool parseHf(File &file) {
    const Token &kw = take();
    if (file.hf)
      return diag.error(kw.loc, "second `hf` section, a file has at most one (the first is at " +
                                    str(file.hf->loc) + ")"),
             false;
    auto h = std::make_unique<HfSection>();
    h->loc = kw.loc;
    if (!expectIdent(h->architecture, h->architectureLoc,
                     "after `hf`: the Hugging Face architecture, GPT2LMHeadModel or "
                     "LlamaForCausalLM") ||
        !parseSettings(h->entries, "hf section", "the architecture",
                       "for a config.json key such as n_head", "config.json key"))
      return false;
    file.hf = std::move(h);
    return true;
  }

  /// `{ name = expr ... }`: the settings of a train or hf section.
  bool parseSettings(std::vector<ConfigEntry> &entries, const std::string &what,
                     const std::string &after, const std::string &nameHint,
                     const std::string &nameWhat) {
    skipNewlines();
    SrcLoc open = cur().loc;
    if (!expect(Tok::LBrace, "after " + after))
      return false;
    skipNewlines();
    while (!at(Tok::RBrace)) {
      if (at(Tok::Eof))
        return fail(cur(), "expected '}' to close the " + what + " opened at " + str(open)), false;
      ConfigEntry e;
      if (!expectIdent(e.name, e.loc, nameHint) ||
          !expect(Tok::Assign, "after the " + nameWhat + " '" + e.name + "'"))
        return false;
      if (!(e.value = parseExpr()) || !endOfStatement())
        return false;
      entries.push_back(std::move(e));
    }
    take();
    return true;
  }

  bool parseInput(File &file) {
    take();
    InputDecl in;
    if (!expectIdent(in.name, in.loc, "after `input`") ||
        !expect(Tok::Colon, "after the input name, as in `input tokens: i32[batch, seq]`") ||
        !expectIdent(in.dtype, in.dtypeLoc, "for the element type (i32, i64 or f32)"))
      return false;
    if (!at(Tok::LBracket))
      return fail(cur(), "expected '[' and the input's shape after its element type"), false;
    if (!(in.shape = parsePrimary()) || !endOfStatement())
      return false;
    file.inputs.push_back(std::move(in));
    return true;
  }

  bool parseBlock(File &file) {
    take();
    auto b = std::make_unique<BlockDef>();
    if (!expectIdent(b->name, b->loc, "after `block`") ||
        !expect(Tok::LParen, "after the block name, blocks take arguments like functions"))
      return false;
    while (!at(Tok::RParen)) {
      BlockArg a;
      if (!expectIdent(a.name, a.loc, "for a block argument"))
        return false;
      if (at(Tok::Assign)) {
        take();
        if (!(a.defaultValue = parseExpr()))
          return false;
      }
      b->args.push_back(std::move(a));
      if (!at(Tok::Comma))
        break;
      take();
    }
    if (!expect(Tok::RParen, "to close the block's argument list"))
      return false;
    SrcLoc end;
    if (!parseBody(b->body, end))
      return false;
    file.blocks.push_back(std::move(b));
    return true;
  }

  bool parseModel(File &file) {
    const Token &kw = take();
    if (file.model)
      return diag.error(kw.loc, "second model definition, a file defines exactly one model "
                                "(the first is at " + str(file.model->loc) + ")"),
             false;
    auto m = std::make_unique<ModelDef>();
    m->loc = kw.loc;
    SrcLoc nameLoc;
    if (!expectIdent(m->name, nameLoc, "after `model`") || !parseBody(m->body, m->endLoc))
      return false;
    file.model = std::move(m);
    return true;
  }

  static std::string str(SrcLoc l) {
    return std::to_string(l.line) + ":" + std::to_string(l.col);
  }

  /// '{' statement* '}'; `end` receives the location of the closing brace.
  bool parseBody(Body &body, SrcLoc &end) {
    skipNewlines(); // allows the opening brace on its own line
    SrcLoc open = cur().loc;
    if (!expect(Tok::LBrace, "to open a block body"))
      return false;
    Nest nest(*this, open);
    if (!nest.ok)
      return false;
    skipNewlines();
    while (!at(Tok::RBrace)) {
      if (at(Tok::Eof))
        return fail(cur(), "expected '}' to close the body opened at " + str(open)), false;
      StmtPtr s = parseStmt();
      if (!s)
        return false;
      body.push_back(std::move(s));
    }
    end = take().loc;
    return true;
  }

  StmtPtr parseStmt() {
    auto s = std::make_unique<Stmt>();
    s->loc = cur().loc;
    if (isKeyword("param")) {
      take();
      s->kind = StmtKind::Param;
      if (!expectIdent(s->name, s->nameLoc, "after `param`") ||
          !expect(Tok::Colon, "after the parameter name, as in `param w: [dim, dim] = zeros`"))
        return nullptr;
      if (!at(Tok::LBracket))
        return fail(cur(), "expected '[' and the parameter's shape"), nullptr;
      if (!(s->shape = parsePrimary()) ||
          !expect(Tok::Assign, "and an initializer after the parameter's shape"))
        return nullptr;
      if (!(s->value = parseExpr()))
        return nullptr;
      // Flags are contextual words after the initializer, so they reserve no names.
      while (at(Tok::Ident)) {
        const Token &f = cur();
        if (f.text != "frozen" && f.text != "no_decay" && f.text != "decay")
          return fail(f, "expected the end of the statement or a parameter flag (frozen, "
                         "no_decay, decay)"),
                 nullptr;
        s->flags.emplace_back(f.text, f.loc);
        take();
      }
    } else if (isKeyword("for")) {
      take();
      s->kind = StmtKind::For;
      SrcLoc end;
      if (!expectIdent(s->name, s->nameLoc, "for the loop variable"))
        return nullptr;
      if (!isKeyword("in"))
        return fail(cur(), "expected `in` after the loop variable"), nullptr;
      take();
      if (!(s->value = parseExpr()) ||
          !expect(Tok::DotDot, "in the loop range, as in `for h in 0..layers`") ||
          !(s->shape = parseExpr()) || !parseBody(s->body, end))
        return nullptr;
    } else if (isKeyword("if")) {
      return parseIf();
    } else if (isKeyword("return")) {
      take();
      s->kind = StmtKind::Return;
      if (!(s->value = parseExpr()))
        return nullptr;
    } else if (at(Tok::Ident) && peekTok().kind == Tok::Assign) {
      s->kind = StmtKind::Assign;
      s->nameLoc = cur().loc;
      s->name = take().text;
      take();
      if (!(s->value = parseExpr()))
        return nullptr;
    } else {
      s->kind = StmtKind::ExprStmt;
      if (!(s->value = parseExpr()))
        return nullptr;
    }
    if (s->kind != StmtKind::For && !endOfStatement())
      return nullptr;
    skipNewlines();
    return s;
  }

  StmtPtr parseIf() {
    auto s = std::make_unique<Stmt>();
    s->kind = StmtKind::If;
    s->loc = take().loc;
    SrcLoc end;
    if (!(s->value = parseExpr()) || !parseBody(s->body, end))
      return nullptr;
    // `else` may start the next line; anything else there is the next statement.
    size_t afterBody = pos;
    skipNewlines();
    if (!isKeyword("else"))
      pos = afterBody;
    if (isKeyword("else")) {
      take();
      if (isKeyword("if")) {
        Nest nest(*this, cur().loc);
        if (!nest.ok)
          return nullptr;
        StmtPtr inner = parseIf();
        if (!inner)
          return nullptr;
        s->elseBody.push_back(std::move(inner));
        return s;
      }
      if (!parseBody(s->elseBody, end))
        return nullptr;
    }
    skipNewlines();
    return s;
  }

  // Precedence, loosest first: comparison, + -, * / // % @, unary -, postfix.
  ExprPtr parseExpr() {
    Nest nest(*this, cur().loc);
    if (!nest.ok)
      return nullptr;
    ExprPtr lhs = parseAdditive();
    if (!lhs)
      return nullptr;
    Tok k = cur().kind;
    if (k == Tok::Lt || k == Tok::Le || k == Tok::Gt || k == Tok::Ge || k == Tok::EqEq ||
        k == Tok::Ne) {
      const Token &op = take();
      ExprPtr rhs = parseAdditive();
      if (!rhs)
        return nullptr;
      lhs = binary(op, std::move(lhs), std::move(rhs));
    }
    return lhs;
  }

  ExprPtr binary(const Token &op, ExprPtr lhs, ExprPtr rhs) {
    auto e = std::make_unique<Expr>();
    e->kind = ExprKind::Binary;
    e->loc = op.loc;
    e->op = op.kind;
    e->lhs = std::move(lhs);
    e->rhs = std::move(rhs);
    return checkHeight(std::move(e));
  }

  /// Long operator chains and postfix chains build deep trees without deep
  /// parser recursion; bounding the tree height keeps Sema and the tree's
  /// destructor from recursing without limit.
  ExprPtr checkHeight(ExprPtr e) {
    uint32_t h = 0;
    auto see = [&](const ExprPtr &c) {
      if (c)
        h = std::max(h, c->height);
    };
    see(e->lhs);
    see(e->rhs);
    for (auto &a : e->args)
      see(a);
    for (auto &k : e->kwargs)
      see(k.value);
    for (auto &i : e->items) {
      see(i.single);
      see(i.lo);
      see(i.hi);
      see(i.step);
    }
    e->height = h + 1;
    if (e->height > uint32_t(kMaxNesting)) {
      diag.error(e->loc, "nesting is too deep, expressions and blocks may nest at most " +
                             std::to_string(kMaxNesting) + " levels");
      return nullptr;
    }
    return e;
  }

  ExprPtr parseAdditive() {
    ExprPtr lhs = parseMultiplicative();
    while (lhs && (at(Tok::Plus) || at(Tok::Minus))) {
      const Token &op = take();
      ExprPtr rhs = parseMultiplicative();
      if (!rhs)
        return nullptr;
      lhs = binary(op, std::move(lhs), std::move(rhs));
    }
    return lhs;
  }

  ExprPtr parseMultiplicative() {
    ExprPtr lhs = parseUnary();
    while (lhs && (at(Tok::Star) || at(Tok::Slash) || at(Tok::SlashSlash) ||
                   at(Tok::Percent) || at(Tok::At))) {
      const Token &op = take();
      ExprPtr rhs = parseUnary();
      if (!rhs)
        return nullptr;
      lhs = binary(op, std::move(lhs), std::move(rhs));
    }
    return lhs;
  }

  ExprPtr parseUnary() {
    if (!at(Tok::Minus))
      return parsePostfix();
    Nest nest(*this, cur().loc);
    if (!nest.ok)
      return nullptr;
    auto e = std::make_unique<Expr>();
    e->kind = ExprKind::Unary;
    e->op = Tok::Minus;
    e->loc = take().loc;
    if (!(e->lhs = parseUnary()))
      return nullptr;
    return checkHeight(std::move(e));
  }

  ExprPtr parsePostfix() {
    ExprPtr e = parsePrimary();
    while (e) {
      if (at(Tok::LParen)) {
        if (e->kind != ExprKind::Name)
          return fail(cur(), "only a function or block name can be called"), nullptr;
        if ((e = parseCall(std::move(e))))
          e = checkHeight(std::move(e));
      } else if (at(Tok::LBracket)) {
        if ((e = parseIndex(std::move(e))))
          e = checkHeight(std::move(e));
      } else if (at(Tok::Dot)) {
        take();
        auto m = std::make_unique<Expr>();
        m->kind = ExprKind::Member;
        if (!expectIdent(m->text, m->loc, "after '.' (such as .shape or .T)"))
          return nullptr;
        m->lhs = std::move(e);
        e = checkHeight(std::move(m));
      } else if (isKeyword("as")) {
        if (e->kind != ExprKind::Call || !e->instance.empty())
          return fail(cur(), "only a block call can be named with `as`"), nullptr;
        take();
        if (!expectIdent(e->instance, e->instanceLoc, "after `as` (the instance name)"))
          return nullptr;
      } else {
        break;
      }
    }
    return e;
  }

  ExprPtr parseCall(ExprPtr callee) {
    SrcLoc open = take().loc;
    auto c = std::make_unique<Expr>();
    c->kind = ExprKind::Call;
    c->loc = callee->loc;
    c->text = callee->text;
    while (!at(Tok::RParen)) {
      if (at(Tok::Ident) && peekTok().kind == Tok::Assign) {
        KeywordArg kw;
        kw.loc = cur().loc;
        kw.name = take().text;
        take();
        if (!(kw.value = parseExpr()))
          return nullptr;
        c->kwargs.push_back(std::move(kw));
      } else {
        if (!c->kwargs.empty())
          return fail(cur(), "positional arguments must come before keyword arguments"), nullptr;
        ExprPtr a = parseExpr();
        if (!a)
          return nullptr;
        c->args.push_back(std::move(a));
      }
      if (!at(Tok::Comma))
        break;
      take();
    }
    if (!expect(Tok::RParen, "to close the call of '" + c->text + "' opened at " + str(open)))
      return nullptr;
    return c;
  }

  ExprPtr parseIndex(ExprPtr base) {
    SrcLoc open = take().loc;
    auto e = std::make_unique<Expr>();
    e->kind = ExprKind::Index;
    e->loc = open;
    e->lhs = std::move(base);
    while (true) {
      IndexItem item;
      item.loc = cur().loc;
      if (!at(Tok::Colon) && !(item.single = parseExpr()))
        return nullptr;
      if (at(Tok::Colon)) {
        take();
        item.isRange = true;
        item.lo = std::move(item.single);
        if (!at(Tok::Colon) && !at(Tok::Comma) && !at(Tok::RBracket) && !(item.hi = parseExpr()))
          return nullptr;
        if (at(Tok::Colon)) {
          take();
          if (!(item.step = parseExpr()))
            return nullptr;
        }
      }
      e->items.push_back(std::move(item));
      if (!at(Tok::Comma))
        break;
      take();
    }
    if (!expect(Tok::RBracket, "to close the subscript opened at " + str(open)))
      return nullptr;
    return e;
  }

  ExprPtr parsePrimary() {
    auto e = std::make_unique<Expr>();
    const Token &t = cur();
    e->loc = t.loc;
    switch (t.kind) {
    case Tok::Int:
      e->kind = ExprKind::Int;
      e->intValue = take().intValue;
      return e;
    case Tok::Float:
      e->kind = ExprKind::Float;
      e->floatValue = take().floatValue;
      return e;
    case Tok::String:
      e->kind = ExprKind::String;
      e->text = take().text;
      return e;
    case Tok::Ident:
      e->kind = ExprKind::Name;
      e->text = take().text;
      return e;
    case Tok::Keyword:
      if (t.text == "true" || t.text == "false") {
        e->kind = ExprKind::Bool;
        e->boolValue = take().text == "true";
        return e;
      }
      break;
    case Tok::LParen: {
      take();
      ExprPtr inner = parseExpr();
      if (!inner || !expect(Tok::RParen, "to close the '(' at " + str(t.loc)))
        return nullptr;
      return inner;
    }
    case Tok::LBracket: {
      Nest nest(*this, t.loc);
      if (!nest.ok)
        return nullptr;
      take();
      e->kind = ExprKind::List;
      while (!at(Tok::RBracket)) {
        ExprPtr a = parseExpr();
        if (!a)
          return nullptr;
        e->args.push_back(std::move(a));
        if (!at(Tok::Comma))
          break;
        take();
      }
      if (!expect(Tok::RBracket, "to close the list opened at " + str(t.loc)))
        return nullptr;
      return checkHeight(std::move(e));
    }
    default:
      break;
    }
    fail(t, "expected an expression");
    return nullptr;
  }
};

} // namespace

std::unique_ptr<File> parse(const std::vector<Token> &tokens, Diag &diag) {
  return Parser(tokens, diag).parseFile();
}

} // namespace lcc::dsl
