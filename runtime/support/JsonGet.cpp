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

/// The value of `key` with kind `kind` in `out`. `expected` names the kind in
/// the message ("an integer" for getInt).
Status lookup(const Value &object, const char *key, Kind kind, const char *expected,
              const Value *&out) {
  out = nullptr;
  if (!object.isObject())
    return Status::failure("expected an object with key " + detail::forMessage(key) + ", got " +
                           kindName(object.kind()));
  const Value *v = object.get(key);
  if (!v)
    return Status::failure("missing key " + detail::forMessage(key));
  if (v->kind() != kind)
    return Status::failure("key " + detail::forMessage(key) + " must be " + expected + ", got " +
                           kindName(v->kind()));
  out = v;
  return {};
}

} // namespace

Status getInt(const Value &object, const char *key, int64_t &out) {
  const Value *v = nullptr;
  if (Status st = lookup(object, key, Kind::Number, "an integer", v); !st)
    return st;
  if (!v->isInt())
    return Status::failure("key " + detail::forMessage(key) + " must be an integer (int64), got " +
                           serialize(*v));
  out = v->asInt();
  return {};
}

Status getDouble(const Value &object, const char *key, double &out) {
  const Value *v = nullptr;
  if (Status st = lookup(object, key, Kind::Number, kindName(Kind::Number), v); !st)
    return st;
  out = v->asDouble();
  return {};
}

Status getBool(const Value &object, const char *key, bool &out) {
  const Value *v = nullptr;
  if (Status st = lookup(object, key, Kind::Bool, kindName(Kind::Bool), v); !st)
    return st;
  out = v->asBool();
  return {};
}

Status getString(const Value &object, const char *key, std::string &out) {
  const Value *v = nullptr;
  if (Status st = lookup(object, key, Kind::String, kindName(Kind::String), v); !st)
    return st;
  out = v->asString();
  return {};
}

Status getArray(const Value &object, const char *key, const Value *&out) {
  return lookup(object, key, Kind::Array, kindName(Kind::Array), out);
}

Status getObject(const Value &object, const char *key, const Value *&out) {
  return lookup(object, key, Kind::Object, kindName(Kind::Object), out);
}

} // namespace json
} // namespace lcc
