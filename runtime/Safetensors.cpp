//===- Safetensors.cpp - read and write .safetensors files ----------------===//
//
// The header parser is not a general JSON parser: it accepts exactly the
// shape of a safetensors header (an object of tensor entries, each an object
// with "dtype", "shape" and "data_offsets", plus an optional "__metadata__"
// object of strings), which keeps it small and lets every error say what
// was expected where. Every read goes through Cursor, which checks bounds.
//
//===----------------------------------------------------------------------===//
#include "runtime/Safetensors.h"

#include "runtime/Json.h"

#include "runtime/AtomicFile.h"

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
constexpr DtypeInfo kSupported[] = {{"F32", ElementType::F32}, {"F64", ElementType::F64},
                                    {"I32", ElementType::I32}, {"I64", ElementType::I64},
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

/// A bounds-checked reader over the header bytes. Errors record the byte
/// offset within the header so a user can find the spot with a hex viewer.
class Cursor {
public:
  Cursor(const char *data, size_t size) : p(data), n(size) {}

  void skipSpace() {
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
      ++i;
  }
  bool atEnd() const { return i >= n; }
  size_t pos() const { return i; }

  /// Consumes `c` after optional whitespace.
  bool eat(char c) {
    skipSpace();
    if (i < n && p[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  bool peek(char c) {
    skipSpace();
    return i < n && p[i] == c;
  }

  Status expected(const char *what) {
    skipSpace();
    std::string found = i < n ? "'" + std::string(1, p[i]) + "'" : "the end of the header";
    return Status::failure("header JSON: expected " + std::string(what) + " at byte " +
                           std::to_string(i) + ", found " + found);
  }

  /// A JSON string; escapes are decoded (\uXXXX to UTF-8, surrogate pairs
  /// joined) so names written by any JSON library round-trip.
  Status string(std::string &out) {
    out.clear();
    if (!eat('"'))
      return expected("a string");
    while (true) {
      if (i >= n)
        return Status::failure("header JSON: unterminated string at byte " + std::to_string(i));
      char c = p[i++];
      if (c == '"')
        return {};
      if (static_cast<unsigned char>(c) < 0x20)
        return Status::failure("header JSON: control character in a string at byte " +
                               std::to_string(i - 1));
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i >= n)
        return Status::failure("header JSON: unterminated string at byte " + std::to_string(i));
      char e = p[i++];
      switch (e) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        uint32_t cp = 0;
        if (Status s = hex4(cp); !s)
          return s;
        if (cp >= 0xD800 && cp < 0xDC00) {
          uint32_t lo = 0;
          if (i + 2 > n || p[i] != '\\' || p[i + 1] != 'u')
            return Status::failure("header JSON: unpaired surrogate at byte " + std::to_string(i));
          i += 2;
          if (Status s = hex4(lo); !s)
            return s;
          if (lo < 0xDC00 || lo >= 0xE000)
            return Status::failure("header JSON: unpaired surrogate at byte " + std::to_string(i));
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp < 0xE000) {
          return Status::failure("header JSON: unpaired surrogate at byte " + std::to_string(i));
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        return Status::failure("header JSON: bad escape '\\" + std::string(1, e) + "' at byte " +
                               std::to_string(i - 2));
      }
    }
  }

  /// A non-negative integer without sign, fraction or exponent (all that
  /// shapes and offsets may be), with overflow checked.
  Status unsignedInt(uint64_t &out) {
    skipSpace();
    size_t start = i;
    if (i >= n || p[i] < '0' || p[i] > '9')
      return expected("a non-negative integer");
    out = 0;
    while (i < n && p[i] >= '0' && p[i] <= '9') {
      uint64_t digit = static_cast<uint64_t>(p[i] - '0');
      if (out > (std::numeric_limits<uint64_t>::max() - digit) / 10)
        return Status::failure("header JSON: integer too large at byte " + std::to_string(start));
      out = out * 10 + digit;
      ++i;
    }
    if (i < n && (p[i] == '.' || p[i] == 'e' || p[i] == 'E'))
      return Status::failure("header JSON: expected an integer at byte " + std::to_string(start) +
                             ", found a fraction");
    return {};
  }

  /// `[int, int, ...]`.
  Status intList(std::vector<uint64_t> &out, size_t maxItems) {
    out.clear();
    if (!eat('['))
      return expected("'['");
    if (eat(']'))
      return {};
    while (true) {
      if (out.size() >= maxItems)
        return Status::failure("header JSON: list longer than " + std::to_string(maxItems) +
                               " at byte " + std::to_string(i));
      uint64_t v = 0;
      if (Status s = unsignedInt(v); !s)
        return s;
      out.push_back(v);
      if (eat(']'))
        return {};
      if (!eat(','))
        return expected("',' or ']'");
    }
  }

private:
  Status hex4(uint32_t &out) {
    if (i + 4 > n)
      return Status::failure("header JSON: truncated \\u escape at byte " + std::to_string(i));
    out = 0;
    for (int k = 0; k < 4; ++k) {
      char c = p[i++];
      uint32_t d;
      if (c >= '0' && c <= '9') d = static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') d = static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') d = static_cast<uint32_t>(c - 'A' + 10);
      else return Status::failure("header JSON: bad \\u escape at byte " + std::to_string(i - 1));
      out = out * 16 + d;
    }
    return {};
  }

  static void appendUtf8(std::string &out, uint32_t cp) {
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

  const char *p;
  size_t n;
  size_t i = 0;
};

std::string quoted(const std::string &name) { return "'" + name + "'"; }

std::string listString(const std::vector<uint64_t> &v) {
  std::string s = "[";
  for (size_t k = 0; k < v.size(); ++k)
    s += (k ? ", " : "") + std::to_string(v[k]);
  return s + "]";
}

/// One tensor entry `{"dtype": ..., "shape": [...], "data_offsets": [b, e]}`,
/// checked against the data section and copied into a HostTensor.
Status parseEntry(Cursor &c, const std::string &name, const uint8_t *data, uint64_t dataSize,
                  HostTensor &out) {
  std::string where = "tensor " + quoted(name) + ": ";
  if (!c.eat('{'))
    return c.expected("'{' (a tensor entry)");
  std::string dtype;
  std::vector<uint64_t> shape, offsets;
  bool haveDtype = false, haveShape = false, haveOffsets = false;
  if (!c.peek('}')) {
    while (true) {
      std::string key;
      if (Status s = c.string(key); !s)
        return s;
      if (!c.eat(':'))
        return c.expected("':'");
      if (key == "dtype" && !haveDtype) {
        if (Status s = c.string(dtype); !s)
          return s;
        haveDtype = true;
      } else if (key == "shape" && !haveShape) {
        if (Status s = c.intList(shape, kMaxRank); !s)
          return s;
        haveShape = true;
      } else if (key == "data_offsets" && !haveOffsets) {
        if (Status s = c.intList(offsets, 2); !s)
          return s;
        haveOffsets = true;
      } else if (key == "dtype" || key == "shape" || key == "data_offsets") {
        return Status::failure(where + "duplicate field " + quoted(key));
      } else {
        return Status::failure(where + "unknown field " + quoted(key));
      }
      if (c.peek('}'))
        break;
      if (!c.eat(','))
        return c.expected("',' or '}'");
    }
  }
  c.eat('}');
  if (!haveDtype || !haveShape || !haveOffsets)
    return Status::failure(where + "missing field " +
                           quoted(!haveDtype ? "dtype" : !haveShape ? "shape" : "data_offsets"));
  if (offsets.size() != 2)
    return Status::failure(where + "data_offsets must be [begin, end], got " + listString(offsets));

  const DtypeInfo *info = nullptr;
  for (const DtypeInfo &d : kSupported)
    if (dtype == d.name)
      info = &d;
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
  uint64_t esize = elementSize(info->type);
  if (count > std::numeric_limits<uint64_t>::max() / esize)
    return Status::failure(where + "shape " + listString(shape) + " is too large");
  uint64_t need = count * esize;
  uint64_t begin = offsets[0], end = offsets[1];
  if (begin > end)
    return Status::failure(where + "data_offsets " + listString(offsets) + " end before they begin");
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
  if (need)
    std::memcpy(t.rawData(), data + begin, static_cast<size_t>(need));
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

Status parseMetadata(Cursor &c, std::map<std::string, std::string> &out) {
  if (!c.eat('{'))
    return c.expected("'{' (__metadata__)");
  if (c.eat('}'))
    return {};
  while (true) {
    std::string key, value;
    if (Status s = c.string(key); !s)
      return s;
    if (!c.eat(':'))
      return c.expected("':'");
    if (!c.peek('"'))
      return Status::failure("__metadata__ " + quoted(key) + ": values must be strings");
    if (Status s = c.string(value); !s)
      return s;
    out[key] = std::move(value);
    if (c.eat('}'))
      return {};
    if (!c.eat(','))
      return c.expected("',' or '}'");
  }
}

} // namespace

Status parseSafetensors(const uint8_t *data, size_t size, SafetensorsFile &out) {
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
  Cursor c(reinterpret_cast<const char *>(data + 8), static_cast<size_t>(headerLen));
  if (!c.eat('{'))
    return c.expected("'{'");
  if (!c.eat('}')) {
    bool haveMetadata = false;
    while (true) {
      std::string name;
      if (Status s = c.string(name); !s)
        return s;
      if (!c.eat(':'))
        return c.expected("':'");
      if (name == "__metadata__") {
        if (haveMetadata)
          return Status::failure("duplicate __metadata__");
        haveMetadata = true;
        if (Status s = parseMetadata(c, result.metadata); !s)
          return s;
      } else {
        if (result.tensors.count(name))
          return Status::failure("duplicate tensor " + quoted(name));
        HostTensor t;
        if (Status s = parseEntry(c, name, body, bodySize, t); !s)
          return s;
        result.tensors.emplace(name, std::move(t));
      }
      if (c.eat('}'))
        break;
      if (!c.eat(','))
        return c.expected("',' or '}'");
    }
  }
  c.skipSpace();
  if (!c.atEnd())
    return c.expected("the end of the header");
  out = std::move(result);
  return {};
}

Status readSafetensors(const std::string &path, SafetensorsFile &out) {
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
  Status s = parseSafetensors(bytes.data(), bytes.size(), out);
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
