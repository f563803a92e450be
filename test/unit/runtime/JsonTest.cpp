//===- JsonTest.cpp - the runtime JSON library ----------------------------===//
//
// Round trips (structural and bit-exact for numbers), escapes, every parse
// error with its exact message and position, the typed accessors' messages,
// and a deterministic fuzz loop of mutated documents that must each parse or
// fail cleanly.
//
//===----------------------------------------------------------------------===//
#include "runtime/support/Json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>

using namespace lcc;
using json::Value;

namespace {

Value parseOk(std::string_view text) {
  Value v;
  Status st = json::parse(text, v);
  EXPECT_TRUE(st) << text << ": " << st.message();
  return v;
}

std::string parseError(std::string_view text) {
  Value v = Value::array({1});
  Status st = json::parse(text, v);
  EXPECT_FALSE(st) << text;
  EXPECT_TRUE(v.isNull()) << "a failed parse must leave null";
  return st.message();
}

uint64_t bits(double d) {
  uint64_t b;
  std::memcpy(&b, &d, sizeof b);
  return b;
}

/// A document using every feature; the fuzz loop mutates it.
Value sampleDocument() {
  Value shapes = Value::array({Value::array({256, 64}), Value::array({}), Value::array({1})});
  Value tensor = Value::object({{"dtype", "F32"},
                                {"shape", Value::array({4, 32, 64})},
                                {"offset", int64_t(1) << 40},
                                {"scale", 0.02},
                                {"trainable", true},
                                {"note", nullptr}});
  return Value::object({{"model", "gpt_tiny"},
                        {"seed", std::numeric_limits<int64_t>::max()},
                        {"lr", 3e-4},
                        {"betas", Value::array({0.9, 0.999})},
                        {"name \"quoted\"\n", "tab\there, \xC3\xA9, \xF0\x9F\x98\x80, \x01"},
                        {"shapes", shapes},
                        {"tensor", tensor},
                        {"empty", Value::object()},
                        {"negative", -17},
                        {"tiny", 5e-324}});
}

TEST(Json, RoundTripsNestedDocuments) {
  Value doc = sampleDocument();
  for (int indent : {-1, 0, 2, 4}) {
    std::string text = json::serialize(doc, indent);
    EXPECT_EQ(parseOk(text), doc) << text;
    // Serializing is deterministic: the reparsed value prints the same.
    EXPECT_EQ(json::serialize(parseOk(text), indent), text);
  }
  // A document written by another tool (whitespace everywhere, members in
  // a non-sorted order) keeps its order and values.
  Value other = parseOk(" {\"z\" : [ 1 , 2.5 , { } , [ ] ] ,\r\n\t\"a\":{\"b\":null}} ");
  EXPECT_EQ(json::serialize(other), R"({"z":[1,2.5,{},[]],"a":{"b":null}})");
  EXPECT_EQ(parseOk(json::serialize(other, 2)), other);
  // Structural equality does notice differences.
  Value changed = doc;
  changed.get("tensor")->get("shape")->items()[1] = Value(33);
  EXPECT_NE(changed, doc);
  EXPECT_NE(Value(1), Value(1.0));
  EXPECT_NE(Value(0.0), Value(-0.0));
  EXPECT_NE(Value::object({{"a", 1}, {"b", 2}}), Value::object({{"b", 2}, {"a", 1}}));
}

TEST(Json, PrettyLayout) {
  Value v = Value::object({{"a", Value::array({1, "x"})}, {"b", Value::object()}, {"c", 1.5}});
  EXPECT_EQ(json::serialize(v), R"({"a":[1,"x"],"b":{},"c":1.5})");
  EXPECT_EQ(json::serialize(v, 2), "{\n"
                                   "  \"a\": [\n"
                                   "    1,\n"
                                   "    \"x\"\n"
                                   "  ],\n"
                                   "  \"b\": {},\n"
                                   "  \"c\": 1.5\n"
                                   "}");
}

TEST(Json, ObjectsKeepOrderAndSetReplacesInPlace) {
  Value o = Value::object();
  o.set("b", 1);
  o.set("a", "x");
  o.set("c", true);
  o.set("a", Value::array({1, 2}));
  ASSERT_EQ(o.size(), 3u);
  EXPECT_EQ(o.members()[0].first, "b");
  EXPECT_EQ(o.members()[1].first, "a");
  EXPECT_EQ(o.members()[2].first, "c");
  ASSERT_NE(o.get("a"), nullptr);
  EXPECT_EQ(*o.get("a"), Value::array({1, 2}));
  EXPECT_EQ(o.get("missing"), nullptr);
  EXPECT_EQ(Value(3).get("a"), nullptr);

  Value a = Value::array();
  a.push(1);
  a.push("two");
  a.push(Value());
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0].asInt(), 1);
  EXPECT_EQ(a[1].asString(), "two");
  EXPECT_TRUE(a[2].isNull());
  EXPECT_EQ(Value("s").size(), 0u);
}

