//===- OnnxTraining.h - an imported graph as a model lcc can train -*- C++ -*-===//
//
// Turns an ONNX forward graph into the module contract the DSL frontend also
// produces (docs/architecture.md): @init() -> parameters (the initializers'
// values) and @forward(parameters..., inputs...) -> scalar loss, so the same
// autodiff, optimizer and backends apply.
//
// The loss (TrainingImportOptions::loss):
//   "auto"           the graph's one scalar float output if it has one (as
//                    NAME below, with a notice), else "cross-entropy";
//   "cross-entropy"  graph output 0 is logits [batch, seq, vocab] of the one
//                    integer input [batch, seq]; @forward takes `tokens` and
//                    `targets` (i32 [batch, seq], what lcc-run feeds) and
//                    returns the mean next-token cross-entropy;
//   NAME             a scalar float graph output the model computes itself;
//                    the graph inputs stay @forward's inputs.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_FRONTENDS_ONNX_ONNXTRAINING_H
#define LCC_FRONTENDS_ONNX_ONNXTRAINING_H

#include "frontends/onnx/OnnxImporter.h"

namespace lcc::onnx_import {

struct TrainingImportOptions {
  ImportOptions graph;
  std::string loss = "auto";
  /// @init returns zeros and the initial values travel as data (the
  /// train.bin's "params" section): a big model's weights stay out of the
  /// compiled code. Otherwise @init returns them as constants (JIT, tests).
  bool parametersAsData = false;
};

/// The module, and the parameters' initial values in @init's result order.
llvm::Expected<ImportedGraph>
importOnnxForTraining(const OnnxModel &model, mlir::MLIRContext &context,
                      const TrainingImportOptions &options);

/// The same from the file's bytes (parseOnnxModel, then the import).
llvm::Expected<ImportedGraph> importOnnxForTraining(llvm::StringRef bytes, const std::string &path,
                                                    mlir::MLIRContext &context,
                                                    const TrainingImportOptions &options);

} // namespace lcc::onnx_import

#endif
