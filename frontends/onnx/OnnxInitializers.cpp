//===- OnnxInitializers.cpp - what an initializer is ----------------------===//
//
// See OnnxInitializers.h.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxInitializers.h"
#include "frontends/onnx/OnnxImporter.h"

#include "lcc_onnx.pb.h"
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cmath>
#include <map>

namespace lcc::onnx_import {

std::vector<std::pair<std::string, std::string>>
newerMetadata(const std::string &unknownFields, int field, llvm::ArrayRef<llvm::StringRef> keys) {
  using google::protobuf::internal::WireFormatLite;
  std::vector<std::pair<std::string, std::string>> entries;
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t *>(unknownFields.data()),
                                            int(unknownFields.size()));
  while (uint32_t tag = in.ReadTag()) {
    if (WireFormatLite::GetTagFieldNumber(tag) != uint32_t(field) ||
        WireFormatLite::GetTagWireType(tag) != WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      if (!WireFormatLite::SkipField(&in, tag))
        break;
      continue;
    }
    uint32_t length = 0;
    std::string bytes;
    onnx::StringStringEntryProto entry;
    if (!in.ReadVarint32(&length) || !in.ReadString(&bytes, int(length)))
      break;
    if (entry.ParseFromString(bytes) && llvm::is_contained(keys, entry.key()))
      entries.emplace_back(entry.key(), entry.value());
  }
  return entries;
}

/// The quoted names of a Python list literal: "['', 'h.3', 'h.3.attn']".
static std::vector<std::string> pythonStrings(llvm::StringRef list) {
  llvm::SmallVector<llvm::StringRef> pieces;
  list.split(pieces, '\'');
  std::vector<std::string> names;
  for (size_t i = 1; i + 1 < pieces.size(); i += 2)
    names.push_back(pieces[i].str());
  return names;
}

/// The dynamo exporter names nodes "node_MatMul_12" and keeps the module
/// path in the node's metadata, `pkg.torch.onnx.name_scopes`; the
/// TorchScript exporter puts it in the node name.
std::string locationName(const onnx::NodeProto &node) {
  std::string name = node.name().empty() ? node.op_type() : node.name();
  for (auto &[key, value] :
       newerMetadata(node.unknown_fields(), kNodeMetadataField, {"pkg.torch.onnx.name_scopes"})) {
    std::string path;
    for (const std::string &scope : pythonStrings(value))
      if (!scope.empty())
        path += "/" + scope;
    if (!path.empty())
      return path + " " + name;
  }
  return name;
}

std::optional<std::set<std::string>>
signatureParameters(const onnx::GraphProto &g, std::map<std::string, std::string> *origins) {
  auto signatures = newerMetadata(g.unknown_fields(), kGraphMetadataField,
                                  {"pkg.torch.export.ExportedProgram.graph_signature"});
  if (signatures.empty())
    return std::nullopt;
  std::set<std::string> targets; // the module's parameters, by their FQN
  for (auto &[key, value] : signatures) {
    // One input per line: "p_h_0_attn_weight: PARAMETER target='h.0.attn.weight'".
    llvm::SmallVector<llvm::StringRef> lines;
    llvm::StringRef(value).split(lines, '\n');
    for (llvm::StringRef line : lines) {
      size_t at = line.find(": PARAMETER target='");
      if (at == llvm::StringRef::npos)
        continue;
      llvm::StringRef rest = line.drop_front(at + llvm::StringRef(": PARAMETER target='").size());
      targets.insert(rest.take_until([](char ch) { return ch == '\''; }).str());
    }
  }
  // A value is a parameter, is marked one, or was folded from one (the
  // optimizer's Transpose of a Linear weight, an embedding's rows at fixed
  // positions). Folded values may name other folded values: iterate.
  std::map<std::string, std::vector<std::string>> foldedFrom;
  auto read = [&](const std::string &name, const std::string &unknown, int field) {
    static const char *kind = "pkg.torch.export.graph_signature.InputSpec.kind",
                      *folded = "pkg.onnxscript.optimizer.folded_from";
    for (auto &[key, value] : newerMetadata(unknown, field, {kind, folded})) {
      if (key == kind && value == "PARAMETER")
        targets.insert(name);
      else if (key == folded)
        foldedFrom[name] = pythonStrings(value);
    }
  };
  for (const onnx::ValueInfoProto &v : g.value_info())
    read(v.name(), v.unknown_fields(), kValueInfoMetadataField);
  for (const onnx::TensorProto &init : g.initializer())
    read(init.name(), init.unknown_fields(), kTensorMetadataField);
  // A signature whose format lcc does not recognize names no parameter:
  // judge the model by the other signals rather than train nothing.
  if (targets.empty())
    return std::nullopt;
  if (origins)
    for (auto &[name, sources] : foldedFrom)
      if (sources.size() == 1 && targets.count(sources[0]))
        (*origins)[name] = sources[0];
  for (bool changed = true; changed;) {
    changed = false;
    for (auto &[name, sources] : foldedFrom)
      if (!targets.count(name) &&
          llvm::any_of(sources, [&](const std::string &s) { return targets.count(s) > 0; })) {
        targets.insert(name);
        changed = true;
      }
  }
  std::set<std::string> parameters;
  for (const onnx::TensorProto &init : g.initializer())
    if (targets.count(init.name()))
      parameters.insert(init.name());
  return parameters;
}

