//===- PlanMemory.cpp - static buffer assignment into one arena ------------===//
//
// See Passes.td (lcc-plan-memory). Liveness is computed on the straight-line
// top-level block of each public function: a buffer is live from its
// first use to the last top-level op that uses it or any view of it (a use
// inside a region counts at the op holding the region). A micro-batch loop's
// body is planned the same way on its own, and its range is one item of the
// enclosing plan, live at the loop. A call of a layer function spans the
// function's ops, and each of the function's temporaries is one buffer of
// the caller's plan per call. Offsets come from a
// greedy best-fit over buffers sorted by size (largest first), the classic
// heuristic of TFLite's and XLA's planners: each buffer takes the lowest
// 64-byte-aligned offset that overlaps no live-range-overlapping buffer.
//
//===----------------------------------------------------------------------===//
#include "passes/buffer/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"

namespace lcc {
#define GEN_PASS_DEF_LCCPLANMEMORYPASS
#include "passes/buffer/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {

constexpr int64_t kAlign = 64;

/// What the plans of a layer function's callers need to know of it (it is
/// summarized before them, and its temporaries are theirs to place).
struct Layer {
  /// The positions one call spans: the function's top-level ops.
  int64_t length = 1;
  /// Per argument, the first and last positions within a call at which the
  /// function uses it (from the call's own position).
  SmallVector<std::pair<int64_t, int64_t>> argUses;
  /// The temporaries: bytes and lifetime within a call.
  struct Temp {
    int64_t bytes, begin, end;
  };
  SmallVector<Temp> temps;
};
using Layers = llvm::StringMap<Layer>;

/// The summary of the layer function `op` calls, if it is such a call.
const Layer *layerCalled(Operation *op, const Layers &layers) {
  auto call = llvm::dyn_cast<func::CallOp>(op);
  if (!call)
    return nullptr;
  auto it = layers.find(call.getCallee());
  return it == layers.end() ? nullptr : &it->second;
}

/// What takes a place in the arena: an allocation (which becomes a view of
/// the arena there), or temporary `temp` of the layer function a call calls
/// (whose offset becomes an operand of the call).
struct Member {
  Operation *op;
  unsigned temp;
  int64_t offset;
};

/// A range of the arena one block's plan places: one buffer, one
/// temporary of a layer function at one call, or all the temporaries of a
/// micro-batch loop's body (planned on their own and live, seen from the
/// block, at the loop alone).
struct Item {
  int64_t bytes = 0, begin = 0, end = 0, offset = 0;
  /// What is placed in this range and the offsets within it.
  SmallVector<Member> members;
};

/// Byte size of a static, identity-layout memref of a plain element type.
std::optional<int64_t> plannableBytes(MemRefType t) {
  if (!t.hasStaticShape() || !t.getLayout().isIdentity() || t.getMemorySpace())
    return std::nullopt;
  Type e = t.getElementType();
  if (!e.isIntOrFloat())
    return std::nullopt;
  int64_t bits = e.getIntOrFloatBitWidth();
  int64_t elemBytes = bits == 1 ? 1 : (bits + 7) / 8;
  return t.getNumElements() * elemBytes;
}

/// Each top-level op's first position in `block`. A call of a layer function
/// spans the function's length, so that its temporaries and the caller's
/// buffers see one timeline, the one the inlined call would have: a buffer
/// the call reads for the last time early in the function is free for the
/// function's later temporaries.
llvm::DenseMap<Operation *, int64_t> positions(Block &block, const Layers &layers) {
  llvm::DenseMap<Operation *, int64_t> position;
  int64_t index = 0;
  for (Operation &op : block) {
    position[&op] = index;
    const Layer *layer = layerCalled(&op, layers);
    index += layer ? std::max<int64_t>(1, layer->length) : 1;
  }
  return position;
}

/// The first and last positions in `block` at which `root` or a view of it
/// is used, or nothing when a use could let it escape (returned or yielded
/// out of the block, stored, passed to an op that is neither a view nor an
/// ordinary use inside the block). A buffer is live from its first use, not
/// its allocation: what a layer function writes for its caller is allocated
/// before the call, and its first use is the function's first write.
std::optional<std::pair<int64_t, int64_t>>
usedBetween(Value root, Block &block, const llvm::DenseMap<Operation *, int64_t> &position,
            const Layers &layers) {
  // A buffer nothing uses lives at its allocation (an argument at the start).
  int64_t at = root.getDefiningOp() ? position.lookup(root.getDefiningOp()) : 0;
  int64_t first = INT64_MAX, last = at;
  SmallVector<Value> work = {root};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (llvm::isa<func::ReturnOp>(user) || user == block.getTerminator())
        return std::nullopt; // escapes the block
      if (llvm::isa<memref::DeallocOp>(user))
        continue; // replaced by the plan
      Operation *top = block.findAncestorOpInBlock(*user);
      if (!top)
        return std::nullopt;
      int64_t lo = position.lookup(top), hi = lo;
      if (const Layer *layer = layerCalled(user, layers); layer && user == top) {
        // Where in the call the function uses this argument (its results,
        // if any, are followed below: they may be views of it).
        hi = lo + layer->argUses[use.getOperandNumber()].second;
        lo += layer->argUses[use.getOperandNumber()].first;
      }
      first = std::min(first, lo);
      last = std::max(last, hi);
      // Whatever a user derives from the buffer (views, casts, its pointer as
      // an integer for a library call) may still reach it: follow it, which
      // can only lengthen the buffer's life.
      for (Value r : user->getResults())
        work.push_back(r);
    }
  }
  return std::make_pair(first == INT64_MAX ? at : first, last);
}

