//===- GpuMultiTensor.cpp - independent CUDA kernels as one launch --------===//
#include "passes/gpu/GpuMultiTensor.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace lcc {

namespace {

/// The kernel argument a memref value inside the kernel is a view of.
std::optional<unsigned> argumentOf(Value v, func::FuncOp kernel) {
  while (Operation *def = v.getDefiningOp()) {
    if (!keepsPointer(def))
      return std::nullopt;
    v = def->getOperand(0);
  }
  auto arg = llvm::dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != &kernel.getBody().front())
    return std::nullopt;
  return arg.getArgNumber();
}

/// One call of a run: its kernel and the extents of its operands.
struct Call {
  func::CallOp call;
  const GpuKernelInfo *info;
  SmallVector<Extent> extents;
};

bool dependent(HostBuffers &located, const Call &x, const Call &y) {
  for (auto [i, a] : llvm::enumerate(x.extents))
    for (auto [j, b] : llvm::enumerate(y.extents))
      if ((x.info->writes[i] || y.info->writes[j]) && located.mayOverlap(a, b))
        return true;
  return false;
}

/// Whether two operands are the same elements in the same layout: the same
/// value, or views of one allocation at the same bytes with the same type.
bool sameElements(const Extent &a, const Extent &b, Value x, Value y) {
  return x == y || (a.sameAs(b) && x.getType() == y.getType());
}

/// Whether `y` may run right after `x` in the same thread: both elementwise
/// over the same points and launch shape, and every buffer one writes and
/// the other touches holds the same elements for both, each indexed only at
/// the thread's own points (so a thread reads what it wrote itself).
bool chainable(HostBuffers &located, const Call &x, const Call &y) {
  const GpuKernelInfo &a = *x.info, &b = *y.info;
  func::CallOp xc = x.call, yc = y.call;
  if (a.ranges.empty() || a.ranges != b.ranges || a.shape.grid != b.shape.grid ||
      a.shape.block != b.shape.block)
    return false;
  for (auto [i, ea] : llvm::enumerate(x.extents))
    for (auto [j, eb] : llvm::enumerate(y.extents))
      if ((a.writes[i] || b.writes[j]) && located.mayOverlap(ea, eb) &&
          (!sameElements(ea, eb, xc.getOperand(unsigned(i)), yc.getOperand(unsigned(j))) ||
           !a.aligned[i] || !b.aligned[j]))
        return false;
  return true;
}

/// One part of a fused launch: a chain of calls that each of its threads
/// runs one after the other (mostly a single call).
struct Part {
  SmallVector<const Call *> calls;
  const GpuKernelInfo &info() const { return *calls.front()->info; }
};

bool dependent(HostBuffers &located, const Part &x, const Part &y) {
  for (const Call *a : x.calls)
    for (const Call *b : y.calls)
      if (dependent(located, *a, *b))
        return true;
  return false;
}

/// The chains of a run: each maximal group of neighbouring, pairwise
/// chainable calls, split into its connected parts under dependence (a
/// parameter's moments and update form one chain; another parameter's,
/// independent of it, keeps its own threads).
SmallVector<Part> chains(HostBuffers &located, ArrayRef<Call> calls, int64_t maxArgs) {
  SmallVector<Part> out;
  for (size_t begin = 0; begin < calls.size();) {
    size_t end = begin + 1;
    // (A group's buffers stay within the cap, so each chain fits a launch.)
    llvm::SetVector<Value> buffers;
    func::CallOp first = calls[begin].call;
    buffers.insert(first.getOperands().begin(), first.getOperands().end());
    while (end < calls.size()) {
      func::CallOp next = calls[end].call;
      llvm::SetVector<Value> joined = buffers;
      joined.insert(next.getOperands().begin(), next.getOperands().end());
      if (int64_t(joined.size()) > maxArgs || !llvm::all_of(llvm::seq(begin, end), [&](size_t m) {
            return chainable(located, calls[m], calls[end]);
          }))
        break;
      buffers = std::move(joined);
      ++end;
    }
    // Connected components of [begin, end), each in call order.
    SmallVector<size_t> component(end - begin);
    for (size_t i = begin; i < end; ++i) {
      component[i - begin] = i - begin;
      for (size_t j = begin; j < i; ++j)
        if (dependent(located, calls[j], calls[i])) {
          size_t from = component[j - begin], to = component[i - begin];
          for (size_t &c : component)
            if (c == from)
              c = to;
        }
    }
    // Each chain in call order; the chains in the order of their first call
    // (a MapVector keeps the order keys were first seen in).
    llvm::MapVector<size_t, Part> parts;
    for (size_t i = begin; i < end; ++i)
      parts[component[i - begin]].calls.push_back(&calls[i]);
    for (auto &[id, part] : parts)
      out.push_back(std::move(part));
    begin = end;
  }
  return out;
}

