//===- PlanMemory.cpp - static buffer assignment into one arena ------------===//
//
// See Passes.td (lcc-plan-memory). Liveness is computed on the straight-line
// top-level block of each public function: a buffer is live from its
// allocation to the last top-level op that uses it or any view of it (a use
// inside a region counts at the op holding the region). Offsets come from a
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

struct Buffer {
  memref::AllocOp alloc;
  int64_t bytes = 0, begin = 0, end = 0, offset = 0;
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

/// The last top-level position at which `root` or a view of it is used, or
/// nothing when a use could let it escape (returned, stored, passed to an
/// op that is neither a view nor an ordinary use inside the function).
std::optional<int64_t> lastUse(Value root, Block &block,
                               const llvm::DenseMap<Operation *, int64_t> &position) {
  int64_t last = -1;
  SmallVector<Value> work = {root};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (llvm::isa<func::ReturnOp>(user))
        return std::nullopt; // escapes the function
      if (llvm::isa<memref::DeallocOp>(user))
        continue; // replaced by the plan
      Operation *top = block.findAncestorOpInBlock(*user);
      if (!top)
        return std::nullopt;
      last = std::max(last, position.lookup(top));
      // Whatever a user derives from the buffer (views, casts, its pointer as
      // an integer for a library call) may still reach it: follow it, which
      // can only lengthen the buffer's life.
      for (Value r : user->getResults())
        work.push_back(r);
    }
  }
  return last;
}

LogicalResult planFunction(func::FuncOp fn) {
  if (!fn.getBody().hasOneBlock())
    return fn.emitError() << "lcc-plan-memory: @" << fn.getSymName()
                          << " has control flow; plans need one straight-line block";
  Block &block = fn.getBody().front();
  llvm::DenseMap<Operation *, int64_t> position;
  int64_t index = 0;
  for (Operation &op : block)
    position[&op] = index++;

  std::vector<Buffer> buffers;
  for (Operation &op : block) {
    auto alloc = llvm::dyn_cast<memref::AllocOp>(op);
    if (!alloc)
      continue;
    auto bytes = plannableBytes(alloc.getType());
    auto end = bytes ? lastUse(alloc, block, position) : std::nullopt;
    if (!end)
      continue; // stays a heap allocation
    Buffer b;
    b.alloc = alloc;
    b.bytes = std::max<int64_t>(kAlign, (*bytes + kAlign - 1) / kAlign * kAlign);
    b.begin = position[alloc];
    b.end = std::max(*end, b.begin);
    buffers.push_back(b);
  }

  // Largest first; ties by earlier start so the plan is deterministic.
  std::vector<Buffer *> order;
  for (Buffer &b : buffers)
    order.push_back(&b);
  std::stable_sort(order.begin(), order.end(), [](const Buffer *x, const Buffer *y) {
    return x->bytes != y->bytes ? x->bytes > y->bytes : x->begin < y->begin;
  });
  std::vector<Buffer *> placed;
  int64_t peak = 0;
  for (Buffer *b : order) {
    // Occupied ranges of buffers whose lifetimes overlap b's, by offset.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (Buffer *p : placed)
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

  OpBuilder builder(fn.getContext());
  fn->setAttr("lcc.arena_bytes", builder.getI64IntegerAttr(peak));
  if (buffers.empty())
    return success();
  auto arenaType = MemRefType::get({peak}, builder.getI8Type());
  unsigned argIndex = fn.getNumArguments();
  if (failed(fn.insertArgument(argIndex, arenaType,
                               builder.getDictionaryAttr(builder.getNamedAttr(
                                   "lcc.arena", builder.getUnitAttr())),
                               fn.getLoc())))
    return fn.emitError() << "lcc-plan-memory: cannot add the arena argument";
  Value arena = fn.getArgument(argIndex);
  for (Buffer &b : buffers) {
    builder.setInsertionPoint(b.alloc);
    Value offset = arith::ConstantIndexOp::create(builder, b.alloc.getLoc(), b.offset);
    auto view = memref::ViewOp::create(builder, b.alloc.getLoc(), b.alloc.getType(), arena,
                                       offset, ValueRange{});
    for (Operation *user : llvm::to_vector(b.alloc->getUsers()))
      if (llvm::isa<memref::DeallocOp>(user))
        user->erase();
    b.alloc.replaceAllUsesWith(view.getResult());
    b.alloc.erase();
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
