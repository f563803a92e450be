//===- JsonGet.cpp - typed accessors for schema checks ----------------------===//
//
// getInt / getString / ...: one call per field, with a message that names the
// key and what it held, so readers of manifests and checkpoints stay short.
// Apart from Json.cpp (parser and serializer) to keep each file one concept.
//
//===----------------------------------------------------------------------===//
#include "runtime/support/Json.h"

namespace lcc {
namespace json {


namespace {

/// The value of `key` with kind `kind`, or nullptr with `error` set.
/// `expected` names the kind in the message ("an integer" for getInt).
const Value *lookup(const Value &object, const char *key, Kind kind, const char *expected,
                    std::string &error) {
  if (!object.isObject()) {
    error = "expected an object with key " + detail::forMessage(key) + ", got " +
            kindName(object.kind());
    return nullptr;
  }
  const Value *v = object.get(key);
  if (!v) {
    error = "missing key " + detail::forMessage(key);
    return nullptr;
  }
  if (v->kind() != kind) {
    error = "key " + detail::forMessage(key) + " must be " + expected + ", got " + kindName(v->kind());
    return nullptr;
  }
  return v;
}

} // namespace

bool getInt(const Value &object, const char *key, int64_t &out, std::string &error) {
  const Value *v = lookup(object, key, Kind::Number, "an integer", error);
  if (!v)
    return false;
  if (!v->isInt()) {
    error = "key " + detail::forMessage(key) + " must be an integer (int64), got " + serialize(*v);
    return false;
  }
  out = v->asInt();
  return true;
}

bool getDouble(const Value &object, const char *key, double &out, std::string &error) {
  const Value *v = lookup(object, key, Kind::Number, kindName(Kind::Number), error);
  if (!v)
    return false;
  out = v->asDouble();
  return true;
}

bool getBool(const Value &object, const char *key, bool &out, std::string &error) {
  const Value *v = lookup(object, key, Kind::Bool, kindName(Kind::Bool), error);
  if (!v)
    return false;
  out = v->asBool();
  return true;
}

bool getString(const Value &object, const char *key, std::string &out, std::string &error) {
  const Value *v = lookup(object, key, Kind::String, kindName(Kind::String), error);
  if (!v)
    return false;
  out = v->asString();
  return true;
}

bool getArray(const Value &object, const char *key, const Value *&out, std::string &error) {
  out = lookup(object, key, Kind::Array, kindName(Kind::Array), error);
  return out != nullptr;
}

bool getObject(const Value &object, const char *key, const Value *&out, std::string &error) {
  out = lookup(object, key, Kind::Object, kindName(Kind::Object), error);
  return out != nullptr;
}

} // namespace json
} // namespace lcc