/// Values whose every use is an operand lcc takes at compile time (a shape,
/// an axis, the input of Cos: OpEntry::constantInputs), directly or through
/// nodes all of whose used results are such values. An initializer among
/// them is a buffer, not a weight: RoPE's inv_freq reaches only Cos/Sin
/// through position arithmetic, and as a parameter it could not even be
/// imported. Graph outputs are never among them.
std::set<std::string> compileTimeValues(const onnx::GraphProto &g, int64_t opset) {
  std::set<std::string> outputs;
  for (const onnx::ValueInfoProto &out : g.output())
    outputs.insert(out.name());
  // Per value used so far: whether all its uses are compile-time ones.
  // Nodes are in topological order, so walking them backwards sees every
  // use of a node's results before the node itself.
  std::map<std::string, bool> onlyCompileTime;
  for (int n = g.node_size() - 1; n >= 0; --n) {
    const onnx::NodeProto &node = g.node(n);
    // A dead node's results are used nowhere: not a compile-time use.
    bool used = false, results = true;
    for (const std::string &out : node.output()) {
      auto it = onlyCompileTime.find(out);
      used = used || outputs.count(out) || it != onlyCompileTime.end();
      if (outputs.count(out) || (it != onlyCompileTime.end() && !it->second))
        results = false;
    }
    results = results && used;
    for (int i = 0; i < node.input_size(); ++i) {
      if (node.input(i).empty())
        continue;
      bool use = results || isConstantOperand(node.op_type(), opset, unsigned(i));
      auto [it, fresh] = onlyCompileTime.try_emplace(node.input(i), use);
      if (!fresh)
        it->second = it->second && use;
    }
  }
  std::set<std::string> values;
  for (const auto &[name, only] : onlyCompileTime)
    if (only && !outputs.count(name))
      values.insert(name);
  return values;
}

/// RoPE's cos and sin tables, when an exporter folded them into initializers
/// (the dynamo exporter's static-shape exports): two float tensors of one
/// shape, neither constant (positions differ), with cos^2 + sin^2 = 1 at
/// every element, which no pair of trained weights satisfies. (A fresh
/// LayerNorm's ones and zeros do, but are constant.)
std::vector<std::pair<size_t, size_t>>
ropeTablePairs(const std::vector<std::pair<std::string, HostTensor>> &parameters) {
  auto varies = [](const HostTensor &t) {
    for (int64_t i = 1; i < t.numElements(); ++i)
      if (t.getDouble(i) != t.getDouble(0))
        return true;
    return false;
  };
  std::map<std::vector<int64_t>, std::vector<size_t>> byShape;
  for (size_t i = 0; i < parameters.size(); ++i)
    if (varies(parameters[i].second))
      byShape[parameters[i].second.shape()].push_back(i);
  std::vector<std::pair<size_t, size_t>> pairs;
  for (const auto &entry : byShape) {
    const std::vector<size_t> &group = entry.second;
    for (size_t x = 0; x < group.size(); ++x)
      for (size_t y = x + 1; y < group.size(); ++y) {
        const HostTensor &a = parameters[group[x]].second, &c = parameters[group[y]].second;
        bool unit = true;
        for (int64_t i = 0; i < a.numElements() && unit; ++i) {
          double u = a.getDouble(i), v = c.getDouble(i);
          unit = std::fabs(u * u + v * v - 1.0) <= 1e-5;
        }
        if (unit) {
          pairs.push_back({group[x], group[y]});
          pairs.push_back({group[y], group[x]});
        }
      }
  }
  return pairs;
}

