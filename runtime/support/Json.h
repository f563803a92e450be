//===- Json.h - a small JSON value, parser and serializer -------*- C++ -*-===//
//
// JSON for train.bin's plan/config sections and checkpoint metadata. Part of
// the runtime, so no MLIR/LLVM (llvm::json is not available to lcc-run) and
// no exceptions: parse and the typed accessors return a Status with a
// one-line message.
//
// Choices that callers rely on:
// - Numbers keep the double and, when the text was an integer (no fraction,
//   no exponent) that fits in int64, the exact int64 too. Seeds and byte
//   offsets above 2^53 therefore round-trip exactly; an integer outside the
//   int64 range is kept as the nearest double only. "-0" is a double (-0.0),
//   so its sign survives.
// - serialize writes exact integers as integers and doubles with the
//   shortest text that reads back to the same bits; an integral double gets
//   a ".0" ("1.0", "-0.0") so it reads back as a double, not an int. NaN and
//   infinities have no JSON spelling and are written as null.
// - Objects keep insertion order (a vector of pairs): files are
//   byte-for-byte reproducible and diffs stay readable. Lookups are linear,
//   which is fine for the small objects of plans and metadata.
// - parse is strict RFC 8259 and rejects duplicate keys (which value would
//   win is otherwise unspecified), nesting deeper than kMaxDepth (so hostile
//   input cannot exhaust the stack) and numbers beyond the double range.
//   Bytes >= 0x80 in strings are passed through unvalidated: strings are
//   opaque names/paths to lcc, and whatever a caller stores must round-trip.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_JSON_H
#define LCC_RUNTIME_JSON_H

#include "runtime/support/Status.h"

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lcc {
namespace json {

/// Deepest nesting of arrays/objects parse accepts (the top-level container
/// is depth 1).
constexpr int kMaxDepth = 256;

enum class Kind { Null, Bool, Number, String, Array, Object };

/// "null", "a boolean", "a number", "a string", "an array", "an object": the
/// wording of error messages ("..., got an array").
const char *kindName(Kind kind);

class Value {
public:
  using Member = std::pair<std::string, Value>;

  Value() = default; // null
  Value(std::nullptr_t) {}
  Value(bool b) : kind_(Kind::Bool), bool_(b) {}
  // One constructor per integer type so that every integer literal and
  // size_t picks an exact overload instead of being ambiguous with double.
  Value(int i) : Value(static_cast<long long>(i)) {}
  Value(long i) : Value(static_cast<long long>(i)) {}
  Value(long long i);
  Value(unsigned u) : Value(static_cast<long long>(u)) {}
  /// Exact when u <= INT64_MAX; larger values become the nearest double
  /// (isInt() is false), as parse does for such numbers.
  Value(unsigned long u) : Value(static_cast<unsigned long long>(u)) {}
  Value(unsigned long long u);
  Value(double d);
  Value(const char *s);
  Value(char *s) : Value(static_cast<const char *>(s)) {}
  Value(std::string s) : kind_(Kind::String), string_(std::move(s)) {}
  Value(std::string_view s) : kind_(Kind::String), string_(s) {}
  /// Any other pointer would otherwise silently convert to bool.
  template <typename T> Value(T *) = delete;

  static Value array(std::initializer_list<Value> items = {});
  /// Members in the given order; a repeated key replaces the earlier value.
  static Value object(std::initializer_list<Member> members = {});

  Kind kind() const { return kind_; }
  bool isNull() const { return kind_ == Kind::Null; }
  bool isBool() const { return kind_ == Kind::Bool; }
  bool isNumber() const { return kind_ == Kind::Number; }
  /// A number that is an exact int64 (asInt() is its value).
  bool isInt() const { return kind_ == Kind::Number && hasInt_; }
  bool isString() const { return kind_ == Kind::String; }
  bool isArray() const { return kind_ == Kind::Array; }
  bool isObject() const { return kind_ == Kind::Object; }

  // The as* accessors require the matching kind (asserted); with assertions
  // off a mismatch returns false / 0 / an empty string / an empty list.
  bool asBool() const;
  int64_t asInt() const;    // requires isInt()
  double asDouble() const;  // any number; an int converts to the nearest double
  const std::string &asString() const;
  const std::vector<Value> &items() const;   // array elements
  std::vector<Value> &items();
  const std::vector<Member> &members() const; // object members in order
  std::vector<Member> &members();

  /// Array elements or object members; 0 for other kinds.
  size_t size() const;
  /// Array element `i` (requires isArray() and i < size()).
  const Value &operator[](size_t i) const;
  Value &operator[](size_t i);
  /// Appends to an array (requires isArray()).
  void push(Value v);

  /// The value of `key` in an object, or nullptr when absent or when this is
  /// not an object.
  const Value *get(std::string_view key) const;
  Value *get(std::string_view key);
  /// Replaces the value of `key`, keeping its position, or appends it
  /// (requires isObject()).
  void set(std::string_view key, Value v);

  /// Structural equality. Object member order matters (it is part of the
  /// serialized form). Numbers are equal when both are exact ints with the
  /// same value, or both are non-ints with the same bits (so -0.0 != 0.0):
  /// this is what "round-trips exactly" means in the tests.
  friend bool operator==(const Value &a, const Value &b);
  friend bool operator!=(const Value &a, const Value &b) { return !(a == b); }

private:
  Kind kind_ = Kind::Null;
  bool bool_ = false;
  bool hasInt_ = false;
  int64_t int_ = 0;
  double double_ = 0;
  std::string string_;
  std::vector<Value> items_;
  std::vector<Member> members_;
};

/// Parses one JSON text (optionally surrounded by whitespace). On failure
/// sets `out` to null; the message is one line "line L, column C: <what was
/// expected>" (1-based; the column counts bytes).
Status parse(std::string_view text, Value &out);

/// JSON text of `value`: compact when indent < 0, otherwise one member or
/// element per line indented by `indent` spaces per level, with ": " after
/// keys. No trailing newline. Non-finite doubles are written as null (JSON
/// has no spelling for them). Recursion is unbounded: values deeper than
/// kMaxDepth can be built in code but not parsed back.
std::string serialize(const Value &value, int indent = -1);

/// `s` as a JSON string literal, quotes included.
std::string quote(std::string_view s);

namespace detail {
/// `s` quoted for an error message ('key'): one line, at most 64 bytes, control
/// bytes as \xNN. Shared by the parser and the typed accessors (JsonGet.cpp).
std::string forMessage(std::string_view s);
} // namespace detail

// Typed accessors for schema checks: look up `key` in `object`, check its
// kind and copy it out. On failure the message is e.g.
// "missing key 'shape'" or "key 'shape' must be an array, got a string";
// `object` not being an object is reported the same way ("expected an
// object with key 'shape', got null"). Callers prefix the context
// ("plan: step 3: ").
Status getInt(const Value &object, const char *key, int64_t &out);
/// Any number, exact ints converted to double.
Status getDouble(const Value &object, const char *key, double &out);
Status getBool(const Value &object, const char *key, bool &out);
Status getString(const Value &object, const char *key, std::string &out);
/// `out` points into `object` (valid while it lives unchanged).
Status getArray(const Value &object, const char *key, const Value *&out);
Status getObject(const Value &object, const char *key, const Value *&out);

} // namespace json
} // namespace lcc

#endif // LCC_RUNTIME_JSON_H