/// A kernel that can be one part of a fused launch: one thread per point
/// (no barriers, shuffles or shared memory), a single block.
bool fusible(const GpuKernelInfo &info) {
  gpu::GPUFuncOp f = info.func;
  return info.shape.mapping == GpuMapping::Threads && f.getBody().hasOneBlock() &&
         f.getNumWorkgroupAttributions() == 0 && f.getNumPrivateAttributions() == 0 &&
         info.writes.size() == f.getNumArguments();
}

/// `call`'s own launch of its kernel, before `anchor`.
GpuLaunch plainLaunch(func::CallOp call, const GpuKernelInfo &info, Operation *anchor) {
  return {anchor, SmallVector<Value>(call.getOperands()), info.func, info.shape};
}

Value cIndex(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// One gpu.func running `parts`: each gets a contiguous range of blocks,
/// found by a binary tree of comparisons on the block id; inside its range a
/// part sees the block and thread ids it was built for (a part built for
/// smaller blocks gets its threads renumbered).
gpu::GPUFuncOp buildFused(OpBuilder &gb, StringRef name, ArrayRef<const Part *> parts,
                          ArrayRef<Value> operands, GpuLaunchShape &shape) {
  MLIRContext *ctx = gb.getContext();
  func::CallOp first = parts.front()->calls.front()->call;
  Location loc = first.getLoc();
  int64_t block = 0;
  for (const Part *p : parts)
    block = std::max(block, p->info().shape.block);
  SmallVector<int64_t> start{0};
  for (const Part *p : parts) {
    const GpuLaunchShape &s = p->info().shape;
    start.push_back(start.back() + (s.grid * s.block + block - 1) / block);
  }
  SmallVector<Type> types;
  for (Value v : operands)
    types.push_back(v.getType());
  auto func = gpu::GPUFuncOp::create(gb, loc, name, FunctionType::get(ctx, types, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), UnitAttr::get(ctx));
  func->setAttr("lcc.mapping", StringAttr::get(ctx, modeName(GpuMapping::Multi)));
  func->setAttr("lcc.parts", gb.getI64IntegerAttr(int64_t(parts.size())));
  func.setKnownBlockSizeAttr(gb.getDenseI32ArrayAttr({int32_t(block), 1, 1}));
  Block &entry = func.getBody().front();
  OpBuilder b = OpBuilder::atBlockBegin(&entry);
  Value bid = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);

  auto leaf = [&](OpBuilder &at, size_t k) {
    const Part &part = *parts[k];
    int64_t partBlock = part.info().shape.block;
    Value local = arith::SubIOp::create(at, loc, bid, cIndex(at, loc, start[k]));
    Value partBid = local, partTid = tid;
    if (partBlock != block) {
      Value flat = arith::AddIOp::create(
          at, loc, arith::MulIOp::create(at, loc, local, cIndex(at, loc, block)), tid);
      partBid = arith::DivUIOp::create(at, loc, flat, cIndex(at, loc, partBlock));
      partTid = arith::RemUIOp::create(at, loc, flat, cIndex(at, loc, partBlock));
    }
    // A chain's kernels one after the other, with the same ids.
    for (const Call *c : part.calls) {
      IRMapping map;
      gpu::GPUFuncOp partFunc = c->info->func;
      func::CallOp partCall = c->call;
      Block &body = partFunc.getBody().front();
      for (auto [arg, value] : llvm::zip(body.getArguments(), partCall.getOperands()))
        map.map(arg, entry.getArgument(unsigned(llvm::find(operands, value) - operands.begin())));
      for (Operation &op : body.without_terminator()) {
        if (auto id = llvm::dyn_cast<gpu::BlockIdOp>(op);
            id && id.getDimension() == gpu::Dimension::x) {
          map.map(id.getResult(), partBid);
          continue;
        }
        if (auto id = llvm::dyn_cast<gpu::ThreadIdOp>(op);
            id && id.getDimension() == gpu::Dimension::x) {
          map.map(id.getResult(), partTid);
          continue;
        }
        at.clone(op, map);
      }
    }
  };
  std::function<void(OpBuilder &, size_t, size_t)> tree = [&](OpBuilder &at, size_t lo,
                                                              size_t hi) {
    if (hi - lo == 1)
      return leaf(at, lo);
    size_t mid = (lo + hi) / 2;
    Value below = arith::CmpIOp::create(at, loc, arith::CmpIPredicate::ult, bid,
                                        cIndex(at, loc, start[mid]));
    auto branch = scf::IfOp::create(at, loc, below, /*withElseRegion=*/true);
    OpBuilder then = branch.getThenBodyBuilder(), other = branch.getElseBodyBuilder();
    tree(then, lo, mid);
    tree(other, mid, hi);
  };
  tree(b, 0, parts.size());
  gpu::ReturnOp::create(b, loc);
  shape = GpuLaunchShape{start.back(), block, GpuMapping::Multi};
  return func;
}

