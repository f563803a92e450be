//===- SplitReductions.cpp - whole-tensor reductions in two stages --------===//
//
// See Passes.td (lcc-split-reductions) for what and why. The split keeps the
// iteration space and only turns its leading dimensions parallel, so the body
// (with its linalg.index, tensor.extract and input maps) moves over unchanged:
// stage 1 is the original generic writing partials, stage 2 combines them
// with the same combiner op into the original outputs (and their inits).
//
//===----------------------------------------------------------------------===//
#include "passes/tensor/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace lcc {
#define GEN_PASS_DEF_LCCSPLITREDUCTIONSPASS
#include "passes/tensor/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {

/// How one output is accumulated: `out = combiner(out, x)` or `combiner(x, out)`.
struct Accumulation {
  OperationName name;
  DictionaryAttr attrs;
  TypedAttr neutral;
  bool accFirst;
};

/// The accumulation of every output of `op`, or nothing when some output is
/// not a plain `out = combine(out, f(ins))` (an online softmax's coupled
/// max and sum, an output read by another output's update).
std::optional<SmallVector<Accumulation>> accumulations(linalg::GenericOp op) {
  Block *body = op.getBody();
  Operation *yield = body->getTerminator();
  SmallVector<Accumulation> result;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    BlockArgument acc = op.getMatchingBlockArgument(&init);
    Value yielded = yield->getOperand(result.size());
    Operation *c = yielded.getDefiningOp();
    if (!c || c->getBlock() != body || c->getNumOperands() != 2 || c->getNumResults() != 1)
      return std::nullopt;
    std::optional<TypedAttr> neutral = arith::getNeutralElement(c);
    // The accumulator is read once, by its combiner, whose value is only yielded.
    if (!neutral || !acc.hasOneUse() || acc.use_begin()->getOwner() != c ||
        !yielded.hasOneUse())
      return std::nullopt;
    result.push_back({c->getName(), c->getAttrDictionary(), *neutral, c->getOperand(0) == acc});
  }
  return result;
}

/// How many leading loops become parallel in stage 1 (0: leave `op` alone).
int64_t splitDims(linalg::GenericOp op, int64_t minElements, int64_t minPartials) {
  if (op.getNumParallelLoops() != 0 || op.getNumLoops() < 2)
    return 0;
  for (Value out : op.getDpsInits()) {
    auto type = llvm::dyn_cast<RankedTensorType>(out.getType());
    if (!type || type.getRank() != 0)
      return 0;
  }
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return 0;
  int64_t points = 1;
  for (int64_t r : ranges)
    points *= r;
  if (points < minElements)
    return 0;
  // The fewest leading loops that give enough partials; all but the last
  // when even those give fewer.
  int64_t k = 0, partials = 1;
  while (k + 1 < int64_t(ranges.size()) && partials < minPartials)
    partials *= ranges[k++];
  return partials >= 2 ? k : 0;
}

void split(linalg::GenericOp op, int64_t k, ArrayRef<Accumulation> accs) {
  MLIRContext *ctx = op.getContext();
  OpBuilder b(op);
  Location loc = op.getLoc();
  int64_t loops = op.getNumLoops();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  ArrayRef<int64_t> partialShape = ArrayRef<int64_t>(ranges).take_front(k);

  // Stage 1: the original body over the same space, the leading k loops
  // parallel, each output a tensor of partials starting at the neutral element.
  SmallVector<Value> partialInits;
  SmallVector<Type> partialTypes;
  for (const Accumulation &acc : accs) {
    Type elem = acc.neutral.getType();
    Value empty = tensor::EmptyOp::create(b, loc, partialShape, elem);
    Value neutral = arith::ConstantOp::create(b, loc, acc.neutral);
    partialInits.push_back(linalg::FillOp::create(b, loc, neutral, empty).getResult(0));
    partialTypes.push_back(partialInits.back().getType());
  }
  SmallVector<AffineExpr> lead;
  for (int64_t d = 0; d < k; ++d)
    lead.push_back(getAffineDimExpr(d, ctx));
  SmallVector<AffineMap> maps1 = op.getIndexingMapsArray();
  for (AffineMap &m : MutableArrayRef<AffineMap>(maps1).drop_front(op.getNumDpsInputs()))
    m = AffineMap::get(loops, 0, lead, ctx);
  SmallVector<utils::IteratorType> iters1(loops, utils::IteratorType::reduction);
  std::fill_n(iters1.begin(), k, utils::IteratorType::parallel);
  auto stage1 =
      linalg::GenericOp::create(b, loc, partialTypes, op.getDpsInputs(), partialInits, maps1, iters1);
  stage1.getRegion().takeBody(op.getRegion());
  stage1->setDiscardableAttrs(op->getDiscardableAttrDictionary());

  // Stage 2: every partial combined, in order, into the original output.
  size_t n = accs.size();
  SmallVector<AffineMap> maps2(n, AffineMap::getMultiDimIdentityMap(k, ctx));
  maps2.append(n, AffineMap::get(k, 0, {}, ctx));
  SmallVector<utils::IteratorType> iters2(k, utils::IteratorType::reduction);
  auto stage2 = linalg::GenericOp::create(
      b, loc, op.getResultTypes(), stage1.getResults(), op.getDpsInits(), maps2, iters2,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        SmallVector<Value> yields;
        for (auto [i, acc] : llvm::enumerate(accs)) {
          Value x = args[i], out = args[n + i];
          OperationState state(l, acc.name);
          state.addOperands(acc.accFirst ? ValueRange{out, x} : ValueRange{x, out});
          state.addTypes(out.getType());
          state.addAttributes(acc.attrs.getValue());
          yields.push_back(nb.create(state)->getResult(0));
        }
        linalg::YieldOp::create(nb, l, yields);
      });
  op.replaceAllUsesWith(stage2.getResults());
  op.erase();
}

struct LccSplitReductionsPass
    : lcc::impl::LccSplitReductionsPassBase<LccSplitReductionsPass> {
  using LccSplitReductionsPassBase::LccSplitReductionsPassBase;

  void runOnOperation() override {
    SmallVector<std::pair<linalg::GenericOp, int64_t>> todo;
    WalkResult walk = getOperation()->walk([&](linalg::LinalgOp linalgOp) {
      // On buffers the split would need new allocations the memory plan
      // does not know: the pipeline has the pass in the wrong place.
      if (!linalgOp.hasPureTensorSemantics()) {
        linalgOp.emitError() << "lcc-split-reductions: runs before bufferization; this "
                             << linalgOp->getName() << " works on memrefs";
        return WalkResult::interrupt();
      }
      auto op = llvm::dyn_cast<linalg::GenericOp>(linalgOp.getOperation());
      if (int64_t k = op ? splitDims(op, minElements, minPartials) : 0)
        todo.emplace_back(op, k);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    int64_t splits = 0;
    for (auto [op, k] : todo) {
      if (std::optional<SmallVector<Accumulation>> accs = accumulations(op)) {
        split(op, k, *accs);
        ++splits;
      }
    }
    // For lcc --report, next to lcc-fuse's counts.
    if (splits)
      getOperation()->setAttr("lcc.split_reductions",
                              IntegerAttr::get(IntegerType::get(&getContext(), 64), splits));
  }
};

} // namespace
