//===- OnnxImporter.h - ONNX graphs into the lcc dialect --------*- C++ -*-===//
//
// Imports the main graph of an ONNX model as one func.func of lcc ops:
//   @NAME(params..., inputs...) -> (graph outputs...)
// Float initializers of rank >= 1 become parameters (argument attribute
// lcc.param = the initializer's name); scalars, integer and bool initializers
// stay constants (exporters store constants such as -inf as initializers). Graph inputs become
// arguments with lcc.input = their name.
//
// Shapes in lcc are static. Symbolic dimensions of graph inputs take their
// sizes from ImportOptions (by dim_param name, or batch for dim 0 and seq for
// dim 1), and everything that computes shapes (Shape -> Gather -> Concat ->
// Reshape, ConstantOfShape, Range...) is evaluated at import time on host
// tensors: a value is either a compile-time constant or an lcc tensor.
//
// Ops are keyed on (op type, opset): each handler has the first opset its
// semantics apply to (OnnxOps.h). Anything unsupported is an
// UnsupportedOnnxError naming the node, its op type and the opset.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_FRONTENDS_ONNX_ONNXIMPORTER_H
#define LCC_FRONTENDS_ONNX_ONNXIMPORTER_H

#include "frontends/onnx/OnnxModel.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace lcc::onnx_import {

struct ImportOptions {
  std::string functionName = "forward";
  /// Sizes of symbolic dimensions by dim_param name.
  std::map<std::string, int64_t> dims;
  /// Sizes of still-symbolic dimensions 0 and 1 of graph inputs (--batch, --seq).
  int64_t batch = 0, seq = 0;
  /// Graph inputs whose values are known at compile time: they become
  /// constants instead of arguments (the backend tests' shape operands).
  std::map<std::string, HostTensor> constantInputs;
  /// Float initializers of rank >= 1 become parameters (else constants).
  bool initializersAsParameters = true;
  /// Keep an embedding and its exported copy apart (OnnxTies.h; --untie).
  bool untie = false;
  /// Glob patterns of float initializers to train whatever the buffer
  /// signals say (--trainable); each must match one.
  std::vector<std::string> trainable;
};

/// Something valid ONNX that lcc does not import (an op, an opset, a type, an
/// attribute value). The conformance runner counts these apart from failures.
class UnsupportedOnnxError : public llvm::ErrorInfo<UnsupportedOnnxError> {
public:
  static char ID;
  explicit UnsupportedOnnxError(std::string message) : message(std::move(message)) {}
  void log(llvm::raw_ostream &os) const override { os << message; }
  std::error_code convertToErrorCode() const override { return llvm::inconvertibleErrorCode(); }
  std::string message;
};

/// An imported graph and the initial values of its parameters, in argument order.
struct ImportedGraph {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::vector<std::pair<std::string, HostTensor>> parameters;
  /// Float initializers kept as constants rather than trained, and why
  /// (docs/onnx.md, "What is trained").
  std::vector<std::pair<std::string, std::string>> buffers;
  /// What the import decided for the user to know (a restored tie, an input
  /// fed constant ones): one line each, printed with the parameter report.
  std::vector<std::string> notices;
};

/// Imports `model`'s graph into a new module (with the lcc and func dialects loaded).
llvm::Expected<ImportedGraph>
importOnnx(const OnnxModel &model, mlir::MLIRContext &context, const ImportOptions &options);

/// Inputs of `opType` that must be compile-time constants (shapes, axes,
/// indices of a Gather the tests fold): the conformance runner passes the
/// graph inputs feeding them as ImportOptions::constantInputs.
bool isConstantOperand(const std::string &opType, int64_t opset, unsigned input);

/// Every op type the importer has a handler for at `opset`.
std::vector<std::string> supportedOps(int64_t opset);

} // namespace lcc::onnx_import

#endif
