//===- OnnxTypes.h - ONNX data types <-> lcc element types -------*- C++ -*-===//
//
// Header-only so that lcc-run (runtime only: no LLVM or MLIR) shares it with
// the frontend: element types, and parsing a message of up to 2 GiB. Needs
// the generated lcc_onnx.pb.h (LccOnnxProto).
//
//===----------------------------------------------------------------------===//
#ifndef LCC_FRONTENDS_ONNX_ONNXTYPES_H
#define LCC_FRONTENDS_ONNX_ONNXTYPES_H

#include "runtime/support/HostTensor.h"

#include "lcc_onnx.pb.h"

#include <google/protobuf/io/coded_stream.h>

#include <climits>
#include <cstddef>
#include <optional>

namespace lcc::onnx_types {

/// The lcc element type of an ONNX TensorProto.DataType, if lcc has one.
inline std::optional<ElementType> elementTypeOf(int32_t onnxType) {
  switch (onnxType) {
  case onnx::TensorProto::FLOAT:
    return ElementType::F32;
  case onnx::TensorProto::DOUBLE:
    return ElementType::F64;
  case onnx::TensorProto::INT32:
    return ElementType::I32;
  case onnx::TensorProto::INT64:
    return ElementType::I64;
  case onnx::TensorProto::BOOL:
    return ElementType::I1;
  default:
    return std::nullopt;
  }
}

/// The ONNX DataType of an lcc element type.
inline int32_t onnxTypeOf(ElementType type) {
  switch (type) {
  case ElementType::F32:
    return onnx::TensorProto::FLOAT;
  case ElementType::F64:
    return onnx::TensorProto::DOUBLE;
  case ElementType::I32:
    return onnx::TensorProto::INT32;
  case ElementType::I64:
    return onnx::TensorProto::INT64;
  case ElementType::I1:
    return onnx::TensorProto::BOOL;
  }
  return onnx::TensorProto::UNDEFINED;
}

/// Parses a whole message of up to 2 GiB (protobuf refuses more than 64 MiB
/// by default; ONNX models up to 2 GiB are legal, larger ones use external
/// data). False when the bytes are malformed, truncated or too many.
inline bool parseWhole(google::protobuf::MessageLite &message, const void *data, size_t size) {
  if (size > size_t(INT_MAX))
    return false;
  google::protobuf::io::CodedInputStream in(static_cast<const uint8_t *>(data), int(size));
  in.SetTotalBytesLimit(INT_MAX);
  return message.ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
}

} // namespace lcc::onnx_types

#endif
