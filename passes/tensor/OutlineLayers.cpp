//===- OutlineLayers.cpp - repeated layers become one function ------------===//
//
// See Passes.td (lcc-outline-layers) for what a run is and when two runs
// are the same layer. Structure is compared as a token list per run
// (interned pointers and wiring numbers, `describe`), so finding the
// classes is one pass over the function.
//
//===----------------------------------------------------------------------===//
#include "dialects/lcc/LccOps.h"
#include "passes/tensor/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

#include <functional>
#include <map>
#include <vector>

namespace lcc {
#define GEN_PASS_DEF_LCCOUTLINELAYERSPASS
#include "passes/tensor/Passes.h.inc"
} // namespace lcc

using namespace mlir;
using lcc::LayerKey;
using lcc::layerOf;

namespace {

struct Run {
  SmallVector<Operation *> ops;
  LayerKey layer;
  unsigned phase = 0; // how many runs of this layer instance came before
  SmallVector<Value> liveIns;
  /// Ops outside the run that its function makes again instead of taking
  /// their results as arguments (rematerializable), operands first.
  SmallVector<Operation *> remat;
  SmallVector<Value> liveOuts;
  /// The structure, comparable across runs: interned pointers (op names,
  /// attribute dictionaries, types) and wiring numbers.
  SmallVector<const void *> shape;
};

/// A scalar constant (an initializer's seed) is compared by type only, so
/// runs that differ in one are one class; `outline` passes those the runs
/// disagree on as arguments and makes the others again.
bool isScalarConstant(Operation *op) {
  auto c = llvm::dyn_cast_or_null<arith::ConstantOp>(op);
  return c && !llvm::isa<ShapedType>(c.getType());
}

/// The scalar constants among `run.remat`, in first-use order.
SmallVector<Operation *> scalarConstants(const Run &run) {
  return llvm::to_vector(llvm::make_filter_range(run.remat, isScalarConstant));
}

/// Constants, empty tensors and fills of them: cheaper to make again in a
/// layer function than to pass in. An initial value a layer writes into (a
/// linalg op's `outs`) must be made there: an argument is read-only, and
/// bufferization would copy it before every write.
bool rematerializable(Operation *op) {
  if (!op)
    return false;
  if (llvm::isa<arith::ConstantOp, tensor::EmptyOp>(op))
    return true;
  return llvm::isa<linalg::FillOp>(op) && llvm::all_of(op->getOperands(), [](Value v) {
           return rematerializable(v.getDefiningOp());
         });
}

/// Fills run.liveIns/remat/liveOuts/shape; false when the run cannot be outlined
/// (an op with successors). Nested ops (a linalg.generic's body) are part of
/// the structure; values they capture from outside the run are live-ins.
bool describe(Run &run) {
  Block *block = run.ops.front()->getBlock();
  llvm::DenseSet<Operation *> inRun(run.ops.begin(), run.ops.end());
  // Values defined in the run (results, nested block arguments), numbered.
  llvm::DenseMap<Value, unsigned> local;
  llvm::DenseMap<Value, unsigned> liveIn;
  auto token = [&](uintptr_t v) { run.shape.push_back(reinterpret_cast<const void *>(v)); };
  auto opaque = [](auto x) { return reinterpret_cast<uintptr_t>(x.getAsOpaquePointer()); };
  std::function<bool(Operation *, bool)> visit = [&](Operation *op, bool top) {
    if (op->getNumSuccessors())
      return false;
    token(opaque(op->getName()));
    // Inherent attributes (a constant's value, a generic's maps) live in
    // the op's properties, the others in its dictionary: both are compared.
    token(opaque(op->getPropertiesAsAttribute()));
    token(opaque(op->getRawDictionaryAttrs()));
    token(op->getNumOperands());
    for (Value v : op->getOperands()) {
      token(opaque(v.getType()));
      if (auto it = local.find(v); it != local.end()) {
        token(1);
        token(it->second);
        continue;
      }
      if (Operation *def = v.getDefiningOp(); isScalarConstant(def)) {
        token(4);
        token(opaque(v.getType()));
        local[v] = unsigned(local.size());
        token(local.lookup(v));
        run.remat.push_back(def);
        continue;
      }
      if (Operation *def = v.getDefiningOp(); rematerializable(def)) {
        // Described (and numbered) where first used, like the run's ops.
        token(3);
        if (!visit(def, false))
          return false;
        run.remat.push_back(def);
        token(local.lookup(v));
        continue;
      }
      auto [it, inserted] = liveIn.try_emplace(v, unsigned(run.liveIns.size()));
      if (inserted)
        run.liveIns.push_back(v);
      token(2);
      token(it->second);
    }
    token(op->getNumResults());
    for (Value r : op->getResults()) {
      token(opaque(r.getType()));
      local[r] = unsigned(local.size());
      if (!top)
        continue;
      bool out = llvm::any_of(r.getUsers(), [&](Operation *u) {
        return !inRun.contains(block->findAncestorOpInBlock(*u));
      });
      token(out);
      if (out)
        run.liveOuts.push_back(r);
    }
    token(op->getNumRegions());
    for (Region &region : op->getRegions()) {
      token(region.getBlocks().size());
      for (Block &b : region) {
        token(b.getNumArguments());
        for (BlockArgument arg : b.getArguments()) {
          token(opaque(arg.getType()));
          local[arg] = unsigned(local.size());
        }
        for (Operation &nested : b)
          if (!visit(&nested, false))
            return false;
      }
    }
    return true;
  };
  return llvm::all_of(run.ops, [&](Operation *op) { return visit(op, true); });
}

/// Layout ops copy at most (Passes.td: made again in a later run that reads
/// their root too). Inline, CSE and fusion kept one form of such a pair.
bool isLayoutOp(Operation *op) { return op && llvm::isa<lcc::TransposeOp, lcc::ReshapeOp>(op); }

void rematerializeLayouts(std::vector<Run> &runs) {
  llvm::DenseMap<Operation *, size_t> runOf;
  for (auto [i, run] : llvm::enumerate(runs))
    for (Operation *op : run.ops)
      runOf[op] = i;
  // The run of `v`'s layout op, if it is one in a run.
  auto layoutRun = [&](Value v) -> std::optional<size_t> {
    Operation *def = v.getDefiningOp();
    auto it = isLayoutOp(def) ? runOf.find(def) : runOf.end();
    return it == runOf.end() ? std::nullopt : std::optional<size_t>(it->second);
  };
  for (auto [i, run] : llvm::enumerate(runs)) {
    Block *block = run.ops.front()->getBlock();
    llvm::DenseSet<Operation *> inRun(run.ops.begin(), run.ops.end());
    auto readHere = [&](Value v) {
      return llvm::any_of(v.getUsers(), [&](Operation *u) {
        Operation *top = block->findAncestorOpInBlock(*u);
        return top && inRun.contains(top);
      });
    };
    llvm::DenseMap<Value, Value> remade;
    SmallVector<Operation *> clones;
    OpBuilder b(run.ops.front());
    // The chain up to its root (the first value not made by a layout op of
    // run `r`), made again where this run starts.
    std::function<Value(Value, size_t)> remake = [&](Value v, size_t r) -> Value {
      if (Value done = remade.lookup(v))
        return done;
      Operation *def = v.getDefiningOp();
      IRMapping map;
      Value from = def->getOperand(0);
      if (layoutRun(from) == r)
        map.map(from, remake(from, r));
      clones.push_back(b.clone(*def, map));
      return remade[v] = clones.back()->getResult(0);
    };
    for (Operation *op : SmallVector<Operation *>(run.ops))
      op->walk([&](Operation *nested) {
        for (OpOperand &use : nested->getOpOperands()) {
          std::optional<size_t> r = layoutRun(use.get());
          if (!r || *r >= i || runs[*r].layer.instance != run.layer.instance)
            continue;
          Value root = use.get();
          while (layoutRun(root) == r)
            root = root.getDefiningOp()->getOperand(0);
          if (readHere(root))
            use.set(remake(use.get(), *r));
        }
      });
    run.ops.insert(run.ops.begin(), clones.begin(), clones.end());
  }
}

struct LccOutlineLayersPass : lcc::impl::LccOutlineLayersPassBase<LccOutlineLayersPass> {
  using Base::Base;