/// One parameter used alike (same op) by several modules: exporters merge
/// initializers with equal values (the dynamo exporter's optimizer does,
/// and a fresh model's norm weights are all ones), which trains them as one
/// shared weight. Intended sharing looks the same, so this is a warning.
std::vector<std::string>
mergedParameterWarnings(const onnx::GraphProto &g,
                        const std::vector<std::pair<std::string, HostTensor>> &parameters) {
  std::map<std::string, std::pair<std::set<std::string>, std::set<std::string>>> uses;
  std::set<std::string> trained;
  for (auto &p : parameters)
    trained.insert(p.first);
  for (const onnx::NodeProto &node : g.node())
    for (const std::string &in : node.input())
      if (trained.count(in)) {
        // "/h.3/h.3.attn/MatMul" (TorchScript) or "/h.3/h.3.ln_1/layer_norm
        // node_x" (dynamo): the module path without its last piece, the op.
        std::string where = locationName(node);
        where = where.substr(0, where.find(' '));
        std::string scope = where.substr(0, std::min(where.size(), where.rfind('/')));
        uses[in].first.insert(scope);
        uses[in].second.insert(node.op_type());
      }
  std::vector<std::string> warnings;
  auto listed = [](const std::vector<std::string> &names) {
    std::string list;
    for (size_t i = 0; i < names.size() && i < 4; ++i)
      list += (i ? ", '" : "'") + names[i] + "'";
    if (names.size() > 4)
      list += " and " + std::to_string(names.size() - 4) + " more";
    return list;
  };
  // TorchScript's export in eval mode (the default) deduplicates
  // initializers with equal values: each duplicate becomes an Identity of
  // the one kept, so every layer's fresh LayerNorm weight is one tensor.
  std::map<std::string, std::string> rootOf;
  for (const onnx::NodeProto &node : g.node())
    if (node.op_type() == "Identity" && node.input_size() == 1 && node.output_size() == 1) {
      auto it = rootOf.find(node.input(0));
      std::string root = it != rootOf.end() ? it->second : node.input(0);
      if (trained.count(root))
        rootOf[node.output(0)] = root;
    }
  std::map<std::string, std::vector<std::string>> aliases;
  for (auto &[alias, root] : rootOf)
    aliases[root].push_back(alias);
  for (auto &[root, names] : aliases)
    warnings.push_back("warning: " + listed(names) +
                       (names.size() > 1 ? " are Identity copies" : " is an Identity copy") +
                       " of '" + root +
                       "', trained as one parameter with it: the exporter merged "
                       "initializers with equal values (torch.onnx.export in eval mode "
                       "deduplicates them), unlike the PyTorch module; re-export with "
                       "training=torch.onnx.TrainingMode.TRAINING unless they are meant to be "
                       "shared");
  // Constant folding (TorchScript's do_constant_folding=True, the dynamo
  // exporter's optimize=True) replaces a Linear weight by its transpose
  // under a name of its own, which checkpoints and exports then carry.
  std::vector<std::string> renamed;
  for (auto &p : parameters) {
    llvm::StringRef name = p.first;
    if (name.starts_with("onnx::") ||
        (name.consume_front("val_") && !name.empty() &&
         llvm::all_of(name, [](char c) { return c >= '0' && c <= '9'; })))
      renamed.push_back(p.first);
  }
  if (!renamed.empty())
    warnings.push_back("warning: " + listed(renamed) +
                       (renamed.size() > 1 ? " are weights" : " is a weight") +
                       " the exporter renamed (constant folding stored a transposed copy): "
                       "checkpoints and exports carry these names and layouts, not the "
                       "module's; re-export with do_constant_folding=False (TorchScript) or "
                       "optimize=False (dynamo) to keep them");
  for (auto &[name, use] : uses) {
    const auto &[scopes, ops] = use;
    if (scopes.size() < 2 || ops.size() != 1 || scopes.count(""))
      continue;
    std::string list;
    for (const std::string &scope : scopes)
      list += (list.empty() ? "" : ", ") + scope;
    warnings.push_back("warning: '" + name + "' is used alike by " +
                       std::to_string(scopes.size()) + " modules (" + list +
                       ") and trains as one shared parameter; exporters merge initializers "
                       "with equal values (torch.onnx.export(dynamo=True) with optimize=True "
                       "does, e.g. a fresh model's norm weights): re-export with "
                       "optimize=False unless they are meant to be shared");
  }
  return warnings;
}

} // namespace lcc::onnx_import
