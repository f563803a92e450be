//===- Lora.cpp - low-rank adapters on chosen matmul weights --------------===//
//
// See Passes.td (lcc-lora). LoRA (Hu et al. 2021) as PEFT implements it: a
// weight W used as `x @ W` keeps its value, frozen, and the product gains
// scale * (x @ A^T) @ B^T, computed in that order so the step never forms an
// [in, out] matrix: the adapters' gradients cost two thin matmuls per use,
// not the base weight's. Being ordinary parameters and ops before autodiff,
// the adapters are differentiated, fused, sharded and planned like the rest.
//
//===----------------------------------------------------------------------===//
#include "passes/train/Passes.h"

#include "passes/shard/ShardUtils.h"

#include "dialects/lcc/LccOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/GlobPattern.h"

#include <cmath>
#include <functional>

namespace lcc {
#define GEN_PASS_DEF_LCCLORAPASS
#include "passes/train/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {

/// FNV-1a of `name` mixed with `seed`: A's seed, stable across builds and
/// runs (its values must not change when the model is recompiled).
int64_t adapterSeed(uint64_t seed, llvm::StringRef name) {
  uint64_t h = 1469598103934665603ull ^ (seed * 0x9e3779b97f4a7c15ull);
  for (char c : name) {
    h ^= uint8_t(c);
    h *= 1099511628211ull;
  }
  return int64_t(h & 0x7fffffffffffffffull);
}

/// `base` less ".weight", then `part`: h.0.attn.c_attn.weight -> h.0.attn.c_attn.lora_A.weight.
std::string adapterName(llvm::StringRef base, llvm::StringRef part) {
  base.consume_back(".weight");
  return (base + "." + part + ".weight").str();
}

struct Adapter {
  unsigned arg;     // W's @forward argument
  std::string name; // W's parameter name
  // The module weight W is (an exporter's folded copy is named apart from
  // it: lcc.folded_from); targets match it and the adapters are named by it.
  std::string module;
  int64_t in = 0, out = 0; // W's whole sizes
  bool transposed = false; // used as x @ W^T (W is [out, in])
  // A tensor-parallel W (lcc-shard-tp ran first): its out (column-parallel)
  // or in (row-parallel) features split `parts` ways over `group`, in
  // `blocks` equal blocks.
  bool splitOut = false, splitIn = false;
  std::string group;
  int64_t parts = 1, blocks = 1;
};

struct LccLoraPass : lcc::impl::LccLoraPassBase<LccLoraPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto fn = module.lookupSymbol<func::FuncOp>(function);
    auto init = module.lookupSymbol<func::FuncOp>("init");
    if (!fn || !init) {
      module.emitError() << "lcc-lora: the module needs @" << function << " and @init";
      return signalPassFailure();
    }
    if (module.lookupSymbol(function + "_grad")) {
      fn.emitError() << "lcc-lora: @" << function
                     << "_grad exists; adapters must be added before lcc-autodiff";
      return signalPassFailure();
    }
    if (rank < 1) {
      fn.emitError() << "lcc-lora: rank must be at least 1, got " << rank;
      return signalPassFailure();
    }
    if (targets.empty()) {
      fn.emitError() << "lcc-lora: no targets (glob patterns over parameter names)";
      return signalPassFailure();
    }
    std::vector<Adapter> adapters;
    if (failed(findTargets(fn, adapters)))
      return signalPassFailure();
    const double scale = rslora ? alpha / std::sqrt(double(rank)) : alpha / double(rank);
    MLIRContext *ctx = module.getContext();
    Builder b(ctx);

    // @forward's parameters in order: @init returns them in this order.
    std::vector<unsigned> paramArgs;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      if (fn.getArgAttr(i, "lcc.param"))
        paramArgs.push_back(i);
    auto ret = llvm::cast<func::ReturnOp>(init.getBody().front().getTerminator());
    if (ret.getNumOperands() != paramArgs.size()) {
      init.emitError() << "lcc-lora: @init returns " << ret.getNumOperands() << " values for "
                       << paramArgs.size() << " parameters";
      return signalPassFailure();
    }