  /// Results of outlined runs and the call results that replaced them.
  llvm::DenseMap<Value, Value> replaced;
  /// The outlined runs' ops.
  SmallVector<Operation *> dead;

  /// Whether a class becomes a function: min-repeats runs, or one holding
  /// recomputed copies (lcc-recompute), which only a function boundary
  /// keeps apart from the forward values they copy.
  bool outlines(ArrayRef<Run *> members) const {
    return members.size() >= size_t(minRepeats) ||
           llvm::any_of(members.front()->ops,
                        [](Operation *op) { return op->hasAttr(lcc::kRecomputedAttr); });
  }

  /// `explain`: a remark at the first op of each run that stays inline
  /// (its structure has fewer than min-repeats runs), against the structure
  /// most runs of its layer kind and phase share.
  void explainInline(const SmallVector<SmallVector<Run *>> &byShape) {
    const SmallVector<Run *> *common = &byShape.front();
    for (const SmallVector<Run *> &c : byShape)
      if (c.size() > common->size())
        common = &c;
    const Run &model = *common->front();
    for (const SmallVector<Run *> &c : byShape) {
      if (outlines(c))
        continue;
      for (Run *run : c) {
        InFlightDiagnostic d = run->ops.front()->emitRemark()
                               << "layer '" << run->layer.instance << "' (phase " << run->phase
                               << ") stays inline: ";
        if (&c == common) {
          d << "only " << c.size() << " run(s) of this structure, min-repeats is "
            << int64_t(minRepeats);
          continue;
        }
        d << "it differs from '" << model.layer.instance << "' (" << common->size()
          << " runs): ";
        if (run->ops.size() != model.ops.size()) {
          d << "it has " << run->ops.size() << " ops, '" << model.layer.instance << "' has "
            << model.ops.size();
          continue;
        }
        size_t i = 0;
        while (i < run->ops.size() && run->ops[i]->getName() == model.ops[i]->getName())
          ++i;
        if (i < run->ops.size())
          d << "op " << i << " is '" << run->ops[i]->getName() << "', there '"
            << model.ops[i]->getName() << "'";
        else
          d << "the same ops with other operands, attributes or types";
      }
    }
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (minRepeats < 2) {
      module.emitError() << "lcc-outline-layers: min-repeats must be at least 2, got "
                         << int64_t(minRepeats);
      return signalPassFailure();
    }
    // `function` may be a glob: prefill* is every prefill entry
    // (lcc-build-generation's @prefill and @prefill_<L>).
    SmallVector<func::FuncOp> targets;
    if (llvm::StringRef(function).find_first_of("*?[") == llvm::StringRef::npos) {
      auto fn = module.lookupSymbol<func::FuncOp>(function);
      if (fn && !fn.isExternal())
        targets.push_back(fn);
    } else {
      auto glob = llvm::GlobPattern::create(function);
      if (!glob) {
        module.emitError() << "lcc-outline-layers: bad function pattern '" << function
                           << "': " << llvm::toString(glob.takeError());
        return signalPassFailure();
      }
      for (auto fn : module.getOps<func::FuncOp>())
        if (glob->match(fn.getSymName()) && !fn.isExternal())
          targets.push_back(fn);
    }
    if (targets.empty() && !ifPresent) {
      module.emitError() << "lcc-outline-layers: no @" << function << " with a body";
      return signalPassFailure();
    }
    for (func::FuncOp fn : targets)
      if (failed(outlineLayersOf(module, fn)))
        return signalPassFailure();
  }

