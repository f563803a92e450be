//===- Scatter.cpp - scatter_add ------------------------------------------===//
//
// scatter_add writes to data-dependent positions, which a linalg.generic
// cannot express (its outputs are indexed by loops, not by values). The dense
// alternative, a reduction comparing every result row with every index, costs
// rows x indices per element (an embedding gradient would cost V times the
// forward). So the lowering is one scf.for over the index positions that adds
// a [P, 1, Q] slice of the updates into the clamped row of the accumulator:
// the extract_slice/insert_slice pair on the loop-carried tensor bufferizes
// in place, and the total work is that of the forward gather.
//
// The loop runs in index order, so the sum of repeated indices is
// deterministic; it accumulates in the compute type (f32 for half inputs).
//
//===----------------------------------------------------------------------===//
#include "dialects/lcc/lowering/Utils.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace lcc::lowering {
namespace {

struct ScatterAddLowering : OpRewritePattern<ScatterAddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ScatterAddOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = op.getType();
    int64_t axis = normalizeAxis(op.getAxis(), type.getRank());
    if (axis < 0)
      return rewriter.notifyMatchFailure(op, "axis out of range");
    Type elem = type.getElementType(), ct = computeType(elem);
    ArrayRef<int64_t> shape = type.getShape();
    // Collapse to [P, V, Q] (result) and [P, N, Q] (updates): row-major
    // views, so the loop body is the same for every axis and index rank.
    int64_t p = 1, q = 1;
    for (int64_t d = 0; d < axis; ++d)
      p *= shape[d];
    for (int64_t d = axis + 1; d < type.getRank(); ++d)
      q *= shape[d];
    int64_t v = shape[axis];
    int64_t n = tensorType(op.getIndices()).getNumElements();
    Value updates = reshapeTensor(rewriter, loc, op.getUpdates(), {p, n, q});
    Value indices = reshapeTensor(rewriter, loc, op.getIndices(), {n});
    Value acc = filledTensor(rewriter, loc, {p, v, q}, ct, scalarConstant(rewriter, loc, ct, 0.0));

    auto sliceType = RankedTensorType::get({p, 1, q}, ct);
    auto updSliceType = RankedTensorType::get({p, 1, q}, elem);
    Value c0 = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value c1 = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value cn = arith::ConstantIndexOp::create(rewriter, loc, n);
    Value vMax = arith::ConstantIndexOp::create(rewriter, loc, v - 1);
    SmallVector<OpFoldResult> sizes = {rewriter.getIndexAttr(p), rewriter.getIndexAttr(1),
                                       rewriter.getIndexAttr(q)};
    SmallVector<OpFoldResult> strides(3, rewriter.getIndexAttr(1));
    AffineMap id = rewriter.getMultiDimIdentityMap(3);

    auto loop = scf::ForOp::create(
        rewriter, loc, c0, cn, c1, ValueRange{acc},
        [&](OpBuilder &b, Location l, Value j, ValueRange iter) {
          // The same clamp as GatherLowering: out-of-range ids hit the edge rows.
          Value i = arith::IndexCastOp::create(b, l, b.getIndexType(),
                                               tensor::ExtractOp::create(b, l, indices, j));
          i = arith::MaxSIOp::create(b, l, i, c0);
          i = arith::MinSIOp::create(b, l, i, vMax);
          SmallVector<OpFoldResult> updOffsets = {b.getIndexAttr(0), j, b.getIndexAttr(0)};
          SmallVector<OpFoldResult> accOffsets = {b.getIndexAttr(0), i, b.getIndexAttr(0)};
          Value upd = tensor::ExtractSliceOp::create(b, l, updSliceType, updates, updOffsets,
                                                     sizes, strides);
          Value row = tensor::ExtractSliceOp::create(b, l, sliceType, iter[0], accOffsets, sizes,
                                                     strides);
          auto add = linalg::GenericOp::create(
              b, l, TypeRange{sliceType}, ValueRange{upd}, ValueRange{row},
              SmallVector<AffineMap>{id, id}, parallelIterators(3),
              [&](OpBuilder &nb, Location nl, ValueRange a) {
                Value s = arith::AddFOp::create(nb, nl, a[1], castFloat(nb, nl, a[0], ct));
                linalg::YieldOp::create(nb, nl, ValueRange{s});
              });
          Value next = tensor::InsertSliceOp::create(b, l, add.getResult(0), iter[0], accOffsets,
                                                     sizes, strides);
          scf::YieldOp::create(b, l, ValueRange{next});
        });
    Value result = convertTensor(rewriter, loc, loop.getResult(0), elem);
    rewriter.replaceOp(op, reshapeTensor(rewriter, loc, result, shape));
    return success();
  }
};

} // namespace

void populateScatterPatterns(RewritePatternSet &patterns) {
  patterns.add<ScatterAddLowering>(patterns.getContext());
}

} // namespace lcc::lowering
