//===- LoopNest.cpp - linalg ops as loops with register accumulators ------===//
#include "passes/kernels/LoopNest.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;

namespace lcc {

bool ownsOutputs(linalg::LinalgOp op, unsigned d) {
  if (op.getIteratorTypesArray()[d] != utils::IteratorType::parallel)
    return false;
  return llvm::all_of(op.getDpsInitsMutable(), [&](OpOperand &init) {
    return llvm::any_of(op.getMatchingIndexingMap(&init).getResults(), [&](AffineExpr e) {
      auto dim = llvm::dyn_cast<AffineDimExpr>(e);
      return dim && dim.getPosition() == d;
    });
  });
}

/// Indices into an operand for the current loop variables.
SmallVector<Value> indicesFor(OpBuilder &b, Location loc, AffineMap map, ValueRange ivs) {
  SmallVector<Value> out;
  for (AffineExpr e : map.getResults()) {
    if (auto dim = llvm::dyn_cast<AffineDimExpr>(e)) {
      out.push_back(ivs[dim.getPosition()]);
    } else if (auto c = llvm::dyn_cast<AffineConstantExpr>(e)) {
      out.push_back(arith::ConstantIndexOp::create(b, loc, c.getValue()));
    } else {
      // Loops not built yet are not used by this map (outputs of a carried
      // reduction); they get a placeholder operand.
      SmallVector<Value> operands(ivs);
      for (Value &v : operands)
        if (!v)
          v = arith::ConstantIndexOp::create(b, loc, 0);
      auto single = AffineMap::get(map.getNumDims(), map.getNumSymbols(), e);
      out.push_back(affine::AffineApplyOp::create(b, loc, single, operands));
    }
  }
  return out;
}

/// Clones the op's body with its block arguments bound to `args` and
/// linalg.index to the loop variables; returns the yielded values.
SmallVector<Value> cloneBody(OpBuilder &b, linalg::LinalgOp op, ValueRange args, ValueRange ivs,
                             bool reassociate) {
  Block *body = op.getBlock();
  IRMapping map;
  map.map(body->getArguments(), args);
  for (Operation &inner : body->without_terminator()) {
    if (auto index = llvm::dyn_cast<linalg::IndexOp>(inner)) {
      map.map(index.getResult(), ivs[index.getDim()]);
      continue;
    }
    b.clone(inner, map);
  }
  SmallVector<Value> yielded;
  for (Value v : body->getTerminator()->getOperands())
    yielded.push_back(map.lookupOrDefault(v));
  // The combiner of a reduction may be reassociated: what lets LLVM
  // vectorize it (the order of a float sum changes by a few ulp).
  if (reassociate)
    for (Value v : yielded)
      if (auto fm = v.getDefiningOp<arith::ArithFastMathInterface>())
        fm->setAttr(fm.getFastMathAttrName(),
                    arith::FastMathFlagsAttr::get(b.getContext(), arith::FastMathFlags::reassoc));
  return yielded;
}

FailureOr<SmallVector<scf::ForOp>> lowerToLoopNest(OpBuilder &b, linalg::LinalgOp op) {
  return lowerToLoopNest(b, op, ValueRange());
}

FailureOr<SmallVector<scf::ForOp>> lowerToLoopNest(OpBuilder &b, linalg::LinalgOp op,
                                                   ValueRange outer) {
  if (!op.hasPureBufferSemantics() || op->getNumRegions() != 1)
    return failure();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return failure();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  unsigned numLoops = ranges.size();
  if (outer.size() > numLoops)
    return failure();
  // Trailing reductions accumulate in registers, when no output is indexed
  // by them (then each output element is read once before and written once
  // after them).
  unsigned firstCarried = numLoops;
  while (firstCarried > 0 && iterators[firstCarried - 1] == utils::IteratorType::reduction)
    --firstCarried;
  for (OpOperand &init : op.getDpsInitsMutable())
    for (unsigned d = firstCarried; d < numLoops; ++d)
      if (op.getMatchingIndexingMap(&init).isFunctionOfDim(d))
        firstCarried = numLoops;
  if (firstCarried < numLoops && outer.size() > firstCarried)
    return failure(); // only leading parallel dimensions can be fixed

  Location loc = op.getLoc();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  SmallVector<scf::ForOp> loops;
  SmallVector<Value> ivs(numLoops);
  auto makeLoop = [&](unsigned d, ValueRange iterArgs) {
    if (d < outer.size()) { // fixed by the caller (never a carried reduction)
      loops.push_back(nullptr);
      ivs[d] = outer[d];
      return scf::ForOp();
    }
    Value lo = arith::ConstantIndexOp::create(b, loc, 0);
    Value hi = arith::ConstantIndexOp::create(b, loc, ranges[d]);
    Value step = arith::ConstantIndexOp::create(b, loc, 1);
    auto loop = scf::ForOp::create(b, loc, lo, hi, step, iterArgs);
    loops.push_back(loop);
    ivs[d] = loop.getInductionVar();
    b.setInsertionPointToStart(loop.getBody());
    return loop;
  };
  for (unsigned d = 0; d < firstCarried; ++d)
    makeLoop(d, {});

  auto loadInputs = [&](SmallVector<Value> &args) {
    for (OpOperand *in : op.getDpsInputOperands()) {
      if (!llvm::isa<MemRefType>(in->get().getType())) {
        args.push_back(in->get()); // a scalar input
        continue;
      }
      args.push_back(memref::LoadOp::create(
          b, loc, in->get(), indicesFor(b, loc, op.getMatchingIndexingMap(in), ivs)));
    }
  };

  if (firstCarried == numLoops) {
    // Innermost: load, compute, store, as upstream does.
    SmallVector<Value> args;
    loadInputs(args);
    for (OpOperand &init : op.getDpsInitsMutable())
      args.push_back(memref::LoadOp::create(
          b, loc, init.get(), indicesFor(b, loc, op.getMatchingIndexingMap(&init), ivs)));
    SmallVector<Value> results = cloneBody(b, op, args, ivs, /*reassociate=*/false);
    for (auto [init, v] : llvm::zip(op.getDpsInitsMutable(), results))
      memref::StoreOp::create(b, loc, v, init.get(),
                              indicesFor(b, loc, op.getMatchingIndexingMap(&init), ivs));
  } else {
    // Read the outputs once (their indices use only the outer loops).
    SmallVector<Value> accumulators;
    SmallVector<SmallVector<Value>> outIndices;
    for (OpOperand &init : op.getDpsInitsMutable()) {
      outIndices.push_back(indicesFor(b, loc, op.getMatchingIndexingMap(&init), ivs));
      accumulators.push_back(memref::LoadOp::create(b, loc, init.get(), outIndices.back()));
    }
    SmallVector<scf::ForOp> carried;
    ValueRange current = accumulators;
    for (unsigned d = firstCarried; d < numLoops; ++d) {
      scf::ForOp loop = makeLoop(d, current);
      carried.push_back(loop);
      current = loop.getRegionIterArgs();
    }
    SmallVector<Value> args;
    loadInputs(args);
    llvm::append_range(args, current);
    SmallVector<Value> results = cloneBody(b, op, args, ivs, /*reassociate=*/true);
    // Yield up through the reduction loops.
    for (unsigned i = carried.size(); i-- > 0;) {
      b.setInsertionPointToEnd(carried[i].getBody());
      scf::YieldOp::create(b, loc, results);
      results.assign(carried[i].getResults().begin(), carried[i].getResults().end());
    }
    b.setInsertionPointAfter(carried.front());
    for (auto [init, v, idx] : llvm::zip(op.getDpsInitsMutable(), results, outIndices))
      memref::StoreOp::create(b, loc, v, init.get(), idx);
  }
  op->erase();
  return loops;
}

} // namespace lcc
