//===- OnnxTies.h - tied embeddings an exporter split in two ------*- C++ -*-===//
//
// PyTorch ties GPT-2's (and Qwen2's, ...) token embedding and LM head: one
// tensor. The dynamo exporter writes it as two initializers, the Gather's
// table [V, D] and a transposed copy [D, V] for the logits MatMul; trained
// apart they are a different model. The importer trains such a pair as one
// parameter (the copy becomes a transpose of the table) and lcc-run's
// --export-onnx writes the copy back from the trained table.
//
// Header-only, on the protobuf classes alone, so that lcc-run (no MLIR)
// finds the same pairs as the importer.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_FRONTENDS_ONNX_ONNXTIES_H
#define LCC_FRONTENDS_ONNX_ONNXTIES_H

#include "lcc_onnx.pb.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lcc::onnx_types {

struct SplitTie {
  std::string table; // the Gather's data, [V, D]
  std::string copy;  // MatMul/Gemm's second operand: the table, transposed ([D, V]) or not
  bool transposed = true;
};

/// Pairs (Gather table, MatMul/Gemm weight) of float rank-2 initializers
/// whose values are those of one tensor, bit for bit. `values(init)` gives
/// an initializer's floats (std::nullopt when they cannot be read).
/// Structure first, so only embedding/logit candidates are compared.
template <typename Values>
std::vector<SplitTie> findSplitTies(const onnx::GraphProto &g, Values values) {
  std::map<std::string, const onnx::TensorProto *> inits;
  for (const onnx::TensorProto &t : g.initializer())
    if (t.data_type() == onnx::TensorProto::FLOAT && t.dims_size() == 2)
      inits[t.name()] = &t;
  std::vector<const onnx::TensorProto *> tables, weights;
  auto note = [&](std::vector<const onnx::TensorProto *> &into, const std::string &name) {
    auto it = inits.find(name);
    if (it != inits.end() && std::find(into.begin(), into.end(), it->second) == into.end())
      into.push_back(it->second);
  };
  for (const onnx::NodeProto &n : g.node()) {
    if (n.op_type() == "Gather" && n.input_size() >= 1)
      note(tables, n.input(0));
    if ((n.op_type() == "MatMul" || n.op_type() == "Gemm") && n.input_size() >= 2)
      note(weights, n.input(1));
  }
  std::vector<SplitTie> ties;
  for (const onnx::TensorProto *a : tables) {
    std::optional<std::optional<std::vector<float>>> x; // read once, when needed
    for (const onnx::TensorProto *b : weights) {
      int64_t v = a->dims(0), d = a->dims(1);
      bool transposed = b->dims(0) == d && b->dims(1) == v;
      bool same = b->dims(0) == v && b->dims(1) == d;
      if (a == b || !(transposed || same))
        continue;
      if (!x)
        x = values(*a);
      const std::optional<std::vector<float>> &table = *x;
      std::optional<std::vector<float>> y = values(*b);
      if (!table || !y || int64_t(table->size()) != v * d || y->size() != table->size())
        continue;
      bool equal = true;
      for (int64_t i = 0; i < v && equal; ++i)
        for (int64_t j = 0; j < d && equal; ++j)
          equal = std::memcmp(&(*table)[size_t(i * d + j)],
                              &(*y)[size_t(transposed ? j * v + i : i * d + j)],
                              sizeof(float)) == 0;
      if (equal)
        ties.push_back({a->name(), b->name(), transposed});
    }
  }
  return ties;
}

/// An initializer's floats when they are in the file (raw_data or
/// float_data); std::nullopt for external data.
inline std::optional<std::vector<float>> inlineFloats(const onnx::TensorProto &t) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    return std::nullopt;
  if (t.has_raw_data()) {
    std::vector<float> out(t.raw_data().size() / sizeof(float));
    std::memcpy(out.data(), t.raw_data().data(), out.size() * sizeof(float));
    return out;
  }
  return std::vector<float>(t.float_data().begin(), t.float_data().end());
}

} // namespace lcc::onnx_types

#endif
