//===- OverlapCollectives.cpp - collectives run while the step computes ---===//
//
// See Passes.td (lcc-overlap-collectives). Works on the
// top-level block of each function and on each micro-batch loop's body, one
// block at a time (tensors, after fusion, before bufferization): every op
// has a position, and a collective c has
//
//   ready(c)  the position after the last op its input depends on,
//   need(c)   the position of the first op that uses its result.
//
// An asynchronous collective is issued (start) at some position in
// [ready, need] and waited for (lcc.wait) at a later one, at most need.
// The runtime runs collectives one at a time in start order, so starts keep
// program order, and at most `depth` collectives are started and not waited
// for. Collectives are placed in program order:
//
//   start(c_i) = max(ready(c_i), start(c_i-1))
//
// unless that exceeds the window: c_{i-depth} is still in flight at that
// position. Then either c_{i-depth}'s wait moves up to start(c_i) (when its
// result is needed no earlier than c_i's: gradient buckets, whose results
// wait for the optimizer at the end), or c_i starts later, at c_{i-depth}'s
// wait (when c_{i-depth}'s result is needed first: ZeRO-3's parameter
// gathers, which all could start at once; this is the prefetch, the next
// layers' gathers run while this layer computes). A wait is at its
// collective's `need` unless a later start pulled it up.
//
// `ready` looks through the data movement that only assembles the input
// (tensor.empty, insert_slice, expand_shape, ...: ZeRO's buckets of parameter
// parts), which moves up with the start; anything else is computation the
// collective waits for. Likewise `need` looks through the data movement that
// takes the result apart (a bucket's extract_slices), which moves down with
// the wait: a bucket of gradients is needed by the optimizer, not by the
// slices right after it.
//
// A collective whose input is another collective's result (directly or
// through data movement), and broadcast, send and recv, stay synchronous at
// their place (the runtime finishes every started collective before a
// synchronous one).
//
//===----------------------------------------------------------------------===//
#include "passes/shard/Passes.h"

#include "dialects/lcc/LccOps.h"
#include "dialects/lcc/lowering/Lowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/MapVector.h"

namespace lcc {
#define GEN_PASS_DEF_LCCOVERLAPCOLLECTIVESPASS
#include "passes/shard/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {

struct Slot {
  Operation *op = nullptr;
  bool async = false;
  int64_t at = 0, ready = 0, need = 0, start = 0, wait = 0;
  /// The data movement that assembles the input, moved up with the start.
  SmallVector<Operation *> feed;
  /// The data movement that takes the result apart (a bucket back into its
  /// tensors), moved down with the wait.
  SmallVector<Operation *> drain;
};

/// Ops that only move or create data: cheap, so they may run earlier.
bool isDataMovement(Operation *op) {
  return llvm::isa<tensor::EmptyOp, tensor::InsertSliceOp, tensor::ExtractSliceOp,
                   tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::ConcatOp,
                   tensor::PadOp, linalg::FillOp, arith::ConstantOp>(op);
}

/// Walks back from `op`'s operands through data movement: `movement` gets
/// each data-movement op on the way once, `source` each other defining op.
void walkInputs(Operation *op, llvm::function_ref<void(Operation *)> movement,
                llvm::function_ref<void(Operation *)> source) {
  SmallVector<Value> work(op->getOperands());
  llvm::DenseSet<Operation *> seen;
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    // What is defined outside op's block (a loop body's captures) is ready.
    if (!def || def->getBlock() != op->getBlock() || !seen.insert(def).second)
      continue;
    if (!isDataMovement(def)) {
      source(def);
      continue;
    }
    movement(def);
    work.append(def->operand_begin(), def->operand_end());
  }
}

void setTicket(Operation *op, int64_t ticket) {
  op->setAttr("ticket", IntegerAttr::get(IntegerType::get(op->getContext(), 64), ticket));
}

