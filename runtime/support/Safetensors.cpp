//===- Safetensors.cpp - read and write .safetensors files ----------------===//
//
// The header is read by runtime/support/Json.h's parser (strict, duplicate keys
// refused, positions in its errors), then checked against the format: an
// object of tensor entries, each an object with exactly "dtype", "shape" and
// "data_offsets", plus an optional "__metadata__" object of strings.
//
//===----------------------------------------------------------------------===//
#include "runtime/support/Safetensors.h"

#include "runtime/support/Json.h"

#include "runtime/support/AtomicFile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

namespace lcc {
namespace {

// The reference implementation refuses headers above 100 MB; so do we, so a
// hostile length cannot make us allocate gigabytes.
constexpr uint64_t kMaxHeaderBytes = 100u * 1000u * 1000u;
// Deeper than any real model; bounds the element-count arithmetic too.
constexpr size_t kMaxRank = 64;

struct DtypeInfo {
  const char *name;
  ElementType type;
};
constexpr DtypeInfo kSupported[] = {{"F32", ElementType::F32},
                                    {"F64", ElementType::F64},
                                    {"I32", ElementType::I32},
                                    {"I64", ElementType::I64},
                                    {"BOOL", ElementType::I1}};
// Valid in the format but not representable in a HostTensor: named so the
// error can say "not supported" rather than "unknown".
constexpr const char *kKnownUnsupported[] = {"F16", "BF16", "F8_E4M3", "F8_E5M2", "I8",
                                             "U8",  "I16",  "U16",     "U32",     "U64"};

const char *dtypeName(ElementType type) {
  for (const DtypeInfo &d : kSupported)
    if (d.type == type)
      return d.name;
  return "?";
}

std::string quoted(const std::string &name) { return "'" + name + "'"; }

/// bfloat16: the top half of an IEEE float32.
float bf16ToFloat(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// IEEE binary16 (1 sign, 5 exponent, 10 mantissa bits), every value exact in float32.
float f16ToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13); // inf, NaN (payload kept)
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13); // rebias 15 -> 127
  } else if (mant == 0) {
    bits = sign; // zero
  } else {
    // Subnormal: normalize the mantissa.
    int e = -1;
    do {
      mant <<= 1;
      ++e;
    } while (!(mant & 0x400));
    bits = sign | uint32_t(112 - e) << 23 | ((mant & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::string listString(const std::vector<uint64_t> &v) {
  std::string s = "[";
  for (size_t k = 0; k < v.size(); ++k)
    s += (k ? ", " : "") + std::to_string(v[k]);
  return s + "]";
}

/// A list of at most `maxItems` non-negative integers (a shape, offsets).
bool uintList(const json::Value &v, size_t maxItems, std::vector<uint64_t> &out) {
  out.clear();
  if (!v.isArray() || v.size() > maxItems)
    return false;
  for (const json::Value &d : v.items()) {
    if (!d.isInt() || d.asInt() < 0)
      return false;
    out.push_back(uint64_t(d.asInt()));
  }
  return true;
}

/// One tensor entry `{"dtype": ..., "shape": [...], "data_offsets": [b, e]}`,
/// checked against the data section and copied into a HostTensor.
Status parseEntry(const json::Value &entry, const std::string &name, const uint8_t *data,
                  uint64_t dataSize, bool widenHalf, HostTensor &out) {
  std::string where = "tensor " + quoted(name) + ": ";
  if (!entry.isObject())
    return Status::failure(where + "expected an object with dtype, shape and data_offsets, got " +
                           json::kindName(entry.kind()));
  for (const auto &member : entry.members())
    if (member.first != "dtype" && member.first != "shape" && member.first != "data_offsets")
      return Status::failure(where + "unknown field " + quoted(member.first));
  const json::Value *dtypeValue = entry.get("dtype"), *shapeValue = entry.get("shape"),
                    *offsetsValue = entry.get("data_offsets");
  if (!dtypeValue || !shapeValue || !offsetsValue)
    return Status::failure(where + "missing field " +
                           quoted(!dtypeValue   ? "dtype"
                                  : !shapeValue ? "shape"
                                                : "data_offsets"));
  if (!dtypeValue->isString())
    return Status::failure(where + "dtype must be a string, got " +
                           json::kindName(dtypeValue->kind()));
  const std::string &dtype = dtypeValue->asString();
  std::vector<uint64_t> shape, offsets;
  if (!uintList(*shapeValue, kMaxRank, shape))
    return Status::failure(where + "shape must be a list of at most " + std::to_string(kMaxRank) +
                           " non-negative integers below 2^63");
  if (!uintList(*offsetsValue, SIZE_MAX, offsets))
    return Status::failure(where + "data_offsets must be [begin, end] (non-negative integers)");
  if (offsets.size() != 2)
    return Status::failure(where + "data_offsets must be [begin, end], got " + listString(offsets));

  const DtypeInfo *info = nullptr;
  for (const DtypeInfo &d : kSupported)
    if (dtype == d.name)
      info = &d;
  // Half types (most published checkpoints) widen exactly to F32 on request.
  static const DtypeInfo kWidened = {"F32", ElementType::F32};
  const bool half = widenHalf && (dtype == "F16" || dtype == "BF16");
  if (half)
    info = &kWidened;
  if (!info) {
    for (const char *u : kKnownUnsupported)
      if (dtype == u)
        return Status::failure(where + "dtype " + quoted(dtype) +
                               " is not supported (lcc reads F32, F64, I32, I64, BOOL)");
    return Status::failure(where + "unknown dtype " + quoted(dtype));
  }

  // Element count with overflow checks: a hostile shape must not wrap
  // around to a small size that then passes the offset check.
  uint64_t count = 1;
  for (uint64_t d : shape) {
    if (d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
        (d != 0 && count > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / d))
      return Status::failure(where + "shape " + listString(shape) + " is too large");
    count *= d;
  }
  uint64_t esize = half ? 2 : elementSize(info->type);
  if (count > std::numeric_limits<uint64_t>::max() / esize)
    return Status::failure(where + "shape " + listString(shape) + " is too large");
  uint64_t need = count * esize;
  uint64_t begin = offsets[0], end = offsets[1];
  if (begin > end)
    return Status::failure(where + "data_offsets " + listString(offsets) +
                           " end before they begin");
  if (end > dataSize)
    return Status::failure(where + "data_offsets " + listString(offsets) + " exceed the " +
                           std::to_string(dataSize) + " data bytes");
  if (end - begin != need)
    return Status::failure(where + "data_offsets " + listString(offsets) + " hold " +
                           std::to_string(end - begin) + " bytes, but " + dtype + " " +
                           listString(shape) + " needs " + std::to_string(need));

  std::vector<int64_t> dims(shape.begin(), shape.end());
  HostTensor t(info->type, std::move(dims));
  // The file is little-endian; so is every host lcc targets (x86-64,
  // AArch64), so the bytes are copied as they are.
  if (half) {
    float *to = t.data<float>();
    for (uint64_t k = 0; k < count; ++k) {
      uint16_t h = uint16_t(data[begin + 2 * k] | (data[begin + 2 * k + 1] << 8));
      to[k] = dtype == "BF16" ? bf16ToFloat(h) : f16ToFloat(h);
    }
  } else if (need) {
    std::memcpy(t.rawData(), data + begin, static_cast<size_t>(need));
  }
  if (info->type == ElementType::I1) {
    // HostTensor's I1 holds exactly 0 or 1; any other byte is a bad file.
    const uint8_t *b = static_cast<const uint8_t *>(t.rawData());
    for (uint64_t k = 0; k < need; ++k)
      if (b[k] > 1)
        return Status::failure(where + "BOOL element " + std::to_string(k) + " is " +
                               std::to_string(b[k]) + ", not 0 or 1");
  }
  out = std::move(t);
  return {};
}

Status parseMetadata(const json::Value &v, std::map<std::string, std::string> &out) {
  if (!v.isObject())
    return Status::failure("__metadata__ must be an object of strings, got " +
                           std::string(json::kindName(v.kind())));
  for (const auto &[key, value] : v.members()) {
    if (!value.isString())
      return Status::failure("__metadata__ " + quoted(key) + ": values must be strings");
    out[key] = value.asString();
  }
  return {};
}

} // namespace

Status parseSafetensors(const uint8_t *data, size_t size, SafetensorsFile &out, bool widenHalf) {
  out = SafetensorsFile();
  if (size < 8)
    return Status::failure("file is " + std::to_string(size) +
                           " bytes, too short for the 8-byte header length");
  uint64_t headerLen = 0;
  for (int k = 7; k >= 0; --k)
    headerLen = (headerLen << 8) | data[k];
  if (headerLen > size - 8)
    return Status::failure("header length " + std::to_string(headerLen) + " exceeds the " +
                           std::to_string(size - 8) + " bytes after the length field");
  if (headerLen > kMaxHeaderBytes)
    return Status::failure("header length " + std::to_string(headerLen) +
                           " exceeds the 100 MB limit");
  const uint8_t *body = data + 8 + headerLen;
  uint64_t bodySize = size - 8 - headerLen;

  SafetensorsFile result;
  json::Value header;
  if (Status st = json::parse(std::string_view(reinterpret_cast<const char *>(data + 8), headerLen),
                              header);
      !st)
    return Status::failure("header JSON: " + st.message());
  if (!header.isObject())
    return Status::failure(std::string("header JSON: expected an object, got ") +
                           json::kindName(header.kind()));
  // json::parse has refused duplicate keys: each name is one tensor.
  for (const auto &[name, entry] : header.members()) {
    if (name == "__metadata__") {
      if (Status s = parseMetadata(entry, result.metadata); !s)
        return s;
      continue;
    }
    HostTensor t;
    if (Status s = parseEntry(entry, name, body, bodySize, widenHalf, t); !s)
      return s;
    result.tensors.emplace(name, std::move(t));
  }
  out = std::move(result);
  return {};
}

Status readSafetensors(const std::string &path, SafetensorsFile &out, bool widenHalf) {
  out = SafetensorsFile();
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return Status::failure(path + ": cannot open: " + std::strerror(errno));
  std::vector<uint8_t> bytes;
  uint8_t buf[1 << 16];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, f)) > 0)
    bytes.insert(bytes.end(), buf, buf + got);
  bool readError = std::ferror(f) != 0;
  std::fclose(f);
  if (readError)
    return Status::failure(path + ": read error");
  Status s = parseSafetensors(bytes.data(), bytes.size(), out, widenHalf);
  if (!s)
    return Status::failure(path + ": " + s.message());
  return s;
}

