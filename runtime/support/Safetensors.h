//===- Safetensors.h - read and write .safetensors files --------*- C++ -*-===//
//
// The safetensors format (Hugging Face): an 8-byte little-endian header
// length N, N bytes of JSON
//   {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]},
//    ..., "__metadata__": {"key": "value", ...}}
// then the raw little-endian tensor bytes; offsets are relative to the byte
// after the header. lcc uses it for checkpoints and for reference data from
// PyTorch (test/fixtures/torch).
//
// Part of the runtime, so no MLIR/LLVM: the header JSON is read by a small
// hand-written parser that checks every bound. A malformed file gives an
// error string naming what is wrong, never a crash or an exception.
//
// Supported dtypes: F32, F64, I32, I64 and BOOL (lcc's I1). F16 and BF16
// are read widened to F32 (exactly) when `widenHalf` is set, as Hugging Face
// checkpoints need; other valid dtypes (F8, I8, ...) are an error naming the
// dtype.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_SAFETENSORS_H
#define LCC_RUNTIME_SAFETENSORS_H

#include "runtime/support/Status.h"

#include "runtime/support/HostTensor.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace lcc {

/// The contents of a safetensors file. Tensors are kept by name (sorted, as
/// the header is a JSON object: the file has no order).
struct SafetensorsFile {
  std::map<std::string, HostTensor> tensors;
  std::map<std::string, std::string> metadata;
};

/// Parses an in-memory file. On failure `out` is left empty.
Status parseSafetensors(const uint8_t *data, size_t size, SafetensorsFile &out,
                        bool widenHalf = false);

/// Reads `path`. Errors are prefixed with the path.
Status readSafetensors(const std::string &path, SafetensorsFile &out, bool widenHalf = false);

/// The bytes of a file holding `file` (tensors in name order, packed, the
/// header padded with spaces to a multiple of 8 bytes as the reference
/// implementation does, so data stays aligned).
Status serializeSafetensors(const SafetensorsFile &file, std::vector<uint8_t> &out);

/// Writes `file` to `path` atomically: a temporary file in the same
/// directory, fsync, rename over `path`, fsync of the directory. A crash
/// leaves either the old file or the new one, never a partial one.
Status writeSafetensors(const std::string &path, const SafetensorsFile &file);

} // namespace lcc

#endif // LCC_RUNTIME_SAFETENSORS_H
