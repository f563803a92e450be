//===- Recompute.cpp - forward values made again in the backward ----------===//
//
// See Passes.td (lcc-recompute) for what each mode chooses. The pass only
// moves where values are computed: the ops made again are clones of the
// forward's, so on the CPU the backward reads bitwise the values it read
// before. What it saves in bytes is decided later, by the memory plan (a
// layer's backward function holds its copies only while it runs).
//
//===----------------------------------------------------------------------===//
#include "passes/train/Passes.h"

#include "dialects/lcc/LccOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/SetVector.h"

namespace lcc {
#define GEN_PASS_DEF_LCCRECOMPUTEPASS
#include "passes/train/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {

int64_t elements(Value v) {
  auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
  return t && t.hasStaticShape() ? t.getNumElements() : 0;
}

int64_t bytes(Value v) {
  auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
  if (!t)
    return 0;
  return elements(v) * std::max<int64_t>(1, t.getElementTypeBitWidth() / 8);
}

/// Selective's cost rule: GEMMs and whole attentions are expensive; a batched
/// product of two activations whose result is at least as large as both
/// (attention scores, when attention is written out) is cheap for its size.
bool cheap(Operation *op) {
  if (llvm::isa<lcc::AttentionOp, lcc::AttentionGradOp, lcc::ScatterAddOp>(op))
    return false;
  if (auto mm = llvm::dyn_cast<lcc::MatmulOp>(op)) {
    auto rank = [](Value v) { return llvm::cast<RankedTensorType>(v.getType()).getRank(); };
    return rank(mm.getLhs()) >= 3 && rank(mm.getRhs()) >= 3 &&
           elements(mm.getResult()) >= elements(mm.getLhs()) + elements(mm.getRhs());
  }
  return true;
}

int64_t flopsOf(Operation *op) {
  if (auto cost = llvm::dyn_cast<lcc::CostOpInterface>(op))
    return cost.getFlops();
  return 0;
}

struct LccRecomputePass : lcc::impl::LccRecomputePassBase<LccRecomputePass> {
  using Base::Base;
  void runOnOperation() override;
};

void LccRecomputePass::runOnOperation() {
  ModuleOp module = getOperation();
  std::optional<lcc::RecomputeMode> parsed = lcc::parseMode<lcc::RecomputeMode>(mode);
  if (!parsed || *parsed == lcc::RecomputeMode::Auto) {
    module.emitError() << "lcc-recompute: unknown mode '" << mode
                       << "'; expected none, selective or full (auto is lcc's choice for --mem)";
    return signalPassFailure();
  }
  if (*parsed == lcc::RecomputeMode::None)
    return;
  auto fwd = module.lookupSymbol<func::FuncOp>(function);
  auto grad = module.lookupSymbol<func::FuncOp>(function + "_grad");
  if (!fwd || !grad || fwd.isExternal() || grad.isExternal()) {
    module.emitError() << "lcc-recompute: needs @" << function << " and @" << function
                       << "_grad (run lcc-autodiff first)";
    return signalPassFailure();
  }
  // lcc-autodiff clones the forward's ops first, in order: those are the
  // forward part of @F_grad, everything after them is the backward.
  Block &body = grad.getBody().front();
  SmallVector<Operation *> ops =
      llvm::map_to_vector(body.without_terminator(), [](Operation &op) { return &op; });
  size_t numForward = fwd.getBody().front().getOperations().size() - 1;
  auto forwardOps = fwd.getBody().front().without_terminator();
  if (ops.size() < numForward || !llvm::all_of(llvm::zip(forwardOps, ops), [](auto pair) {
        return std::get<0>(pair).getName() == std::get<1>(pair)->getName();
      })) {
    grad.emitError() << "lcc-recompute: @" << function << "_grad does not begin with @" << function
                     << "'s ops; run it right after lcc-autodiff";
    return signalPassFailure();
  }
  llvm::DenseMap<Operation *, size_t> index;
  for (auto [i, op] : llvm::enumerate(ops))
    index[op] = i;
  auto isForward = [&](Operation *op) {
    auto it = index.find(op);
    return it != index.end() && it->second < numForward;
  };
  // Each top-level op's layer instance ("" for none), named once.
  llvm::DenseMap<Operation *, std::string> instanceAt;
  for (Operation *op : ops)
    if (std::optional<lcc::LayerKey> key = lcc::layerOf(op->getLoc()))
      instanceAt[op] = key->instance;
  auto instanceOf = [&](Operation *op) -> StringRef {
    auto it = instanceAt.find(op);
    return it == instanceAt.end() ? StringRef() : StringRef(it->second);
  };

  // Layer instances in forward order, each with its treatment: the mode for
  // the first `layers`, then one step less (full -> selective -> none).
  enum class Treat { None, Selective, Full };
  Treat first = *parsed == lcc::RecomputeMode::Full ? Treat::Full : Treat::Selective;
  Treat rest = first == Treat::Full ? Treat::Selective : Treat::None;
  std::vector<std::string> instances = lcc::layerInstances(fwd);
  llvm::StringMap<Treat> treatment;
  for (auto [k, instance] : llvm::enumerate(instances))
    treatment[instance] = layers < 0 || int64_t(k) < layers ? first : rest;
  if (instances.empty()) {
    fwd.emitWarning() << "lcc-recompute: @" << function
                      << " has no named layers (a DSL loop's h.0., an ONNX module path); "
                         "recompute="
                      << mode << " changes nothing";
    return;
  }

  // A forward value the backward reads directly is kept whatever happens.
  auto readByBackward = [&](Value v) {
    return llvm::any_of(v.getUsers(), [&](Operation *u) {
      Operation *top = body.findAncestorOpInBlock(*u);
      return top && !isForward(top);
    });
  };
  llvm::DenseSet<Operation *> chosen;
  for (size_t i = 0; i < numForward; ++i) {
    Operation *op = ops[i];
    StringRef instance = instanceOf(op);
    Treat treat = instance.empty() ? Treat::None : treatment.lookup(instance);
    if (treat == Treat::None || !isMemoryEffectFree(op) || op->getNumRegions())
      continue;
    if (treat == Treat::Full) {
      chosen.insert(op);
      continue;
    }
    // Selective: never keep more than before.
    bool kept = llvm::all_of(op->getOperands(), [&](Value v) {
      Operation *def = v.getDefiningOp();
      return !def || chosen.contains(def) || readByBackward(v) ||
             def->hasTrait<OpTrait::ConstantLike>() || llvm::isa<lcc::FillOp>(def);
    });
    if (kept && cheap(op))
      chosen.insert(op);
  }

  // Per instance: its backward ops that read chosen values of the same
  // instance read copies.
  struct Stats {
    int64_t ops = 0, flops = 0, bytes = 0;
  };
  llvm::StringMap<SmallVector<Operation *>> readers;
  for (size_t i = numForward; i < ops.size(); ++i) {
    StringRef instance = instanceOf(ops[i]);
    bool reads = false;
    ops[i]->walk([&](Operation *nested) {
      for (Value v : nested->getOperands())
        if (Operation *def = v.getDefiningOp();
            def && chosen.contains(def) && instanceOf(def) == instance)
          reads = true;
    });
    if (reads)
      readers[instance].push_back(ops[i]);
  }
  Builder attrs(module.getContext());
  SmallVector<NamedAttribute> perLayer;
  for (const std::string &instance : instances) {
    auto it = readers.find(instance);
    if (it == readers.end())
      continue;
    // Each value is made again right before its first reader (and kept for
    // the later ones), not all at the layer's start: what the attention's
    // backward reads is not live during the MLP's backward before it.
    OpBuilder b(module.getContext());
    IRMapping copies;
    Stats s;
    std::function<Value(Value)> remake = [&](Value v) -> Value {
      if (Value done = copies.lookupOrNull(v))
        return done;
      Operation *def = v.getDefiningOp();
      if (!def || !chosen.contains(def) || instanceOf(def) != StringRef(instance))
        return v;
      for (Value operand : def->getOperands())
        remake(operand);
      Operation *copy = b.clone(*def, copies);
      copy->setAttr(lcc::kRecomputedAttr, b.getUnitAttr());
      s.ops++;
      s.flops += flopsOf(copy);
      return copies.lookup(v);
    };
    llvm::SetVector<Value> replaced;
    for (Operation *user : it->second) {
      b.setInsertionPoint(user);
      user->walk([&](Operation *nested) {
        for (OpOperand &use : nested->getOpOperands()) {
          Value copy = remake(use.get());
          if (copy != use.get()) {
            replaced.insert(use.get());
            use.set(copy);
          }
        }
      });
    }
    for (Value v : replaced)
      if (!readByBackward(v))
        s.bytes += bytes(v);
    perLayer.push_back(
        attrs.getNamedAttr(instance, attrs.getDenseI64ArrayAttr({s.ops, s.flops, s.bytes})));
  }
  module->setAttr(
      "lcc.recompute",
      attrs.getDictionaryAttr({attrs.getNamedAttr("mode", attrs.getStringAttr(mode)),
                               attrs.getNamedAttr("layers", attrs.getDictionaryAttr(perLayer))}));
}

} // namespace
