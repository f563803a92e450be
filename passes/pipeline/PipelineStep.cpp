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
#include <map>

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
  StageOf where;
  where.rank = stage.getInt();
  where.loss = loss.getValue();
  if (auto v = attr.getAs<IntegerAttr>("virtual"))
    where.virtualStages = v.getInt();
  if (where.virtualStages < 1 || stages.getInt() % where.virtualStages)
    return std::nullopt;
  where.ranks = stages.getInt() / where.virtualStages;
  auto recvs = attr.getAs<DenseI64ArrayAttr>("chunk_recvs"),
       sends = attr.getAs<DenseI64ArrayAttr>("chunk_sends");
  if (where.virtualStages > 1) {
    if (!recvs || !sends || int64_t(recvs.size()) != where.virtualStages ||
        int64_t(sends.size()) != where.virtualStages)
      return std::nullopt;
    where.recvs.assign(recvs.asArrayRef().begin(), recvs.asArrayRef().end());
    where.sends.assign(sends.asArrayRef().begin(), sends.asArrayRef().end());
  }
  if (where.rank < 0 || where.rank >= where.ranks)
    return std::nullopt;
  return where;
}

std::string tiedGroupName(ArrayRef<int64_t> holders, int64_t ranks) {
  if (int64_t(holders.size()) == ranks)
    return "pp";
  if (holders.size() == 2 && holders.front() == 0 && holders.back() == ranks - 1)
    return "pp_ends";
  std::string name = "pp_tied";
  for (int64_t r : holders)
    name += "_" + std::to_string(r);
  return name;
}

