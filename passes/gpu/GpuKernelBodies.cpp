//===- GpuKernelBodies.cpp - thread mappings of lcc's CUDA kernels --------===//
#include "passes/gpu/GpuKernelBodies.h"
#include "passes/kernels/LoopNest.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

#include "mlir/Dialect/Utils/IndexingUtils.h"

using namespace mlir;

namespace lcc {

namespace {

Value cIndex(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// Row-major coordinates of `linear` over `ranges` (innermost last).
SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value linear, ArrayRef<int64_t> ranges) {
  SmallVector<Value> out(ranges.size());
  for (size_t d = ranges.size(); d-- > 0;) {
    if (d == 0) {
      out[d] = linear;
      break;
    }
    Value range = cIndex(b, loc, ranges[d]);
    out[d] = arith::RemUIOp::create(b, loc, linear, range);
    linear = arith::DivUIOp::create(b, loc, linear, range);
  }
  return out;
}

/// A generic whose output-owning parallel dimensions are not all in front
/// (a bias gradient: reduce over batch and time, keep the channel) is
/// interchanged so they are: they are what threads and blocks map to.
/// Iteration order is free in linalg's semantics (only a float reduction's
/// rounding changes, as it does on any parallel target).
Operation *ownedDimsFirst(Operation *payload) {
  auto generic = llvm::dyn_cast<linalg::GenericOp>(payload);
  if (!generic)
    return payload;
  SmallVector<unsigned> order, rest;
  for (unsigned d = 0; d < generic.getNumLoops(); ++d)
    (ownsOutputs(generic, d) ? order : rest).push_back(d);
  if (order.empty() || llvm::is_sorted(llvm::concat<unsigned>(order, rest)))
    return payload;
  llvm::append_range(order, rest);
  IRRewriter rewriter(generic.getContext());
  rewriter.setInsertionPoint(generic);
  FailureOr<linalg::GenericOp> swapped = linalg::interchangeGenericOp(rewriter, generic, order);
  return succeeded(swapped) ? swapped->getOperation() : payload;
}

/// The reduction's combiner when the body is `out = combine(out, f(ins))`
/// with a commutative, associative float combiner used once: what lets
/// threads combine partial results in any grouping.
Operation *floatCombiner(linalg::LinalgOp op) {
  if (op.getNumDpsInits() != 1)
    return nullptr;
  Block *body = op.getBlock();
  BlockArgument acc = body->getArguments().back();
  if (!acc.getType().isF32() || !acc.hasOneUse())
    return nullptr;
  Value yielded = body->getTerminator()->getOperand(0);
  Operation *combine = yielded.getDefiningOp();
  if (!combine || combine->getBlock() != body || combine->getNumOperands() != 2 ||
      !arith::getNeutralElement(combine))
    return nullptr;
  if (combine->getOperand(0) != acc && combine->getOperand(1) != acc)
    return nullptr;
  return combine;
}

/// Where each thread's partial result starts.
Value identityOf(OpBuilder &b, Location loc, Operation *combiner) {
  return arith::ConstantOp::create(b, loc, *arith::getNeutralElement(combiner));
}

Value combine(OpBuilder &b, Location loc, Operation *combiner, Value x, Value y) {
  OperationState state(loc, combiner->getName());
  state.addOperands({x, y});
  state.addTypes(x.getType());
  state.addAttributes(combiner->getAttrs());
  return b.create(state)->getResult(0);
}

/// Butterfly over the 32 lanes: every lane ends with the warp's combination.
Value warpReduce(OpBuilder &b, Location loc, Operation *combiner, Value v) {
  for (int32_t offset = 16; offset >= 1; offset /= 2) {
    auto shuffle = gpu::ShuffleOp::create(b, loc, v, offset, 32, gpu::ShuffleMode::XOR);
    v = combine(b, loc, combiner, v, shuffle.getShuffleResult());
  }
  return v;
}

/// Leading parallel dimensions each of which indexes every output directly:
/// different values of them write different output elements.
unsigned ownedPrefix(linalg::LinalgOp op) {
  unsigned p = 0;
  while (p < op.getNumLoops() && ownsOutputs(op, p))
    ++p;
  return p;
}

/// Whether some input reads the last loop dimension along its own last,
/// unit-stride dimension (a reduction over it is read coalesced by a block).
bool contiguousInnermost(linalg::LinalgOp op) {
  unsigned last = op.getNumLoops() - 1;
  for (OpOperand *in : op.getDpsInputOperands()) {
    auto type = llvm::dyn_cast<MemRefType>(in->get().getType());
    AffineMap map = op.getMatchingIndexingMap(in);
    if (!type || map.getNumResults() == 0)
      continue;
    auto dim = llvm::dyn_cast<AffineDimExpr>(map.getResults().back());
    SmallVector<int64_t> strides;
    int64_t offset;
    if (dim && dim.getPosition() == last && succeeded(type.getStridesAndOffset(strides, offset)) &&
        strides.back() == 1)
      return true;
  }
  return false;
}

/// The kernel's gpu.func skeleton: same arguments, `workgroup` buffers,
/// constants cloned, `map` from the kernel's values to the new ones.
gpu::GPUFuncOp makeFunc(OpBuilder &b, func::FuncOp kernel, Operation *payload,
                        const GpuLaunchShape &shape, TypeRange workgroup, IRMapping &map,
                        OpBuilder &body, ArrayRef<int64_t> argAlignment) {
  int64_t block = shape.block;
  auto func = gpu::GPUFuncOp::create(b, kernel.getLoc(), kernel.getSymName(),
                                     kernel.getFunctionType(), workgroup);
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func->setAttr("lcc.mapping", b.getStringAttr(modeName(shape.mapping)));
  if (shape.lanes > 1)
    func->setAttr("lcc.lanes", b.getI64IntegerAttr(shape.lanes));
  func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr({int32_t(block), 1, 1}));
  Block &entry = func.getBody().front();
  body.setInsertionPointToStart(&entry);
  // What the launch sites guarantee, stated where LLVM sees it (an assume on
  // the pointer): it is what lets neighbouring accesses merge into vector
  // loads and stores.
  for (auto [i, from, to] : llvm::enumerate(kernel.getArguments(), entry.getArguments())) {
    int64_t align = i < argAlignment.size() ? argAlignment[i] : 1;
    if (align >= 16 && llvm::isa<MemRefType>(to.getType()))
      map.map(from, memref::AssumeAlignmentOp::create(body, kernel.getLoc(), to, align));
    else
      map.map(from, to);
  }
  for (Operation &op : kernel.getBody().front().without_terminator())
    if (&op != payload)
      body.clone(op, map);
  return func;
}

/// `nest` (inside `func`) as loops with its leading dimensions at `outer`.
LogicalResult lowerInKernel(OpBuilder &b, linalg::LinalgOp nest, ValueRange outer,
                            gpu::GPUFuncOp func) {
  if (succeeded(lowerToLoopNest(b, nest, outer)))
    return success();
  return func.emitError() << "lcc-gpu-kernels: cannot lower kernel @" << func.getName()
                          << " to loops";
}

/// Launch shape of one thread per point of `total`.
GpuLaunchShape flatShape(int64_t total, int64_t blockSize, GpuMapping mapping) {
  // At least a warp: an empty kernel (total 0) gets a grid of 0 blocks,
  // which the runtime does not launch.
  int64_t block = std::max<int64_t>(32, std::min(blockSize, (total + 31) / 32 * 32));
  return GpuLaunchShape{(total + block - 1) / block, block, mapping};
}

/// The flat thread index, and a builder inside `if (index < total)`; the
/// function's return follows the guard.
std::pair<Value, OpBuilder> guardedThreadIndex(OpBuilder &at, Location loc, int64_t block,
                                               int64_t total) {
  Value tid = gpu::ThreadIdOp::create(at, loc, gpu::Dimension::x);
  Value bid = gpu::BlockIdOp::create(at, loc, gpu::Dimension::x);
  Value gid = arith::AddIOp::create(
      at, loc, arith::MulIOp::create(at, loc, bid, cIndex(at, loc, block)), tid);
  Value inside =
      arith::CmpIOp::create(at, loc, arith::CmpIPredicate::ult, gid, cIndex(at, loc, total));
  auto guard = scf::IfOp::create(at, loc, inside, /*withElseRegion=*/false);
  gpu::ReturnOp::create(at, loc);
  return {gid, guard.getThenBodyBuilder()};
}

/// One thread per point of `ranges`, the leading dimensions of `nest`, run
/// by a clone of `payload` (`nest` itself, or the loop holding it) inside
/// the guard; `nest` becomes the CPU's loop form over the rest.
/// With `lanes` > 1 (which divides the innermost range), each thread runs
/// `lanes` neighbouring innermost points, one clone of `payload` each.
FailureOr<GpuLaunchShape> buildFlat(OpBuilder &b, func::FuncOp kernel, Operation *payload,
                                    linalg::LinalgOp nest, ArrayRef<int64_t> ranges,
                                    GpuMapping mapping, int64_t blockSize,
                                    ArrayRef<int64_t> argAlignment, int64_t lanes = 1) {
  SmallVector<int64_t> threadRanges(ranges);
  threadRanges.back() /= lanes;
  int64_t total = computeProduct(threadRanges);
  GpuLaunchShape shape = flatShape(total, blockSize, mapping);
  shape.lanes = lanes;
  IRMapping map;
  OpBuilder at(b.getContext());
  gpu::GPUFuncOp func = makeFunc(b, kernel, payload, shape, {}, map, at, argAlignment);
  Location loc = payload->getLoc();
  auto [gid, in] = guardedThreadIndex(at, loc, shape.block, total);
  SmallVector<Value> ivs = delinearize(in, loc, gid, threadRanges);
  Value first = ivs.back();
  if (lanes > 1)
    first = arith::MulIOp::create(in, loc, first, cIndex(in, loc, lanes));
  for (int64_t lane = 0; lane < lanes; ++lane) {
    IRMapping laneMap = map;
    ivs.back() = lane ? arith::AddIOp::create(in, loc, first, cIndex(in, loc, lane)) : first;
    in.clone(*payload, laneMap);
    auto clone = llvm::cast<linalg::LinalgOp>(laneMap.lookup(nest.getOperation()));
    if (failed(lowerInKernel(in, clone, ivs, func)))
      return failure();
  }
  // The lanes' stores after all their loads: LLVM may not merge neighbouring
  // loads across a store to a pointer that might alias them. Moving a lane's
  // store past the next lanes' loads is safe because they touch other
  // elements (and kernels never read what another thread writes).
  if (lanes > 1) {
    Block *block = in.getInsertionBlock();
    SmallVector<Operation *> stores;
    for (Operation &op : *block)
      if (llvm::isa<memref::StoreOp>(op))
        stores.push_back(&op);
    for (Operation *store : stores)
      store->moveBefore(block->getTerminator());
  }
  return shape;
}

/// One block per output element of a reduction (see the header).
FailureOr<GpuLaunchShape> buildRows(OpBuilder &b, func::FuncOp kernel, linalg::LinalgOp op,
                                    unsigned owned, int64_t blockSize,
                                    ArrayRef<int64_t> argAlignment) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  ArrayRef<int64_t> outer = ArrayRef<int64_t>(ranges).take_front(owned);
  ArrayRef<int64_t> reduced = ArrayRef<int64_t>(ranges).drop_front(owned);
  int64_t length = computeProduct(reduced);
  int64_t block = 32;
  while (block < blockSize && block < length)
    block *= 2;
  block = std::min(block, blockSize);
  int64_t warps = block / 32;
  GpuLaunchShape shape{computeProduct(outer), block, GpuMapping::Rows};
  MLIRContext *ctx = b.getContext();
  Type f32 = Float32Type::get(ctx);
  auto shared = MemRefType::get({std::max<int64_t>(warps, 1)}, f32, MemRefLayoutAttrInterface{},
                                gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
  IRMapping map;
  OpBuilder at(ctx);
  gpu::GPUFuncOp func =
      makeFunc(b, kernel, op, shape, warps > 1 ? TypeRange{shared} : TypeRange{}, map, at,
               argAlignment);
  Location loc = op.getLoc();
  // The body is cloned from a copy inside the gpu.func, so values it uses
  // from the kernel (constants) are already mapped.
  auto clone = llvm::cast<linalg::LinalgOp>(at.clone(*op, map));
  at.setInsertionPoint(clone);
  Operation *combinerClone = floatCombiner(clone);
  Value tid = gpu::ThreadIdOp::create(at, loc, gpu::Dimension::x);
  Value bid = gpu::BlockIdOp::create(at, loc, gpu::Dimension::x);
  SmallVector<Value> ivs = delinearize(at, loc, bid, outer);
  Value identity = identityOf(at, loc, combinerClone);
  auto loop = scf::ForOp::create(at, loc, tid, cIndex(at, loc, length), cIndex(at, loc, block),
                                 ValueRange{identity});
  {
    OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
    SmallVector<Value> all(ivs);
    llvm::append_range(all, delinearize(lb, loc, loop.getInductionVar(), reduced));
    SmallVector<Value> args;
    for (OpOperand *in : clone.getDpsInputOperands()) {
      if (!llvm::isa<MemRefType>(in->get().getType())) {
        args.push_back(in->get());
        continue;
      }
      args.push_back(memref::LoadOp::create(
          lb, loc, in->get(), indicesFor(lb, loc, clone.getMatchingIndexingMap(in), all)));
    }
    args.push_back(loop.getRegionIterArgs()[0]);
    SmallVector<Value> results = cloneBody(lb, clone, args, all, /*reassociate=*/false);
    scf::YieldOp::create(lb, loc, results);
  }
  Value partial = warpReduce(at, loc, combinerClone, loop.getResult(0));
  OpOperand &init = clone.getDpsInitsMutable()[0];
  SmallVector<Value> outIndices = indicesFor(at, loc, clone.getMatchingIndexingMap(&init), ivs);
  Value c0 = cIndex(at, loc, 0);
  auto storeFrom = [&](OpBuilder &sb, Value lane, Value value) {
    Value first = arith::CmpIOp::create(sb, loc, arith::CmpIPredicate::eq, lane, c0);
    auto ifFirst = scf::IfOp::create(sb, loc, first, false);
    OpBuilder tb = ifFirst.getThenBodyBuilder();
    Value old = memref::LoadOp::create(tb, loc, init.get(), outIndices);
    memref::StoreOp::create(tb, loc, combine(tb, loc, combinerClone, old, value), init.get(),
                            outIndices);
  };
  if (warps == 1) {
    storeFrom(at, tid, partial);
  } else {
    Value c32 = cIndex(at, loc, 32);
    Value lane = arith::RemUIOp::create(at, loc, tid, c32);
    Value warp = arith::DivUIOp::create(at, loc, tid, c32);
    Value buffer = func.getWorkgroupAttributions()[0];
    Value laneZero = arith::CmpIOp::create(at, loc, arith::CmpIPredicate::eq, lane, c0);
    auto write = scf::IfOp::create(at, loc, laneZero, false);
    {
      OpBuilder tb = write.getThenBodyBuilder();
      memref::StoreOp::create(tb, loc, partial, buffer, ValueRange{warp});
    }
    gpu::BarrierOp::create(at, loc);
    Value warpZero = arith::CmpIOp::create(at, loc, arith::CmpIPredicate::eq, warp, c0);
    auto second = scf::IfOp::create(at, loc, warpZero, false);
    OpBuilder sb = second.getThenBodyBuilder();
    Value has =
        arith::CmpIOp::create(sb, loc, arith::CmpIPredicate::ult, lane, cIndex(sb, loc, warps));
    auto read = scf::IfOp::create(sb, loc, TypeRange{f32}, has, /*withElseRegion=*/true);
    {
      OpBuilder tb = read.getThenBodyBuilder();
      scf::YieldOp::create(tb, loc,
                           ValueRange{memref::LoadOp::create(tb, loc, buffer, ValueRange{lane})});
      OpBuilder eb = read.getElseBodyBuilder();
      scf::YieldOp::create(eb, loc, ValueRange{identityOf(eb, loc, combinerClone)});
    }
    storeFrom(sb, lane, warpReduce(sb, loc, combinerClone, read.getResult(0)));
  }
  clone->erase();
  at.setInsertionPointToEnd(&func.getBody().front());
  gpu::ReturnOp::create(at, loc);
  return shape;
}

/// The linalg op an scf.for of row updates writes, when one thread per
/// element of the row is safe: the loop body is side-effect free except for
/// one all-parallel linalg op whose output is a subview of a buffer from
/// outside the loop moved only along its size-1 dimensions (so thread i
/// always touches element i of whichever row).
linalg::LinalgOp sliceUpdate(scf::ForOp loop) {
  linalg::LinalgOp update;
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (auto l = llvm::dyn_cast<linalg::LinalgOp>(op)) {
      if (update)
        return nullptr;
      update = l;
      continue;
    }
    if (llvm::isa<memref::LoadOp, memref::SubViewOp>(op) || isPure(&op))
      continue;
    return nullptr;
  }
  if (!update || update.getNumDpsInits() != 1 || update.getNumReductionLoops() != 0 ||
      ownedPrefix(update) != update.getNumLoops())
    return nullptr;
  auto sub = update.getDpsInits()[0].getDefiningOp<memref::SubViewOp>();
  if (!sub || sub->getBlock() != loop.getBody() || !sub.hasUnitStride() ||
      loop->isAncestor(sub.getSource().getParentBlock()->getParentOp()))
    return nullptr;
  for (auto [offset, size] : llvm::zip(sub.getMixedOffsets(), sub.getStaticSizes()))
    if (llvm::isa<Value>(offset) && size != 1)
      return nullptr;
  return update;
}