TEST(Json, ExactInt64Extremes) {
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  const int64_t k2p53p1 = (int64_t(1) << 53) + 1; // not representable as a double
  for (int64_t v : {kMin, kMax, k2p53p1, -k2p53p1, int64_t(0), int64_t(-1)}) {
    std::string text = json::serialize(Value(v));
    EXPECT_EQ(text, std::to_string(v));
    Value back = parseOk(text);
    ASSERT_TRUE(back.isInt()) << text;
    EXPECT_EQ(back.asInt(), v);
  }
  EXPECT_EQ(parseOk("-9223372036854775808").asInt(), kMin);
  EXPECT_EQ(parseOk("9007199254740993").asInt(), k2p53p1);
  EXPECT_EQ(parseOk("[9223372036854775807]")[0].asInt(), kMax);

  // One past the int64 range: the nearest double, no longer an exact int.
  Value big = parseOk("9223372036854775808");
  EXPECT_FALSE(big.isInt());
  EXPECT_EQ(big.asDouble(), 9223372036854775808.0);
  EXPECT_FALSE(parseOk("-9223372036854775809").isInt());
  EXPECT_FALSE(parseOk("1e3").isInt()) << "an exponent makes a double";
  EXPECT_FALSE(parseOk("1.0").isInt());
  // "-0" keeps its sign, so it is a double.
  Value negZero = parseOk("-0");
  EXPECT_FALSE(negZero.isInt());
  EXPECT_EQ(bits(negZero.asDouble()), bits(-0.0));

  // Unsigned values within range are exact; above it, the nearest double.
  EXPECT_EQ(Value(uint64_t(kMax)).asInt(), kMax);
  EXPECT_FALSE(Value(std::numeric_limits<uint64_t>::max()).isInt());
  EXPECT_EQ(Value(std::numeric_limits<uint64_t>::max()).asDouble(), 18446744073709551616.0);
  EXPECT_EQ(Value(size_t(7)).asInt(), 7);
}

TEST(Json, DoublesRoundTripBitExact) {
  const double values[] = {0.1,
                           1e-300,
                           5e-324, // smallest subnormal
                           2.2250738585072014e-308,
                           1.7976931348623157e308,
                           -0.0,
                           0.0,
                           1.0,
                           -2.5,
                           100.0,
                           1e21,
                           1.0 / 3.0,
                           0.1 + 0.2,
                           123456789012345680000.0,
                           std::nextafter(1.0, 2.0),
                           9007199254740993.0};
  for (double d : values) {
    std::string text = json::serialize(Value(d));
    Value back = parseOk(text);
    ASSERT_TRUE(back.isNumber()) << text;
    EXPECT_FALSE(back.isInt()) << text << " must read back as a double";
    EXPECT_EQ(bits(back.asDouble()), bits(d)) << text;
  }
  // Shortest text, and integral doubles marked with ".0".
  EXPECT_EQ(json::serialize(Value(0.1)), "0.1");
  EXPECT_EQ(json::serialize(Value(5e-324)), "5e-324");
  EXPECT_EQ(json::serialize(Value(1.7976931348623157e308)), "1.7976931348623157e+308");
  EXPECT_EQ(json::serialize(Value(-0.0)), "-0.0");
  EXPECT_EQ(json::serialize(Value(100.0)), "100.0");
  EXPECT_EQ(json::serialize(Value(0.1 + 0.2)), "0.30000000000000004");
  // Parsing tricky texts: halfway cases and long mantissas round correctly.
  EXPECT_EQ(bits(parseOk("2.2250738585072011e-308").asDouble()), bits(2.2250738585072011e-308));
  EXPECT_EQ(parseOk("0.30000000000000004").asDouble(), 0.1 + 0.2);
  EXPECT_EQ(parseOk("1E2").asDouble(), 100.0);
  EXPECT_EQ(parseOk("-1.5e-3").asDouble(), -0.0015);
  // Underflow reads as (signed) zero, like strtod.
  EXPECT_EQ(bits(parseOk("1e-400").asDouble()), bits(0.0));
  EXPECT_EQ(bits(parseOk("-0.0001e-400").asDouble()), bits(-0.0));
  EXPECT_EQ(bits(parseOk("100000e-330").asDouble()), bits(0.0));
  // Rounds up to the smallest subnormal rather than underflowing.
  EXPECT_EQ(bits(parseOk("3e-324").asDouble()), bits(5e-324));
}

