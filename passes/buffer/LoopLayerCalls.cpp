//===- LoopLayerCalls.cpp - consecutive layer calls become one loop -------===//
//
// See Passes.td (lcc-loop-layer-calls) for what a group is and how each
// argument is found in iteration i. Built after the memory plan, so every
// buffer is a function argument or a view of the arena at a constant offset.
//
//===----------------------------------------------------------------------===//
#include "passes/buffer/Passes.h"

#include "mlir/Conversion/LLVMCommon/MemRefBuilder.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <functional>

namespace lcc {
#define GEN_PASS_DEF_LCCLOOPLAYERCALLSPASS
#include "passes/buffer/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {

/// How one argument position of a group's calls is found in iteration i.
enum class Column {
  Same,     // one value for every call (or equal pure ops: a cast of the arena)
  View,     // views of one buffer at constant byte offsets: a constant table
  Constant, // integer or index constants: a constant table
  Argument, // arguments of a public function: their numbers in a constant
            // table, their addresses read from the runtime's buffer table
  Pointer,  // other static identity-layout buffers: addresses stored per step
};

struct Group {
  func::FuncOp callee;
  SmallVector<func::CallOp> calls;
  SmallVector<Column> columns;
  /// The columns' positions in the constant and the address table.
  SmallVector<unsigned> slot;
  unsigned constants = 0, pointers = 0;
};

bool isPureLeaf(Operation *op) { return op && op->getNumRegions() == 0 && isMemoryEffectFree(op); }

/// Equal values, or results of equivalent pure ops (each call has its own
/// `memref.cast` of the arena).
bool sameValue(Value a, Value b) {
  if (a == b)
    return true;
  Operation *x = a.getDefiningOp(), *y = b.getDefiningOp();
  if (!isPureLeaf(x) || !isPureLeaf(y) || x->getNumResults() != 1 ||
      llvm::cast<OpResult>(a).getResultNumber() != llvm::cast<OpResult>(b).getResultNumber())
    return false;
  return OperationEquivalence::isEquivalentTo(x, y, OperationEquivalence::IgnoreLocations);
}

/// The view's constant byte offset, when `v` is a view without dynamic sizes.
std::optional<int64_t> viewOffset(Value v, Value &source) {
  auto view = v.getDefiningOp<memref::ViewOp>();
  if (!view || !view.getSizes().empty())
    return std::nullopt;
  source = view.getSource();
  return getConstantIntValue(view.getByteShift());
}

bool isPlainBuffer(Type t) {
  auto m = llvm::dyn_cast<MemRefType>(t);
  return m && m.hasStaticShape() && m.getLayout().isIdentity() && !m.getMemorySpace();
}

/// Whether `fn` is an entry point: the runtime calls it with a table of its
/// buffers' addresses, one per argument (AotCompiler.h). A public function of
/// static buffers only that nothing in the module calls (its callers would
/// lack the table).
bool isEntryPoint(func::FuncOp fn) {
  return fn.isPublic() && llvm::all_of(fn.getArgumentTypes(), isPlainBuffer) &&
         SymbolTable::symbolKnownUseEmpty(fn, fn->getParentOp());
}

/// Why the calls cannot share a loop, or "" when every position has a column.
/// `entry`: the entry block of an entry point (else null), whose arguments'
/// addresses are in the runtime's table.
std::string classify(Group &group, Block *entry) {
  unsigned n = group.calls.front().getNumOperands();
  for (unsigned k = 0; k < n; ++k) {
    SmallVector<Value> values =
        llvm::map_to_vector(group.calls, [&](func::CallOp c) { return c.getOperand(k); });
    Value first = values.front();
    Column column;
    Value source;
    auto sameSource = [&](Value v) {
      Value s;
      return viewOffset(v, s) && s == source && v.getType() == first.getType();
    };
    if (llvm::all_of(values, [&](Value v) { return sameValue(first, v); }))
      column = Column::Same;
    else if (viewOffset(first, source) && llvm::all_of(values, sameSource))
      column = Column::View;
    else if (first.getType().isIntOrIndex() &&
             llvm::all_of(values, [](Value v) { return getConstantIntValue(v).has_value(); }))
      column = Column::Constant;
    else if (isPlainBuffer(first.getType()) && llvm::all_of(values, [&](Value v) {
               auto arg = llvm::dyn_cast<BlockArgument>(v);
               return arg && arg.getOwner() == entry;
             }))
      column = Column::Argument;
    else if (isPlainBuffer(first.getType()))
      column = Column::Pointer;
    else
      return "argument " + std::to_string(k) +
             " differs between calls and is neither a view of one buffer, a constant nor "
             "a static identity-layout buffer";
    group.columns.push_back(column);
    if (column == Column::View || column == Column::Constant || column == Column::Argument)
      group.slot.push_back(group.constants++);
    else if (column == Column::Pointer)
      group.slot.push_back(group.pointers++);
    else
      group.slot.push_back(0);
  }
  return "";
}

/// The buffer of static identity-layout type `type` at the address `ptr`:
/// upstream's descriptor (what the conversion to LLVM builds), cast to the
/// memref; reconcile-unrealized-casts removes the pair the call's conversion
/// adds. No memref op makes a buffer of an address.
Value bufferAt(OpBuilder &b, Location loc, const LLVMTypeConverter &types, Value ptr,
               MemRefType type) {
  Value desc = MemRefDescriptor::fromStaticShape(b, loc, types, type, ptr);
  return b.create<UnrealizedConversionCastOp>(loc, type, desc).getResult(0);
}

/// The address at entry `at` (i64) of the runtime's array `buffers`.
Value addressIn(OpBuilder &b, Location loc, Value buffers, Value at) {
  auto ptrType = LLVM::LLVMPointerType::get(b.getContext());
  Value slot = b.create<LLVM::GEPOp>(loc, ptrType, ptrType, buffers, ValueRange{at});
  return b.create<LLVM::LoadOp>(loc, ptrType, slot);
}

struct LccLoopLayerCallsPass : lcc::impl::LccLoopLayerCallsPassBase<LccLoopLayerCallsPass> {
  using Base::Base;

