//===- Json.cpp - a small JSON value, parser and serializer ---------------===//
//
// A recursive-descent parser over a string_view with an explicit depth bound.
// Every read checks the index against the size, so truncated or mutated
// input ends in an error, never an out-of-bounds read. Numbers go through
// std::from_chars/std::to_chars rather than strtod/printf: those are exact
// and locale-independent (a process that called setlocale(LC_ALL, "") with a
// German locale would otherwise read and write "0,5").
//
//===----------------------------------------------------------------------===//
#include "runtime/support/Json.h"

#include <cassert>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_set>

namespace lcc {
namespace json {

const char *kindName(Kind kind) {
  static const char *const kNames[] = {"null",     "a boolean", "a number",
                                       "a string", "an array",  "an object"};
  return kNames[static_cast<int>(kind)];
}

//===----------------------------------------------------------------------===//
// Value
//===----------------------------------------------------------------------===//

Value::Value(long long i)
    : kind_(Kind::Number), hasInt_(true), int_(i), double_(static_cast<double>(i)) {}

Value::Value(unsigned long long u) : kind_(Kind::Number), double_(static_cast<double>(u)) {
  if (u <= static_cast<unsigned long long>(std::numeric_limits<int64_t>::max())) {
    hasInt_ = true;
    int_ = static_cast<int64_t>(u);
  }
}

Value::Value(double d) : kind_(Kind::Number), double_(d) {}

Value::Value(const char *s) : kind_(Kind::String), string_(s ? s : "") {}

Value Value::array(std::initializer_list<Value> items) {
  Value v;
  v.kind_ = Kind::Array;
  v.items_.assign(items.begin(), items.end());
  return v;
}

Value Value::object(std::initializer_list<Member> members) {
  Value v;
  v.kind_ = Kind::Object;
  for (const Member &m : members)
    v.set(m.first, m.second);
  return v;
}

// The fallbacks below are only reached with assertions off; they keep a
// misuse from being undefined behaviour.
namespace {
const std::string kEmptyString;
const std::vector<Value> kEmptyItems;
const std::vector<Value::Member> kEmptyMembers;
} // namespace

bool Value::asBool() const {
  assert(isBool());
  return isBool() && bool_;
}

int64_t Value::asInt() const {
  assert(isInt());
  return isInt() ? int_ : 0;
}

double Value::asDouble() const {
  assert(isNumber());
  return isNumber() ? double_ : 0.0;
}

const std::string &Value::asString() const {
  assert(isString());
  return isString() ? string_ : kEmptyString;
}

const std::vector<Value> &Value::items() const {
  assert(isArray());
  return isArray() ? items_ : kEmptyItems;
}

std::vector<Value> &Value::items() {
  assert(isArray());
  return items_; // empty unless an array
}

const std::vector<Value::Member> &Value::members() const {
  assert(isObject());
  return isObject() ? members_ : kEmptyMembers;
}

std::vector<Value::Member> &Value::members() {
  assert(isObject());
  return members_; // empty unless an object
}

size_t Value::size() const {
  if (isArray())
    return items_.size();
  if (isObject())
    return members_.size();
  return 0;
}

const Value &Value::operator[](size_t i) const {
  assert(isArray() && i < items_.size());
  return items_[i];
}

Value &Value::operator[](size_t i) {
  assert(isArray() && i < items_.size());
  return items_[i];
}

void Value::push(Value v) {
  assert(isArray());
  if (isArray())
    items_.push_back(std::move(v));
}

const Value *Value::get(std::string_view key) const {
  if (!isObject())
    return nullptr;
  for (const Member &m : members_)
    if (m.first == key)
      return &m.second;
  return nullptr;
}

Value *Value::get(std::string_view key) {
  return const_cast<Value *>(static_cast<const Value *>(this)->get(key));
}

void Value::set(std::string_view key, Value v) {
  assert(isObject());
  if (!isObject())
    return;
  if (Value *existing = get(key)) {
    *existing = std::move(v);
    return;
  }
  members_.emplace_back(std::string(key), std::move(v));
}

bool operator==(const Value &a, const Value &b) {
  if (a.kind_ != b.kind_)
    return false;
  switch (a.kind_) {
  case Kind::Null:
    return true;
  case Kind::Bool:
    return a.bool_ == b.bool_;
  case Kind::Number:
    if (a.hasInt_ != b.hasInt_)
      return false;
    if (a.hasInt_)
      return a.int_ == b.int_;
    return std::memcmp(&a.double_, &b.double_, sizeof(double)) == 0;
  case Kind::String:
    return a.string_ == b.string_;
  case Kind::Array:
    return a.items_ == b.items_;
  case Kind::Object:
    return a.members_ == b.members_;
  }
  return false;
}

//===----------------------------------------------------------------------===//
// Serializer
//===----------------------------------------------------------------------===//

namespace {

const char kHex[] = "0123456789ABCDEF";

void appendHexByte(std::string &out, unsigned char c) {
  out += kHex[c >> 4];
  out += kHex[c & 15];
}

void appendQuoted(std::string &out, std::string_view s) {
  out += '"';
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    // The two characters JSON requires escaped, and the short forms of the
    // common control characters; other control bytes as \u00XX.
    const char *escape = c == '"'    ? "\\\""
                         : c == '\\' ? "\\\\"
                         : c == '\b'  ? "\\b"
                         : c == '\f'  ? "\\f"
                         : c == '\n'  ? "\\n"
                         : c == '\r'  ? "\\r"
                         : c == '\t'  ? "\\t"
                                      : nullptr;
    if (escape) {
      out += escape;
    } else if (c < 0x20) {
      out += "\\u00";
      appendHexByte(out, c);
    } else {
      out += ch; // including bytes >= 0x80, passed through (see Json.h)
    }
  }
  out += '"';
}

void appendNumber(std::string &out, const Value &v) {
  char buf[64];
  if (v.isInt()) {
    std::to_chars_result r = std::to_chars(buf, buf + sizeof buf, v.asInt());
    out.append(buf, r.ptr);
    return;
  }
  double d = v.asDouble();
  if (!std::isfinite(d)) {
    out += "null";
    return;
  }
  // The shortest digits that read back to the same bits (std::to_chars
  // without a precision guarantees this), in fixed or exponent form,
  // whichever is shorter: the "%.17g, then fewer digits while strtod
  // agrees" search, without its locale dependence and without its "1e+02"
  // for 100.
  std::to_chars_result r = std::to_chars(buf, buf + sizeof buf, d);
  std::string_view text(buf, static_cast<size_t>(r.ptr - buf));
  out += text;
  // Without '.' or 'e' the text would read back as an int (and "-0" as 0).
  if (text.find_first_of(".e") == std::string_view::npos)
    out += ".0";
}

void appendNewline(std::string &out, int indent, int level) {
  out += '\n';
  out.append(static_cast<size_t>(indent) * static_cast<size_t>(level), ' ');
}

void write(std::string &out, const Value &v, int indent, int level) {
  switch (v.kind()) {
  case Kind::Null:
    out += "null";
    return;
  case Kind::Bool:
    out += v.asBool() ? "true" : "false";
    return;
  case Kind::Number:
    appendNumber(out, v);
    return;
  case Kind::String:
    appendQuoted(out, v.asString());
    return;
  case Kind::Array: {
    out += '[';
    const std::vector<Value> &items = v.items();
    for (size_t i = 0; i < items.size(); ++i) {
      if (i)
        out += ',';
      if (indent >= 0)
        appendNewline(out, indent, level + 1);
      write(out, items[i], indent, level + 1);
    }
    if (indent >= 0 && !items.empty())
      appendNewline(out, indent, level);
    out += ']';
    return;
  }
  case Kind::Object: {
    out += '{';
    const std::vector<Value::Member> &members = v.members();
    for (size_t i = 0; i < members.size(); ++i) {
      if (i)
        out += ',';
      if (indent >= 0)
        appendNewline(out, indent, level + 1);
      appendQuoted(out, members[i].first);
      out += indent >= 0 ? ": " : ":";
      write(out, members[i].second, indent, level + 1);
    }
    if (indent >= 0 && !members.empty())
      appendNewline(out, indent, level);
    out += '}';
    return;
  }
  }
}


} // namespace

std::string quote(std::string_view s) {
  std::string out;
  appendQuoted(out, s);
  return out;
}

std::string serialize(const Value &value, int indent) {
  std::string out;
  write(out, value, indent, 0);
  return out;
}

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

namespace {

bool isDigit(char c) { return c >= '0' && c <= '9'; }

int hexValue(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

void appendUtf8(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Parser {
public:
  Parser(std::string_view text, std::string &error) : s(text), error(error) {}

  bool parseDocument(Value &out) {
    if (!parseValue(out, 0))
      return false;
    skipSpace();
    if (i < s.size())
      return fail(i, "expected the end of the input after the top-level value, found " +
                         found(i));
    return true;
  }

private:
  std::string_view s;
  size_t i = 0;
  std::string &error;

  /// Sets the error at byte `pos`; returns false for `return fail(...)`.
  bool fail(size_t pos, const std::string &what) {
    // Computed only on failure, so the happy path does not track lines.
    size_t line = 1, column = 1;
    for (size_t k = 0; k < pos && k < s.size(); ++k) {
      if (s[k] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    error = "line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + what;
    return false;
  }

  /// What is at `pos`, for "found ..." in messages.
  std::string found(size_t pos) const {
    if (pos >= s.size())
      return "the end of the input";
    unsigned char c = static_cast<unsigned char>(s[pos]);
    if (c >= 0x20 && c < 0x7F)
      return std::string("'") + static_cast<char>(c) + "'";
    std::string out = "byte 0x";
    appendHexByte(out, c);
    return out;
  }

  void skipSpace() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
      ++i;
  }

  bool peek(char c) const { return i < s.size() && s[i] == c; }

  /// `depth` is the number of containers around this value.
  bool parseValue(Value &out, int depth) {
    skipSpace();
    if (i >= s.size())
      return fail(i, "expected a value, found the end of the input");
    char c = s[i];
    if (c == '{' || c == '[') {
      if (depth >= kMaxDepth)
        return fail(i, "nesting deeper than " + std::to_string(kMaxDepth) + " levels");
      return c == '{' ? parseObject(out, depth + 1) : parseArray(out, depth + 1);
    }
    if (c == '"') {
      std::string str;
      if (!parseString(str))
        return false;
      out = Value(std::move(str));
      return true;
    }
    if (c == '-' || isDigit(c))
      return parseNumber(out);
    if (c == 't' || c == 'f' || c == 'n')
      return parseLiteral(out);
    return fail(i, "expected a value, found " + found(i));
  }

  bool parseLiteral(Value &out) {
    std::string_view rest = s.substr(i);
    if (rest.substr(0, 4) == "true") {
      out = Value(true);
      i += 4;
    } else if (rest.substr(0, 5) == "false") {
      out = Value(false);
      i += 5;
    } else if (rest.substr(0, 4) == "null") {
      out = Value();
      i += 4;
    } else {
      return fail(i, "invalid literal: expected true, false or null");
    }
    return true;
  }

  bool parseArray(Value &out, int depth) {
    out = Value::array();
    ++i; // '['
    skipSpace();
    if (peek(']')) {
      ++i;
      return true;
    }
    std::vector<Value> &items = out.items();
    for (;;) {
      items.emplace_back();
      if (!parseValue(items.back(), depth))
        return false;
      skipSpace();
      if (peek(',')) {
        ++i;
        skipSpace();
        if (peek(']'))
          return fail(i, "expected a value after ',', found ']'");
        continue;
      }
      if (peek(']')) {
        ++i;
        return true;
      }
      return fail(i, "expected ',' or ']' after an array element, found " + found(i));
    }
  }

  bool parseObject(Value &out, int depth) {
    out = Value::object();
    ++i; // '{'
    skipSpace();
    if (peek('}')) {
      ++i;
      return true;
    }
    std::vector<Value::Member> &members = out.members();
    // Duplicate check: a linear scan while the object is small, a hash set
    // of the keys once it is large (a hostile file could otherwise make it
    // quadratic).
    constexpr size_t kLinearLimit = 32;
    std::unordered_set<std::string> seen;
    bool afterComma = false;
    for (;;) {
      skipSpace();
      if (!peek('"'))
        return fail(i, std::string("expected a string key") + (afterComma ? " after ','" : "") +
                           ", found " + found(i));
      size_t keyPos = i;
      std::string key;
      if (!parseString(key))
        return false;
      bool duplicate = false;
      if (members.size() < kLinearLimit) {
        for (const Value::Member &m : members)
          duplicate |= m.first == key;
      } else {
        if (seen.empty())
          for (const Value::Member &m : members)
            seen.insert(m.first);
        duplicate = !seen.insert(key).second;
      }
      if (duplicate)
        return fail(keyPos, "duplicate key " + detail::forMessage(key));
      skipSpace();
      if (!peek(':'))
        return fail(i, "expected ':' after key " + detail::forMessage(key) + ", found " + found(i));
      ++i;
      members.emplace_back(std::move(key), Value());
      if (!parseValue(members.back().second, depth))
        return false;
      skipSpace();
      if (peek(',')) {
        ++i;
        afterComma = true;
        continue;
      }
      if (peek('}')) {
        ++i;
        return true;
      }
      return fail(i, "expected ',' or '}' after an object member, found " + found(i));
    }
  }

  /// Four hex digits at `pos`, or -1.
  int32_t hex4(size_t pos) const {
    if (pos + 4 > s.size())
      return -1;
    int32_t v = 0;
    for (size_t k = 0; k < 4; ++k) {
      int h = hexValue(s[pos + k]);
      if (h < 0)
        return -1;
      v = v * 16 + h;
    }
    return v;
  }

  static std::string uEscape(uint32_t cp) {
    std::string out = "\\u";
    for (int shift = 12; shift >= 0; shift -= 4)
      out += kHex[(cp >> shift) & 15];
    return out;
  }

  /// A string starting at the '"' at `i`; decodes escapes into `out`.
  bool parseString(std::string &out) {
    size_t start = i;
    ++i;
    for (;;) {
      // Copy the run of plain bytes in one go.
      size_t run = i;
      while (run < s.size() && s[run] != '"' && s[run] != '\\' &&
             static_cast<unsigned char>(s[run]) >= 0x20)
        ++run;
      out.append(s.data() + i, run - i);
      i = run;
      if (i >= s.size())
        return fail(start, "unterminated string (no closing '\"')");
      unsigned char c = static_cast<unsigned char>(s[i]);
      if (c == '"') {
        ++i;
        return true;
      }
      if (c < 0x20)
        return fail(i, "unescaped control character " + uEscape(c) +
                           " in string (write it as an escape)");
      // A backslash.
      if (i + 1 >= s.size())
        return fail(start, "unterminated string (no closing '\"')");
      char e = s[i + 1];
      // The one-character escapes: \" \\ \/ \b \f \n \r \t.
      static const char kEscaped[] = "\"\\/bfnrt", kDecoded[] = "\"\\/\b\f\n\r\t";
      if (const char *hit = e ? std::strchr(kEscaped, e) : nullptr) {
        out += kDecoded[hit - kEscaped];
        i += 2;
        continue;
      }
      if (e != 'u') {
        if (static_cast<unsigned char>(e) >= 0x20 && static_cast<unsigned char>(e) < 0x7F)
          return fail(i, std::string("invalid escape '\\") + e + "' in string");
        return fail(i, "invalid escape: '\\' followed by " + found(i + 1));
      }
      int32_t cp = hex4(i + 2);
      if (cp < 0)
        return fail(i, "invalid \\u escape: expected 4 hex digits");
      if (cp >= 0xDC00 && cp <= 0xDFFF)
        return fail(i, "lone surrogate " + uEscape(cp) +
                           " (a low surrogate must follow a high surrogate)");
      if (cp < 0xD800 || cp > 0xDBFF) {
        appendUtf8(out, static_cast<uint32_t>(cp));
        i += 6;
        continue;
      }
      // Characters above U+FFFF are written as a surrogate pair; half of one
      // has no UTF-8 encoding, so it is an error, not a byte pattern.
      int32_t low = i + 7 < s.size() && s[i + 6] == '\\' && s[i + 7] == 'u' ? hex4(i + 8) : -1;
      if (low < 0xDC00 || low > 0xDFFF)
        return fail(i, "lone surrogate " + uEscape(cp) +
                           " (a high surrogate must be followed by a low surrogate "
                           "\\uDC00-\\uDFFF)");
      appendUtf8(out, 0x10000 + ((static_cast<uint32_t>(cp) - 0xD800) << 10) +
                          (static_cast<uint32_t>(low) - 0xDC00));
      i += 12;
    }
  }

  bool parseNumber(Value &out) {
    size_t start = i;
    bool negative = peek('-');
    if (negative)
      ++i;
    if (i >= s.size() || !isDigit(s[i]))
      return fail(i, "expected a digit after '-', found " + found(i));
    size_t intBegin = i;
    if (s[i] == '0') {
      ++i;
      if (i < s.size() && isDigit(s[i]))
        return fail(start, "leading zeros are not allowed in numbers");
    } else {
      while (i < s.size() && isDigit(s[i]))
        ++i;
    }
    size_t intEnd = i, fracBegin = i, fracEnd = i;
    bool integer = true;
    if (peek('.')) {
      integer = false;
      ++i;
      fracBegin = i;
      if (i >= s.size() || !isDigit(s[i]))
        return fail(i, "expected a digit after '.', found " + found(i));
      while (i < s.size() && isDigit(s[i]))
        ++i;
      fracEnd = i;
    }
    long exponent = 0; // clamped: only its sign and rough size matter below
    if (peek('e') || peek('E')) {
      integer = false;
      ++i;
      bool expNegative = false;
      if (peek('+') || peek('-'))
        expNegative = s[i++] == '-';
      if (i >= s.size() || !isDigit(s[i]))
        return fail(i, "expected a digit in the exponent, found " + found(i));
      while (i < s.size() && isDigit(s[i])) {
        if (exponent < 1000000)
          exponent = exponent * 10 + (s[i] - '0');
        ++i;
      }
      if (expNegative)
        exponent = -exponent;
    }
    const char *first = s.data() + start, *last = s.data() + i;

    if (integer && !(negative && intEnd - intBegin == 1 && s[intBegin] == '0')) {
      int64_t v = 0;
      std::from_chars_result r = std::from_chars(first, last, v);
      if (r.ec == std::errc() && r.ptr == last) {
        out = Value(static_cast<long long>(v));
        return true;
      }
      // Out of the int64 range: fall through to the nearest double.
    }
    double d = 0;
    std::from_chars_result r = std::from_chars(first, last, d);
    if (r.ec == std::errc::result_out_of_range) {
      // from_chars reports both overflow and underflow this way. Underflow
      // reads as zero (as strtod would); overflow has no double, and JSON
      // has no infinity, so it is an error. The decimal exponent of the
      // leading significant digit tells them apart.
      long magnitude = exponent;
      size_t k = intBegin;
      while (k < intEnd && s[k] == '0')
        ++k;
      if (k < intEnd) {
        magnitude += static_cast<long>(intEnd - k) - 1;
      } else {
        k = fracBegin;
        while (k < fracEnd && s[k] == '0')
          ++k;
        magnitude -= static_cast<long>(k - fracBegin) + 1;
      }
      if (magnitude > 0)
        return fail(start, "number out of the range of a double");
      d = negative ? -0.0 : 0.0;
    } else if (r.ec != std::errc() || r.ptr != last) {
      return fail(start, "invalid number"); // unreachable: the grammar was checked
    }
    out = Value(d);
    return true;
  }
};

} // namespace

Status parse(std::string_view text, Value &out) {
  std::string error;
  Parser parser(text, error);
  Value result;
  if (!parser.parseDocument(result)) {
    out = Value();
    return Status::failure(error);
  }
  out = std::move(result);
  return {};
}

/// `s` quoted for an error message: one line, bounded length. Control bytes
/// become \xNN so a key with a newline cannot split the message.
std::string detail::forMessage(std::string_view s) {
  constexpr size_t kMax = 64;
  std::string out = "'";
  size_t i = 0;
  for (; i < s.size() && i < kMax; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F) {
      out += "\\x";
      appendHexByte(out, c);
    } else {
      out += s[i];
    }
  }
  if (i < s.size()) {
    // Do not cut a UTF-8 sequence in half: drop the start of a character
    // whose continuation bytes were cut (bytes >= 0x80 were copied 1:1).
    while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) {
      --i;
      out.pop_back();
    }
    out += "...";
  }
  out += "'";
  return out;
}

} // namespace json
} // namespace lcc
