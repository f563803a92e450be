//===- Crc32c.cpp - CRC-32C (Castagnoli) checksums ------------------------===//
#include "runtime/support/Crc32c.h"

#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace lcc {

namespace {

/// Slicing-by-8: eight 256-entry tables built at compile time let the loop
/// consume 8 bytes per step (a few GB/s) where there is no crc32
/// instruction; train.bin's open() checks every payload.
struct CrcTables {
  uint32_t t[8][256];
};

constexpr CrcTables makeCrcTables() {
  CrcTables tb{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k)
      c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u))); // 0x1EDC6F41, bits reversed
    tb.t[0][i] = c;
  }
  for (int s = 1; s < 8; ++s)
    for (uint32_t i = 0; i < 256; ++i)
      tb.t[s][i] = (tb.t[s - 1][i] >> 8) ^ tb.t[0][tb.t[s - 1][i] & 0xFF];
  return tb;
}

constexpr CrcTables kCrc = makeCrcTables();

uint32_t loadLittle32(const unsigned char *p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

/// On the register (inverted before and after by the callers).
uint32_t tableUpdate(uint32_t c, const unsigned char *p, size_t n) {
  const auto &t = kCrc.t;
  for (; n >= 8; n -= 8, p += 8) {
    uint32_t a = c ^ loadLittle32(p), b = loadLittle32(p + 4);
    c = t[7][a & 0xFF] ^ t[6][(a >> 8) & 0xFF] ^ t[5][(a >> 16) & 0xFF] ^ t[4][a >> 24] ^
        t[3][b & 0xFF] ^ t[2][(b >> 8) & 0xFF] ^ t[1][(b >> 16) & 0xFF] ^ t[0][b >> 24];
  }
  for (; n > 0; --n, ++p)
    c = (c >> 8) ^ t[0][(c ^ *p) & 0xFF];
  return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t hardwareUpdate(uint32_t c, const unsigned char *p,
                                                          size_t n) {
  uint64_t c64 = c;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c64 = _mm_crc32_u64(c64, word);
  }
  c = uint32_t(c64);
  for (; n > 0; --n, ++p)
    c = _mm_crc32_u8(c, *p);
  return c;
}

const bool kHaveSse42 = __builtin_cpu_supports("sse4.2");
#endif

} // namespace

uint32_t crc32c(const void *data, size_t size, uint32_t crc) {
  const auto *p = static_cast<const unsigned char *>(data);
#if defined(__x86_64__)
  if (kHaveSse42)
    return ~hardwareUpdate(~crc, p, size);
#endif
  return ~tableUpdate(~crc, p, size);
}

uint32_t crc32cPortable(const void *data, size_t size, uint32_t crc) {
  return ~tableUpdate(~crc, static_cast<const unsigned char *>(data), size);
}

} // namespace lcc