TEST(Json, NonFiniteDoublesSerializeAsNull) {
  EXPECT_EQ(json::serialize(Value(std::numeric_limits<double>::infinity())), "null");
  EXPECT_EQ(json::serialize(Value(-std::numeric_limits<double>::infinity())), "null");
  EXPECT_EQ(json::serialize(Value::array({std::nan("")})), "[null]");
}

TEST(Json, EscapesAndSurrogatePairs) {
  Value v = parseOk(R"("\"\\\/\b\f\n\r\t\u0041\u00e9\u20AC\uD83D\uDE00\u0000end")");
  EXPECT_EQ(v.asString(), std::string("\"\\/\b\f\n\r\tA\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80") +
                              std::string(1, '\0') + "end");
  // The highest code point, U+10FFFF.
  EXPECT_EQ(parseOk(R"("\uDBFF\uDFFF")").asString(), "\xF4\x8F\xBF\xBF");
  // Raw UTF-8 passes through in both directions.
  EXPECT_EQ(parseOk("\"\xE2\x82\xAC\"").asString(), "\xE2\x82\xAC");

  EXPECT_EQ(json::quote(std::string("a\"b\\c\n\x01\x1F\x7F/\xC3\xA9", 12)),
            "\"a\\\"b\\\\c\\n\\u0001\\u001F\x7F/\xC3\xA9\"");
  // Every byte value survives serialize + parse.
  std::string all;
  for (int c = 0; c < 256; ++c)
    all += static_cast<char>(c);
  EXPECT_EQ(parseOk(json::serialize(Value(all))).asString(), all);
}

struct ErrorCase {
  const char *text;
  const char *message;
};