  /// The descriptor types of the conversion to LLVM (default options, as
  /// the pipeline's), for the buffers rebuilt from addresses; set for the
  /// run of runOnOperation.
  const LLVMTypeConverter *types = nullptr;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    LLVMTypeConverter converter(module.getContext());
    types = &converter;
    if (minCalls < 2) {
      module.emitError() << "lcc-loop-layer-calls: min-calls must be at least 2, got "
                         << int64_t(minCalls);
      return signalPassFailure();
    }
    SymbolTable symbols(module);
    // Each layer function's runs per step, which lcc --report counts (a
    // loop's call would count once): its call sites, each as many times as
    // the function holding it runs (a pipeline part calls its layers).
    llvm::DenseMap<Operation *, SmallVector<Operation *>> callers;
    module.walk([&](func::CallOp call) {
      if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee()))
        if (callee->hasAttr(lcc::kLayerAttr))
          callers[callee].push_back(call->getParentOfType<func::FuncOp>());
    });
    llvm::DenseMap<Operation *, int64_t> runs;
    std::function<int64_t(Operation *)> runsOf = [&](Operation *fn) -> int64_t {
      if (!fn->hasAttr(lcc::kLayerAttr))
        return 1;
      if (!runs.try_emplace(fn, 0).second) // 0 while counting: no cycles
        return runs.lookup(fn);
      int64_t n = 0;
      for (Operation *caller : callers.lookup(fn))
        n += runsOf(caller);
      return runs[fn] = n;
    };
    Builder attrs(module.getContext());
    for (auto &[callee, sites] : callers)
      callee->setAttr(lcc::kLayerRunsAttr, attrs.getI64IntegerAttr(runsOf(callee)));

    unsigned tables = 0;
    for (auto fn : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (fn.isExternal())
        continue;
      SmallVector<Group> groups = findGroups(fn, symbols);
      // One address table per function, as long as its largest group needs:
      // the groups run one after the other.
      unsigned entries = 0;
      bool arguments = false;
      for (Group &group : groups) {
        entries = std::max<unsigned>(entries, group.calls.size() * group.pointers);
        arguments |= llvm::is_contained(group.columns, Column::Argument);
      }
      Value table;
      if (entries) {
        OpBuilder b = OpBuilder::atBlockBegin(&fn.getBody().front());
        table =
            b.create<memref::AllocaOp>(fn.getLoc(), MemRefType::get({entries}, b.getIndexType()));
      }
      // The runtime's array of the function's buffers, one address per
      // argument: a new argument, in the end the only one (takeOnlyTable).
      Value buffers;
      if (arguments) {
        unsigned at = fn.getNumArguments();
        if (failed(fn.insertArgument(at, LLVM::LLVMPointerType::get(module.getContext()),
                                     attrs.getDictionaryAttr({}), fn.getLoc())))
          return signalPassFailure();
        fn->setAttr(lcc::kBufferTableAttr, attrs.getUnitAttr());
        buffers = fn.getArgument(at);
      }
      for (Group &group : groups)
        build(group, table, buffers, symbols, fn.getName(), tables);
      if (buffers && failed(takeOnlyTable(fn, buffers)))
        return signalPassFailure();
    }
  }

  /// The entry point's buffers all come from the table: each one still used
  /// is made at the start from its address there, and the function takes the
  /// table alone. Its signature (one descriptor per buffer, about 9 values
  /// each after lowering: 30,000 at GPT-2's 48 layers) no longer grows with
  /// depth, and the entry wrapper passes the runtime's array as it is.
  LogicalResult takeOnlyTable(func::FuncOp fn, Value buffers) {
    Block &entry = fn.getBody().front();
    OpBuilder b = OpBuilder::atBlockBegin(&entry);
    llvm::BitVector erase(fn.getNumArguments());
    for (BlockArgument arg : entry.getArguments()) {
      if (arg == buffers)
        continue;
      erase.set(arg.getArgNumber());
      if (arg.use_empty())
        continue;
      Location loc = arg.getLoc();
      Value at =
          b.create<LLVM::ConstantOp>(loc, b.getI64Type(), b.getI64IntegerAttr(arg.getArgNumber()));
      arg.replaceAllUsesWith(bufferAt(b, loc, *types, addressIn(b, loc, buffers, at),
                                      llvm::cast<MemRefType>(arg.getType())));
    }
    return fn.eraseArguments(erase);
  }

  SmallVector<Group> findGroups(func::FuncOp fn, SymbolTable &symbols) {
    SmallVector<Group> groups;
    Block *entry = isEntryPoint(fn) ? &fn.getBody().front() : nullptr;
    auto close = [&](Group &open) {
      if (open.calls.size() >= size_t(minCalls)) {
        std::string why = classify(open, entry);
        if (why.empty())
          groups.push_back(std::move(open));
        else if (explain)
          open.calls.front().emitRemark()
              << "calls of @" << open.callee.getName() << " stay unrolled: " << why;
      }
      open = Group();
    };
    fn.walk([&](Block *block) {
      Group open;
      for (Operation &op : *block) {
        auto call = llvm::dyn_cast<func::CallOp>(op);
        func::FuncOp callee =
            call ? symbols.lookup<func::FuncOp>(call.getCallee()) : func::FuncOp();
        if (callee && callee->hasAttr(lcc::kLayerAttr) && call.getNumResults() == 0) {
          if (open.callee != callee)
            close(open);
          open.callee = callee;
          open.calls.push_back(call);
          continue;
        }
        // What makes the next call's arguments (views, casts, constants)
        // reads no memory, so the calls may move past it.
        if (!isPureLeaf(&op))
          close(open);
      }
      close(open);
    });
    return groups;
  }

  /// The calls become `scf.for` at the last one's place: its arguments are
  /// all defined there, and nothing between the calls touches memory.
  void build(Group &group, Value table, Value buffers, SymbolTable &symbols, StringRef fnName,
             unsigned &tables) {
    func::CallOp last = group.calls.back();
    Location loc = group.calls.front().getLoc();
    OpBuilder b(last);
    int64_t n = int64_t(group.calls.size());
    auto index = [&](int64_t v) { return b.create<arith::ConstantIndexOp>(loc, v).getResult(); };

    if (explain) {
      auto count = [&](Column c) { return llvm::count(group.columns, c); };
      group.calls.front().emitRemark()
          << n << " calls of @" << group.callee.getName()
          << " become a loop: " << count(Column::Same) << " arguments the same, "
          << count(Column::View) << " views and " << count(Column::Constant)
          << " constants from a global table, " << count(Column::Argument)
          << " buffers from the runtime's table, " << count(Column::Pointer)
          << " from a table filled here";
    }

    // Constants (offsets of views and of the callee's temporaries): a global.
    Value constants;
    if (group.constants) {
      SmallVector<int64_t> values(n * group.constants);
      for (auto [i, call] : llvm::enumerate(group.calls))
        for (auto [k, column] : llvm::enumerate(group.columns)) {
          Value v = call.getOperand(k);
          Value source;
          std::optional<int64_t> at;
          if (column == Column::View)
            at = viewOffset(v, source);
          else if (column == Column::Constant)
            at = getConstantIntValue(v);
          else if (column == Column::Argument)
            at = llvm::cast<BlockArgument>(v).getArgNumber();
          if (at)
            values[i * group.constants + group.slot[k]] = *at;
        }
      auto type = MemRefType::get({int64_t(values.size())}, b.getI64Type());
      auto init = DenseElementsAttr::get(RankedTensorType::get(type.getShape(), b.getI64Type()),
                                         llvm::ArrayRef(values));
      OpBuilder mb = OpBuilder::atBlockEnd(&symbols.getOp()->getRegion(0).front());
      auto global = mb.create<memref::GlobalOp>(
          loc, (fnName + "_calls" + llvm::Twine(tables++)).str(), mb.getStringAttr("private"), type,
          init, /*constant=*/true, /*alignment=*/nullptr);
      symbols.insert(global);
      constants = b.create<memref::GetGlobalOp>(loc, type, global.getSymName());
    }
    // Addresses of the other buffers, stored per run: the runtime may pass
    // other buffers each time.
    for (auto [i, call] : llvm::enumerate(group.calls))
      for (auto [k, column] : llvm::enumerate(group.columns))
        if (column == Column::Pointer) {
          Value address = b.create<memref::ExtractAlignedPointerAsIndexOp>(loc, call.getOperand(k));
          b.create<memref::StoreOp>(loc, address, table,
                                    index(int64_t(i) * group.pointers + group.slot[k]));
        }

    auto loop = b.create<scf::ForOp>(loc, index(0), index(n), index(1));
    b.setInsertionPointToStart(loop.getBody());
    Value iv = loop.getInductionVar();
    // Row i of a table of `width` columns starts at i * width.
    llvm::SmallDenseMap<unsigned, Value> rows;
    auto entry = [&](unsigned width, unsigned slot) {
      Value &row = rows[width];
      if (!row)
        row = b.create<arith::MulIOp>(loc, iv, index(width));
      return slot ? b.create<arith::AddIOp>(loc, row, index(slot)).getResult() : row;
    };
    SmallVector<Value> operands;
    for (auto [k, column] : llvm::enumerate(group.columns)) {
      Value first = group.calls.front().getOperand(k);
      switch (column) {
      case Column::Same: operands.push_back(first); break;
      case Column::Argument: {
        Value at = b.create<memref::LoadOp>(loc, constants, entry(group.constants, group.slot[k]));
        operands.push_back(bufferAt(b, loc, *types, addressIn(b, loc, buffers, at),
                                    llvm::cast<MemRefType>(first.getType())));
        break;
      }
      case Column::View:
      case Column::Constant: {
        Value c = b.create<memref::LoadOp>(loc, constants, entry(group.constants, group.slot[k]));
        Value offset = b.create<arith::IndexCastOp>(loc, b.getIndexType(), c);
        if (column == Column::Constant) {
          operands.push_back(first.getType().isIndex()
                                 ? offset
                                 : b.create<arith::IndexCastOp>(loc, first.getType(), offset));
          break;
        }
        auto view = first.getDefiningOp<memref::ViewOp>();
        operands.push_back(
            b.create<memref::ViewOp>(loc, view.getType(), view.getSource(), offset, ValueRange{}));
        break;
      }
      case Column::Pointer: {
        Value address = b.create<memref::LoadOp>(loc, table, entry(group.pointers, group.slot[k]));
        Value ptr = b.create<LLVM::IntToPtrOp>(
            loc, LLVM::LLVMPointerType::get(b.getContext()),
            b.create<arith::IndexCastOp>(loc, b.getI64Type(), address).getResult());
        operands.push_back(bufferAt(b, loc, *types, ptr, llvm::cast<MemRefType>(first.getType())));
        break;
      }
      }
    }
    b.create<func::CallOp>(loc, group.callee, operands);

    // The calls go, and what only they used.
    SmallVector<Operation *> worklist;
    for (func::CallOp call : group.calls) {
      for (Value v : call.getOperands())
        if (Operation *def = v.getDefiningOp())
          worklist.push_back(def);
      call.erase();
    }
    llvm::DenseSet<Operation *> erased;
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      if (erased.contains(op) || !isPureLeaf(op) || !op->use_empty())
        continue;
      erased.insert(op);
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp())
          worklist.push_back(def);
      op->erase();
    }
  }
};

} // namespace