/// Plans the allocations of `block` (and of the micro-batch loops in it, and
/// the temporaries of the layer functions it calls) into one range: each
/// item takes the lowest free offset among the items whose lifetimes
/// overlap its own. Returns the range's size, with `assigned` what was
/// placed and its offset in it.
int64_t planBlock(Block &block, SmallVectorImpl<Member> &assigned, const Layers &layers) {
  llvm::DenseMap<Operation *, int64_t> position = positions(block, layers);

  std::vector<Item> items;
  auto add = [&](Item item) {
    item.bytes = std::max<int64_t>(kAlign, (item.bytes + kAlign - 1) / kAlign * kAlign);
    items.push_back(std::move(item));
  };
  for (Operation &op : block) {
    Item item;
    if (lcc::isMicroBatchLoop(&op)) {
      // Every iteration reuses the same range: the body's buffers die with
      // their iteration (those that do not stay heap allocations).
      item.bytes = planBlock(*llvm::cast<scf::ForOp>(op).getBody(), item.members, layers);
      if (item.bytes == 0)
        continue;
      item.begin = item.end = position[&op];
      add(std::move(item));
    } else if (const Layer *layer = layerCalled(&op, layers)) {
      // Each call's temporaries are placed like the caller's own buffers, at
      // the positions the call spans.
      for (auto [n, temp] : llvm::enumerate(layer->temps))
        add(Item{temp.bytes, position[&op] + temp.begin, position[&op] + temp.end, 0,
                 {Member{&op, unsigned(n), 0}}});
    } else if (auto alloc = llvm::dyn_cast<memref::AllocOp>(op)) {
      auto bytes = plannableBytes(alloc.getType());
      auto used = bytes ? usedBetween(alloc, block, position, layers) : std::nullopt;
      if (!used)
        continue; // stays a heap allocation
      item.bytes = *bytes;
      std::tie(item.begin, item.end) = *used;
      item.members.push_back({alloc, 0, 0});
      add(std::move(item));
    }
  }

  // Largest first; ties by earlier start so the plan is deterministic.
  std::vector<Item *> order;
  for (Item &b : items)
    order.push_back(&b);
  std::stable_sort(order.begin(), order.end(), [](const Item *x, const Item *y) {
    return x->bytes != y->bytes ? x->bytes > y->bytes : x->begin < y->begin;
  });
  // Placed items by their byte range, kept sorted as they are placed: the
  // ranges of those whose lifetimes overlap b's are then in offset order
  // without a sort per item (that sort was most of this pass on a deep step).
  auto range = [](const Item *x) { return std::make_pair(x->offset, x->offset + x->bytes); };
  std::vector<Item *> placed;
  int64_t peak = 0;
  for (Item *b : order) {
    // Best fit among the occupied ranges of items whose lifetimes overlap
    // b's: the smallest gap that holds b, else after the last one.
    int64_t best = -1, bestGap = INT64_MAX, cursor = 0;
    for (const Item *p : placed) {
      if (!(p->begin <= b->end && b->begin <= p->end))
        continue;
      auto [lo, hi] = range(p);
      if (lo - cursor >= b->bytes && lo - cursor < bestGap) {
        best = cursor;
        bestGap = lo - cursor;
      }
      cursor = std::max(cursor, hi);
    }
    b->offset = best >= 0 ? best : cursor;
    peak = std::max(peak, b->offset + b->bytes);
    placed.insert(
        std::upper_bound(placed.begin(), placed.end(), b,
                         [&](const Item *x, const Item *y) { return range(x) < range(y); }),
        b);
  }
  for (Item &item : items)
    for (Member m : item.members)
      assigned.push_back({m.op, m.temp, item.offset + m.offset});
  return peak;
}

