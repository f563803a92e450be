//===- PipelineStep.cpp - a stage's micro-batches in schedule order -------===//
//
// The step is unrolled: each micro-batch's forward and backward are their
// own copies of the stage's ops, placed where the schedule runs them, so
// what a forward keeps for its backward is an ordinary value live from one
// to the other, and the memory plan (lcc-plan-memory) counts exactly the
// micro-batches the schedule holds in flight. The repeated layers in each
// copy become calls of one layer function (lcc-outline-layers), so the
// copies cost calls, not kernels.
//
//===----------------------------------------------------------------------===//
#include "passes/pipeline/PipelineStep.h"

#include "dialects/lcc/LccOps.h"
#include "dialects/lcc/vjp/VjpUtils.h"

#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace lcc::pipeline {

std::optional<StageOf> stageOf(func::FuncOp fn) {
  auto attr = fn->getAttrOfType<DictionaryAttr>("lcc.pipeline");
  if (!attr)
    return std::nullopt;
  auto stage = attr.getAs<IntegerAttr>("stage"), stages = attr.getAs<IntegerAttr>("stages");
  auto loss = attr.getAs<TypeAttr>("loss");
  if (!stage || !stages || !loss)
    return std::nullopt;
  return StageOf{stage.getInt(), stages.getInt(), loss.getValue()};
}

SmallVector<Value> readsOf(Operation *op) {
  SmallVector<Value> reads(op->getOperands());
  if (op->getNumRegions()) {
    llvm::SetVector<Value> captured;
    getUsedValuesDefinedAbove(op->getRegions(), captured);
    reads.append(captured.begin(), captured.end());
  }
  return reads;
}

namespace {

enum Part { ForwardPart, InputGradPart, WeightGradPart };

/// The ops of `body` that `roots` depend on (operands and captured values).
llvm::DenseSet<Operation *> ancestors(Block &body, ArrayRef<Value> roots) {
  llvm::DenseSet<Operation *> seen;
  SmallVector<Value> work(roots);
  while (!work.empty()) {
    Value v = work.pop_back_val();
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != &body || !seen.insert(def).second)
      continue;
    llvm::append_range(work, readsOf(def));
  }
  return seen;
}

/// Arguments of `fn` carrying integer attribute `name`, ordered by its value.
SmallVector<BlockArgument> numberedArgs(func::FuncOp fn, StringRef name) {
  SmallVector<std::pair<int64_t, BlockArgument>> found;
  for (BlockArgument arg : fn.getArguments())
    if (auto k = fn.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(), name))
      found.push_back({k.getInt(), arg});
  llvm::sort(found, [](auto &x, auto &y) { return x.first < y.first; });
  return llvm::map_to_vector(found, [](auto &p) { return p.second; });
}

/// `schedule` as this file emits it, so what must not hang: a started group
/// of sends only is a posted lcc.exchange, completed before the rank's next
/// transfers (the runtime drains them first, as the schedule's Wait does);
/// any other group completes where it is posted.
Schedule asEmitted(const Schedule &schedule) {
  Schedule out = schedule;
  for (std::vector<Action> &program : out.program)
    for (Action &a : program)
      if (a.kind == Action::Transfers &&
          llvm::any_of(a.transfers, [](const Transfer &t) { return !t.send; }))
        a.wait = true;
  return out;
}

} // namespace

