//===- OnnxModel.h - reading ONNX files through onnx.proto ------*- C++ -*-===//
//
// The protobuf side of the ONNX frontend: models (with external-data
// initializers), tensors (raw_data, the typed *_data fields, external files)
// and the .pb tensor files of the ONNX backend tests. Every failure is an
// llvm::Error whose message is one line, "FILE: error: WHAT, WHY", ready for
// the user (lcc exits 2 on it).
//
//===----------------------------------------------------------------------===//
#ifndef LCC_FRONTENDS_ONNX_ONNXMODEL_H
#define LCC_FRONTENDS_ONNX_ONNXMODEL_H

#include "runtime/support/HostTensor.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace onnx {
class ModelProto;
class TensorProto;
class TypeProto;
} // namespace onnx

namespace lcc::onnx_import {

/// A parsed model and where it came from (external data is relative to `dir`).
struct OnnxModel {
  std::shared_ptr<onnx::ModelProto> proto;
  std::string path;
  std::string dir;
  /// Opset of the default ("" / "ai.onnx") domain.
  int64_t opset = 0;
};

/// Opsets the importer knows (TorchScript exporter 14-17, dynamo 18+).
constexpr int64_t kMinOpset = 7;
constexpr int64_t kMaxOpset = 22;

/// Reads and checks a model file: protobuf well-formed, a graph, an opset for
/// the default domain within [kMinOpset, kMaxOpset], no other domains used by
/// nodes.
llvm::Expected<OnnxModel> loadOnnxModel(const std::string &path);
/// The same from bytes already in memory (`path` names them in messages).
llvm::Expected<OnnxModel> parseOnnxModel(llvm::StringRef bytes, const std::string &path);

/// The lcc element type of an ONNX TensorProto.DataType, if lcc has one.
std::optional<ElementType> elementTypeOf(int32_t onnxType);
/// "float", "int64", "float16"... for messages.
std::string onnxTypeName(int32_t onnxType);
/// The ONNX DataType of an lcc element type.
int32_t onnxTypeOf(ElementType type);

/// A TensorProto's value: raw_data, typed fields or external data (`dir` is
/// the model's directory). `what` names the tensor in messages.
llvm::Expected<HostTensor> tensorFromProto(const onnx::TensorProto &tensor,
                                           const std::string &dir, const std::string &what);
/// A serialized TensorProto file (the backend tests' input_N.pb / output_N.pb).
llvm::Expected<HostTensor> loadTensorFile(const std::string &path);

/// An error "PREFIX: error: MESSAGE".
llvm::Error onnxError(const std::string &prefix, const llvm::Twine &message);

} // namespace lcc::onnx_import

#endif
