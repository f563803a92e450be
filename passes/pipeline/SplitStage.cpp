//===- SplitStage.cpp - one pipeline stage of a model function ------------===//
//
// See Passes.td (lcc-split-stage). The stage's function is built anew from
// the marked one: arguments first (the parameters its ops read, every batch
// input, the values it receives), then the ops it runs, in their order.
//
//===----------------------------------------------------------------------===//
#include "dialects/lcc/LccOps.h"
#include "passes/pipeline/Passes.h"
#include "passes/pipeline/PipelineStep.h"
#include "passes/shard/ShardUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"

#include <map>

namespace lcc {
#define GEN_PASS_DEF_LCCSPLITSTAGEPASS
#include "passes/pipeline/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {

using lcc::pipeline::readsOf;

struct LccSplitStagePass : lcc::impl::LccSplitStagePassBase<LccSplitStagePass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(split(getOperation())))
      signalPassFailure();
  }

  LogicalResult split(ModuleOp module);
  /// @init returns the parameters of @function in argument order: keep the
  /// results of the kept ones (`keep[k]` for the k-th parameter).
  LogicalResult pruneInit(ModuleOp module, ArrayRef<bool> keep);
};

LogicalResult LccSplitStagePass::split(ModuleOp module) {
  auto fn = module.lookupSymbol<func::FuncOp>(function);
  if (!fn || fn.isExternal() || !fn.getBody().hasOneBlock())
    return module.emitError() << "lcc-split-stage: no function @" << function
                              << " with a body of one block";
  Block &body = fn.getBody().front();
  auto stageOf = [](Operation *op) -> std::optional<int64_t> {
    if (auto s = op->getAttrOfType<IntegerAttr>("lcc.stage"))
      return s.getInt();
    return std::nullopt;
  };
  int64_t stages = 0;
  for (Operation &op : body.without_terminator()) {
    std::optional<int64_t> s = stageOf(&op);
    if (!s)
      return op.emitError() << "lcc-split-stage: op without lcc.stage in @" << function
                            << " (run lcc-partition-pipeline first)";
    if (*s < 0)
      return op.emitError() << "lcc-split-stage: negative stage " << *s;
    stages = std::max(stages, *s + 1);
  }
  // Interleaved (V virtual stages per rank): rank r runs stages r, r + P,
  // ..., its chunks, in one function (see Passes.td).
  if (virtualStages < 1 || stages % virtualStages)
    return fn.emitError() << "lcc-split-stage: " << stages << " stages cannot be spread as "
                          << int64_t(virtualStages) << " virtual stages per rank";
  int64_t ranks = stages / virtualStages;
  if (stage < 0 || stage >= ranks)
    return fn.emitError() << "lcc-split-stage: stage " << int64_t(stage) << " does not exist: @"
                          << function << " has " << ranks << " stages"
                          << (virtualStages > 1 ? " of " + std::to_string(int64_t(virtualStages)) +
                                                      " virtual stages each"
                                                : std::string());
  SmallVector<int64_t> chunks; // the stages this rank runs, in order
  for (int64_t v = 0; v < virtualStages; ++v)
    chunks.push_back(stage + v * ranks);
  auto ret = llvm::cast<func::ReturnOp>(body.getTerminator());

  // Parameters read by several stages (an embedding tied to the head): each
  // rank holding one holds a copy, and their gradients are summed over those
  // ranks (lcc-build-train-step) in the group tiedGroupName names: the whole
  // pipeline, its two ends, or those ranks. Two stages of one rank cannot
  // share one (their gradients would be one sum the rank's schedule splits).
  llvm::DenseMap<Value, SmallVector<int64_t>> readers;
  for (Operation &op : body.without_terminator())
    for (Value v : readsOf(&op))
      if (auto arg = llvm::dyn_cast<BlockArgument>(v);
          arg && arg.getOwner() == &body && fn.getArgAttr(arg.getArgNumber(), "lcc.param") &&
          !fn.getArgAttr(arg.getArgNumber(), "lcc.frozen")) { // frozen: no gradient to sum
        SmallVector<int64_t> &stagesOf = readers[v];
        if (!llvm::is_contained(stagesOf, *stageOf(&op)))
          stagesOf.push_back(*stageOf(&op));
      }
  std::map<std::string, int64_t> tiedGroups; // beside pp: name -> ranks
  llvm::DenseMap<Value, SmallVector<int64_t>> tiedRanks;
  for (auto &[v, stagesOf] : readers) {
    if (stagesOf.size() < 2)
      continue;
    llvm::sort(stagesOf);
    auto arg = llvm::cast<BlockArgument>(v);
    StringRef name = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "lcc.param").getValue();
    SmallVector<int64_t> &holders = tiedRanks[v];
    for (int64_t s : stagesOf) {
      if (llvm::is_contained(holders, s % ranks))
        return fn.emitError() << "lcc-split-stage: parameter '" << name
                              << "' is read by two stages of rank " << s % ranks
                              << ": with virtual stages, a parameter is shared by stages of "
                                 "different ranks only";
      holders.push_back(s % ranks);
    }
    llvm::sort(holders);
    if (std::string group = lcc::pipeline::tiedGroupName(holders, ranks); group != "pp")
      tiedGroups[group] = int64_t(holders.size());
  }

  // Values that depend on a parameter: computed by one stage and sent on.
  // The others (masks, positions, anything of the inputs and constants
  // only) are computed again by each stage that reads them.
  llvm::DenseSet<Value> fromParams;
  for (BlockArgument arg : body.getArguments())
    if (fn.getArgAttr(arg.getArgNumber(), "lcc.param"))
      fromParams.insert(arg);
  for (Operation &op : body.without_terminator())
    if (llvm::any_of(readsOf(&op), [&](Value v) { return fromParams.contains(v); }))
      for (Value r : op.getResults())
        fromParams.insert(r);

  // What crosses into stage b (1 <= b < stages): results of parameter-
  // dependent ops of earlier stages read at stage b or later, in the order
  // they are defined.
  auto crossing = [&](int64_t b) {
    SmallVector<Value> values;
    for (Operation &op : body.without_terminator()) {
      if (*stageOf(&op) >= b)
        continue;
      for (Value r : op.getResults()) {
        if (!fromParams.contains(r))
          continue;
        bool later = llvm::any_of(r.getUsers(), [&](Operation *user) {
          Operation *top = body.findAncestorOpInBlock(*user);
          return top != ret && *stageOf(top) >= b;
        });
        // The loss leaves from the last stage only.
        if (later || (llvm::is_contained(ret.getOperands(), r) && b == stages - 1))
          values.push_back(r);
      }
    }
    return values;
  };
  SmallVector<Operation *> ops =
      llvm::map_to_vector(body.without_terminator(), [](Operation &op) { return &op; });
  // Per chunk: what it receives, what it sends, and the ops it runs (its
  // own, and the parameter-free ones of earlier stages whose results it
  // reads). Each chunk is cloned on its own, so that a value it receives is
  // the received one even where this rank computed it in an earlier chunk.
  struct Chunk {
    SmallVector<Value> received, sent;
    llvm::DenseSet<Operation *> runs;
  };
  SmallVector<Chunk> parts(chunks.size());
  llvm::DenseSet<Value> neededArgs;
  for (auto [v, s] : llvm::enumerate(chunks)) {
    Chunk &chunk = parts[v];
    if (s > 0)
      chunk.received = crossing(s);
    chunk.sent = s == stages - 1 ? SmallVector<Value>(ret.getOperands()) : crossing(s + 1);
    llvm::DenseSet<Value> needed(chunk.sent.begin(), chunk.sent.end());
    for (Operation *op : llvm::reverse(ops)) {
      int64_t at = *stageOf(op);
      bool mine = at == s;
      bool remade =
          at < s &&
          llvm::none_of(op->getResults(), [&](Value r) { return fromParams.contains(r); }) &&
          llvm::any_of(op->getResults(), [&](Value r) { return needed.contains(r); });
      if (!mine && !remade)
        continue;
      chunk.runs.insert(op);
      for (Value r : readsOf(op))
        needed.insert(r);
    }
    for (Value r : needed)
      if (llvm::isa<BlockArgument>(r))
        neededArgs.insert(r);
  }

  // The new signature: parameters read, every batch input, received values
  // (chunk by chunk); results: the chunks' sent values, then the loss.
  OpBuilder b(fn);
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  SmallVector<Value> oldArgs;
  SmallVector<bool> keepParam;
  for (BlockArgument arg : body.getArguments()) {
    bool param = bool(fn.getArgAttr(arg.getArgNumber(), "lcc.param"));
    if (param)
      keepParam.push_back(neededArgs.contains(arg));
    if (param && !neededArgs.contains(arg))
      continue;
    oldArgs.push_back(arg);
    argTypes.push_back(arg.getType());
    NamedAttrList attrs(fn.getArgAttrDict(arg.getArgNumber()));
    if (auto it = tiedRanks.find(arg); param && it != tiedRanks.end())
      attrs.set("lcc.pipeline_tied", b.getDenseI64ArrayAttr(it->second));
    argAttrs.push_back(attrs.getDictionary(&getContext()));
  }
  SmallVector<Type> resultTypes;
  SmallVector<DictionaryAttr> resultAttrs;
  SmallVector<int64_t> recvCounts, sendCounts;
  int64_t recvs = 0, sends = 0;
  for (auto [v, chunk] : llvm::enumerate(parts)) {
    for (Value r : chunk.received) {
      argTypes.push_back(r.getType());
      argAttrs.push_back(
          b.getDictionaryAttr(b.getNamedAttr("lcc.pipeline_recv", b.getI64IntegerAttr(recvs++))));
    }
    recvCounts.push_back(int64_t(chunk.received.size()));
    bool loss = chunks[v] == stages - 1;
    for (auto [k, r] : llvm::enumerate(chunk.sent)) {
      resultTypes.push_back(r.getType());
      DictionaryAttr given = loss ? fn.getResultAttrDict(unsigned(k)) : DictionaryAttr();
      resultAttrs.push_back(loss ? (given ? given : b.getDictionaryAttr({}))
                                 : b.getDictionaryAttr(b.getNamedAttr(
                                       "lcc.pipeline_send", b.getI64IntegerAttr(sends++))));
    }
    sendCounts.push_back(loss ? 0 : int64_t(chunk.sent.size()));
  }

  auto stageFn = func::FuncOp::create(b, fn.getLoc(), fn.getSymName(),
                                      b.getFunctionType(argTypes, resultTypes));
  for (NamedAttribute attr : fn->getDiscardableAttrs())
    stageFn->setAttr(attr.getName(), attr.getValue());
  stageFn.setVisibility(fn.getVisibility());
  SmallVector<NamedAttribute> where = {
      b.getNamedAttr("stage", b.getI64IntegerAttr(stage)),
      b.getNamedAttr("stages", b.getI64IntegerAttr(stages)),
      b.getNamedAttr("loss", TypeAttr::get(ret.getOperand(0).getType()))};
  if (virtualStages > 1) {
    where.push_back(b.getNamedAttr("virtual", b.getI64IntegerAttr(virtualStages)));
    where.push_back(b.getNamedAttr("chunk_recvs", b.getDenseI64ArrayAttr(recvCounts)));
    where.push_back(b.getNamedAttr("chunk_sends", b.getDenseI64ArrayAttr(sendCounts)));
  }
  stageFn->setAttr("lcc.pipeline", b.getDictionaryAttr(where));
  Block *entry = stageFn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  SmallVector<Value> results;
  unsigned firstRecv = unsigned(oldArgs.size());
  for (Chunk &chunk : parts) {
    IRMapping map;
    for (auto [old, arg] : llvm::zip(oldArgs, entry->getArguments()))
      map.map(old, arg);
    for (Value r : chunk.received)
      map.map(r, entry->getArgument(firstRecv++));
    for (Operation *op : ops) {
      if (!chunk.runs.contains(op))
        continue;
      for (Value v : readsOf(op))
        if (!map.contains(v) && v.getParentBlock() == &body)
          return op->emitError() << "internal error: lcc-split-stage: stage " << int64_t(stage)
                                 << " reads a value it neither computes nor receives";
      Operation *clone = b.clone(*op, map);
      clone->removeAttr("lcc.stage");
    }
    for (Value r : chunk.sent)
      results.push_back(map.lookup(r));
  }
  func::ReturnOp::create(b, ret.getLoc(), results);
  stageFn.setAllArgAttrs(argAttrs);
  stageFn.setAllResultAttrs(resultAttrs);
  fn.erase();
  if (failed(lcc::shard::declareGroup(module, "pp", ranks, "lcc-split-stage")))
    return failure();
  for (auto &[group, size] : tiedGroups)
    if (failed(lcc::shard::declareGroup(module, group, size, "lcc-split-stage")))
      return failure();
  return pruneInit(module, keepParam);
}