FailureOr<StageResults> buildStageMicroBatches(OpBuilder &b, Location loc, func::FuncOp gradFn,
                                               const Schedule &schedule, StringRef group,
                                               const IRMapping &fixed,
                                               llvm::function_ref<Value(unsigned, int64_t)> input) {
  std::optional<StageOf> where = stageOf(gradFn);
  if (!where)
    return emitError(loc) << "@" << gradFn.getSymName() << " is not a pipeline stage";
  if (schedule.virtualStages != 1 || schedule.ranks != where->stages)
    return emitError(loc) << "a schedule of " << schedule.ranks << " ranks x "
                          << schedule.virtualStages << " virtual stages cannot run "
                          << where->stages << " stages of one each";
  if (llvm::Expected<Simulation> sim = simulate(asEmitted(schedule)); !sim)
    return emitError(loc) << "the " << scheduleName(schedule.kind)
                          << " schedule cannot run: " << llvm::toString(sim.takeError());
  int64_t stage = where->stage, m = schedule.microbatches;
  bool last = where->last();

  Block &body = gradFn.getBody().front();
  auto ret = llvm::cast<func::ReturnOp>(body.getTerminator());
  // The results' roles: what goes forward (the sends, or the loss), the
  // parameters' gradients, the received values' gradients (sent back).
  SmallVector<Value> outputs, paramGrads, recvGrads;
  SmallVector<StringAttr> paramNames;
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    if (auto name = gradFn.getResultAttrOfType<StringAttr>(unsigned(i), "lcc.grad_of")) {
      paramGrads.push_back(v);
      paramNames.push_back(name);
    } else if (gradFn.getResultAttr(unsigned(i), "lcc.grad_of_recv")) {
      recvGrads.push_back(v);
    } else {
      outputs.push_back(v);
    }
  }
  if (last && outputs.size() != 1)
    return emitError(loc) << "the last pipeline stage must return one loss, @"
                          << gradFn.getSymName() << " returns " << outputs.size() << " values";
  SmallVector<BlockArgument> recvArgs = numberedArgs(gradFn, "lcc.pipeline_recv");
  SmallVector<BlockArgument> seedArgs = numberedArgs(gradFn, "lcc.pipeline_seed");

  // Each op's part. The forward is what the outputs need; the input gradient
  // what the received values' gradients need beyond it; the rest (weight
  // gradients, and what only they read) is the weight-gradient part.
  llvm::DenseSet<Operation *> forward = ancestors(body, outputs);
  llvm::DenseSet<Operation *> inputGrad = ancestors(body, recvGrads);
  auto partOf = [&](Operation *op) {
    return forward.contains(op)     ? ForwardPart
           : inputGrad.contains(op) ? InputGradPart
                                    : WeightGradPart;
  };

  std::vector<std::optional<IRMapping>> maps(static_cast<size_t>(m));
  auto mapOf = [&](int64_t k) -> IRMapping & {
    std::optional<IRMapping> &map = maps[size_t(k)];
    if (!map) {
      map = fixed;
      for (BlockArgument arg : gradFn.getArguments())
        if (!map->contains(arg) && !gradFn.getArgAttr(arg.getArgNumber(), "lcc.pipeline_recv") &&
            !gradFn.getArgAttr(arg.getArgNumber(), "lcc.pipeline_seed"))
          map->map(arg, input(arg.getArgNumber(), k));
    }
    return *map;
  };
  auto cloneParts = [&](int64_t k, std::initializer_list<Part> parts) {
    IRMapping &map = mapOf(k);
    for (Operation &op : body.without_terminator())
      if (llvm::is_contained(parts, partOf(&op)))
        b.clone(op, map);
  };
  // Looked up after the part that computes them ran; a schedule that sends
  // before computing was rejected by simulate().
  auto mapped = [&](int64_t k, ArrayRef<Value> values) {
    return llvm::map_to_vector(values, [&](Value v) { return mapOf(k).lookup(v); });
  };

  StageResults results;
  results.gradSums.resize(paramGrads.size());
  auto addGrads = [&](int64_t k) {
    for (auto [n, g] : llvm::enumerate(mapped(k, paramGrads))) {
      Value &sum = results.gradSums[n];
      // Named after the parameter, as lcc-build-train-step's own sums.
      sum = sum ? vjp::add(b, NameLoc::get(paramNames[n], loc), sum, g) : g;
    }
  };
  for (const Action &action : schedule.program[size_t(stage)]) {
    int64_t k = action.microbatch;
    switch (action.kind) {
    case Action::Forward:
      cloneParts(k, {ForwardPart});
      if (last) {
        Value loss = mapOf(k).lookup(outputs.front());
        results.lossSum = results.lossSum ? vjp::add(b, loc, results.lossSum, loss) : loss;
      }
      break;
    case Action::Backward:
      cloneParts(k, {InputGradPart, WeightGradPart});
      addGrads(k);
      break;
    case Action::BackwardInput: cloneParts(k, {InputGradPart}); break;
    case Action::BackwardWeight:
      cloneParts(k, {WeightGradPart});
      addGrads(k);
      break;
    case Action::Wait: break; // the runtime completes posted exchanges before the next transfers
    case Action::Transfers: {
      SmallVector<Value> sends;
      SmallVector<int64_t> sendPeers, recvPeers;
      SmallVector<Type> recvTypes;
      // Where each received value goes: (micro-batch, argument it stands for).
      SmallVector<std::pair<int64_t, BlockArgument>> into;
      for (const Transfer &t : action.transfers) {
        if (t.send) {
          SmallVector<Value> values = mapped(t.microbatch, t.gradient ? recvGrads : outputs);
          if (llvm::is_contained(values, Value()))
            return emitError(loc) << "internal error: the schedule sends micro-batch "
                                  << t.microbatch << " of stage " << stage
                                  << " before computing it";
          sends.append(values);
          sendPeers.append(values.size(), t.peer);
          continue;
        }
        for (BlockArgument arg : t.gradient ? seedArgs : recvArgs) {
          recvTypes.push_back(arg.getType());
          recvPeers.push_back(t.peer);
          into.push_back({t.microbatch, arg});
        }
      }
      if (sends.empty() && recvTypes.empty())
        break;
      // A started group of sends only (ZB-H1's input gradient, sent before
      // the weight gradients run) is posted: it completes while they do.
      auto exchange = lcc::ExchangeOp::create(
          b, loc, recvTypes, sends, group, b.getDenseI64ArrayAttr(sendPeers),
          b.getDenseI64ArrayAttr(recvPeers), !action.wait && recvTypes.empty());
      for (auto [slot, value] : llvm::zip(into, exchange.getResults()))
        mapOf(slot.first).map(slot.second, value);
      break;
    }
    }
  }
  if (last && !results.lossSum)
    return emitError(loc) << "internal error: the schedule runs no forward on the last stage";
  if (llvm::is_contained(results.gradSums, Value()) && !paramGrads.empty())
    return emitError(loc) << "internal error: the schedule runs no backward on stage " << stage;
  return results;
}