/// The launches of one run of calls (see planLaunches), before its last call.
void planRun(HostBuffers &located, ArrayRef<Call> calls, OpBuilder &gb, StringRef host,
             int64_t maxArgs, int64_t &fused, SmallVectorImpl<GpuLaunch> &out) {
  Operation *anchor = calls.back().call;
  SmallVector<Part> run = chains(located, calls, maxArgs);
  // As soon as possible gives the number of levels; then each call goes as
  // late as its dependents allow, so that the calls nothing else in the run
  // waits for (the optimizer's writes of the new parameters) share the last
  // level: one launch for every parameter's update.
  size_t n = run.size();
  SmallVector<SmallVector<size_t>> after(n);
  SmallVector<int64_t> level(n, 0);
  int64_t levels = 0;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < i; ++j)
      if (dependent(located, run[j], run[i])) {
        after[j].push_back(i);
        level[i] = std::max(level[i], level[j] + 1);
      }
    levels = std::max(levels, level[i] + 1);
  }
  for (size_t i = n; i-- > 0;) {
    level[i] = levels - 1;
    for (size_t j : after[i])
      level[i] = std::min(level[i], level[j] - 1);
  }
  for (int64_t l = 0; l < levels; ++l) {
    // The level's calls, in chunks of at most maxArgs distinct buffers.
    SmallVector<const Part *> chunk;
    llvm::SetVector<Value> operands;
    auto flush = [&]() {
      if (chunk.size() == 1 && chunk.front()->calls.size() == 1) {
        out.push_back(plainLaunch(chunk.front()->calls.front()->call, chunk.front()->info(), anchor));
      } else if (!chunk.empty()) {
        GpuLaunchShape shape;
        std::string name = (host + "_mt" + llvm::Twine(fused++)).str();
        gpu::GPUFuncOp f = buildFused(gb, name, chunk, operands.getArrayRef(), shape);
        out.push_back({anchor, SmallVector<Value>(operands.getArrayRef()), f, shape});
      }
      chunk.clear();
      operands.clear();
    };
    for (size_t i = 0; i < run.size(); ++i) {
      if (level[i] != l)
        continue;
      llvm::SmallDenseSet<Value> added;
      for (const Call *c : run[i].calls) {
        func::CallOp call = c->call;
        for (Value v : call.getOperands())
          if (!operands.contains(v))
            added.insert(v);
      }
      if (int64_t(operands.size() + added.size()) > maxArgs && !chunk.empty())
        flush();
      chunk.push_back(&run[i]);
      for (const Call *c : run[i].calls) {
        func::CallOp call = c->call;
        operands.insert(call.getOperands().begin(), call.getOperands().end());
      }
    }
    flush();
  }
}

} // namespace