TEST(Json, ParseErrorsNameWhatAndWhere) {
  const ErrorCase cases[] = {
      {"", "line 1, column 1: expected a value, found the end of the input"},
      {"  \n ", "line 2, column 2: expected a value, found the end of the input"},
      // Trailing commas.
      {"[1,2,]", "line 1, column 6: expected a value after ',', found ']'"},
      {"{\"a\":1,}", "line 1, column 8: expected a string key after ',', found '}'"},
      // Missing colon, separators, keys.
      {"{\"a\" 1}", "line 1, column 6: expected ':' after key 'a', found '1'"},
      {"[1 2]", "line 1, column 4: expected ',' or ']' after an array element, found '2'"},
      {"[1}", "line 1, column 3: expected ',' or ']' after an array element, found '}'"},
      {"{\"a\":1]", "line 1, column 7: expected ',' or '}' after an object member, found ']'"},
      {"{1:2}", "line 1, column 2: expected a string key, found '1'"},
      {"{\"a\":", "line 1, column 6: expected a value, found the end of the input"},
      // Strings.
      {"[\"abc", "line 1, column 2: unterminated string (no closing '\"')"},
      {"\"abc\\", "line 1, column 1: unterminated string (no closing '\"')"},
      {"\"\\q\"", "line 1, column 2: invalid escape '\\q' in string"},
      {"\"\\\x01\"", "line 1, column 2: invalid escape: '\\' followed by byte 0x01"},
      {"\"\\u12G4\"", "line 1, column 2: invalid \\u escape: expected 4 hex digits"},
      {"\"\\u12", "line 1, column 2: invalid \\u escape: expected 4 hex digits"},
      {"\"a\nb\"",
       "line 1, column 3: unescaped control character \\u000A in string (write it as an escape)"},
      // Lone surrogates.
      {"\"\\uD800\"", "line 1, column 2: lone surrogate \\uD800 (a high surrogate must be "
                      "followed by a low surrogate \\uDC00-\\uDFFF)"},
      {"\"x\\uDBFF\\u0041\"", "line 1, column 3: lone surrogate \\uDBFF (a high surrogate must "
                              "be followed by a low surrogate \\uDC00-\\uDFFF)"},
      {"\"\\uDC00\"",
       "line 1, column 2: lone surrogate \\uDC00 (a low surrogate must follow a high surrogate)"},
      // Numbers.
      {"012", "line 1, column 1: leading zeros are not allowed in numbers"},
      {"[-012]", "line 1, column 2: leading zeros are not allowed in numbers"},
      {"00", "line 1, column 1: leading zeros are not allowed in numbers"},
      {"-", "line 1, column 2: expected a digit after '-', found the end of the input"},
      {"-a", "line 1, column 2: expected a digit after '-', found 'a'"},
      {"1.", "line 1, column 3: expected a digit after '.', found the end of the input"},
      {"1.e5", "line 1, column 3: expected a digit after '.', found 'e'"},
      {"1e+", "line 1, column 4: expected a digit in the exponent, found the end of the input"},
      {".5", "line 1, column 1: expected a value, found '.'"},
      {"+1", "line 1, column 1: expected a value, found '+'"},
      {"[1e400]", "line 1, column 2: number out of the range of a double"},
      {"-123456789e301", "line 1, column 1: number out of the range of a double"},
      {"NaN", "line 1, column 1: expected a value, found 'N'"},
      // Literals.
      {"tru", "line 1, column 1: invalid literal: expected true, false or null"},
      {"[nul]", "line 1, column 2: invalid literal: expected true, false or null"},
      {"True", "line 1, column 1: expected a value, found 'T'"},
      // Duplicate keys, also on a later line and in a large object.
      {"{\"a\":1,\"a\":2}", "line 1, column 8: duplicate key 'a'"},
      {"{\n  \"x\": 1,\n  \"x\": 2\n}", "line 3, column 3: duplicate key 'x'"},
      {"{\"a\\nb\":1,\"a\\nb\":2}", "line 1, column 11: duplicate key 'a\\x0Ab'"},
      // Trailing garbage.
      {"{} x", "line 1, column 4: expected the end of the input after the top-level value, "
               "found 'x'"},
      {"1 2", "line 1, column 3: expected the end of the input after the top-level value, "
              "found '2'"},
      {"truex", "line 1, column 5: expected the end of the input after the top-level value, "
                "found 'x'"},
      {"[]\x01", "line 1, column 3: expected the end of the input after the top-level value, "
                 "found byte 0x01"},
      {"\xEF\xBB\xBF{}", "line 1, column 1: expected a value, found byte 0xEF"},
  };
  for (const ErrorCase &c : cases)
    EXPECT_EQ(parseError(c.text), c.message) << "input: " << c.text;

  // A duplicate found through the hash set of a large object.
  std::string large = "{";
  for (int k = 0; k < 100; ++k)
    large += "\"k" + std::to_string(k) + "\":" + std::to_string(k) + ",";
  size_t column = large.size() + 1;
  large += "\"k7\":0}";
  EXPECT_EQ(parseError(large), "line 1, column " + std::to_string(column) + ": duplicate key 'k7'");
  // Long keys are shortened in messages so they stay one readable line.
  std::string longKey(100, 'k');
  EXPECT_EQ(parseError("{\"" + longKey + "\":1,\"" + longKey + "\":2}"),
            "line 1, column 107: duplicate key '" + std::string(64, 'k') + "...'");
  // ... without cutting a UTF-8 character: 63 ASCII bytes, then a 2-byte one
  // that straddles the limit.
  std::string utf8Key = std::string(63, 'k') + "\xC3\xA9" + std::string(10, 'k');
  EXPECT_EQ(parseError("{\"" + utf8Key + "\":1,\"" + utf8Key + "\":2}"),
            "line 1, column 82: duplicate key '" + std::string(63, 'k') + "...'");
}

TEST(Json, DepthIsBounded) {
  const int kMax = json::kMaxDepth;
  std::string ok = std::string(kMax, '[') + std::string(kMax, ']');
  EXPECT_TRUE(parseOk(ok).isArray());
  std::string deep = std::string(kMax + 1, '[') + std::string(kMax + 1, ']');
  EXPECT_EQ(parseError(deep), "line 1, column 257: nesting deeper than 256 levels");
  // Objects count too, and a hostile depth fails without exhausting the stack.
  std::string objects;
  for (int k = 0; k < kMax; ++k)
    objects += "{\"a\":";
  EXPECT_EQ(parseError(objects + "{}"),
            "line 1, column " + std::to_string(5 * kMax + 1) + ": nesting deeper than 256 levels");
  EXPECT_EQ(parseError(std::string(1000000, '[')),
            "line 1, column 257: nesting deeper than 256 levels");
}