/// `alloc` becomes a view of `arena` at byte offset `at`.
void replaceByView(memref::AllocOp alloc, Value arena, Value at, OpBuilder &builder) {
  auto view =
      memref::ViewOp::create(builder, alloc.getLoc(), alloc.getType(), arena, at, ValueRange{});
  for (Operation *user : llvm::to_vector(alloc->getUsers()))
    if (llvm::isa<memref::DeallocOp>(user))
      user->erase();
  alloc.replaceAllUsesWith(view.getResult());
  alloc.erase();
}

/// Summarizes layer function `fn` for its callers' plans and gives it the
/// arguments through which they place its temporaries: the arena
/// (`memref<?xi8> {lcc.arena}`), then one byte offset per temporary
/// (`index {lcc.arena_offset}`); each temporary becomes a view of the arena.
/// The layer functions `fn` calls (summarized before it: a pipeline part
/// calling its layers) add their temporaries at each call to its own, which
/// its callers place like the others and it passes on. (Planning such a
/// function as one block, like a micro-batch loop's body, would keep the
/// step's plan from growing with calls times layers, but a block cannot
/// share its free space with the caller's buffers: 18% more memory for
/// 1F1B's first stage, benchmarks/README.md.)
LogicalResult summarizeLayer(func::FuncOp fn, Layers &layers) {
  if (!fn.getBody().hasOneBlock())
    return fn.emitError() << "lcc-plan-memory: layer function @" << fn.getSymName()
                          << " has control flow; plans need one straight-line block";
  Block &block = fn.getBody().front();
  llvm::DenseMap<Operation *, int64_t> position = positions(block, layers);
  Layer layer;
  const Layer *lastCall = layerCalled(&block.back(), layers);
  layer.length = position[&block.back()] + (lastCall ? std::max<int64_t>(1, lastCall->length) : 1);
  for (BlockArgument arg : block.getArguments())
    layer.argUses.push_back(usedBetween(arg, block, position, layers)
                                .value_or(std::make_pair(int64_t(0), layer.length - 1)));
  // Each temporary: an allocation of `fn`, or temporary `temp` of the layer
  // function `op` calls.
  SmallVector<Member> temps;
  for (Operation &op : block) {
    if (const Layer *callee = layerCalled(&op, layers)) {
      for (auto [n, temp] : llvm::enumerate(callee->temps)) {
        layer.temps.push_back({temp.bytes, position[&op] + temp.begin, position[&op] + temp.end});
        temps.push_back({&op, unsigned(n), 0});
      }
      continue;
    }
    auto alloc = llvm::dyn_cast<memref::AllocOp>(op);
    auto bytes = alloc ? plannableBytes(alloc.getType()) : std::nullopt;
    auto used = bytes ? usedBetween(alloc, block, position, layers) : std::nullopt;
    if (!used)
      continue; // stays a heap allocation of the function
    layer.temps.push_back({*bytes, used->first, used->second});
    temps.push_back({alloc, 0, 0});
  }
  if (!temps.empty()) {
    OpBuilder builder(fn.getContext());
    unsigned arenaIndex = fn.getNumArguments();
    SmallVector<unsigned> indices(temps.size() + 1, arenaIndex);
    SmallVector<Type> types = {MemRefType::get({ShapedType::kDynamic}, builder.getI8Type())};
    types.append(temps.size(), builder.getIndexType());
    SmallVector<DictionaryAttr> attrs = {
        builder.getDictionaryAttr(builder.getNamedAttr("lcc.arena", builder.getUnitAttr()))};
    attrs.append(temps.size(), builder.getDictionaryAttr(builder.getNamedAttr(
                                   "lcc.arena_offset", builder.getUnitAttr())));
    SmallVector<Location> locs(types.size(), fn.getLoc());
    if (failed(fn.insertArguments(indices, types, attrs, locs)))
      return fn.emitError() << "lcc-plan-memory: cannot add the arena arguments";
    Value arena = fn.getArgument(arenaIndex);
    llvm::MapVector<Operation *, SmallVector<Value>> calls;
    for (auto [n, temp] : llvm::enumerate(temps)) {
      Value offset = fn.getArgument(arenaIndex + 1 + unsigned(n));
      if (layerCalled(temp.op, layers)) {
        calls[temp.op].push_back(offset);
        continue;
      }
      builder.setInsertionPoint(temp.op);
      replaceByView(llvm::cast<memref::AllocOp>(temp.op), arena, offset, builder);
    }
    for (auto &[op, offsets] : calls) {
      MutableOperandRange operands = llvm::cast<func::CallOp>(op).getOperandsMutable();
      operands.append(arena);
      operands.append(offsets);
    }
  }
  layers[fn.getSymName()] = std::move(layer);
  return success();
}