SmallVector<bool> writtenArguments(func::FuncOp kernel) {
  SmallVector<bool> writes(kernel.getNumArguments(), false);
  auto all = [&]() { writes.assign(writes.size(), true); };
  kernel.walk([&](Operation *op) {
    auto effects = llvm::dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects && op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return; // its nested ops are walked
    if (!effects) {
      // Unknown effects: whatever buffers it touches may be written.
      for (Value v : op->getOperands())
        if (llvm::isa<MemRefType>(v.getType())) {
          if (std::optional<unsigned> arg = argumentOf(v, kernel))
            writes[*arg] = true;
          else
            all();
        }
      return;
    }
    SmallVector<MemoryEffects::EffectInstance> list;
    effects.getEffects(list);
    for (const MemoryEffects::EffectInstance &e : list) {
      if (!llvm::isa<MemoryEffects::Write, MemoryEffects::Free>(e.getEffect()))
        continue;
      std::optional<unsigned> arg = e.getValue() ? argumentOf(e.getValue(), kernel) : std::nullopt;
      if (arg)
        writes[*arg] = true;
      else if (!e.getValue() || !e.getValue().getDefiningOp<memref::AllocaOp>())
        all();
    }
  });
  return writes;
}

void alignedArguments(func::FuncOp kernel, SmallVector<int64_t> &ranges,
                      SmallVector<bool> &aligned) {
  ranges.clear();
  aligned.assign(kernel.getNumArguments(), false);
  linalg::LinalgOp payload;
  for (Operation &op : kernel.getBody().front().without_terminator()) {
    if (op.getNumRegions() == 0)
      continue;
    auto linalgOp = llvm::dyn_cast<linalg::LinalgOp>(op);
    if (payload || !linalgOp)
      return;
    payload = linalgOp;
  }
  if (!payload || payload.getNumLoops() != payload.getNumParallelLoops() ||
      llvm::any_of(payload.getStaticLoopRanges(), ShapedType::isDynamic))
    return;
  ranges = payload.getStaticLoopRanges();
  for (BlockArgument arg : kernel.getArguments())
    aligned[arg.getArgNumber()] =
        !arg.use_empty() && llvm::all_of(arg.getUses(), [&](OpOperand &use) {
          return use.getOwner() == payload.getOperation() &&
                 payload.getMatchingIndexingMap(&use).isIdentity();
        });
}

SmallVector<GpuLaunch> planLaunches(func::FuncOp host,
                                    function_ref<const GpuKernelInfo *(func::CallOp)> info,
                                    HostBuffers &located, OpBuilder &gpuModule, int64_t maxArgs,
                                    int64_t &fused) {
  SmallVector<GpuLaunch> out;
  host.walk([&](Block *block) {
    SmallVector<Call> run;
    auto close = [&]() {
      if (run.size() == 1)
        out.push_back(plainLaunch(run[0].call, *run[0].info, run[0].call));
      else if (run.size() > 1)
        planRun(located, run, gpuModule, host.getSymName(), maxArgs, fused, out);
      run.clear();
    };
    for (Operation &op : *block) {
      auto call = llvm::dyn_cast<func::CallOp>(op);
      const GpuKernelInfo *kernel = call ? info(call) : nullptr;
      if (kernel && maxArgs > 0 && fusible(*kernel) &&
          int64_t(call.getNumOperands()) <= maxArgs) {
        Call part{call, kernel, {}};
        for (Value v : call.getOperands())
          part.extents.push_back(HostBuffers::extent(v));
        run.push_back(std::move(part));
        continue;
      }
      // Pure ops (views, constants) may sit inside a run; anything else ends it.
      if (!kernel && op.getNumRegions() == 0 && isMemoryEffectFree(&op))
        continue;
      // ... except a kernel that shares no buffer with the run's writes (nor
      // writes one it reads): it is launched where it stands, before the
      // run's fused launches, and the run goes on. (The optimizer's scalars,
      // computed right before the first parameter's update, would otherwise
      // split that parameter's chain.)
      if (kernel && !run.empty()) {
        Call alone{call, kernel, {}};
        for (Value v : call.getOperands())
          alone.extents.push_back(HostBuffers::extent(v));
        if (llvm::none_of(run, [&](const Call &c) { return dependent(located, c, alone); })) {
          out.push_back(plainLaunch(call, *kernel, call));
          continue;
        }
      }
      close();
      if (kernel)
        out.push_back(plainLaunch(call, *kernel, call));
    }
    close();
  });
  return out;
}

} // namespace lcc
