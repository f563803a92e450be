//===- OnnxModel.cpp - reading ONNX files through onnx.proto --------------===//
#include "frontends/onnx/OnnxModel.h"

#include "frontends/onnx/OnnxTypes.h"
#include "lcc_onnx.pb.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cstring>
#include <functional>
#include <map>
#include <set>

namespace lcc::onnx_import {

llvm::Error onnxError(const std::string &prefix, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 prefix + ": error: " + message.str());
}

std::optional<ElementType> elementTypeOf(int32_t onnxType) {
  return onnx_types::elementTypeOf(onnxType);
}

int32_t onnxTypeOf(ElementType type) { return onnx_types::onnxTypeOf(type); }

std::string onnxTypeName(int32_t onnxType) {
  if (onnx::TensorProto::DataType_IsValid(onnxType))
    return llvm::StringRef(onnx::TensorProto::DataType_Name(
                               static_cast<onnx::TensorProto::DataType>(onnxType)))
        .lower();
  return "data type " + std::to_string(onnxType);
}

namespace {

constexpr int kMaxInlinedNodes = 10000000;

/// Replaces every call of a model-local function (the dynamo exporter wraps
/// ops such as layer_norm in them) by the function's nodes: formal inputs and
/// outputs become the call's values, internal values get a prefix unique to
/// the call, and attributes referring to the caller's (ref_attr_name) take
/// the caller's value or are dropped (the op's default applies).
llvm::Error inlineFunctions(onnx::ModelProto &m, const std::string &path) {
  if (m.functions_size() == 0)
    return llvm::Error::success();
  std::map<std::pair<std::string, std::string>, const onnx::FunctionProto *> functions;
  for (const onnx::FunctionProto &f : m.functions())
    functions[{f.domain(), f.name()}] = &f;
  int calls = 0;
  std::function<llvm::Error(const onnx::NodeProto &, int,
                            google::protobuf::RepeatedPtrField<onnx::NodeProto> &)>
      expand = [&](const onnx::NodeProto &node, int depth,
                   google::protobuf::RepeatedPtrField<onnx::NodeProto> &out) -> llvm::Error {
    auto it = functions.find({node.domain(), node.op_type()});
    if (it == functions.end()) {
      *out.Add() = node;
      return llvm::Error::success();
    }
    if (depth > 16)
      return onnxError(path, "model-local function '" + node.op_type() +
                                 "' calls itself (more than 16 levels deep)");
    const onnx::FunctionProto &f = *it->second;
    // Overloads and attribute defaults (IR 9 and 10) are not in the schema
    // lcc reads (IR 8): refuse rather than pick a wrong body or default.
    if (!f.unknown_fields().empty() || !node.unknown_fields().empty())
      return onnxError(path, "model-local function '" + f.name() +
                                 "' uses overloads or attribute defaults (ONNX IR 9+), which "
                                 "lcc does not read yet");
    std::string prefix = "__" + f.name() + "_" + std::to_string(calls++) + "/";
    std::map<std::string, std::string> rename;
    for (int i = 0; i < f.input_size(); ++i)
      rename[f.input(i)] = i < node.input_size() ? node.input(i) : "";
    // An output the caller leaves out stays a value inside the body (nodes
    // there may read it); only inputs can be absent.
    for (int i = 0; i < f.output_size(); ++i)
      rename[f.output(i)] =
          i < node.output_size() && !node.output(i).empty() ? node.output(i) : prefix + f.output(i);
    auto name = [&](const std::string &v) {
      if (v.empty())
        return v;
      auto r = rename.find(v);
      return r != rename.end() ? r->second : prefix + v;
    };
    for (const onnx::NodeProto &inner : f.node()) {
      onnx::NodeProto copy = inner;
      for (std::string &v : *copy.mutable_input())
        v = name(v);
      for (std::string &v : *copy.mutable_output())
        v = name(v);
      copy.set_name(prefix + inner.name());
      google::protobuf::RepeatedPtrField<onnx::AttributeProto> attrs;
      for (const onnx::AttributeProto &a : inner.attribute()) {
        if (a.ref_attr_name().empty()) {
          *attrs.Add() = a;
          continue;
        }
        for (const onnx::AttributeProto &given : node.attribute())
          if (given.name() == a.ref_attr_name()) {
            onnx::AttributeProto *b = attrs.Add();
            *b = given;
            b->set_name(a.name());
          }
      }
      *copy.mutable_attribute() = attrs;
      if (out.size() > kMaxInlinedNodes)
        return onnxError(path, "inlining model-local functions gives more than " +
                                   llvm::Twine(kMaxInlinedNodes) + " nodes");
      if (llvm::Error e = expand(copy, depth + 1, out))
        return e;
    }
    return llvm::Error::success();
  };
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (const onnx::NodeProto &node : m.graph().node())
    if (llvm::Error e = expand(node, 0, nodes))
      return e;
  *m.mutable_graph()->mutable_node() = std::move(nodes);
  return llvm::Error::success();
}

} // namespace