Status serializeSafetensors(const SafetensorsFile &file, std::vector<uint8_t> &out) {
  out.clear();
  std::string header = "{";
  bool first = true;
  if (!file.metadata.empty()) {
    header += "\"__metadata__\":{";
    for (auto it = file.metadata.begin(); it != file.metadata.end(); ++it) {
      if (it != file.metadata.begin())
        header += ',';
      header += json::quote(it->first);
      header += ':';
      header += json::quote(it->second);
    }
    header += '}';
    first = false;
  }
  uint64_t offset = 0;
  for (const auto &[name, t] : file.tensors) {
    if (name == "__metadata__")
      return Status::failure("a tensor cannot be named __metadata__");
    if (!first)
      header += ',';
    first = false;
    header += json::quote(name);
    header += ":{\"dtype\":\"";
    header += dtypeName(t.elementType());
    header += "\",\"shape\":[";
    for (size_t k = 0; k < t.shape().size(); ++k)
      header += (k ? "," : "") + std::to_string(t.shape()[k]);
    header += "],\"data_offsets\":[" + std::to_string(offset) + ",";
    offset += t.byteSize();
    header += std::to_string(offset) + "]}";
  }
  header += '}';
  // Pad with spaces (valid JSON whitespace) so the data starts 8-aligned.
  while ((header.size() + 8) % 8 != 0)
    header += ' ';
  uint64_t len = header.size();
  out.reserve(8 + header.size() + offset);
  for (int k = 0; k < 8; ++k)
    out.push_back(static_cast<uint8_t>(len >> (8 * k)));
  out.insert(out.end(), header.begin(), header.end());
  for (const auto &entry : file.tensors) {
    const uint8_t *p = static_cast<const uint8_t *>(entry.second.rawData());
    out.insert(out.end(), p, p + entry.second.byteSize());
  }
  return {};
}

Status writeSafetensors(const std::string &path, const SafetensorsFile &file) {
  std::vector<uint8_t> bytes;
  if (Status s = serializeSafetensors(file, bytes); !s)
    return Status::failure(path + ": " + s.message());
  return writeFileAtomically(path, bytes.data(), bytes.size());
}

} // namespace lcc