std::optional<SmallVector<int64_t>> tiedGroupMembers(StringRef name, int64_t ranks) {
  if (name == "pp_ends")
    return SmallVector<int64_t>{0, ranks - 1};
  if (!name.consume_front("pp_tied_"))
    return std::nullopt;
  SmallVector<int64_t> members;
  for (StringRef item : llvm::split(name, '_')) {
    int64_t r = 0;
    if (item.getAsInteger(10, r) || r < 0 || r >= ranks ||
        (!members.empty() && r <= members.back()))
      return std::nullopt;
    members.push_back(r);
  }
  if (members.size() < 2)
    return std::nullopt;
  return members;
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

std::string partFunctionName(StringRef part, int64_t chunk, int64_t virtualStages) {
  return virtualStages > 1 ? (part + "_c" + llvm::Twine(chunk)).str() : part.str();
}

std::vector<std::string> partFunctionNames(int64_t virtualStages) {
  std::vector<std::string> names;
  for (int64_t c = 0; c < virtualStages; ++c)
    for (StringRef part : kPartFunctions)
      names.push_back(partFunctionName(part, c, virtualStages));
  return names;
}

namespace {

enum PartKind : unsigned { ForwardPart, InputGradPart, WeightGradPart, kPartKinds };
/// A part of one of the rank's stages (its `chunk`-th): chunk * kPartKinds
/// + kind, so that parts are numbered in the order a micro-batch's forwards
/// run (the backwards run in reverse chunk order).
using Part = unsigned;
Part partId(int64_t chunk, PartKind kind) { return unsigned(chunk) * kPartKinds + kind; }

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

/// What the pieces of one action need to know about the stage's function:
/// the results and arguments of one of the rank's stages (its `chunk`-th).
struct StageBody {
  Block *body = nullptr;
  int64_t chunk = 0;
  SmallVector<Value> outputs, paramGrads, recvGrads;
  SmallVector<StringAttr> paramNames;
  SmallVector<BlockArgument> recvArgs, seedArgs;
  /// Each of paramGrads' index among all the function's parameter gradients.
  SmallVector<unsigned> gradIndex;
  /// The schedule runs whole backwards: the input- and weight-gradient
  /// parts run in one action, so they read as one group.
  bool wholeBackward = false;
  /// (value, group) for each value an op of that group reads (all chunks').
  const llvm::DenseSet<std::pair<Value, unsigned>> *reads = nullptr;

  Part part(PartKind kind) const { return partId(chunk, kind); }
  unsigned groupOf(Part p) const {
    return wholeBackward && p % kPartKinds == WeightGradPart ? p - 1 : p;
  }
  /// Whether a reader in `group` makes layout value `v` (made by another
  /// piece) again from its root rather than take it: when the group reads
  /// that root too, so that passing both forms would keep both (inline,
  /// CSE and fusion kept one). The step (`kStep`) always makes it again.
  static constexpr unsigned kStep = ~0u;
  bool remakes(unsigned group, Value v) const {
    return isLayout(v.getDefiningOp()) &&
           (group == kStep || reads->contains({layoutRoot(v), group}));
  }
};

/// Cuts the ops of `parts` (in body order) into pieces and outlines the
/// effect-free ones as layer functions named `<step>_<name>`; the last
/// piece adds the parameters' gradients to running sums when `sums` is set
/// (a piece of its own when the last op has effects).
SmallVector<Piece> buildPieces(const StageBody &stage, llvm::function_ref<Part(Operation *)> partOf,
                               ArrayRef<Part> parts, bool sums, func::FuncOp step, StringRef name,
                               Location loc) {
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
        read(stage.groupOf(stage.part(WeightGradPart)), g);
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

/// Whether `where`'s per-stage counts (several stages per rank) cover
/// `fn`'s received arguments and sent results: a mismatch is IR this file
/// did not make.
bool countsCover(func::FuncOp fn, const StageOf &where) {
  if (where.virtualStages == 1)
    return true;
  int64_t recvArgs = llvm::count_if(llvm::seq(fn.getNumArguments()), [&](unsigned i) {
    return bool(fn.getArgAttr(i, "lcc.pipeline_recv"));
  });
  int64_t sendResults = llvm::count_if(llvm::seq(fn.getNumResults()), [&](unsigned i) {
    return bool(fn.getResultAttr(i, "lcc.pipeline_send"));
  });
  auto total = [](ArrayRef<int64_t> counts) -> int64_t {
    int64_t n = 0;
    for (int64_t x : counts) {
      if (x < 0)
        return -1;
      n += x;
    }
    return n;
  };
  return total(where.recvs) == recvArgs && total(where.sends) == sendResults;
}

} // namespace

FailureOr<StageResults> buildStageMicroBatches(OpBuilder &b, Location loc, func::FuncOp gradFn,
                                               const Schedule &schedule, StringRef group,
                                               const IRMapping &fixed,
                                               llvm::function_ref<Value(unsigned, int64_t)> input) {
  std::optional<StageOf> where = stageOf(gradFn);
  if (!where || !countsCover(gradFn, *where))
    return emitError(loc) << "@" << gradFn.getSymName() << " is not a pipeline stage";
  if (schedule.virtualStages != where->virtualStages || schedule.ranks != where->ranks)
    return emitError(loc) << "a schedule of " << schedule.ranks << " ranks x "
                          << schedule.virtualStages << " virtual stages cannot run " << where->ranks
                          << " ranks of " << where->virtualStages << " stage(s) each";
  if (llvm::Expected<Simulation> sim = simulate(asEmitted(schedule)); !sim)
    return emitError(loc) << "the " << scheduleName(schedule.kind)
                          << " schedule cannot run: " << llvm::toString(sim.takeError());
  int64_t rank = where->rank, m = schedule.microbatches, v = where->virtualStages;
  bool last = where->last();

  // The rank's stages ("chunks": stage rank + c P is its c-th). With one,
  // every value is its; with several (lcc-split-stage), the arguments and
  // results come chunk by chunk, counted by lcc.pipeline.
  Block &body = gradFn.getBody().front();
  auto ret = llvm::cast<func::ReturnOp>(body.getTerminator());
  auto chunkOf = [&](ArrayRef<int64_t> counts, int64_t k) -> int64_t {
    for (auto [c, n] : llvm::enumerate(counts)) {
      if (k < n)
        return int64_t(c);
      k -= n;
    }
    return v - 1; // the loss, after every send
  };
  std::vector<StageBody> chunks(static_cast<size_t>(v));
  for (auto [c, chunk] : llvm::enumerate(chunks)) {
    chunk.body = &body;
    chunk.chunk = int64_t(c);
  }
  // The results' roles: what goes forward (the sends, or the loss), the
  // parameters' gradients, the received values' gradients (sent back).
  SmallVector<std::pair<Value, StringAttr>> paramGrads;
  int64_t outputIndex = 0;
  for (auto [i, r] : llvm::enumerate(ret.getOperands())) {
    if (auto name = gradFn.getResultAttrOfType<StringAttr>(unsigned(i), "lcc.grad_of")) {
      paramGrads.push_back({r, name});
    } else if (auto k = gradFn.getResultAttrOfType<IntegerAttr>(unsigned(i), "lcc.grad_of_recv")) {
      chunks[size_t(chunkOf(where->recvs, k.getInt()))].recvGrads.push_back(r);
    } else {
      chunks[size_t(chunkOf(where->sends, outputIndex++))].outputs.push_back(r);
    }
  }
  if (last && chunks.back().outputs.size() != 1)
    return emitError(loc) << "the last pipeline stage must return one loss, @"
                          << gradFn.getSymName() << " returns " << chunks.back().outputs.size()
                          << " values";
  auto numberOf = [&](BlockArgument arg, StringRef attr) {
    return gradFn.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(), attr).getInt();
  };
  for (BlockArgument arg : numberedArgs(gradFn, "lcc.pipeline_recv"))
    chunks[size_t(chunkOf(where->recvs, numberOf(arg, "lcc.pipeline_recv")))].recvArgs.push_back(
        arg);
  for (BlockArgument arg : numberedArgs(gradFn, "lcc.pipeline_seed"))
    chunks[size_t(chunkOf(where->sends, numberOf(arg, "lcc.pipeline_seed")))].seedArgs.push_back(
        arg);

  // Each op's part, the first (in the order a micro-batch runs them: the
  // forwards by chunk, then the backwards in reverse) that needs it. A
  // chunk's forward is what its outputs need; its input gradient what its
  // received values' gradients need beyond the forwards; its weight
  // gradient (and what only that reads) the rest. A parameter's gradient
  // belongs to the chunk whose forward reads the parameter (lcc-split-stage
  // gives no two chunks of a rank one parameter).
  SmallVector<llvm::DenseSet<Operation *>> forward, inputGrad;
  for (StageBody &chunk : chunks) {
    forward.push_back(ancestors(body, chunk.outputs));
    inputGrad.push_back(ancestors(body, chunk.recvGrads));
  }
  llvm::DenseMap<Attribute, int64_t> paramChunk; // by the parameter's name
  for (auto [c, ops] : llvm::enumerate(forward))
    for (Operation *op : ops)
      for (Value r : readsOf(op))
        if (auto arg = llvm::dyn_cast<BlockArgument>(r); arg && arg.getOwner() == &body)
          if (Attribute name = gradFn.getArgAttr(arg.getArgNumber(), "lcc.param"))
            paramChunk.try_emplace(name, int64_t(c));
  for (auto [n, grad] : llvm::enumerate(paramGrads)) {
    StageBody &chunk = chunks[size_t(paramChunk.lookup(grad.second))];
    chunk.paramGrads.push_back(grad.first);
    chunk.paramNames.push_back(grad.second);
    chunk.gradIndex.push_back(unsigned(n));
  }
  SmallVector<llvm::DenseSet<Operation *>> weightGrad;
  for (StageBody &chunk : chunks)
    weightGrad.push_back(ancestors(body, chunk.paramGrads));
  llvm::DenseMap<Operation *, Part> parts;
  auto claim = [&](const llvm::DenseSet<Operation *> &ops, Part p) {
    for (Operation *op : ops)
      parts.try_emplace(op, p);
  };
  for (int64_t c = 0; c < v; ++c)
    claim(forward[size_t(c)], partId(c, ForwardPart));
  for (int64_t c = v - 1; c >= 0; --c) {
    claim(inputGrad[size_t(c)], partId(c, InputGradPart));
    claim(weightGrad[size_t(c)], partId(c, WeightGradPart));
  }
  auto partOfOp = [&](Operation *op) {
    auto it = parts.find(op);
    return it != parts.end() ? it->second : partId(0, WeightGradPart); // unused
  };

  bool wholeBackward = llvm::any_of(schedule.program[size_t(rank)],
                                    [](const Action &a) { return a.kind == Action::Backward; });
  llvm::DenseSet<std::pair<Value, unsigned>> reads;
  for (StageBody &chunk : chunks) {
    chunk.wholeBackward = wholeBackward;
    chunk.reads = &reads;
  }
  for (Operation &op : body.without_terminator())
    for (Value r : readsOf(&op))
      reads.insert({r, chunks.front().groupOf(partOfOp(&op))});

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
  std::function<Value(int64_t, Value)> valueOf = [&](int64_t k, Value val) -> Value {
    IRMapping &map = mapOf(k);
    if (Value known = map.lookupOrNull(val))
      return known;
    Operation *def = val.getDefiningOp();
    if (!remade(val) && !isLayout(def))
      return {};
    for (Value operand : def->getOperands())
      if (!valueOf(k, operand))
        return {};
    return b.clone(*def, map)->getResult(llvm::cast<OpResult>(val).getResultNumber());
  };
  auto mapped = [&](int64_t k, ArrayRef<Value> values) {
    return llvm::map_to_vector(values, [&](Value val) { return valueOf(k, val); });
  };

  // The pieces of each kind of action of each chunk, outlined when the
  // schedule first runs one. The gradients' running sums start at zero
  // (x + 0 is x) and are added in the order the schedule runs the weight
  // gradients.
  auto step = b.getInsertionBlock()->getParent()->getParentOfType<func::FuncOp>();
  enum ActionPieces { ForwardPieces, BackwardPieces, InputPieces, WeightPieces };
  std::map<std::pair<int64_t, int>, SmallVector<Piece>> built;
  auto piecesOf = [&](int64_t c, ActionPieces what) -> ArrayRef<Piece> {
    auto [it, fresh] = built.try_emplace({c, int(what)});
    if (!fresh)
      return it->second;
    const StageBody &chunk = chunks[size_t(c)];
    StringRef names[] = {kForwardFunction, kBackwardFunction, kInputGradFunction,
                         kWeightGradFunction};
    SmallVector<Part> kinds;
    if (what == ForwardPieces)
      kinds = {chunk.part(ForwardPart)};
    if (what == BackwardPieces || what == InputPieces)
      kinds.push_back(chunk.part(InputGradPart));
    if (what == BackwardPieces || what == WeightPieces)
      kinds.push_back(chunk.part(WeightGradPart));
    bool sums = what == BackwardPieces || what == WeightPieces;
    it->second =
        buildPieces(chunk, partOfOp, kinds, sums, step, partFunctionName(names[what], c, v), loc);
    return it->second;
  };
  StageResults results;
  std::vector<SmallVector<Value>> sums(static_cast<size_t>(v));
  auto run = [&](int64_t k, int64_t c, ArrayRef<Piece> pieces) -> LogicalResult {
    IRMapping &map = mapOf(k);
    const StageBody &chunk = chunks[size_t(c)];
    for (const Piece &piece : pieces) {
      func::FuncOp fn = piece.fn;
      if (!fn) {
        for (Value r : readsOf(piece.ops.front()))
          valueOf(k, r);
        b.clone(*piece.ops.front(), map);
        continue;
      }
      SmallVector<Value> args;
      for (Value r : piece.liveIns) {
        args.push_back(map.lookupOrNull(r));
        if (!args.back())
          return emitError(loc) << "internal error: micro-batch " << k << " of stage "
                                << where->stageOfChunk(c) << " calls @" << fn.getSymName()
                                << " before computing its arguments";
      }
      SmallVector<Value> &sum = sums[size_t(c)];
      if (piece.sums) {
        if (sum.empty())
          for (Value g : chunk.paramGrads)
            sum.push_back(vjp::fill(b, loc, g.getType(), 0.0));
        args.append(sum);
      }
      auto call = func::CallOp::create(b, loc, fn, args);
      for (auto [r, res] : llvm::zip(piece.liveOuts, call.getResults()))
        map.map(r, res);
      if (piece.sums)
        sum = llvm::to_vector_of<Value>(call.getResults().take_back(chunk.paramGrads.size()));
    }
    return success();
  };

  // The chunk of one of this rank's stages.
  auto chunkOfStage = [&](int64_t stage) -> std::optional<int64_t> {
    if (stage < 0 || stage >= where->stages() || stage % where->ranks != rank)
      return std::nullopt;
    return stage / where->ranks;
  };
  for (const Action &action : schedule.program[size_t(rank)]) {
    int64_t k = action.microbatch;
    std::optional<int64_t> c = action.kind == Action::Transfers || action.kind == Action::Wait
                                   ? std::optional<int64_t>(0)
                                   : chunkOfStage(action.stage);
    if (!c)
      return emitError(loc) << "internal error: rank " << rank << " runs " << describe(action)
                            << ", not one of its stages";
    switch (action.kind) {
    case Action::Forward:
      if (failed(run(k, *c, piecesOf(*c, ForwardPieces))))
        return failure();
      if (last && *c == v - 1) {
        Value loss = valueOf(k, chunks.back().outputs.front());
        results.lossSum = results.lossSum ? vjp::add(b, loc, results.lossSum, loss) : loss;
      }
      break;
    case Action::Backward:
      if (failed(run(k, *c, piecesOf(*c, BackwardPieces))))
        return failure();
      break;
    case Action::BackwardInput:
      if (failed(run(k, *c, piecesOf(*c, InputPieces))))
        return failure();
      break;
    case Action::BackwardWeight:
      if (failed(run(k, *c, piecesOf(*c, WeightPieces))))
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
        // The rank's stage that sends, or that receives (the next stage's
        // activation, the previous one's gradient).
        int64_t at = t.send ? t.stage : t.gradient ? t.stage - 1 : t.stage + 1;
        std::optional<int64_t> tc = chunkOfStage(at);
        if (!tc)
          return emitError(loc) << "internal error: rank " << rank << " transfers "
                                << describe(action) << " for stage " << at
                                << ", not one of its stages";
        const StageBody &chunk = chunks[size_t(*tc)];
        if (t.send) {
          SmallVector<Value> values =
              mapped(t.microbatch, t.gradient ? chunk.recvGrads : chunk.outputs);
          if (llvm::is_contained(values, Value()))
            return emitError(loc) << "internal error: the schedule sends micro-batch "
                                  << t.microbatch << " of stage " << at << " before computing it";
          sends.append(values);
          sendPeers.append(values.size(), t.peer);
          continue;
        }
        for (BlockArgument arg : t.gradient ? chunk.seedArgs : chunk.recvArgs) {
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
  results.gradSums.resize(paramGrads.size());
  for (auto [c, chunk] : llvm::enumerate(chunks)) {
    if (sums[c].size() != chunk.paramGrads.size())
      return emitError(loc) << "internal error: the schedule runs no backward on stage "
                            << where->stageOfChunk(int64_t(c));
    for (auto [n, sum] : llvm::zip(chunk.gradIndex, sums[c]))
      results.gradSums[n] = sum;
  }
  return results;
}

LogicalResult makeStageEvaluation(func::FuncOp fn, StringRef group) {
  std::optional<StageOf> where = stageOf(fn);
  if (!where || !countsCover(fn, *where))
    return fn.emitError() << "@" << fn.getSymName() << " is not a pipeline stage";
  Block &body = fn.getBody().front();
  Location loc = fn.getLoc();
  auto ret = llvm::cast<func::ReturnOp>(body.getTerminator());
  int64_t v = where->virtualStages, p = where->ranks;
  SmallVector<BlockArgument> recvArgs = numberedArgs(fn, "lcc.pipeline_recv");
  // Chunk by chunk (the body computes the rank's stages one after the
  // other): receive the stage's inputs right after the previous stage's
  // send (at the start for the first), before any op of the stage, and send
  // its outputs after their last writer, so that the rank sends one stage's
  // results before it waits for its next stage's inputs.
  OpBuilder b(fn.getContext());
  llvm::BitVector erase(fn.getNumArguments());
  size_t recvAt = 0, sendAt = 0;
  Operation *lastSend = nullptr;
  for (int64_t c = 0; c < v; ++c) {
    int64_t stage = where->stageOfChunk(c);
    size_t recvs = v > 1 ? size_t(where->recvs[size_t(c)]) : recvArgs.size();
    ArrayRef<BlockArgument> in = ArrayRef(recvArgs).slice(recvAt, recvs);
    recvAt += recvs;
    if (!in.empty()) {
      if (lastSend)
        b.setInsertionPointAfter(lastSend);
      else
        b.setInsertionPointToStart(&body);
      SmallVector<Type> types =
          llvm::map_to_vector(in, [](BlockArgument a) { return a.getType(); });
      auto recv = lcc::ExchangeOp::create(
          b, loc, types, ValueRange(), group, b.getDenseI64ArrayAttr({}),
          b.getDenseI64ArrayAttr(SmallVector<int64_t>(types.size(), (stage - 1) % p)));
      for (auto [arg, value] : llvm::zip(in, recv.getResults())) {
        BlockArgument(arg).replaceAllUsesWith(value);
        erase.set(arg.getArgNumber());
      }
    }
    if (stage == where->stages() - 1)
      break; // the loss, returned
    size_t sends = v > 1 ? size_t(where->sends[size_t(c)]) : ret.getNumOperands();
    // (Read from the return again: a value passed through is now received.)
    SmallVector<Value> out;
    for (size_t i = sendAt; i < sendAt + sends; ++i)
      out.push_back(ret.getOperand(unsigned(i)));
    sendAt += sends;
    Operation *after = nullptr;
    for (Value o : out) {
      Operation *def = o.getDefiningOp();
      if (def && (!after || after->isBeforeInBlock(def)))
        after = def;
    }
    if (after)
      b.setInsertionPointAfter(after);
    else
      b.setInsertionPointToStart(&body);
    lastSend = lcc::ExchangeOp::create(
        b, loc, TypeRange(), out, group,
        b.getDenseI64ArrayAttr(SmallVector<int64_t>(out.size(), (stage + 1) % p)),
        b.getDenseI64ArrayAttr({}));
  }
  if (failed(fn.eraseArguments(erase)))
    return failure();
  b.setInsertionPoint(ret);
  Value result = where->last() ? ret.getOperands().back()
                               : vjp::fill(b, loc, llvm::cast<RankedTensorType>(where->loss), 0.0);
  result = lcc::BroadcastOp::create(b, loc, result.getType(), result, group, p - 1);
  func::ReturnOp::create(b, ret.getLoc(), result);
  ret.erase();
  fn.setType(b.getFunctionType(fn.getArgumentTypes(), result.getType()));
  fn.setAllResultAttrs(ArrayRef<DictionaryAttr>{b.getDictionaryAttr({})});
  return success();
}

} // namespace lcc::pipeline