    SmallVector<Attribute> records;
    llvm::DenseSet<Value> added; // the adapters' arguments
    // From the last, so earlier argument and result indices stay valid.
    for (auto it = adapters.rbegin(); it != adapters.rend(); ++it) {
      const Adapter &a = *it;
      auto wType = llvm::cast<RankedTensorType>(fn.getArgument(a.arg).getType());
      // Whole shapes (@init's); a tensor-parallel W's adapters are split as
      // it is (Megatron's column split of `out`: B's rows; row split of `in`:
      // A's columns), and the other adapter, which every rank holds, gets
      // its gradient summed over the ranks (lcc.parallel_copy, Megatron's f).
      auto aWhole = RankedTensorType::get({rank, a.in}, wType.getElementType());
      auto bWhole = RankedTensorType::get({a.out, rank}, wType.getElementType());
      RankedTensorType aType = aWhole, bType = bWhole;
      DictionaryAttr aShard, bShard;
      bool copyA = false, copyB = false;
      if (a.splitOut) {
        bShard = lcc::shard::splitAttr(ctx, a.group, a.parts, 0, a.blocks, bWhole.getShape());
        bType = RankedTensorType::get({a.out / a.parts, rank}, wType.getElementType());
        copyA = true;
      } else if (a.splitIn) {
        aShard = lcc::shard::splitAttr(ctx, a.group, a.parts, 1, a.blocks, aWhole.getShape());
        aType = RankedTensorType::get({rank, a.in / a.parts}, wType.getElementType());
        copyB = true;
      }
      std::string aName = adapterName(a.module, "lora_A"), bName = adapterName(a.module, "lora_B");
      Location loc = fn.getArgument(a.arg).getLoc();
      auto attrs = [&](const std::string &name, DictionaryAttr shard) {
        SmallVector<NamedAttribute> list = {b.getNamedAttr("lcc.param", b.getStringAttr(name))};
        if (shard)
          list.push_back(b.getNamedAttr("lcc.shard", shard));
        return b.getDictionaryAttr(list);
      };
      if (failed(fn.insertArgument(a.arg + 1, aType, attrs(aName, aShard), loc)) ||
          failed(fn.insertArgument(a.arg + 2, bType, attrs(bName, bShard), loc))) {
        fn.emitError() << "lcc-lora: cannot add the adapters of '" << a.name << "'";
        return signalPassFailure();
      }
      Value w = fn.getArgument(a.arg), A = fn.getArgument(a.arg + 1), B = fn.getArgument(a.arg + 2);
      added.insert(A);
      added.insert(B);
      for (OpOperand &use : llvm::make_early_inc_range(w.getUses())) {
        auto mm = llvm::cast<lcc::MatmulOp>(use.getOwner());
        OpBuilder ob(mm);
        ob.setInsertionPointAfter(mm);
        Location at = mm.getLoc();
        Value x = mm.getLhs();
        auto xType = llvm::cast<RankedTensorType>(x.getType());
        SmallVector<int64_t> shape(xType.getShape());
        shape.back() = rank;
        Value aUse =
            copyA ? Value(lcc::ParallelCopyOp::create(ob, at, A.getType(), A, a.group)) : A;
        Value bUse =
            copyB ? Value(lcc::ParallelCopyOp::create(ob, at, B.getType(), B, a.group)) : B;
        auto down = lcc::MatmulOp::create(ob, at, xType.clone(shape), x, aUse,
                                          /*transpose_lhs=*/false, /*transpose_rhs=*/true);
        auto factor = lcc::FillOp::create(ob, at, RankedTensorType::get({}, xType.getElementType()),
                                          ob.getF64FloatAttr(scale));
        auto scaled = lcc::MulOp::create(ob, at, down.getType(), down, factor);
        auto up = lcc::MatmulOp::create(ob, at, mm.getType(), scaled, bUse, false, true);
        auto sum = lcc::AddOp::create(ob, at, mm.getType(), mm.getResult(), up);
        mm.getResult().replaceAllUsesExcept(sum, sum);
      }

      // @init: A ~ U(-1/sqrt(in), 1/sqrt(in)) (kaiming_uniform_ with a = sqrt(5), as PEFT),
      // B = 0, returned right after W.
      unsigned result = unsigned(llvm::find(paramArgs, a.arg) - paramArgs.begin());
      OpBuilder ib(ret);
      Location iloc = ret.getLoc();
      double bound = 1.0 / std::sqrt(double(a.in));
      Value seedValue =
          arith::ConstantOp::create(ib, iloc, ib.getI64IntegerAttr(adapterSeed(seed, aName)));
      Value aInit = lcc::RandomUniformOp::create(
          ib, iloc, aWhole, seedValue, ib.getF64FloatAttr(-bound), ib.getF64FloatAttr(bound));
      Value bInit = lcc::FillOp::create(ib, iloc, bWhole, ib.getF64FloatAttr(0.0));
      SmallVector<Value> results(ret.getOperands());
      results.insert(results.begin() + result + 1, {aInit, bInit});
      ret->setOperands(results);

      records.insert(
          records.begin(),
          b.getDictionaryAttr({b.getNamedAttr("base", b.getStringAttr(a.name)),
                               b.getNamedAttr("a", b.getStringAttr(aName)),
                               b.getNamedAttr("b", b.getStringAttr(bName)),
                               b.getNamedAttr("transposed", b.getBoolAttr(a.transposed))}));
    }
    // Everything else is frozen: the adapters are what trains.
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      if (fn.getArgAttr(i, "lcc.param") && !added.count(fn.getArgument(i)))
        fn.setArgAttr(i, "lcc.frozen", b.getUnitAttr());
    init.setType(FunctionType::get(ctx, {}, ret.getOperandTypes()));
    module->setAttr("lcc.lora",
                    b.getDictionaryAttr({b.getNamedAttr("rank", b.getI64IntegerAttr(rank)),
                                         b.getNamedAttr("alpha", b.getF64FloatAttr(alpha)),
                                         b.getNamedAttr("scale", b.getF64FloatAttr(scale)),
                                         b.getNamedAttr("rslora", b.getBoolAttr(rslora)),
                                         b.getNamedAttr("adapters", b.getArrayAttr(records))}));
  }

  /// `transpose(W) -> x @ W'` as `x @ W^T` (an ONNX export's nn.Linear is
  /// Transpose then MatMul), so the adapters see one matmul per use.
  static void foldTransposes(Value w) {
    for (Operation *user : llvm::make_early_inc_range(w.getUsers())) {
      auto t = llvm::dyn_cast<lcc::TransposeOp>(user);
      if (!t || t.getPerm().size() != 2 || t.getPerm()[0] != 1 ||
          !llvm::all_of(t->getUsers(), [&](Operation *u) {
            auto mm = llvm::dyn_cast<lcc::MatmulOp>(u);
            return mm && mm.getRhs() == t.getResult() && mm.getLhs() != t.getResult() &&
                   !mm.getTransposeRhs();
          }))
        continue;
      for (Operation *u : llvm::make_early_inc_range(t->getUsers())) {
        auto mm = llvm::cast<lcc::MatmulOp>(u);
        OpBuilder ob(mm);
        auto folded = lcc::MatmulOp::create(ob, mm.getLoc(), mm.getType(), mm.getLhs(), w,
                                            mm.getTransposeLhs(), /*transpose_rhs=*/true);
        mm.getResult().replaceAllUsesWith(folded.getResult());
        mm.erase();
      }
      t.erase();
    }
  }

  /// The parameters `targets` match, each checked to be a matmul weight.
  LogicalResult findTargets(func::FuncOp fn, std::vector<Adapter> &out) {
    // A plain module name matches as PEFT's target_modules do: the weight of
    // every module of that name (q_proj: layers.0.self_attn.q_proj.weight).
    std::vector<std::function<bool(llvm::StringRef)>> patterns;
    for (const std::string &text : targets) {
      if (text.find_first_of("*?[{") == std::string::npos) {
        patterns.push_back([text](llvm::StringRef name) {
          return name == text || name == text + ".weight" ||
                 name.ends_with("." + text + ".weight") || name.ends_with("." + text);
        });
        continue;
      }
      auto p = llvm::GlobPattern::create(text, /*MaxSubPatterns=*/1024);
      if (!p)
        return fn.emitError() << "lcc-lora: bad target pattern '" << text
                              << "': " << llvm::toString(p.takeError());
      patterns.push_back([glob = std::move(*p)](llvm::StringRef name) { return glob.match(name); });
    }
    std::vector<bool> matched(patterns.size(), false);
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      auto name = fn.getArgAttrOfType<StringAttr>(i, "lcc.param");
      if (!name)
        continue;
      auto folded = fn.getArgAttrOfType<StringAttr>(i, "lcc.folded_from");
      llvm::StringRef module = folded ? folded.getValue() : name.getValue();
      bool hit = false;
      for (size_t k = 0; k < patterns.size(); ++k)
        if (patterns[k](module))
          hit = matched[k] = true;
      if (!hit)
        continue;
      Value w = fn.getArgument(i);
      auto type = llvm::cast<RankedTensorType>(w.getType());
      foldTransposes(w);
      Adapter a{i, name.str(), module.str()};
      std::optional<bool> orientation;
      for (Operation *user : w.getUsers()) {
        auto mm = llvm::dyn_cast<lcc::MatmulOp>(user);
        if (!mm || mm.getRhs() != w || mm.getLhs() == w || mm.getTransposeLhs() ||
            type.getRank() != 2)
          return user->emitError()
                 << "lcc-lora: target '" << name.getValue() << "' is used by " << user->getName()
                 << "; adapters go on weights used only as the right side of "
                    "lcc.matmul (x @ W)";
        if (orientation && *orientation != mm.getTransposeRhs())
          return user->emitError()
                 << "lcc-lora: target '" << name.getValue() << "' is used both as W and as W^T";
        orientation = mm.getTransposeRhs();
      }
      if (!orientation)
        return fn.emitError() << "lcc-lora: target '" << name.getValue() << "' is not used";
      a.transposed = *orientation;
      int64_t inDim = a.transposed ? 1 : 0, outDim = 1 - inDim;
      SmallVector<int64_t> whole(type.getShape());
      // Split by lcc-shard-tp: the whole shape, and which features are split.
      if (auto shard = fn.getArgAttrOfType<DictionaryAttr>(i, "lcc.shard")) {
        auto group = shard.getAs<StringAttr>("group");
        auto parts = shard.getAs<IntegerAttr>("parts");
        auto dim = shard.getAs<IntegerAttr>("dim");
        auto shape = shard.getAs<DenseI64ArrayAttr>("shape");
        auto blocks = shard.getAs<IntegerAttr>("blocks");
        if (!group || !parts || !dim || !shape || shape.size() != 2 || shard.get("within") ||
            shape[dim.getInt()] % (parts.getInt() * (blocks ? blocks.getInt() : 1)) != 0)
          return fn.emitError() << "lcc-lora: target '" << name.getValue()
                                << "' is partitioned in a way adapters cannot follow (a "
                                   "tensor-parallel split of whole blocks is)";
        whole.assign(shape.asArrayRef().begin(), shape.asArrayRef().end());
        a.group = group.str();
        a.parts = parts.getInt();
        a.blocks = blocks ? blocks.getInt() : 1;
        a.splitOut = dim.getInt() == outDim;
        a.splitIn = dim.getInt() == inDim;
      }
      a.in = whole[inDim];
      a.out = whole[outDim];
      out.push_back(std::move(a));
    }
    for (size_t k = 0; k < patterns.size(); ++k)
      if (!matched[k])
        return fn.emitError() << "lcc-lora: target pattern '" << targets[k]
                              << "' matches no parameter";
    return success();
  }
};

} // namespace