LogicalResult LccSplitStagePass::pruneInit(ModuleOp module, ArrayRef<bool> keep) {
  auto init = module.lookupSymbol<func::FuncOp>("init");
  if (!init || init.isExternal())
    return success();
  if (init.getNumResults() != keep.size())
    return init.emitError() << "lcc-split-stage: @init returns " << init.getNumResults()
                            << " values, @" << function << " has " << keep.size() << " parameters";
  auto ret = llvm::cast<func::ReturnOp>(init.getBody().back().getTerminator());
  SmallVector<Value> results;
  SmallVector<DictionaryAttr> attrs;
  for (auto [k, v] : llvm::enumerate(ret.getOperands()))
    if (keep[k]) {
      results.push_back(v);
      DictionaryAttr a = init.getResultAttrDict(unsigned(k));
      attrs.push_back(a ? a : DictionaryAttr::get(module.getContext()));
    }
  OpBuilder b(ret);
  func::ReturnOp::create(b, ret.getLoc(), results);
  ret.erase();
  init.setType(b.getFunctionType(init.getArgumentTypes(), ValueRange(results).getTypes()));
  init.setAllResultAttrs(attrs);
  // The other stages' initializers go (in reverse: users first).
  Block &block = init.getBody().front();
  SmallVector<Operation *> ops =
      llvm::map_to_vector(block.without_terminator(), [](Operation &op) { return &op; });
  for (Operation *op : llvm::reverse(ops))
    if (isOpTriviallyDead(op))
      op->erase();
  return success();
}

} // namespace
