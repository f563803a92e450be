//===- PipelineStep.cpp - a stage's micro-batches in schedule order -------===//
//
// The step calls, per micro-batch and where the schedule runs them, one
// function per part of the stage (its forward, its backward, or the
// backward's input- and weight-gradient halves), so the step grows by a few
// calls per micro-batch and everything after (lowering, fusion,
// bufferization, kernels) works on one copy of each part: a stage compiles
// in about the same time for 4 micro-batches as for 32. What a forward keeps
// for its backward is a result of one call read by a later one, an ordinary
// value of the step, so the memory plan (lcc-plan-memory) counts exactly the
// micro-batches the schedule holds in flight. The part functions are layer
// functions (`lcc.layer = "pipeline.<part>"`): destination-passing style,
// bufferized once, their temporaries placed per call. Ops with effects (a
// tensor-parallel all-reduce) stay in the step, between the calls of the
// part's pieces before and after them.
//
//===----------------------------------------------------------------------===//
#include "passes/pipeline/PipelineStep.h"

#include "dialects/lcc/LccOps.h"
#include "dialects/lcc/vjp/VjpUtils.h"

#include "passes/PassBase.h"

#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <functional>

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

/// A piece of the ops one schedule action runs per micro-batch: effect-free
/// ops, outlined as one function called once per micro-batch, or one op with
/// effects, cloned into the step per micro-batch.
struct Piece {
  SmallVector<Operation *> ops;
  func::FuncOp fn;             // null for an op with effects
  SmallVector<Value> liveIns;  // fn's arguments (then the running sums, if `sums`)
  SmallVector<Value> liveOuts; // fn's results (then the new sums, if `sums`)
  bool sums = false;           // adds the parameters' gradients to running sums
};

bool isLayout(Operation *op) { return llvm::isa_and_nonnull<lcc::TransposeOp, lcc::ReshapeOp>(op); }

/// Values every piece that reads them makes again: constants, fills, empty
/// tensors (no operands, no effects). Layout ops, see StageBody::remakes.
bool remade(Value v) {
  Operation *def = v.getDefiningOp();
  return def && def->getNumOperands() == 0 && def->getNumRegions() == 0 && isMemoryEffectFree(def);
}

/// The first value above `v` not made by a layout op.
Value layoutRoot(Value v) {
  while (isLayout(v.getDefiningOp()))
    v = v.getDefiningOp()->getOperand(0);
  return v;
}

/// What the pieces of one action need to know about the stage's function.
struct StageBody {
  Block *body;
  SmallVector<Value> outputs, paramGrads, recvGrads;
  SmallVector<StringAttr> paramNames;
  /// The schedule runs whole backwards: the input- and weight-gradient
  /// parts run in one action, so they read as one group.
  bool wholeBackward = false;
  /// (value, group) for each value an op of that group reads.
  llvm::DenseSet<std::pair<Value, unsigned>> reads;

  unsigned groupOf(Part p) const {
    return wholeBackward && p == WeightGradPart ? unsigned(InputGradPart) : unsigned(p);
  }
  /// Whether a reader in `group` makes layout value `v` (made by another
  /// piece) again from its root rather than take it: when the group reads
  /// that root too, so that passing both forms would keep both (inline,
  /// CSE and fusion kept one). The step (`kStep`) always makes it again.
  static constexpr unsigned kStep = ~0u;
  bool remakes(unsigned group, Value v) const {
    return isLayout(v.getDefiningOp()) &&
           (group == kStep || reads.contains({layoutRoot(v), group}));
  }
};