  LogicalResult outlineLayersOf(ModuleOp module, func::FuncOp fn) {
    replaced.clear();
    dead.clear();
    if (!fn.getBody().hasOneBlock())
      return fn.emitError() << "lcc-outline-layers: @" << fn.getSymName()
                            << " has control flow; layers are found in one straight-line block";

    // Runs in program order; each layer instance's runs numbered by phase
    // (a step has a layer's forward run and, later, its backward run), per
    // block: the step's own, and a micro-batch loop's body (each iteration
    // runs every layer's forward and backward there).
    std::vector<Run> runs;
    lcc::forEachStepBlock(fn.getBody(), [&](Block &block) {
      llvm::StringMap<unsigned> phases;
      // Where the last run would continue: after its last op and the
      // rematerializable ops that follow it.
      Operation *next = nullptr;
      size_t first = runs.size();
      for (Operation &op : block.without_terminator()) {
        // What a layer function makes again is in no run (CSE shares one
        // empty tensor or zero fill among many layers) and does not end one.
        if (rematerializable(&op)) {
          if (next == &op)
            next = op.getNextNode();
          continue;
        }
        // Only computation moves into layer functions: an op with effects (a
        // collective) stays in the step, in its order, between two runs.
        std::optional<LayerKey> key = layerOf(op.getLoc());
        if (!key || !isMemoryEffectFree(&op)) {
          next = nullptr;
          continue;
        }
        if (runs.size() == first || runs.back().layer.instance != key->instance || next != &op) {
          runs.emplace_back();
          runs.back().layer = *key;
          runs.back().phase = phases[key->instance]++;
        }
        runs.back().ops.push_back(&op);
        next = op.getNextNode();
      }
    });

    rematerializeLayouts(runs);

    // Runs of one layer pattern and phase with the same structure share a
    // function; near-twins (a layer with one more op) get their own class.
    std::map<std::pair<std::string, unsigned>, SmallVector<SmallVector<Run *>>> classes;
    for (Run &run : runs) {
      if (!describe(run))
        continue;
      auto &byShape = classes[{run.layer.pattern, run.phase}];
      auto same = llvm::find_if(byShape, [&](const SmallVector<Run *> &c) {
        return c.front()->shape == run.shape;
      });
      if (same == byShape.end())
        byShape.push_back({&run});
      else
        same->push_back(&run);
    }

    if (explain)
      for (auto &[key, byShape] : classes)
        explainInline(byShape);

    OpBuilder moduleBuilder = OpBuilder::atBlockEnd(module.getBody());
    SymbolTable symbols(module);
    unsigned outlined = 0;
    int64_t calls = 0;
    for (auto &[key, byShape] : classes)
      for (SmallVector<Run *> &members : byShape) {
        if (!outlines(members))
          continue;
        outline(members, fn, moduleBuilder, symbols, key.first, key.second, outlined++);
        calls += int64_t(members.size());
      }
    // Counted over the functions outlined so far, for lcc --report.
    int64_t functionsBefore = 0, callsBefore = 0;
    if (auto seen = module->getAttrOfType<DictionaryAttr>("lcc.layers")) {
      functionsBefore = seen.getAs<IntegerAttr>("functions").getInt();
      callsBefore = seen.getAs<IntegerAttr>("calls").getInt();
    }
    Builder b(module.getContext());
    module->setAttr("lcc.layers",
                    b.getDictionaryAttr(
                        {b.getNamedAttr("functions", b.getI64IntegerAttr(functionsBefore + outlined)),
                         b.getNamedAttr("calls", b.getI64IntegerAttr(callsBefore + calls))}));
    // Only dead ops use dead ops' results (the live-outs went to calls).
    for (Operation *op : dead)
      op->dropAllReferences();
    for (Operation *op : dead)
      op->erase();
    // What the layer functions make again may have no other use left; in
    // reverse, so that a fill goes before the empty tensor it fills.
    lcc::forEachStepBlock(fn.getBody(), [&](Block &block) {
      SmallVector<Operation *> ops =
          llvm::map_to_vector(block.without_terminator(), [](Operation &op) { return &op; });
      for (Operation *op : llvm::reverse(ops))
        if (rematerializable(op) && isOpTriviallyDead(op))
          op->erase();
    });
    return success();
  }

