//===- OnnxTypes.h - ONNX data types <-> lcc element types -------*- C++ -*-===//
//
// Header-only so that lcc-run (runtime only: no LLVM or MLIR) shares it with
// the frontend. Needs the generated lcc_onnx.pb.h (LccOnnxProto).
//
//===----------------------------------------------------------------------===//
#ifndef LCC_FRONTENDS_ONNX_ONNXTYPES_H
#define LCC_FRONTENDS_ONNX_ONNXTYPES_H

#include "runtime/HostTensor.h"

#include "lcc_onnx.pb.h"

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

} // namespace lcc::onnx_types

#endif