/// Cuts the ops of `parts` (in body order) into pieces and outlines the
/// effect-free ones as layer functions named `<step>_<name>`; the last
/// piece adds the parameters' gradients to running sums when `sums` is set
/// (a piece of its own when the last op has effects).
SmallVector<Piece> buildPieces(const StageBody &stage, llvm::function_ref<Part(Operation *)> partOf,
                               std::initializer_list<Part> parts, bool sums, func::FuncOp step,
                               StringRef name, Location loc) {
  SmallVector<Piece> pieces;
  bool open = false;
  for (Operation &op : stage.body->without_terminator()) {
    if (!llvm::is_contained(parts, partOf(&op)))
      continue;
    bool pure = isMemoryEffectFree(&op);
    if (!pure || !open)
      pieces.emplace_back();
    pieces.back().ops.push_back(&op);
    open = pure;
  }
  if (sums && !stage.paramGrads.empty() && !open)
    pieces.emplace_back();
  if (sums && !pieces.empty())
    pieces.back().sums = !stage.paramGrads.empty();

  llvm::DenseMap<Operation *, unsigned> pieceOf;
  for (auto [n, piece] : llvm::enumerate(pieces))
    for (Operation *op : piece.ops)
      pieceOf[op] = unsigned(n);
  auto ret = stage.body->getTerminator();
  auto module = step->getParentOfType<ModuleOp>();
  SymbolTable symbols(module);
  for (auto [n, piece] : llvm::enumerate(pieces)) {
    if (piece.ops.size() == 1 && !isMemoryEffectFree(piece.ops.front()))
      continue;
    auto inside = [&](Value v) {
      Operation *def = v.getDefiningOp();
      return def && pieceOf.contains(def) && pieceOf.lookup(def) == n;
    };
    llvm::SetVector<Value> liveIns;
    llvm::SetVector<Operation *> again; // operands first
    std::function<void(unsigned, Value)> read = [&](unsigned group, Value v) {
      if (inside(v))
        return;
      Operation *def = v.getDefiningOp();
      if (!(remade(v) || stage.remakes(group, v)) || llvm::any_of(def->getOperands(), inside)) {
        liveIns.insert(v);
        return;
      }
      for (Value operand : def->getOperands())
        read(group, operand);
      again.insert(def);
    };
    for (Operation *op : piece.ops)
      for (Value v : readsOf(op))
        read(stage.groupOf(partOf(op)), v);
    if (piece.sums)
      for (Value g : stage.paramGrads)
        read(stage.groupOf(WeightGradPart), g);
    // What leaves the piece: what another piece or the step reads, and the
    // stage's results this action provides, unless the reader makes it again
    // (a layout op's result); then the root of what it makes again.
    auto wanted = [&](Value r) {
      return llvm::is_contained(stage.outputs, r) || llvm::is_contained(stage.recvGrads, r) ||
             (!piece.sums && llvm::is_contained(stage.paramGrads, r));
    };
    std::function<bool(Value, bool)> leaves = [&](Value r, bool remadeOnly) {
      return llvm::any_of(r.getUsers(), [&](Operation *user) {
        Operation *top = stage.body->findAncestorOpInBlock(*user);
        bool remakes = top == ret ? stage.remakes(StageBody::kStep, r)
                                  : stage.remakes(stage.groupOf(partOf(top)), r);
        if (top == ret || !pieceOf.contains(top) || pieceOf.lookup(top) != n) {
          if (top == ret && !wanted(r))
            return false;
          return remadeOnly ? remakes : !remakes;
        }
        // A layout op of this piece whose result a reader makes again: from
        // the chain's root, so that leaves (and not a layout value on it).
        if (!isLayout(user) || (!remadeOnly && isLayout(r.getDefiningOp())))
          return false;
        return leaves(user->getResult(0), true);
      });
    };
    for (Operation *op : piece.ops)
      for (Value r : op->getResults())
        if (!remade(r) && leaves(r, false))
          piece.liveOuts.push_back(r);
    piece.liveIns = liveIns.takeVector();

    SmallVector<Type> argTypes =
        llvm::map_to_vector(piece.liveIns, [](Value v) { return v.getType(); });
    SmallVector<Type> resultTypes =
        llvm::map_to_vector(piece.liveOuts, [](Value v) { return v.getType(); });
    if (piece.sums)
      for (Value g : stage.paramGrads) {
        argTypes.push_back(g.getType());
        resultTypes.push_back(g.getType());
      }
    OpBuilder mb(module.getContext());
    auto fn = func::FuncOp::create(mb, loc, (step.getSymName() + "_" + name).str(),
                                   mb.getFunctionType(argTypes, resultTypes));
    fn.setPrivate();
    fn->setAttr(lcc::kLayerAttr, mb.getStringAttr("pipeline." + name));
    symbols.insert(fn, Block::iterator(step));
    Block *entry = fn.addEntryBlock();
    IRMapping map;
    for (auto [v, arg] : llvm::zip(piece.liveIns, entry->getArguments()))
      map.map(v, arg);
    OpBuilder fb = OpBuilder::atBlockEnd(entry);
    for (Operation *op : again)
      fb.clone(*op, map);
    for (Operation *op : piece.ops)
      fb.clone(*op, map);
    SmallVector<Value> results =
        llvm::map_to_vector(piece.liveOuts, [&](Value v) { return map.lookup(v); });
    if (piece.sums)
      for (auto [k, g] : llvm::enumerate(stage.paramGrads))
        results.push_back(vjp::add(fb, NameLoc::get(stage.paramNames[k], loc),
                                   entry->getArgument(unsigned(piece.liveIns.size() + k)),
                                   map.lookup(g)));
    func::ReturnOp::create(fb, loc, results);
    piece.fn = fn;
  }
  return pieces;
}

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

  StageBody parts{&gradFn.getBody().front(), {}, {}, {}, {}};
  Block &body = *parts.body;
  auto ret = llvm::cast<func::ReturnOp>(body.getTerminator());
  // The results' roles: what goes forward (the sends, or the loss), the
  // parameters' gradients, the received values' gradients (sent back).
  SmallVector<Value> &outputs = parts.outputs, &paramGrads = parts.paramGrads,
                     &recvGrads = parts.recvGrads;
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    if (auto name = gradFn.getResultAttrOfType<StringAttr>(unsigned(i), "lcc.grad_of")) {
      paramGrads.push_back(v);
      parts.paramNames.push_back(name);
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

  parts.wholeBackward = llvm::any_of(schedule.program[size_t(stage)],
                                     [](const Action &a) { return a.kind == Action::Backward; });
  for (Operation &op : body.without_terminator())
    for (Value v : readsOf(&op))
      parts.reads.insert({v, parts.groupOf(partOf(&op))});

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
  // Micro-batch k's value of `v`: null before the part computing it ran (a
  // schedule that sends before computing was rejected by simulate());
  // constants and layout ops are made again here from what they read.
  std::function<Value(int64_t, Value)> valueOf = [&](int64_t k, Value v) -> Value {
    IRMapping &map = mapOf(k);
    if (Value known = map.lookupOrNull(v))
      return known;
    Operation *def = v.getDefiningOp();
    if (!remade(v) && !isLayout(def))
      return {};
    for (Value operand : def->getOperands())
      if (!valueOf(k, operand))
        return {};
    return b.clone(*def, map)->getResult(llvm::cast<OpResult>(v).getResultNumber());
  };
  auto mapped = [&](int64_t k, ArrayRef<Value> values) {
    return llvm::map_to_vector(values, [&](Value v) { return valueOf(k, v); });
  };

  // The pieces of each kind of action, outlined when the schedule first
  // runs one. The gradients' running sums start at zero (x + 0 is x) and are
  // added in the order the schedule runs the weight gradients.
  auto step = b.getInsertionBlock()->getParent()->getParentOfType<func::FuncOp>();
  std::optional<SmallVector<Piece>> forwardPieces, backwardPieces, inputPieces, weightPieces;
  auto piecesOf = [&](std::optional<SmallVector<Piece>> &pieces, std::initializer_list<Part> kinds,
                      bool sums, StringRef name) -> ArrayRef<Piece> {
    if (!pieces)
      pieces = buildPieces(parts, partOf, kinds, sums, step, name, loc);
    return *pieces;
  };
  StageResults results;
  SmallVector<Value> &sums = results.gradSums;
  auto run = [&](int64_t k, ArrayRef<Piece> pieces) -> LogicalResult {
    IRMapping &map = mapOf(k);
    for (const Piece &piece : pieces) {
      func::FuncOp fn = piece.fn;
      if (!fn) {
        for (Value v : readsOf(piece.ops.front()))
          valueOf(k, v);
        b.clone(*piece.ops.front(), map);
        continue;
      }
      SmallVector<Value> args;
      for (Value v : piece.liveIns) {
        args.push_back(map.lookupOrNull(v));
        if (!args.back())
          return emitError(loc) << "internal error: micro-batch " << k << " of stage " << stage
                                << " calls @" << fn.getSymName()
                                << " before computing its arguments";
      }
      if (piece.sums) {
        if (sums.empty())
          for (Value g : paramGrads)
            sums.push_back(vjp::fill(b, loc, g.getType(), 0.0));
        args.append(sums);
      }
      auto call = func::CallOp::create(b, loc, fn, args);
      for (auto [v, r] : llvm::zip(piece.liveOuts, call.getResults()))
        map.map(v, r);
      if (piece.sums)
        sums = llvm::to_vector_of<Value>(call.getResults().take_back(paramGrads.size()));
    }
    return success();
  };

  for (const Action &action : schedule.program[size_t(stage)]) {
    int64_t k = action.microbatch;
    switch (action.kind) {
    case Action::Forward:
      if (failed(run(k, piecesOf(forwardPieces, {ForwardPart}, false, kForwardFunction))))
        return failure();
      if (last) {
        Value loss = valueOf(k, outputs.front());
        results.lossSum = results.lossSum ? vjp::add(b, loc, results.lossSum, loss) : loss;
      }
      break;
    case Action::Backward:
      if (failed(run(k, piecesOf(backwardPieces, {InputGradPart, WeightGradPart}, true,
                                 kBackwardFunction))))
        return failure();
      break;
    case Action::BackwardInput:
      if (failed(run(k, piecesOf(inputPieces, {InputGradPart}, false, kInputGradFunction))))
        return failure();
      break;
    case Action::BackwardWeight:
      if (failed(run(k, piecesOf(weightPieces, {WeightGradPart}, true, kWeightGradFunction))))
        return failure();
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
  if (results.gradSums.size() != paramGrads.size())
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
