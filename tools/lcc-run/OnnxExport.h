//===- OnnxExport.h - trained weights back into the user's ONNX model -*- C++ -*-===//
//
// `lcc-run --export-onnx OUT.onnx`: the train.bin of an ONNX model carries the
// original model (section "onnx", written by lcc); its initializers that are
// parameters get the trained values (raw_data, inline), everything else stays
// as it was, so ONNX Runtime and other engines load the result directly.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_TOOLS_LCC_RUN_ONNXEXPORT_H
#define LCC_TOOLS_LCC_RUN_ONNXEXPORT_H

#include "runtime/support/Safetensors.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace lcc {

/// Writes `model` (a serialized ModelProto) with the initializers named in
/// `weights` replaced, atomically to `path`. Every weight must match an
/// initializer of the same element type and shape. False with a one-line
/// `error` otherwise.
Status exportOnnx(const uint8_t *model, size_t size, const SafetensorsFile &weights,
                  const std::string &path);

} // namespace lcc

#endif