LogicalResult planFunction(func::FuncOp fn, const Layers &layers) {
  if (!fn.getBody().hasOneBlock())
    return fn.emitError() << "lcc-plan-memory: @" << fn.getSymName()
                          << " has control flow; plans need one straight-line block";
  SmallVector<Member> assigned;
  int64_t peak = planBlock(fn.getBody().front(), assigned, layers);

  OpBuilder builder(fn.getContext());
  fn->setAttr("lcc.arena_bytes", builder.getI64IntegerAttr(peak));
  if (assigned.empty())
    return success();
  auto arenaType = MemRefType::get({peak}, builder.getI8Type());
  unsigned argIndex = fn.getNumArguments();
  if (failed(fn.insertArgument(argIndex, arenaType,
                               builder.getDictionaryAttr(builder.getNamedAttr(
                                   "lcc.arena", builder.getUnitAttr())),
                               fn.getLoc())))
    return fn.emitError() << "lcc-plan-memory: cannot add the arena argument";
  Value arena = fn.getArgument(argIndex);
  // Each call's offsets, in its function's order of temporaries.
  llvm::MapVector<Operation *, SmallVector<int64_t>> calls;
  for (auto [op, temp, offset] : assigned) {
    if (const Layer *layer = layerCalled(op, layers)) {
      auto &offsets = calls[op];
      offsets.resize(layer->temps.size());
      offsets[temp] = offset;
      continue;
    }
    builder.setInsertionPoint(op);
    replaceByView(llvm::cast<memref::AllocOp>(op), arena,
                  arith::ConstantIndexOp::create(builder, op->getLoc(), offset), builder);
  }
  for (auto &[op, offsets] : calls) {
    builder.setInsertionPoint(op);
    SmallVector<Value> operands = {memref::CastOp::create(
        builder, op->getLoc(), MemRefType::get({ShapedType::kDynamic}, builder.getI8Type()),
        arena)};
    for (int64_t offset : offsets)
      operands.push_back(arith::ConstantIndexOp::create(builder, op->getLoc(), offset));
    llvm::cast<func::CallOp>(op).getOperandsMutable().append(operands);
  }
  return success();
}

struct LccPlanMemoryPass : lcc::impl::LccPlanMemoryPassBase<LccPlanMemoryPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Layer functions first, each after the layer functions it calls: their
    // callers place their temporaries.
    Layers layers;
    SmallVector<func::FuncOp> pending;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn->hasAttr(lcc::kLayerAttr) && !fn.isExternal())
        pending.push_back(fn);
    auto ready = [&](func::FuncOp fn) {
      return llvm::all_of(fn.getBody().getOps<func::CallOp>(), [&](func::CallOp call) {
        auto callee =
            SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(call, call.getCalleeAttr());
        return !callee || !callee->hasAttr(lcc::kLayerAttr) || callee.isExternal() ||
               layers.contains(callee.getSymName());
      });
    };
    while (!pending.empty()) {
      auto next = llvm::find_if(pending, ready);
      if (next == pending.end()) {
        pending.front().emitError()
            << "lcc-plan-memory: layer function @" << pending.front().getSymName()
            << " calls itself, directly or through others";
        return signalPassFailure();
      }
      if (failed(summarizeLayer(*next, layers)))
        return signalPassFailure();
      pending.erase(next);
    }
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn.isPublic() && !fn.isExternal() && failed(planFunction(fn, layers)))
        return signalPassFailure();
    // A call outside a planned function has no place for the temporaries.
    WalkResult unplaced = module.walk([&](func::CallOp call) {
      const Layer *layer = layerCalled(call, layers);
      if (!layer || layer->temps.empty() ||
          call.getNumOperands() == layer->argUses.size() + 1 + layer->temps.size())
        return WalkResult::advance();
      call.emitError() << "lcc-plan-memory: this call of layer function @" << call.getCallee()
                       << " is not in the straight-line body of a public function (or its "
                          "micro-batch loop), so its temporaries have no place";
      return WalkResult::interrupt();
    });
    if (unplaced.wasInterrupted())
      return signalPassFailure();
  }
};

} // namespace