LogicalResult makeStageEvaluation(func::FuncOp fn, StringRef group) {
  std::optional<StageOf> where = stageOf(fn);
  if (!where)
    return fn.emitError() << "@" << fn.getSymName() << " is not a pipeline stage";
  Block &body = fn.getBody().front();
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  Location loc = fn.getLoc();
  SmallVector<BlockArgument> recvArgs = numberedArgs(fn, "lcc.pipeline_recv");
  if (!recvArgs.empty()) {
    SmallVector<Type> types =
        llvm::map_to_vector(recvArgs, [](BlockArgument a) { return a.getType(); });
    auto recv = lcc::ExchangeOp::create(
        b, loc, types, ValueRange(), group, b.getDenseI64ArrayAttr({}),
        b.getDenseI64ArrayAttr(SmallVector<int64_t>(types.size(), where->stage - 1)));
    llvm::BitVector erase(fn.getNumArguments());
    for (auto [arg, value] : llvm::zip(recvArgs, recv.getResults())) {
      arg.replaceAllUsesWith(value);
      erase.set(arg.getArgNumber());
    }
    if (failed(fn.eraseArguments(erase)))
      return failure();
  }
  auto ret = llvm::cast<func::ReturnOp>(body.getTerminator());
  b.setInsertionPoint(ret);
  Value result;
  if (where->last()) {
    result = ret.getOperand(0);
  } else {
    lcc::ExchangeOp::create(
        b, loc, TypeRange(), ret.getOperands(), group,
        b.getDenseI64ArrayAttr(SmallVector<int64_t>(ret.getNumOperands(), where->stage + 1)),
        b.getDenseI64ArrayAttr({}));
    result = vjp::fill(b, loc, llvm::cast<RankedTensorType>(where->loss), 0.0);
  }
  result = lcc::BroadcastOp::create(b, loc, result.getType(), result, group, where->stages - 1);
  func::ReturnOp::create(b, ret.getLoc(), result);
  ret.erase();
  fn.setType(b.getFunctionType(fn.getArgumentTypes(), result.getType()));
  fn.setAllResultAttrs(ArrayRef<DictionaryAttr>{b.getDictionaryAttr({})});
  return success();
}

} // namespace lcc::pipeline
