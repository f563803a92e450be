//===- OnnxExport.cpp - trained weights back into the user's ONNX model ----===//
#include "tools/lcc-run/OnnxExport.h"

#ifndef LCC_NO_ONNX_PROTO
#include "frontends/onnx/OnnxTies.h"
#include "frontends/onnx/OnnxTypes.h"
#include "runtime/support/AtomicFile.h"

#include "lcc_onnx.pb.h"
#endif

#include <map>
#include <set>

namespace lcc {

#ifdef LCC_NO_ONNX_PROTO
// The runtime-only build (LCC_RUNTIME_ONLY, for GPU machines) has no protobuf.
Status exportOnnx(const uint8_t *, size_t, const SafetensorsFile &, const std::string &) {
  return Status::failure(
      "this lcc-run was built without protobuf (LCC_RUNTIME_ONLY); use --export (safetensors)");
}
#else
Status exportOnnx(const uint8_t *model, size_t size, const SafetensorsFile &weights,
                  const std::string &path) {
  onnx::ModelProto proto;
  if (!onnx_types::parseWhole(proto, model, size)) {
    return Status::failure("the ONNX model stored in the train.bin does not parse");
  }
  // A split tie the compiler trained as one parameter (OnnxTies.h): the
  // copy is written from the trained table, so the export stays tied.
  std::map<std::string, onnx_types::SplitTie> copies;
  for (const onnx_types::SplitTie &tie :
       onnx_types::findSplitTies(proto.graph(), onnx_types::inlineFloats))
    if (!weights.tensors.count(tie.copy) && weights.tensors.count(tie.table))
      copies.emplace(tie.copy, tie);
  std::map<std::string, HostTensor> derived;
  for (const auto &[copy, tie] : copies) {
    const HostTensor &table = weights.tensors.at(tie.table);
    if (table.elementType() != ElementType::F32 || table.rank() != 2)
      continue;
    int64_t v = table.shape()[0], d = table.shape()[1];
    HostTensor out(ElementType::F32, tie.transposed ? std::vector<int64_t>{d, v} : table.shape());
    for (int64_t i = 0; i < v; ++i)
      for (int64_t j = 0; j < d; ++j)
        out.data<float>()[tie.transposed ? j * v + i : i * d + j] = table.data<float>()[i * d + j];
    derived.emplace(copy, std::move(out));
  }
  std::set<std::string> written;
  for (onnx::TensorProto &init : *proto.mutable_graph()->mutable_initializer()) {
    auto it = weights.tensors.find(init.name());
    auto from = derived.find(init.name());
    if (it == weights.tensors.end() && from == derived.end())
      continue;
    const HostTensor &w = it != weights.tensors.end() ? it->second : from->second;
    std::vector<int64_t> dims(init.dims().begin(), init.dims().end());
    if (init.data_type() != onnx_types::onnxTypeOf(w.elementType()) || dims != w.shape()) {
      return Status::failure("initializer '" + init.name() +
                             "' has another type or shape than the trained "
                             "parameter");
    }
    // Inline raw data replaces typed fields and external references.
    init.clear_float_data();
    init.clear_double_data();
    init.clear_int32_data();
    init.clear_int64_data();
    init.clear_external_data();
    init.clear_data_location();
    init.set_raw_data(std::string(static_cast<const char *>(w.rawData()), w.byteSize()));
    written.insert(init.name());
  }
  // Other initializers stored as external data would point at files next to
  // the original model, not next to the copy.
  for (const onnx::TensorProto &init : proto.graph().initializer())
    if (!written.count(init.name()) && init.data_location() == onnx::TensorProto::EXTERNAL) {
      return Status::failure("initializer '" + init.name() +
                             "' is stored as external data, which the export "
                             "cannot carry yet");
    }
  for (const auto &[name, tensor] : weights.tensors)
    if (!written.count(name)) {
      return Status::failure("the model has no initializer '" + name +
                             "' for the trained parameter");
    }
  std::string bytes;
  if (!proto.SerializeToString(&bytes)) {
    return Status::failure("the exported model is too large for one protobuf file (2 GiB)");
  }
  return writeFileAtomically(path, bytes.data(), bytes.size());
}

#endif

} // namespace lcc
