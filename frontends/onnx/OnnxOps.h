//===- OnnxOps.h - per-op import handlers (internal) ------------*- C++ -*-===//
//
// What an op handler sees (NodeCtx) and how handlers are registered. A handler
// reads its inputs either as compile-time constants (HostTensor) or as lcc
// tensors (mlir::Value, materializing constants on demand), and sets each
// output to one or the other. Handlers whose inputs are all constants compute
// on the host, which is how shape subgraphs fold away.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_FRONTENDS_ONNX_ONNXOPS_H
#define LCC_FRONTENDS_ONNX_ONNXOPS_H

#include "frontends/onnx/OnnxImporter.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include <functional>
#include <optional>

namespace onnx {
class NodeProto;
class AttributeProto;
} // namespace onnx

namespace lcc::onnx_import {

/// An ONNX value during import: a compile-time constant, an lcc tensor, or both.
struct ImportedValue {
  std::optional<HostTensor> constant;
  mlir::Value tensor;
};

class NodeCtx {
public:
  NodeCtx(const onnx::NodeProto &node, const OnnxModel &model, mlir::OpBuilder &b,
          mlir::Location loc, std::vector<ImportedValue *> inputs, const std::string &where)
      : node(node), model(model), b(b), loc(loc), inputs(std::move(inputs)), where(where) {}

  const onnx::NodeProto &node;
  const OnnxModel &model;
  mlir::OpBuilder &b;
  mlir::Location loc;

  unsigned numInputs() const { return unsigned(inputs.size()); }
  /// Optional inputs may be absent ("" in the node, or past the end).
  bool has(unsigned i) const { return i < inputs.size() && inputs[i]; }
  bool isConstant(unsigned i) const { return has(i) && inputs[i]->constant.has_value(); }
  bool allConstant() const;
  /// Input i as a constant, or an error saying it must be one.
  llvm::Expected<const HostTensor *> constant(unsigned i, const char *what);
  /// Input i, known to be a constant (isConstant(i)).
  const HostTensor &known(unsigned i) const { return *inputs[i]->constant; }
  /// Input i as an lcc tensor (constants become lcc.constant once).
  mlir::Value tensor(unsigned i);
  /// The static type of input i (a constant's too).
  mlir::RankedTensorType type(unsigned i) const;
  std::vector<int64_t> shape(unsigned i) const;

  // Attributes.
  const onnx::AttributeProto *attr(const char *name) const;
  int64_t attrInt(const char *name, int64_t otherwise) const;
  double attrFloat(const char *name, double otherwise) const;
  std::string attrString(const char *name, const std::string &otherwise) const;
  std::optional<std::vector<int64_t>> attrInts(const char *name) const;

  // Outputs.
  unsigned numOutputs() const;
  /// Whether output i is named (used) in the graph.
  bool wantsOutput(unsigned i) const;
  void setOutput(unsigned i, mlir::Value v) { outputs.resize(std::max<size_t>(outputs.size(), i + 1)); outputs[i].tensor = v; }
  void setOutput(unsigned i, HostTensor t) {
    outputs.resize(std::max<size_t>(outputs.size(), i + 1));
    outputs[i].constant = std::move(t);
  }
  std::vector<ImportedValue> outputs;

  /// A shape the node may create: dimensions >= 0 and, for a constant
  /// folded on the host (`host`), at most kMaxFoldElements elements.
  llvm::Error checkShape(llvm::ArrayRef<int64_t> shape, bool host) const;
  static constexpr int64_t kMaxFoldElements = int64_t(1) << 24;

  /// "FILE: node 'NAME' (OP, opset N): error: MESSAGE".
  llvm::Error error(const llvm::Twine &message) const;
  /// The same as an UnsupportedOnnxError.
  llvm::Error unsupported(const llvm::Twine &message) const;

  /// A constant as an lcc.constant (splats stay compact).
  mlir::Value materialize(const HostTensor &t);
  /// A rank-0 lcc.constant `v` of float element type `et`.
  mlir::Value scalar(mlir::Type et, double v);
  /// Axes from the `axes` attribute (older opsets) or input 1, which must
  /// then be a constant; std::nullopt when absent.
  llvm::Expected<std::optional<std::vector<int64_t>>> axes(bool fromInput);
  mlir::Type elementType(ElementType t) const;
  mlir::RankedTensorType tensorType(llvm::ArrayRef<int64_t> shape, mlir::Type element) const {
    return mlir::RankedTensorType::get(shape, element);
  }
  /// The model's default-domain opset.
  int64_t opset() const { return model.opset; }

private:
  std::vector<ImportedValue *> inputs;
  std::string where;
};

/// The MLIR element type of a host element type, and back.
mlir::Type mlirElementType(mlir::MLIRContext *ctx, ElementType t);
ElementType hostElementType(mlir::Type t);
/// A host tensor as an lcc.constant (an all-equal tensor as a splat).
mlir::Value materializeConstant(mlir::OpBuilder &b, mlir::Location loc, const HostTensor &t);

using OpHandler = std::function<llvm::Error(NodeCtx &)>;

struct OpEntry {
  const char *op;
  int64_t since; // first opset these semantics apply to
  OpHandler handler;
  /// Inputs that must be compile-time constants.
  std::vector<unsigned> constantInputs = {};
  /// Inputs the handler relies on being present (-1: all the node lists, at
  /// least one); checked before it runs.
  int requiredInputs = 1;
};

/// Handlers of OnnxOps.cpp (math), OnnxOpsShape.cpp (shapes, data movement)
/// and OnnxOpsLoss.cpp (losses).
void addMathOps(std::vector<OpEntry> &table);
void addShapeOps(std::vector<OpEntry> &table);
void addLossOps(std::vector<OpEntry> &table);
/// OnnxOpsHost.cpp: what mask, position and table subgraphs use (logic,
/// IsNaN/IsInf, CumSum, GatherND, ScatterND, Tile, trigonometry), mostly
/// folded on the host.
void addHostOps(std::vector<OpEntry> &table);

// Host-tensor helpers shared by the handler files.
std::optional<std::vector<int64_t>> broadcastShape(llvm::ArrayRef<int64_t> a,
                                                   llvm::ArrayRef<int64_t> b);
/// Element `i` of a row-major tensor of shape `out` read from `t` broadcast to it.
int64_t broadcastIndex(const HostTensor &t, llvm::ArrayRef<int64_t> out, int64_t i);
/// Int64 values of a 0-d or 1-d integer constant.
std::vector<int64_t> toInts(const HostTensor &t);
/// The product of `dims` (a shape's element count).
int64_t product(llvm::ArrayRef<int64_t> dims);
/// out[i] = in[src(i)] for a tensor of shape `shape` (bytes copied, any
/// type); `fill` where src(i) is negative.
HostTensor remap(const HostTensor &in, std::vector<int64_t> shape,
                 const std::function<int64_t(int64_t)> &src, double fill = 0.0);
/// A broadcast binary op with bool results on constant inputs 0 and 1,
/// folded: element i is f(x, a, y, b), a and b the operands' indices for it.
llvm::Error foldToBool(NodeCtx &c, llvm::ArrayRef<int64_t> shape,
                       llvm::function_ref<bool(const HostTensor &, int64_t, const HostTensor &,
                                               int64_t)>
                           f);
/// `v` as lcc.reshape to `shape` (v itself when it already has it).
mlir::Value reshapeValue(NodeCtx &c, mlir::Value v, llvm::ArrayRef<int64_t> shape);
/// Negative axes count from the end; std::nullopt unless -rank <= axis < rank.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

} // namespace lcc::onnx_import

#endif
