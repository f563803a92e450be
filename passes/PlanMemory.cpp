//===- PlanMemory.cpp - static buffer assignment into one arena ------------===//
//
// See Passes.td (lcc-plan-memory). Liveness is computed on the straight-line
// top-level block of each public function: a buffer is live from its
// allocation to the last top-level op that uses it or any view of it (a use
// inside a region counts at the op holding the region). A micro-batch loop's
// body is planned the same way on its own, and its range is one item of the
// enclosing plan, live at the loop. Offsets come from a
// greedy best-fit over buffers sorted by size (largest first), the classic
// heuristic of TFLite's and XLA's planners: each buffer takes the lowest
// 64-byte-aligned offset that overlaps no live-range-overlapping buffer.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace lcc {
#define GEN_PASS_DEF_LCCPLANMEMORYPASS
#include "passes/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {

constexpr int64_t kAlign = 64;

/// A range of the arena one block's plan places: one buffer, or all the
/// temporaries of a micro-batch loop's body (planned on their own and live,
/// seen from the block, at the loop alone).
struct Item {
  int64_t bytes = 0, begin = 0, end = 0, offset = 0;
  /// The allocations in this range and their offsets within it.
  SmallVector<std::pair<memref::AllocOp, int64_t>> members;
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

/// The first and last positions in `block` at which `root` or a view of it
/// is used, or nothing when a use could let it escape (returned or yielded
/// out of the block, stored, passed to an op that is neither a view nor an
/// ordinary use inside the block). A buffer is live from its first use, not
/// its allocation: what a layer function returns is allocated before the
/// call that writes it (lcc-out-params), early once the call is inlined.
std::optional<std::pair<int64_t, int64_t>>
usedBetween(Value root, Block &block, const llvm::DenseMap<Operation *, int64_t> &position) {
  // A buffer nothing uses lives at its allocation.
  int64_t at = position.lookup(root.getDefiningOp());
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
      first = std::min(first, position.lookup(top));
      last = std::max(last, position.lookup(top));
      // Whatever a user derives from the buffer (views, casts, its pointer as
      // an integer for a library call) may still reach it: follow it, which
      // can only lengthen the buffer's life.
      for (Value r : user->getResults())
        work.push_back(r);
    }
  }
  return std::make_pair(first == INT64_MAX ? at : first, last);
}

/// Plans the allocations of `block` (and of the micro-batch loops in it) into
/// one range: each item takes the lowest free offset among the items whose
/// lifetimes overlap its own. Returns the range's size, with `assigned` the
/// allocations and their offsets in it.
int64_t planBlock(Block &block, SmallVectorImpl<std::pair<memref::AllocOp, int64_t>> &assigned) {
  llvm::DenseMap<Operation *, int64_t> position;
  int64_t index = 0;
  for (Operation &op : block)
    position[&op] = index++;

  std::vector<Item> items;
  for (Operation &op : block) {
    Item item;
    if (lcc::isMicroBatchLoop(&op)) {
      // Every iteration reuses the same range: the body's buffers die with
      // their iteration (those that do not stay heap allocations).
      item.bytes = planBlock(*llvm::cast<scf::ForOp>(op).getBody(), item.members);
      if (item.bytes == 0)
        continue;
      item.begin = item.end = position[&op];
    } else if (auto alloc = llvm::dyn_cast<memref::AllocOp>(op)) {
      auto bytes = plannableBytes(alloc.getType());
      auto used = bytes ? usedBetween(alloc, block, position) : std::nullopt;
      if (!used)
        continue; // stays a heap allocation
      item.bytes = *bytes;
      std::tie(item.begin, item.end) = *used;
      item.members.push_back({alloc, 0});
    } else {
      continue;
    }
    item.bytes = std::max<int64_t>(kAlign, (item.bytes + kAlign - 1) / kAlign * kAlign);
    items.push_back(std::move(item));
  }

  // Largest first; ties by earlier start so the plan is deterministic.
  std::vector<Item *> order;
  for (Item &b : items)
    order.push_back(&b);
  std::stable_sort(order.begin(), order.end(), [](const Item *x, const Item *y) {
    return x->bytes != y->bytes ? x->bytes > y->bytes : x->begin < y->begin;
  });
  std::vector<Item *> placed;
  int64_t peak = 0;
  for (Item *b : order) {
    // Occupied ranges of items whose lifetimes overlap b's, by offset.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (Item *p : placed)
      if (p->begin <= b->end && b->begin <= p->end)
        busy.push_back({p->offset, p->offset + p->bytes});
    std::sort(busy.begin(), busy.end());
    // Best fit: the smallest gap that holds b, else after the last one.
    int64_t best = -1, bestGap = INT64_MAX, cursor = 0;
    for (auto [lo, hi] : busy) {
      if (lo - cursor >= b->bytes && lo - cursor < bestGap) {
        best = cursor;
        bestGap = lo - cursor;
      }
      cursor = std::max(cursor, hi);
    }
    b->offset = best >= 0 ? best : cursor;
    peak = std::max(peak, b->offset + b->bytes);
    placed.push_back(b);
  }
  for (Item &item : items)
    for (auto [alloc, offset] : item.members)
      assigned.push_back({alloc, item.offset + offset});
  return peak;
}

LogicalResult planFunction(func::FuncOp fn) {
  if (!fn.getBody().hasOneBlock())
    return fn.emitError() << "lcc-plan-memory: @" << fn.getSymName()
                          << " has control flow; plans need one straight-line block";
  SmallVector<std::pair<memref::AllocOp, int64_t>> assigned;
  int64_t peak = planBlock(fn.getBody().front(), assigned);

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
  for (auto [alloc, offset] : assigned) {
    builder.setInsertionPoint(alloc);
    Value at = arith::ConstantIndexOp::create(builder, alloc.getLoc(), offset);
    auto view =
        memref::ViewOp::create(builder, alloc.getLoc(), alloc.getType(), arena, at, ValueRange{});
    for (Operation *user : llvm::to_vector(alloc->getUsers()))
      if (llvm::isa<memref::DeallocOp>(user))
        user->erase();
    alloc.replaceAllUsesWith(view.getResult());
    alloc.erase();
  }
  return success();
}

struct LccPlanMemoryPass : lcc::impl::LccPlanMemoryPassBase<LccPlanMemoryPass> {
  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (fn.isPublic() && !fn.isExternal() && failed(planFunction(fn)))
        return signalPassFailure();
  }
};

} // namespace