llvm::Expected<OnnxModel> parseOnnxModel(llvm::StringRef bytes, const std::string &path) {
  OnnxModel model;
  model.path = path;
  llvm::SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  model.dir = dir.empty() ? "." : std::string(dir);
  model.proto = std::make_shared<onnx::ModelProto>();
  if (bytes.empty())
    return onnxError(path, "the file is empty, not an ONNX model");
  if (!onnx_types::parseWhole(*model.proto, bytes.data(), bytes.size()))
    return onnxError(path, "not a valid ONNX model: the protobuf data is malformed or "
                           "truncated");
  const onnx::ModelProto &m = *model.proto;
  if (!m.has_graph())
    return onnxError(path, "the model has no graph");
  bool haveDefault = false;
  std::set<std::string> domains;
  for (const onnx::OperatorSetIdProto &set : m.opset_import()) {
    if (set.domain().empty() || set.domain() == "ai.onnx") {
      haveDefault = true;
      model.opset = set.version();
    }
    domains.insert(set.domain());
  }
  if (!haveDefault)
    return onnxError(path, "the model imports no opset of the default ONNX domain");
  if (llvm::Error e = inlineFunctions(*model.proto, path))
    return std::move(e);
  if (model.opset < kMinOpset || model.opset > kMaxOpset)
    return onnxError(path, "opset " + llvm::Twine(model.opset) +
                               " is not supported; lcc imports opsets " +
                               llvm::Twine(kMinOpset) + " to " + llvm::Twine(kMaxOpset));
  return model;
}

llvm::Expected<OnnxModel> loadOnnxModel(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return onnxError(path, "cannot read the file: " + buffer.getError().message());
  return parseOnnxModel((*buffer)->getBuffer(), path);
}

namespace {
/// Copies `count` typed values into `t` converting to its element type.
template <typename Field>
void fillFrom(HostTensor &t, const Field &field) {
  for (int64_t i = 0; i < t.numElements(); ++i) {
    if (t.elementType() == ElementType::I64)
      t.data<int64_t>()[i] = int64_t(field.Get(int(i)));
    else
      t.setDouble(i, double(field.Get(int(i))));
  }
}

/// The bytes of an external-data tensor: location (relative to the model,
/// inside its directory), offset, length.
llvm::Expected<std::string> readExternal(const onnx::TensorProto &tensor, const std::string &dir,
                                         const std::string &what) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const onnx::StringStringEntryProto &e : tensor.external_data()) {
    if (e.key() == "location")
      location = e.value();
    else if ((e.key() == "offset" || e.key() == "length")) {
      long long v;
      if (!llvm::to_integer(e.value(), v, 10) || v < 0)
        return onnxError(what, "external data " + e.key() + " '" + e.value() +
                                   "' is not a non-negative integer");
      (e.key() == "offset" ? offset : length) = v;
    }
  }
  if (location.empty())
    return onnxError(what, "external data without a location");
  // As ONNX Runtime does: the file must stay inside the model's directory.
  if (llvm::sys::path::is_absolute(location) || llvm::StringRef(location).contains(".."))
    return onnxError(what, "external data location '" + location +
                               "' must be a relative path inside the model's directory");
  llvm::SmallString<256> file(dir);
  llvm::sys::path::append(file, location);
  auto buffer = llvm::MemoryBuffer::getFile(file, false, false);
  if (!buffer)
    return onnxError(what, "cannot read external data '" + std::string(file) +
                               "': " + buffer.getError().message());
  llvm::StringRef all = (*buffer)->getBuffer();
  if (uint64_t(offset) > all.size() ||
      (length >= 0 && uint64_t(offset) + uint64_t(length) > all.size()))
    return onnxError(what, "external data '" + location + "' is " + llvm::Twine(all.size()) +
                               " bytes, shorter than offset + length");
  return all.substr(offset, length < 0 ? llvm::StringRef::npos : size_t(length)).str();
}
} // namespace