  void outline(ArrayRef<Run *> members, func::FuncOp fn, OpBuilder &moduleBuilder,
               SymbolTable &symbols, StringRef pattern, unsigned phase, unsigned n) {
    // Live-ins that earlier outlined runs produced are call results now.
    for (Value &v : members.front()->liveIns)
      v = replaced.lookup_or(v, v);
    Run &first = *members.front();
    // Scalar constants the members disagree on are trailing arguments; the
    // others are made again inside like any constant.
    SmallVector<SmallVector<Operation *>> scalars =
        llvm::map_to_vector(members, [](Run *run) { return scalarConstants(*run); });
    SmallVector<unsigned> varying;
    for (unsigned k = 0; k < scalars.front().size(); ++k)
      if (llvm::any_of(scalars, [&](ArrayRef<Operation *> s) {
            return llvm::cast<arith::ConstantOp>(s[k]).getValue() !=
                   llvm::cast<arith::ConstantOp>(scalars.front()[k]).getValue();
          }))
        varying.push_back(k);
    auto arguments = [&](unsigned m) {
      SmallVector<Value> args(members[m]->liveIns);
      for (unsigned k : varying)
        args.push_back(scalars[m][k]->getResult(0));
      return args;
    };
    SmallVector<Value> firstArgs = arguments(0);
    auto type = FunctionType::get(&getContext(), ValueRange(firstArgs).getTypes(),
                                  ValueRange(first.liveOuts).getTypes());
    auto layer = func::FuncOp::create(moduleBuilder, first.ops.front()->getLoc(),
                                      (fn.getSymName() + "_layer" + Twine(n)).str(), type);
    layer.setPrivate();
    symbols.insert(layer); // renames on a clash
    layer->setAttr(lcc::kLayerAttr, moduleBuilder.getStringAttr(pattern));
    layer->setAttr("lcc.layer_phase", moduleBuilder.getI64IntegerAttr(phase));
    Block *entry = layer.addEntryBlock();
    OpBuilder body = OpBuilder::atBlockBegin(entry);
    IRMapping map;
    map.map(ValueRange(firstArgs), entry->getArguments());
    // What the function makes again goes right before its first user, where
    // it was (lcc-gemm-to-library drops the zero fill right before a GEMM).
    llvm::SmallPtrSet<Operation *, 8> pending(first.remat.begin(), first.remat.end());
    for (unsigned k : varying)
      pending.erase(scalars.front()[k]);
    std::function<void(Operation *)> makeOperands = [&](Operation *op) {
      op->walk([&](Operation *nested) {
        for (Value v : nested->getOperands())
          if (Operation *def = v.getDefiningOp(); def && pending.erase(def)) {
            makeOperands(def);
            body.clone(*def, map);
          }
      });
    };
    for (Operation *op : first.ops) {
      makeOperands(op);
      body.clone(*op, map);
    }
    func::ReturnOp::create(body, layer.getLoc(),
                           llvm::map_to_vector(first.liveOuts, [&](Value v) {
                             return map.lookup(v);
                           }));
    for (auto [m, run] : llvm::enumerate(members)) {
      // A live-in may be the result of a member outlined just before (each
      // list is mapped once: a call's result is no key of `replaced`).
      if (run != &first)
        for (Value &v : run->liveIns)
          v = replaced.lookup_or(v, v);
      // A varying constant (a seed) may sit inside the run, after where the
      // call goes: constants move freely.
      Operation *start = run->ops.front();
      for (unsigned k : varying)
        if (Operation *c = scalars[m][k];
            c->getBlock() == start->getBlock() && start->isBeforeInBlock(c))
          c->moveBefore(start);
      OpBuilder at(start);
      auto call = func::CallOp::create(at, start->getLoc(), layer, arguments(m));
      for (auto [out, result] : llvm::zip(run->liveOuts, call.getResults())) {
        out.replaceAllUsesWith(result);
        replaced[out] = result;
      }
      // Erased when every class is done, so that no new op takes the
      // address of one `replaced` still names.
      llvm::append_range(dead, run->ops);
    }
  }
};

} // namespace