struct LccOverlapCollectivesPass
    : lcc::impl::LccOverlapCollectivesPassBase<LccOverlapCollectivesPass> {
  using Base::Base;

  LogicalResult overlap(func::FuncOp fn) {
    SmallVector<Operation *> collectives;
    bool waited = false;
    fn.walk([&](Operation *op) {
      if (llvm::isa<lcc::WaitOp>(op))
        waited = true;
      else if (lcc::isCollective(op))
        collectives.push_back(op);
    });
    // Nothing to do, or done already (the pass is idempotent).
    if (collectives.empty() || waited)
      return success();
    if (!fn.getBody().hasOneBlock())
      return fn.emitError() << "lcc-overlap-collectives: @" << fn.getSymName()
                            << " has control flow; collectives are scheduled on one "
                               "straight-line block";
    // The function's block and each micro-batch loop's body are scheduled
    // on their own (a body's collectives are waited for within the
    // iteration).
    Block *top = &fn.getBody().front();
    llvm::MapVector<Block *, SmallVector<Operation *>> byBlock;
    byBlock[top];
    for (Operation *op : collectives) {
      Block *block = op->getBlock();
      if (block != top && !lcc::isMicroBatchLoop(block->getParentOp()))
        return op->emitOpError() << "inside a region cannot be scheduled by "
                                    "lcc-overlap-collectives (top-level ops only)";
      byBlock[block].push_back(op);
    }
    int64_t ticket = 0;
    for (auto &[block, ops] : byBlock)
      if (!ops.empty())
        schedule(*block, ops, ticket);
    return success();
  }

  /// Schedules `collectives`, the collectives of `block` in program order;
  /// tickets are numbered from `ticket` on.
  void schedule(Block &block, ArrayRef<Operation *> collectives, int64_t &ticket) {
    llvm::DenseMap<Operation *, int64_t> position;
    SmallVector<Operation *> order;
    SmallVector<int64_t> fences; // loops with collectives of their own
    for (Operation &op : block) {
      position[&op] = int64_t(order.size());
      if (lcc::isMicroBatchLoop(&op) &&
          op.walk([](Operation *inner) {
              return lcc::isCollective(inner) ? WalkResult::interrupt() : WalkResult::advance();
            }).wasInterrupted())
        fences.push_back(int64_t(order.size()));
      order.push_back(&op);
    }
    int64_t end = int64_t(order.size()) - 1; // the terminator

    SmallVector<Slot> slots;
    llvm::DenseSet<Operation *> fed; // collectives whose result feeds a collective
    for (Operation *op : collectives) {
      // Directly or through data movement (which would move with both).
      walkInputs(op, [](Operation *) {}, [&](Operation *def) {
        if (lcc::isCollective(def))
          fed.insert(def);
      });
    }
    for (Operation *op : collectives) {
      Slot s;
      s.op = op;
      s.at = position.lookup(op);
      s.async = lcc::asAsyncCollective(op) && !fed.contains(op) && depth > 0;
      if (!s.async) {
        // Stays where it is: nothing moves with it.
        s.ready = s.need = s.at;
        slots.push_back(s);
        continue;
      }
      // Through the data movement, to the computation the input needs.
      walkInputs(op, [&](Operation *def) { s.feed.push_back(def); }, [&](Operation *def) {
        s.ready = std::max(s.ready, position.lookup(def) + 1);
      });
      llvm::DenseSet<Operation *> seen(s.feed.begin(), s.feed.end());
      llvm::sort(s.feed, [&](Operation *a, Operation *b) {
        return position.lookup(a) < position.lookup(b);
      });
      // Through the data movement, to the first op that needs the data.
      s.need = end;
      SmallVector<Value> uses(op->getResults());
      while (!uses.empty()) {
        for (Operation *user : uses.pop_back_val().getUsers()) {
          Operation *top = block.findAncestorOpInBlock(*user);
          if (!top)
            continue;
          if (top == user && isDataMovement(user) && !seen.contains(user)) {
            seen.insert(user);
            s.drain.push_back(user);
            uses.append(user->result_begin(), user->result_end());
            continue;
          }
          s.need = std::min(s.need, position.lookup(top));
        }
      }
      llvm::sort(s.drain, [&](Operation *a, Operation *b) {
        return position.lookup(a) < position.lookup(b);
      });
      // Nothing in flight across a loop that runs collectives of its own:
      // its iterations start and wait for theirs.
      for (int64_t fence : fences)
        if (s.ready <= fence)
          s.need = std::min(s.need, fence);
      slots.push_back(s);
    }

    // The earliest need of every collective from i on: no start may pass it.
    size_t n = slots.size();
    SmallVector<int64_t> laterNeed(n + 1, end);
    for (size_t i = n; i-- > 0;)
      laterNeed[i] = std::min(laterNeed[i + 1], slots[i].need);

    SmallVector<size_t> started; // the asynchronous slots, in order
    for (size_t i = 0; i < n; ++i) {
      Slot &s = slots[i];
      if (!s.async) {
        // In place; the runtime finishes the started ones first.
        s.start = s.wait = s.at;
        continue;
      }
      s.start = std::max(s.ready, i ? slots[i - 1].start : 0);
      // The window: the asynchronous collective `depth` starts back must be
      // waited for before this one starts.
      if (started.size() >= size_t(depth)) {
        Slot &old = slots[started[started.size() - depth]];
        if (old.wait > s.start) {
          if (old.need < s.need)
            s.start = std::min(old.wait, laterNeed[i]);
          old.wait = std::min(old.wait, s.start);
        }
      }
      s.wait = s.need;
      started.push_back(i);
    }

    // Rebuild the block: at each position, first the waits of collectives
    // started earlier, then the starts, then the waits of those just started
    // (a start and its wait at one position: nothing to overlap there).
    SmallVector<SmallVector<size_t>> startsAt(end + 1), waitsAt(end + 1);
    for (size_t i = 0; i < n; ++i) {
      startsAt[slots[i].start].push_back(i);
      if (slots[i].async)
        waitsAt[slots[i].wait].push_back(i);
    }
    // Ops placed already (moved before the terminator, in the new order);
    // the collectives are placed by their starts.
    llvm::DenseSet<Operation *> placed;
    for (Slot &s : slots) {
      placed.insert(s.op);
      placed.insert(s.drain.begin(), s.drain.end()); // they follow their wait
    }
    Operation *terminator = block.getTerminator();
    OpBuilder b(terminator->getContext());
    int64_t base = ticket;
    ticket += int64_t(n);
    auto emitWait = [&](size_t i) {
      Slot &s = slots[i];
      b.setInsertionPoint(terminator);
      Value result = s.op->getResult(0);
      // The runtime reads an out-of-place collective's input until the wait.
      auto collective = lcc::asAsyncCollective(s.op);
      SmallVector<Value> keep;
      if (!collective->inPlace)
        keep.push_back(collective->input);
      auto wait = lcc::WaitOp::create(b, s.op->getLoc(), result.getType(), result, keep,
                                      base + int64_t(i));
      result.replaceAllUsesExcept(wait.getResult(), wait);
      for (Operation *op : s.drain)
        op->moveBefore(terminator);
    };
    for (int64_t pos = 0; pos <= end; ++pos) {
      for (size_t i : waitsAt[pos])
        if (slots[i].start < pos)
          emitWait(i);
      for (size_t i : startsAt[pos]) {
        for (Operation *op : slots[i].feed)
          if (placed.insert(op).second)
            op->moveBefore(terminator);
        slots[i].op->moveBefore(terminator);
        if (slots[i].async)
          setTicket(slots[i].op, base + int64_t(i));
      }
      for (size_t i : waitsAt[pos])
        if (slots[i].start == pos)
          emitWait(i);
      if (pos != end && placed.insert(order[pos]).second)
        order[pos]->moveBefore(terminator);
    }
  }

  void runOnOperation() override {
    if (depth < 0) {
      getOperation().emitError() << "lcc-overlap-collectives: depth must be at least 0, got "
                                 << depth;
      return signalPassFailure();
    }
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (failed(overlap(fn)))
        return signalPassFailure();
  }
};

} // namespace