llvm::Expected<HostTensor> tensorFromProto(const onnx::TensorProto &tensor,
                                           const std::string &dir, const std::string &what) {
  std::optional<ElementType> type = elementTypeOf(tensor.data_type());
  if (!type)
    return onnxError(what, "element type " + onnxTypeName(tensor.data_type()) +
                               " is not supported (lcc has float, double, int32, int64 "
                               "and bool tensors)");
  std::vector<int64_t> shape(tensor.dims().begin(), tensor.dims().end());
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && n > (int64_t(1) << 40) / d))
      return onnxError(what, "invalid dimensions");
    n *= d;
  }
  // Nothing is allocated before the data is known to be there (a corrupt
  // file may declare any shape).
  size_t bytes = size_t(n) * elementSize(*type);
  std::string external;
  const std::string *raw = nullptr;
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    auto data = readExternal(tensor, dir, what);
    if (!data)
      return data.takeError();
    external = std::move(*data);
    raw = &external;
  } else if (tensor.has_raw_data()) {
    raw = &tensor.raw_data();
  }
  if (raw) {
    if (raw->size() != bytes)
      return onnxError(what, "holds " + llvm::Twine(raw->size()) + " bytes of data, but " +
                                 llvm::Twine(bytes) + " are needed for its shape");
    HostTensor t(*type, shape);
    if (!raw->empty()) // (an empty tensor's buffer may be null)
      std::memcpy(t.rawData(), raw->data(), raw->size());
    if (*type == ElementType::I1)
      for (int64_t i = 0; i < n; ++i)
        static_cast<uint8_t *>(t.rawData())[i] = static_cast<uint8_t *>(t.rawData())[i] != 0;
    return t;
  }
  int64_t have = -1;
  switch (*type) {
  case ElementType::F32:
    have = tensor.float_data_size();
    break;
  case ElementType::F64:
    have = tensor.double_data_size();
    break;
  case ElementType::I64:
    have = tensor.int64_data_size();
    break;
  case ElementType::I32:
  case ElementType::I1: // bool values travel in int32_data
    have = tensor.int32_data_size();
    break;
  }
  if (have != n)
    return onnxError(what, "holds " + llvm::Twine(have) + " values, but its shape has " +
                               llvm::Twine(n));
  HostTensor t(*type, shape);
  switch (*type) {
  case ElementType::F32:
    fillFrom(t, tensor.float_data());
    break;
  case ElementType::F64:
    fillFrom(t, tensor.double_data());
    break;
  case ElementType::I64:
    fillFrom(t, tensor.int64_data());
    break;
  case ElementType::I32:
  case ElementType::I1:
    fillFrom(t, tensor.int32_data());
    break;
  }
  return t;
}

llvm::Expected<HostTensor> loadTensorFile(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, false, false);
  if (!buffer)
    return onnxError(path, "cannot read the file: " + buffer.getError().message());
  onnx::TensorProto tensor;
  if (!onnx_types::parseWhole(tensor, (*buffer)->getBufferStart(), (*buffer)->getBufferSize()))
    return onnxError(path, "not a valid serialized ONNX TensorProto");
  llvm::SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  return tensorFromProto(tensor, std::string(dir), path);
}

} // namespace lcc::onnx_import
