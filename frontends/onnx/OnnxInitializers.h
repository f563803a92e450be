//===- OnnxInitializers.h - what an initializer is (internal) ---*- C++ -*-===//
//
// The importer trains float initializers of rank >= 1 unless they are
// buffers or copies; these are the graph-level signals it decides by
// (docs/onnx.md, "Initializers"). Ties are in OnnxTies.h (shared with
// lcc-run).
//
//===----------------------------------------------------------------------===//
#ifndef LCC_FRONTENDS_ONNX_ONNXINITIALIZERS_H
#define LCC_FRONTENDS_ONNX_ONNXINITIALIZERS_H

#include "runtime/support/HostTensor.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace onnx {
class GraphProto;
class NodeProto;
} // namespace onnx

namespace lcc::onnx_import {

/// Field numbers of `metadata_props` (StringStringEntryProto) in onnx.proto
/// IR 10, newer than the onnx.proto lcc compiles against (Debian's, IR 8):
/// protobuf keeps them as unknown fields, which newerMetadata reads.
constexpr int kNodeMetadataField = 9, kValueInfoMetadataField = 4, kGraphMetadataField = 16,
              kTensorMetadataField = 16;

/// The (key, value) metadata entries with one of `keys` in field `field`
/// of a message's unknown fields (`message.unknown_fields()`); other entries
/// (a node's stack trace, kilobytes) are not copied.
std::vector<std::pair<std::string, std::string>>
newerMetadata(const std::string &unknownFields, int field, llvm::ArrayRef<llvm::StringRef> keys);

/// The initializers the exporter records as a module parameter or as folded
/// from one: torch.onnx.export(dynamo=True) keeps torch.export's graph
/// signature in the graph's metadata ("NAME: PARAMETER target='FQN'" per
/// input), marks parameter initializers `...InputSpec.kind` = PARAMETER and
/// each initializer its optimizer folded with `pkg.onnxscript.optimizer.
/// folded_from` (the values it came from). Every other float initializer
/// of such a model is a constant the exporter made (a mask, a scale, the
/// ones of a LayerNorm without weight). std::nullopt when the model has no
/// signature (TorchScript exports, other producers). `origins`, if given,
/// gets the initializers folded from exactly one module parameter, with its
/// name (the optimizer's transposed copy of a Linear weight: lcc --hf-config
/// maps it back).
std::optional<std::set<std::string>>
signatureParameters(const onnx::GraphProto &g,
                    std::map<std::string, std::string> *origins = nullptr);

/// The module path a node's ops are named after (their NameLoc):
/// "/transformer/h.3/attn/MatMul" (TorchScript) or "/h.3/h.3.attn... NAME"
/// (dynamo `pkg.torch.onnx.name_scopes`).
std::string locationName(const onnx::NodeProto &node);

/// Values whose every use is an operand lcc takes at compile time, directly
/// or through nodes all of whose used results are such values.
std::set<std::string> compileTimeValues(const onnx::GraphProto &g, int64_t opset);

/// RoPE cos/sin tables among `parameters`: (table, its partner) for each,
/// both ways round.
std::vector<std::pair<size_t, size_t>>
ropeTablePairs(const std::vector<std::pair<std::string, HostTensor>> &parameters);

/// Warnings about parameters an exporter changed, so that training them
/// trains another model than the PyTorch module: one used by the same op
/// from several modules or exported as Identity copies under other names
/// (initializers merged for equal values), and weights under names the
/// exporter made (onnx::MatMul_264, val_42: folded transposed copies).
std::vector<std::string>
mergedParameterWarnings(const onnx::GraphProto &g,
                        const std::vector<std::pair<std::string, HostTensor>> &parameters);

} // namespace lcc::onnx_import

#endif
