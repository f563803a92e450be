//===- SafetensorsTest.cpp - the safetensors reader and writer -----------===//
//
// Round trips, files in the exact byte layout the Python `safetensors`
// package writes (built by hand here, and the committed fixtures that the
// package did write), every malformed-file error with its exact message, and
// truncations/bit flips of a valid file that must give an error, not a crash.
//
//===----------------------------------------------------------------------===//
#include "test/unit/common/TempDir.h"
#include "runtime/support/Safetensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include <cstdio>
#include <dirent.h>
#include <random>
#include <string>
#include <unistd.h>

using namespace lcc;
using lcc::test::TempDir;

namespace {

/// A file from a header string and data bytes, as the format lays it out.
std::vector<uint8_t> makeFile(const std::string &header, const std::vector<uint8_t> &data = {}) {
  std::vector<uint8_t> out;
  uint64_t n = header.size();
  for (int k = 0; k < 8; ++k)
    out.push_back(static_cast<uint8_t>(n >> (8 * k)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::vector<uint8_t> floatBytes(const std::vector<float> &v) {
  std::vector<uint8_t> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

std::string parseError(const std::vector<uint8_t> &bytes) {
  SafetensorsFile file;
  Status s = parseSafetensors(bytes.data(), bytes.size(), file);
  EXPECT_TRUE(file.tensors.empty()) << "a failed parse leaves the output empty";
  return s ? std::string("<ok>") : s.message();
}


SafetensorsFile sampleFile() {
  SafetensorsFile f;
  f.tensors["w"] = HostTensor::fromVector<float>({2, 3}, {1.5f, -2.f, 3.25f, 0.f, -0.f, 1e-30f});
  f.tensors["d"] = HostTensor::fromVector<double>({3}, {1.0 / 3.0, -1e300, 5e-324});
  f.tensors["i"] = HostTensor::fromVector<int32_t>({2, 2}, {-1, 2147483647, -2147483647 - 1, 7});
  f.tensors["l"] = HostTensor::fromVector<int64_t>({1}, {-9007199254740993LL});
  f.tensors["b"] = HostTensor::fromVector<bool>({3}, {true, false, true});
  f.tensors["scalar"] = HostTensor::scalar<float>(42.f);
  f.tensors["empty"] = HostTensor(ElementType::F32, {0, 4});
  f.tensors["h.0.attn \"quoted\" \\ name\x01 \xc3\xa9"] = HostTensor::scalar<int64_t>(3);
  f.metadata["format"] = "pt";
  f.metadata["note"] = "line\nbreak \"q\"";
  return f;
}

TEST(Safetensors, RoundTripThroughAFile) {
  TempDir dir;
  SafetensorsFile in = sampleFile();
  std::string path = dir.path + "/model.safetensors";
  Status w = writeSafetensors(path, in);
  ASSERT_TRUE(w) << w.message();
  // Atomic write: only the target remains, no temporary beside it.
  EXPECT_EQ(dir.files(), std::vector<std::string>{"model.safetensors"});
  SafetensorsFile out;
  Status r = readSafetensors(path, out);
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ(out.metadata, in.metadata);
  ASSERT_EQ(out.tensors.size(), in.tensors.size());
  for (const auto &[name, t] : in.tensors) {
    ASSERT_TRUE(out.tensors.count(name)) << name;
    EXPECT_EQ(out.tensors.at(name), t) << name; // type, shape and bytes
  }
  // Overwriting replaces the file as a whole.
  SafetensorsFile small;
  small.tensors["x"] = HostTensor::scalar<double>(1.0);
  ASSERT_TRUE(writeSafetensors(path, small));
  ASSERT_TRUE(readSafetensors(path, out));
  EXPECT_EQ(out.tensors.size(), 1u);
  EXPECT_TRUE(out.metadata.empty());
}

TEST(Safetensors, SerializedLayout) {
  SafetensorsFile f;
  f.tensors["b"] = HostTensor::fromVector<int32_t>({2}, {1, -1});
  f.tensors["a"] = HostTensor::scalar<float>(2.0f);
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(serializeSafetensors(f, bytes));
  // Names sorted, packed offsets, header padded with spaces to 8 bytes.
  std::string header = "{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]},"
                       "\"b\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[4,12]}}";
  while (header.size() % 8)
    header += ' ';
  std::vector<uint8_t> data = floatBytes({2.0f});
  for (int32_t v : {1, -1})
    for (int k = 0; k < 4; ++k)
      data.push_back(static_cast<uint8_t>(static_cast<uint32_t>(v) >> (8 * k)));
  EXPECT_EQ(bytes, makeFile(header, data));
}

// The layout the Python package writes: __metadata__ first, compact JSON,
// offsets in the order of decreasing alignment then name, space padding.
TEST(Safetensors, ReadsTheReferenceLayout) {
  std::string header = "{\"__metadata__\":{\"format\":\"pt\"},"
                       "\"x\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]},"
                       "\"y\":{\"dtype\":\"F32\",\"shape\":[2,1],\"data_offsets\":[8,16]}}";
  while (header.size() % 8)
    header += ' ';
  std::vector<uint8_t> data(8);
  double x = -0.125;
  std::memcpy(data.data(), &x, 8);
  std::vector<uint8_t> y = floatBytes({3.f, 4.f});
  data.insert(data.end(), y.begin(), y.end());
  SafetensorsFile f;
  std::vector<uint8_t> bytes = makeFile(header, data);
  Status s = parseSafetensors(bytes.data(), bytes.size(), f);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(f.metadata.at("format"), "pt");
  EXPECT_EQ(f.tensors.at("x"), HostTensor::fromVector<double>({1}, {-0.125}));
  EXPECT_EQ(f.tensors.at("y"), HostTensor::fromVector<float>({2, 1}, {3.f, 4.f}));
  // Whitespace anywhere JSON allows it, and \u escapes in names.
  std::string spaced = "\n{ \"w\\u00e9\" : { \"shape\" : [ 2 ] , \"dtype\" : \"F32\" ,\t"
                       "\"data_offsets\" : [ 0 , 8 ] } }\r\n";
  bytes = makeFile(spaced, floatBytes({1.f, 2.f}));
  s = parseSafetensors(bytes.data(), bytes.size(), f);
  ASSERT_TRUE(s) << s.message();
  EXPECT_TRUE(f.tensors.count("w\xc3\xa9"));
  // The empty file of the format.
  bytes = makeFile("{}");
  EXPECT_TRUE(parseSafetensors(bytes.data(), bytes.size(), f));
}

// Written by the Python package (make_reference.py): names and shapes.
TEST(Safetensors, ReadsFilesWrittenByPython) {
  std::string dir = std::string(LCC_SOURCE_DIR) + "/test/fixtures/torch/";
  SafetensorsFile batch, weights;
  Status s = readSafetensors(dir + "batch.safetensors", batch);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(batch.tensors.at("tokens").elementType(), ElementType::I32);
  EXPECT_EQ(batch.tensors.at("tokens").shape(), (std::vector<int64_t>{2, 16}));
  EXPECT_EQ(batch.metadata.count("torch"), 1u);
  s = readSafetensors(dir + "weights.safetensors", weights);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(weights.tensors.size(), 28u);
  EXPECT_EQ(weights.tensors.at("h.1.mlp.c_fc.weight").shape(), (std::vector<int64_t>{24, 96}));
  EXPECT_EQ(weights.tensors.at("ln_f.bias").elementType(), ElementType::F32);
}

const std::string kEntry = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";

TEST(Safetensors, MalformedFiles) {
  std::vector<uint8_t> data = floatBytes({1.f, 2.f});
  // Truncated before the header length is complete.
  EXPECT_EQ(parseError({1, 0, 0, 0, 0}), "file is 5 bytes, too short for the 8-byte header length");
  // Header length beyond the file.
  std::vector<uint8_t> bytes = makeFile(kEntry, data);
  bytes[0] = 0xff;
  bytes[1] = 0xff;
  EXPECT_EQ(parseError(bytes),
            "header length 65535 exceeds the " + std::to_string(kEntry.size() + 8) +
                " bytes after the length field");
  // Absurd length (also beyond the file).
  bytes = makeFile(kEntry, data);
  for (int k = 0; k < 8; ++k)
    bytes[k] = 0xff;
  EXPECT_EQ(parseError(bytes), "header length 18446744073709551615 exceeds the " +
                                   std::to_string(kEntry.size() + 8) +
                                   " bytes after the length field");
  // Bad JSON.
  EXPECT_EQ(parseError(makeFile("{\"w\" {}}")),
            "header JSON: line 1, column 6: expected ':' after key 'w', found '{'");
  EXPECT_EQ(parseError(makeFile("{\"w\":{\"dtype\":\"F32\",\"shape\":[2,],\"data_offsets\":[0,8]}}",
                                data)),
            "header JSON: line 1, column 32: expected a value after ',', found ']'");
  EXPECT_EQ(parseError(makeFile("{\"w\":{\"dtype\":\"F32")),
            "header JSON: line 1, column 15: unterminated string (no closing '\"')");
  EXPECT_EQ(parseError(makeFile("[]")), "header JSON: expected an object, got an array");
  EXPECT_EQ(
      parseError(makeFile("{} x")),
      "header JSON: line 1, column 4: expected the end of the input after the top-level value, "
      "found 'x'");
  EXPECT_EQ(
      parseError(makeFile("{\"w\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}")),
      "tensor 'w': shape must be a list of at most 64 non-negative integers below 2^63");
  EXPECT_EQ(parseError(makeFile("{\"a\\q\":1}")),
            "header JSON: line 1, column 4: invalid escape '\\q' in string");
  // Truncated header: the JSON ends early.
  EXPECT_EQ(parseError(makeFile(kEntry.substr(0, 20))),
            "header JSON: line 1, column 21: expected a string key after ',', found the end of the "
            "input");
  // Offsets out of range (the data section is cut short).
  EXPECT_EQ(parseError(makeFile(kEntry, floatBytes({1.f}))),
            "tensor 'w': data_offsets [0, 8] exceed the 4 data bytes");
  EXPECT_EQ(parseError(makeFile("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", data)),
            "tensor 'w': data_offsets [8, 0] end before they begin");
  EXPECT_EQ(parseError(makeFile("{\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", data)),
            "tensor 'w': data_offsets [0, 8] hold 8 bytes, but F32 [3] needs 12");
  EXPECT_EQ(parseError(makeFile("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", data)),
            "tensor 'w': data_offsets must be [begin, end], got [0]");
  // Unknown and unsupported dtypes.
  EXPECT_EQ(parseError(makeFile("{\"w\":{\"dtype\":\"F99\",\"shape\":[2],\"data_offsets\":[0,8]}}", data)),
            "tensor 'w': unknown dtype 'F99'");
  EXPECT_EQ(parseError(makeFile("{\"w\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[0,8]}}", data)),
            "tensor 'w': dtype 'BF16' is not supported (lcc reads F32, F64, I32, I64, BOOL)");
  // Structure errors.
  EXPECT_EQ(parseError(makeFile("{\"w\":{\"dtype\":\"F32\",\"shape\":[2]}}", data)),
            "tensor 'w': missing field 'data_offsets'");
  EXPECT_EQ(parseError(makeFile("{\"w\":{\"dtype\":\"F32\",\"dtype\":\"F32\"}}", data)),
            "header JSON: line 1, column 21: duplicate key 'dtype'");
  EXPECT_EQ(parseError(makeFile("{\"w\":{\"dtype\":\"F32\",\"strides\":[1]}}", data)),
            "tensor 'w': unknown field 'strides'");
  EXPECT_EQ(parseError(makeFile("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                                "\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                                data)),
            "header JSON: line 1, column 55: duplicate key 'w'");
  EXPECT_EQ(parseError(makeFile("{\"__metadata__\":{\"n\":1}}")),
            "__metadata__ 'n': values must be strings");
  // A shape whose element count overflows must not wrap to a small size.
  EXPECT_EQ(parseError(makeFile("{\"w\":{\"dtype\":\"F64\",\"shape\":[4294967296,4294967296,"
                                "4294967296],\"data_offsets\":[0,8]}}",
                                data)),
            "tensor 'w': shape [4294967296, 4294967296, 4294967296] is too large");
  EXPECT_EQ(parseError(makeFile("{\"w\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],"
                                "\"data_offsets\":[0,8]}}")),
            "tensor 'w': shape must be a list of at most 64 non-negative integers below 2^63");
  // BOOL bytes other than 0/1.
  EXPECT_EQ(parseError(makeFile("{\"m\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[0,2]}}",
                                {1, 7})),
            "tensor 'm': BOOL element 1 is 7, not 0 or 1");
}

TEST(Safetensors, FileErrorsNameThePath) {
  SafetensorsFile f;
  Status s = readSafetensors("/nonexistent/x.safetensors", f);
  EXPECT_EQ(s.message(), "/nonexistent/x.safetensors: cannot open: No such file or directory");
  s = writeSafetensors("/nonexistent/x.safetensors", sampleFile());
  EXPECT_EQ(
      s.message(),
      "/nonexistent/x.safetensors: cannot create a temporary file: No such file or directory");
  TempDir dir;
  std::string path = dir.path + "/bad.safetensors";
  std::FILE *out = std::fopen(path.c_str(), "wb");
  std::fputs("abc", out);
  std::fclose(out);
  s = readSafetensors(path, f);
  EXPECT_EQ(s.message(), path + ": file is 3 bytes, too short for the 8-byte header length");
}

// Every prefix of a valid file and many random corruptions must parse or fail
// cleanly (run under the sanitizer build to catch out-of-bounds reads).
TEST(Safetensors, TruncationsAndBitFlipsNeverCrash) {
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(serializeSafetensors(sampleFile(), bytes));
  for (size_t n = 0; n < bytes.size(); ++n) {
    SafetensorsFile f;
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<long>(n));
    EXPECT_FALSE(parseSafetensors(prefix.data(), prefix.size(), f)) << "prefix of " << n;
  }
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 5000; ++trial) {
    std::vector<uint8_t> b = bytes;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k)
      b[rng() % b.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
    SafetensorsFile f;
    Status s = parseSafetensors(b.data(), b.size(), f);
    if (!s)
      EXPECT_FALSE(s.message().empty());
  }
}

/// F16 and BF16 widen to F32 when asked: every one of the 65,536 half
/// values against the compiler's own conversions (_Float16, and bf16 as
/// the top half of a float), NaNs by class.
TEST(Safetensors, HalfTypesWidenExactly) {
  std::vector<uint8_t> data(2 * 65536);
  for (uint32_t h = 0; h < 65536; ++h) {
    data[2 * h] = uint8_t(h & 0xff);
    data[2 * h + 1] = uint8_t(h >> 8);
  }
  for (const char *dtype : {"F16", "BF16"}) {
    std::vector<uint8_t> bytes = makeFile(std::string("{\"w\":{\"dtype\":\"") + dtype +
                                              "\",\"shape\":[65536],\"data_offsets\":[0,131072]}}",
                                          data);
    SafetensorsFile file;
    ASSERT_FALSE(parseSafetensors(bytes.data(), bytes.size(), file)); // not unless asked
    ASSERT_TRUE(parseSafetensors(bytes.data(), bytes.size(), file, /*widenHalf=*/true));
    const HostTensor &t = file.tensors.at("w");
    ASSERT_EQ(t.elementType(), ElementType::F32);
    const float *got = t.data<float>();
    for (uint32_t h = 0; h < 65536; ++h) {
      float want;
      if (std::string(dtype) == "F16") {
        uint16_t bits = uint16_t(h);
        _Float16 half;
        std::memcpy(&half, &bits, 2);
        want = float(half);
      } else {
        uint32_t bits = h << 16;
        std::memcpy(&want, &bits, 4);
      }
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got[h])) << dtype << " " << h;
        continue;
      }
      uint32_t a, b;
      std::memcpy(&a, &got[h], 4);
      std::memcpy(&b, &want, 4);
      ASSERT_EQ(a, b) << dtype << " 0x" << std::hex << h; // bitwise: signed zeros too
    }
  }
}

} // namespace
