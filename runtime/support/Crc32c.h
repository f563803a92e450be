//===- Crc32c.h - CRC-32C (Castagnoli) checksums ----------------*- C++ -*-===//
//
// CRC-32C, the checksum of iSCSI (RFC 3720), ext4, TFRecord and TensorBoard
// event files, and of every train.bin section: reflected polynomial
// 0x1EDC6F41, initial value and final xor 0xFFFFFFFF; crc32c("123456789") ==
// 0xE3069283. x86-64 computes it in hardware (SSE 4.2's crc32 instruction,
// 8 bytes an instruction), elsewhere tables do (slicing-by-8).
//
// Part of the runtime: no MLIR/LLVM.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_SUPPORT_CRC32C_H
#define LCC_RUNTIME_SUPPORT_CRC32C_H

#include <cstddef>
#include <cstdint>

namespace lcc {

/// The CRC-32C of `size` bytes, continuing from `crc` (the CRC of what came
/// before them; 0 for none): crc32c(a+b) == crc32c(b, crc32c(a)).
uint32_t crc32c(const void *data, size_t size, uint32_t crc = 0);
/// The same by the table alone (what CPUs without SSE 4.2 run; the tests
/// compare both).
uint32_t crc32cPortable(const void *data, size_t size, uint32_t crc = 0);

/// TFRecord's "masked" CRC: stored CRCs are rotated and offset so that a
/// CRC computed over data that itself holds CRCs stays well distributed.
inline uint32_t maskCrc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

} // namespace lcc

#endif // LCC_RUNTIME_SUPPORT_CRC32C_H