/// The whole kernel on one thread.
FailureOr<GpuLaunchShape> buildSerial(OpBuilder &b, func::FuncOp kernel, Operation *payload,
                                      ArrayRef<int64_t> argAlignment) {
  IRMapping map;
  OpBuilder at(b.getContext());
  GpuLaunchShape shape{1, 1, GpuMapping::Serial};
  gpu::GPUFuncOp func = makeFunc(b, kernel, payload, shape, {}, map, at, argAlignment);
  Operation *clone = at.clone(*payload, map);
  gpu::ReturnOp::create(at, payload->getLoc());
  SmallVector<linalg::LinalgOp> nests;
  clone->walk([&](linalg::LinalgOp l) { nests.push_back(l); });
  if (auto l = llvm::dyn_cast<linalg::LinalgOp>(clone))
    nests = {l};
  for (linalg::LinalgOp l : nests) {
    OpBuilder lb(l);
    if (failed(lowerInKernel(lb, l, {}, func)))
      return failure();
  }
  return shape;
}

} // namespace

FailureOr<GpuLaunchShape> buildGpuKernel(OpBuilder &b, func::FuncOp kernel, int64_t blockSize,
                                         int64_t minBlockReduction, ArrayRef<int64_t> argAlignment,
                                         int64_t lanes) {
  Operation *payload = nullptr;
  for (Operation &op : kernel.getBody().front().without_terminator()) {
    if (op.getNumRegions() == 0)
      continue;
    if (payload)
      return kernel.emitError() << "lcc-gpu-kernels: kernel @" << kernel.getSymName()
                                << " holds more than one loop nest";
    payload = &op;
  }
  if (!payload)
    return kernel.emitError() << "lcc-gpu-kernels: kernel @" << kernel.getSymName()
                              << " holds no loop nest";
  FailureOr<GpuLaunchShape> shape = failure();
  payload = ownedDimsFirst(payload);
  if (auto op = llvm::dyn_cast<linalg::LinalgOp>(payload)) {
    if (!op.hasPureBufferSemantics() ||
        llvm::any_of(op.getStaticLoopRanges(), ShapedType::isDynamic))
      return kernel.emitError() << "lcc-gpu-kernels: kernel @" << kernel.getSymName()
                                << " has a linalg op on tensors or with dynamic sizes";
    unsigned owned = ownedPrefix(op);
    unsigned loops = op.getNumLoops();
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t length = computeProduct(ArrayRef<int64_t>(ranges).drop_front(owned));
    int64_t points = computeProduct(ArrayRef<int64_t>(ranges).take_front(owned));
    bool trailingReductions =
        owned < loops &&
        llvm::all_of(ArrayRef(op.getIteratorTypesArray()).drop_front(owned),
                     [](utils::IteratorType t) { return t == utils::IteratorType::reduction; });
    Operation *combiner = trailingReductions ? floatCombiner(op) : nullptr;
    // A block per output pays when the reduction is long and either read
    // coalesced or the outputs are too few to fill the GPU with threads.
    // A whole reduction to one value always gets a block.
    if (combiner && ((length >= minBlockReduction && (contiguousInnermost(op) || points <= 4096)) ||
                     owned == 0))
      shape = buildRows(b, kernel, op, owned, blockSize, argAlignment);
    else if (owned > 0)
      // Elementwise (nothing left inside the thread): neighbouring lanes.
      shape = buildFlat(b, kernel, op, op, ArrayRef<int64_t>(ranges).take_front(owned),
                        GpuMapping::Threads, blockSize, argAlignment,
                        owned == loops && lanes > 1 && ranges.back() % lanes == 0 ? lanes : 1);
    else
      shape = buildSerial(b, kernel, payload, argAlignment);
  } else if (auto loop = llvm::dyn_cast<scf::ForOp>(payload)) {
    if (linalg::LinalgOp update = sliceUpdate(loop))
      shape = buildFlat(b, kernel, loop, update, update.getStaticLoopRanges(), GpuMapping::Slices,
                        blockSize, argAlignment);
    else
      shape = buildSerial(b, kernel, payload, argAlignment);
  } else {
    shape = buildSerial(b, kernel, payload, argAlignment);
  }
  return shape;
}

} // namespace lcc
