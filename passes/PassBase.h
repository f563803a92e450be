//===- PassBase.h - what every lcc pass header needs ------------*- C++ -*-===//
//
// The dialects lcc's passes create ops of (the generated pass declarations
// name them as dependent dialects), the typed modes pass options parse into,
// and the markers that passes of different phases agree on.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_PASSBASE_H
#define LCC_PASSES_PASSBASE_H

#include "dialects/lcc/LccDialect.h"
#include "passes/Modes.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/StringExtras.h"

#include <optional>
#include <string>
#include <vector>

namespace lcc {
/// Marks the `scf.for` over micro-batches that lcc-build-train-step builds
/// (its Passes.td entry): later passes treat its body like a function body.
inline constexpr llvm::StringLiteral kMicroBatchesAttr = "lcc.micro_batches";

/// Marks a layer function (lcc-outline-layers; its value is the layer pattern,
/// "h.*"): later passes compile it once for all its calls.
inline constexpr llvm::StringLiteral kLayerAttr = "lcc.layer";

/// On a layer function whose calls lcc-loop-layer-calls made loops: how many
/// times its callers run it (lcc --report counts its GEMMs that often).
inline constexpr llvm::StringLiteral kLayerRunsAttr = "lcc.layer_runs";

/// On a parameter argument whose gradient each rank of the named group
/// holds a share of (lcc-sequence-parallel: norm weights applied to a rank's
/// tokens): lcc-build-train-step sums it over the group once per step.
inline constexpr llvm::StringLiteral kPartialGradAttr = "lcc.partial_grad";

/// On an op lcc-recompute cloned from the forward into a layer's backward.
inline constexpr llvm::StringLiteral kRecomputedAttr = "lcc.recomputed";

/// On a public function whose only argument lcc-loop-layer-calls made the
/// runtime's array of its buffers (one address per former argument, in
/// order), which the AOT entry wrapper passes as it is.
inline constexpr llvm::StringLiteral kBufferTableAttr = "lcc.buffer_table";

/// The layer instance an op belongs to, from its location (how
/// lcc-outline-layers and lcc-partition-pipeline find layers): the first name
/// component of the form `<identifier>.<number>`, with what precedes it
/// (not `<identifier>_<number>`: ONNX numbers its node names that way).
/// "h.3.attn." -> ("h.3", "h.*"); "/transformer/h.3/attn/MatMul" ->
/// ("/transformer/h.3", "/transformer/h.*").
struct LayerKey {
  std::string instance, pattern;
};

inline std::optional<LayerKey> layerOf(mlir::Location loc) {
  auto name = llvm::dyn_cast<mlir::NameLoc>(loc);
  if (!name)
    return std::nullopt;
  llvm::StringRef s = name.getName().getValue();
  auto digits = [](llvm::StringRef t) { return !t.empty() && llvm::all_of(t, llvm::isDigit); };
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i < s.size() && s[i] != '/' && s[i] != '.')
      continue;
    llvm::StringRef comp = s.slice(start, i);
    // "h.3": a number after an identifier and a dot.
    if (digits(comp) && start >= 2 && s[start - 1] == '.' &&
        (llvm::isAlnum(s[start - 2]) || s[start - 2] == '_'))
      return LayerKey{s.take_front(i).str(), (s.take_front(start) + "*").str()};
    start = i + 1;
  }
  return std::nullopt;
}

/// The layer instances of `fn`'s top-level ops, in order of first use
/// (lcc-recompute's `layers` counts these); none for a null function.
inline std::vector<std::string> layerInstances(mlir::func::FuncOp fn) {
  std::vector<std::string> out;
  if (!fn || fn.isExternal())
    return out;
  for (mlir::Operation &op : fn.getBody().front())
    if (std::optional<LayerKey> key = layerOf(op.getLoc());
        key && llvm::find(out, key->instance) == out.end())
      out.push_back(key->instance);
  return out;
}

/// Whether `op` is such a loop.
inline bool isMicroBatchLoop(mlir::Operation *op) {
  return op->hasAttr(kMicroBatchesAttr) && llvm::isa<mlir::scf::ForOp>(op);
}

/// The blocks of `region` whose ops are the step's own (not a kernel's
/// loops): the region's blocks and, inside them, micro-batch loop bodies.
inline void forEachStepBlock(mlir::Region &region, llvm::function_ref<void(mlir::Block &)> fn) {
  for (mlir::Block &block : region) {
    fn(block);
    for (mlir::Operation &op : block)
      if (isMicroBatchLoop(&op))
        forEachStepBlock(op.getRegion(0), fn);
  }
}
} // namespace lcc

#endif