TEST(Json, TypedAccessorsGiveSchemaErrors) {
  Value o = parseOk(R"({"n": 3, "x": 2.5, "big": 1e30, "s": "str", "b": false,
                       "a": [1], "o": {"k": 1}, "z": null})");
  std::string error;
  // Each accessor's status, its message kept in `error` for the checks below.
  auto ok = [&](Status st) {
    error = st.message();
    return st.ok();
  };
  int64_t i = 0;
  double d = 0;
  bool b = true;
  std::string s;
  const Value *p = nullptr;
  EXPECT_TRUE(ok(json::getInt(o, "n", i)));
  EXPECT_EQ(i, 3);
  EXPECT_TRUE(ok(json::getDouble(o, "x", d)));
  EXPECT_EQ(d, 2.5);
  EXPECT_TRUE(ok(json::getDouble(o, "n", d))) << "an int is a number";
  EXPECT_EQ(d, 3.0);
  EXPECT_TRUE(ok(json::getString(o, "s", s)));
  EXPECT_EQ(s, "str");
  EXPECT_TRUE(ok(json::getBool(o, "b", b)));
  EXPECT_FALSE(b);
  EXPECT_TRUE(ok(json::getArray(o, "a", p)));
  EXPECT_EQ(p, o.get("a"));
  EXPECT_TRUE(ok(json::getObject(o, "o", p)));
  EXPECT_EQ(p, o.get("o"));

  EXPECT_FALSE(ok(json::getArray(o, "shape", p)));
  EXPECT_EQ(error, "missing key 'shape'");
  EXPECT_EQ(p, nullptr);
  EXPECT_FALSE(ok(json::getArray(o, "s", p)));
  EXPECT_EQ(error, "key 's' must be an array, got a string");
  EXPECT_FALSE(ok(json::getInt(o, "x", i)));
  EXPECT_EQ(error, "key 'x' must be an integer (int64), got 2.5");
  EXPECT_FALSE(ok(json::getInt(o, "big", i)));
  EXPECT_EQ(error, "key 'big' must be an integer (int64), got 1e+30");
  EXPECT_FALSE(ok(json::getInt(o, "s", i)));
  EXPECT_EQ(error, "key 's' must be an integer, got a string");
  EXPECT_FALSE(ok(json::getDouble(o, "z", d)));
  EXPECT_EQ(error, "key 'z' must be a number, got null");
  EXPECT_FALSE(ok(json::getString(o, "n", s)));
  EXPECT_EQ(error, "key 'n' must be a string, got a number");
  EXPECT_FALSE(ok(json::getBool(o, "a", b)));
  EXPECT_EQ(error, "key 'a' must be a boolean, got an array");
  EXPECT_FALSE(ok(json::getObject(o, "b", p)));
  EXPECT_EQ(error, "key 'b' must be an object, got a boolean");
  EXPECT_FALSE(ok(json::getInt(Value::array(), "n", i)));
  EXPECT_EQ(error, "expected an object with key 'n', got an array");
}

/// Mutations of a valid document: each must parse or fail with a one-line
/// positioned error; what parses must survive its own round trip.
TEST(Json, FuzzedDocumentsParseOrFailCleanly) {
  const std::string base = json::serialize(sampleDocument(), 2);
  const std::string interesting = "{}[],:\"\\0123456789.eE+-tfnu \n\x01\x80\xFF";
  std::mt19937_64 rng(20240611);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  int parsed = 0, failed = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    std::string text = base;
    int edits = 1 + static_cast<int>(pick(3));
    for (int e = 0; e < edits && !text.empty(); ++e) {
      size_t pos = pick(text.size());
      char c = pick(2) ? interesting[pick(interesting.size())] : static_cast<char>(rng());
      switch (pick(4)) {
      case 0:
        text[pos] = c;
        break;
      case 1:
        text.insert(text.begin() + static_cast<std::ptrdiff_t>(pos), c);
        break;
      case 2:
        text.erase(pos, 1 + pick(8));
        break;
      default:
        text.resize(pos);
        break;
      }
    }
    Value v;
    Status st = json::parse(text, v);
    const std::string &error = st.message();
    if (st) {
      ++parsed;
      EXPECT_EQ(parseOk(json::serialize(v)), v) << text;
    } else {
      ++failed;
      EXPECT_EQ(error.rfind("line ", 0), 0u) << error;
      EXPECT_EQ(error.find('\n'), std::string::npos) << error;
      EXPECT_TRUE(v.isNull());
    }
  }
  // The mutations exercise both outcomes.
  EXPECT_GT(parsed, 100);
  EXPECT_GT(failed, 1000);
}

} // namespace
