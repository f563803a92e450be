//===- ShardTensorParallel.cpp - Megatron tensor parallelism on @forward --===//
//
// Megatron-LM (Shoeybi et al., 2019) splits each transformer block's two
// matmul pairs over a group of `tp` ranks: the first matmul of a pair is
// column-parallel (each rank holds a slice of the output features: attention
// heads, MLP hidden units), everything between works on that slice alone
// (heads are independent, the MLP activation is elementwise), and the second
// matmul is row-parallel (each rank holds the matching input rows), so its
// result is a partial sum, all-reduced once. The pass finds these regions by
// propagating a split along one dimension from candidate column matmuls:
//
//   matmul(x, W) with W a parameter [in, out] used once and x whole:
//       a column matmul; its result is split along its last dimension.
//   add of a split value and a bias parameter [out] used once: the bias splits.
//   elementwise ops of split values with the same split: split.
//   slice of a split dimension that selects one of B equal blocks (the q, k
//       and v of a fused projection): the weight is split per block (rank r
//       holds part r of every block), the result is split.
//   reshape that splits/merges the split dimension with it outermost
//       (heads x head_dim), transpose, attention (heads), rope: split.
//   matmul(h, W2) with h split along its last dimension, W2 a parameter used
//       once: row-parallel; W2 splits its rows, the result is all-reduced.
//   As PyTorch's ONNX export writes a model: a weight transpose(W[out, in])
//       (W splits along the other dimension); matmul of two operands split
//       along the same batch dimension (attention's q @ k^T, p @ v);
//       softmax along another dimension; elementwise ops whose unsplit
//       operands are parameter-free (the scale, the causal mask, GELU's
//       constants) and broadcast along the split dimension.
//
// A region whose split value reaches anything else (a residual add, a
// norm, the function's result) is left whole: its column matmuls are
// excluded and the analysis runs again, until it is stable. The input of
// each column matmul passes through lcc.parallel_copy (its gradient is
// all-reduced), the row results through lcc.all_reduce (its gradient passes
// unchanged), so lcc-autodiff then derives Megatron's backward, and
// parameter gradients are the gradients of each rank's parts.
//
// Split parameters carry `lcc.shard = {group = "tp", parts, dim, blocks,
// shape}`; the runtime cuts the whole initial values and checkpoints.
// Embeddings, the LM head and the loss are lcc-shard-vocab's.
//
//===----------------------------------------------------------------------===//
#include "passes/shard/Passes.h"
#include "passes/shard/ShardUtils.h"

#include "llvm/ADT/EquivalenceClasses.h"

namespace lcc {
#define GEN_PASS_DEF_LCCSHARDTENSORPARALLELPASS
#include "passes/shard/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kGroup = "tp";

/// How a value is split: along `dim`, as `blocks` equal blocks each cut into
/// tp parts (blocks = 1: plain contiguous parts).
struct Split {
  int64_t dim = 0, blocks = 1;
  int64_t region = 0;
};

RankedTensorType typeOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

struct Analysis {
  llvm::DenseMap<Value, Split> splits;               // split values (whole types)
  llvm::DenseMap<Value, Split> params;               // split parameters
  llvm::SmallVector<lcc::MatmulOp> columns, rows;
  llvm::DenseMap<Operation *, int64_t> regionOf;     // column/row matmul -> region
  llvm::EquivalenceClasses<int64_t> regions;
  llvm::DenseSet<int64_t> failed;                    // region roots after analysis
  int64_t nextRegion = 0;

  int64_t root(int64_t r) { return regions.getLeaderValue(r); }
  void fail(Value v) {
    if (auto it = splits.find(v); it != splits.end())
      failed.insert(it->second.region);
  }
};

struct LccShardTensorParallelPass
    : lcc::impl::LccShardTensorParallelPassBase<LccShardTensorParallelPass> {
  using Base::Base;

  void runOnOperation() override;

  /// A parameter argument used exactly once (so splitting it affects only
  /// the op analyzed).
  bool isParamOnce(func::FuncOp fn, Value v) {
    auto arg = llvm::dyn_cast<BlockArgument>(v);
    return arg && arg.getOwner()->getParentOp() == fn &&
           fn.getArgAttr(arg.getArgNumber(), "lcc.param") && v.hasOneUse();
  }

  /// The parameter a matmul weight `w` is: the parameter itself, or (as
  /// ONNX exports write a linear layer, x @ W[out, in]^T) the one use of a
  /// 2-D transpose of one; null otherwise. `transposed` says which.
  Value weightParam(func::FuncOp fn, Value w, bool &transposed) {
    transposed = false;
    if (isParamOnce(fn, w))
      return w;
    auto t = w.getDefiningOp<lcc::TransposeOp>();
    if (!t || !w.hasOneUse() || t.getPerm() != ArrayRef<int64_t>{1, 0} ||
        !isParamOnce(fn, t.getInput()))
      return {};
    transposed = true;
    return t.getInput();
  }

  /// Whether `v` is computed without any parameter (constants, masks,
  /// inputs): every rank of the group holds it alike, and it has no
  /// gradient that a split would leave partial.
  bool paramFree(func::FuncOp fn, Value v, llvm::DenseMap<Value, bool> &memo) {
    if (auto it = memo.find(v); it != memo.end())
      return it->second;
    bool free = true;
    if (auto arg = llvm::dyn_cast<BlockArgument>(v))
      free = !fn.getArgAttr(arg.getArgNumber(), "lcc.param");
    else
      for (Value operand : v.getDefiningOp()->getOperands())
        free = free && paramFree(fn, operand, memo);
    return memo[v] = free;
  }

  /// Number of equal blocks the last dimension of `v` (or of the bias add
  /// after it) is sliced into by all its users; 1 otherwise.
  int64_t blocksOf(Value v);

  Analysis analyze(func::FuncOp fn, const llvm::DenseSet<Operation *> &excluded);
  void rewrite(func::FuncOp fn, Analysis &a);
};

int64_t LccShardTensorParallelPass::blocksOf(Value v) {
  if (v.hasOneUse())
    if (auto add = llvm::dyn_cast<lcc::AddOp>(*v.getUsers().begin()))
      v = add.getResult();
  auto type = typeOf(v);
  int64_t last = type.getRank() - 1, size = type.getDimSize(last);
  llvm::SmallVector<std::pair<int64_t, int64_t>> ranges;
  for (Operation *user : v.getUsers()) {
    auto slice = llvm::dyn_cast<lcc::SliceOp>(user);
    if (!slice || slice.getStep())
      return 1;
    for (int64_t d = 0; d < last; ++d)
      if (slice.getStart()[d] != 0 || slice.getLimit()[d] != type.getDimSize(d))
        return 1;
    ranges.push_back({slice.getStart()[last], slice.getLimit()[last]});
  }
  if (ranges.size() < 2)
    return 1;
  llvm::sort(ranges);
  int64_t blocks = int64_t(ranges.size()), width = size / blocks;
  for (auto [i, r] : llvm::enumerate(ranges))
    if (size % blocks || r.first != int64_t(i) * width || r.second != r.first + width)
      return 1;
  return blocks;
}

Analysis LccShardTensorParallelPass::analyze(func::FuncOp fn,
                                             const llvm::DenseSet<Operation *> &excluded) {
  Analysis a;
  llvm::DenseMap<Value, bool> freeMemo;
  auto regionOf = [&](Value v) { return a.splits.lookup(v).region; };
  auto join = [&](int64_t x, int64_t y) { a.regions.unionSets(x, y); };
  Block &body = fn.getBody().front();
  for (Operation &op : body.without_terminator()) {
    bool splitIn = llvm::any_of(op.getOperands(), [&](Value v) { return a.splits.count(v); });
    if (auto mm = llvm::dyn_cast<lcc::MatmulOp>(op)) {
      Value x = mm.getLhs(), w = mm.getRhs();
      bool transposed = false;
      Value param = weightParam(fn, w, transposed);
      bool weight = param && typeOf(w).getRank() == 2 && !mm.getTransposeLhs() &&
                    !mm.getTransposeRhs();
      // A transposed parameter splits along the other dimension, and the
      // transpose's result along the matmul's.
      auto splitWeight = [&](int64_t dim, int64_t blocks, int64_t region) {
        a.params[param] = {transposed ? 1 - dim : dim, blocks, region};
        if (transposed)
          a.splits[w] = {dim, blocks, region};
      };
      if (weight && a.splits.count(x)) {
        Split s = a.splits.lookup(x);
        if (s.dim == typeOf(x).getRank() - 1 && s.blocks == 1) {
          a.rows.push_back(mm);
          a.regionOf[mm] = s.region;
          splitWeight(0, 1, s.region);
          continue;
        }
      }
      if (weight && !splitIn && !excluded.contains(mm)) {
        int64_t out = typeOf(w).getDimSize(1), blocks = blocksOf(mm.getResult());
        if ((out / blocks) % tp == 0) {
          int64_t r = a.nextRegion++;
          a.regions.insert(r);
          a.columns.push_back(mm);
          a.regionOf[mm] = r;
          splitWeight(1, blocks, r);
          a.splits[mm.getResult()] = {typeOf(mm.getResult()).getRank() - 1, blocks, r};
          continue;
        }
      }
      // Attention spelled out (ONNX): q @ k^T and p @ v per head, both
      // operands split along the same batch dimension.
      auto sx = a.splits.find(x), sw = a.splits.find(w);
      int64_t rank = typeOf(mm.getResult()).getRank();
      if (sx != a.splits.end() && sw != a.splits.end() && sx->second.dim == sw->second.dim &&
          sx->second.blocks == 1 && sw->second.blocks == 1 && sx->second.dim < rank - 2 &&
          typeOf(x).getRank() == rank && typeOf(w).getRank() == rank) {
        join(sx->second.region, sw->second.region);
        a.splits[mm.getResult()] = sx->second;
        continue;
      }
    }
    if (!splitIn)
      continue;
    auto failAll = [&] {
      for (Value v : op.getOperands())
        a.fail(v);
    };
    Value result = op.getNumResults() == 1 ? op.getResult(0) : Value();
    if (!result) {
      failAll();
      continue;
    }
    bool elementwise = lcc::shard::isElementwise(&op);
    // Split operands alike, and the others parameter-free values (scales,
    // masks, constants) that broadcast along the split dimension: the
    // result is split the same way (ONNX's spelled-out GELU, attention's
    // scale and mask).
    auto broadcastSplit = [&]() {
      std::optional<Split> split;
      for (Value v : op.getOperands()) {
        auto it = a.splits.find(v);
        if (it == a.splits.end())
          continue;
        if (typeOf(v).getShape() != typeOf(result).getShape() ||
            (split && (split->dim != it->second.dim || split->blocks != it->second.blocks)))
          return false;
        if (split)
          join(split->region, it->second.region);
        split = it->second;
      }
      int64_t rank = typeOf(result).getRank();
      for (Value v : op.getOperands()) {
        if (a.splits.count(v))
          continue;
        auto type = typeOf(v);
        int64_t d = split->dim - (rank - type.getRank());
        if (!paramFree(fn, v, freeMemo) || (d >= 0 && type.getDimSize(d) != 1))
          return false;
      }
      a.splits[result] = *split;
      return true;
    };
    if (elementwise && op.getNumOperands() == 1) {
      a.splits[result] = a.splits.lookup(op.getOperand(0));
      continue;
    }
    if (elementwise && op.getNumOperands() == 2) {
      Value l = op.getOperand(0), r = op.getOperand(1);
      bool ls = a.splits.count(l), rs = a.splits.count(r);
      if (ls && rs && typeOf(l) == typeOf(r) && a.splits[l].dim == a.splits[r].dim &&
          a.splits[l].blocks == a.splits[r].blocks) {
        join(regionOf(l), regionOf(r));
        a.splits[result] = a.splits.lookup(l);
        continue;
      }
      Value s = ls ? l : r, other = ls ? r : l;
      Split sp = a.splits.lookup(s);
      // A bias [out] added along the split last dimension.
      if (llvm::isa<lcc::AddOp>(op) && !(ls && rs) && isParamOnce(fn, other) &&
          typeOf(other).getRank() == 1 && sp.dim == typeOf(s).getRank() - 1 &&
          typeOf(other).getDimSize(0) == typeOf(s).getDimSize(sp.dim) &&
          typeOf(result) == typeOf(s)) {
        a.params[other] = {0, sp.blocks, sp.region};
        a.splits[result] = sp;
        continue;
      }
      if (!broadcastSplit())
        failAll();
      continue;
    }
    if (elementwise) {
      if (!broadcastSplit())
        failAll();
      continue;
    }
    if (llvm::isa<lcc::SoftmaxOp, lcc::LogSoftmaxOp>(op)) {
      Split s = a.splits.lookup(op.getOperand(0));
      int64_t rank = typeOf(result).getRank();
      auto softmax = llvm::dyn_cast<lcc::SoftmaxOp>(op);
      int64_t axis = softmax ? softmax.getAxis() : llvm::cast<lcc::LogSoftmaxOp>(op).getAxis();
      if ((axis + rank) % rank == s.dim) {
        failAll();
        continue;
      }
      a.splits[result] = s;
      continue;
    }
    if (auto slice = llvm::dyn_cast<lcc::SliceOp>(op)) {
      Split s = a.splits.lookup(slice.getInput());
      auto in = slice.getInput().getType();
      int64_t width = in.getDimSize(s.dim) / s.blocks;
      bool ok = !slice.getStep() && s.blocks > 1;
      for (int64_t d = 0; ok && d < in.getRank(); ++d) {
        int64_t lo = slice.getStart()[d], hi = slice.getLimit()[d];
        ok = d == s.dim ? (hi - lo == width && lo % width == 0)
                        : (lo == 0 && hi == in.getDimSize(d));
      }
      if (!ok) {
        failAll();
        continue;
      }
      a.splits[result] = {s.dim, 1, s.region};
      continue;
    }
    if (auto reshape = llvm::dyn_cast<lcc::ReshapeOp>(op)) {
      Split s = a.splits.lookup(reshape.getInput());
      auto in = reshape.getInput().getType(), out = reshape.getType();
      int64_t before = 1;
      for (int64_t d = 0; d < s.dim; ++d)
        before *= in.getDimSize(d);
      int64_t e = 0, prefix = 1;
      while (e < out.getRank() && prefix < before)
        prefix *= out.getDimSize(e++);
      // The split dimension must stay outermost in whatever it becomes.
      if (s.blocks != 1 || prefix != before || e == out.getRank() ||
          out.getDimSize(e) % tp != 0) {
        failAll();
        continue;
      }
      a.splits[result] = {e, 1, s.region};
      continue;
    }
    if (auto transpose = llvm::dyn_cast<lcc::TransposeOp>(op)) {
      Split s = a.splits.lookup(transpose.getInput());
      auto perm = transpose.getPerm();
      int64_t d = std::find(perm.begin(), perm.end(), s.dim) - perm.begin();
      a.splits[result] = {d, s.blocks, s.region};
      continue;
    }
    if (auto attn = llvm::dyn_cast<lcc::AttentionOp>(op)) {
      bool ok = true;
      for (Value v : op.getOperands()) {
        auto it = a.splits.find(v);
        ok = ok && it != a.splits.end() && it->second.dim == 1 && it->second.blocks == 1 &&
             typeOf(v).getDimSize(1) % tp == 0;
      }
      if (!ok) {
        failAll();
        continue;
      }
      for (Value v : op.getOperands())
        join(regionOf(attn.getQuery()), regionOf(v));
      a.splits[result] = a.splits.lookup(attn.getQuery());
      continue;
    }
    if (auto rope = llvm::dyn_cast<lcc::RopeOp>(op)) {
      Split s = a.splits.lookup(rope.getInput());
      if (s.dim >= typeOf(result).getRank() - 2) {
        failAll();
        continue;
      }
      a.splits[result] = s;
      continue;
    }
    failAll();
  }
  for (Value v : body.getTerminator()->getOperands())
    a.fail(v);
  llvm::DenseSet<int64_t> roots;
  for (int64_t r : a.failed)
    roots.insert(a.root(r));
  a.failed = std::move(roots);
  return a;
}

void LccShardTensorParallelPass::rewrite(func::FuncOp fn, Analysis &a) {
  auto ok = [&](int64_t region) { return !a.failed.contains(a.root(region)); };
  auto local = [&](RankedTensorType t, int64_t dim) {
    SmallVector<int64_t> shape(t.getShape());
    shape[dim] /= tp;
    return RankedTensorType::get(shape, t.getElementType());
  };
  MLIRContext *ctx = fn.getContext();
  // Slices of split blocks select the rank's part of that block.
  for (auto &[v, s] : a.splits)
    if (auto slice = v.getDefiningOp<lcc::SliceOp>(); slice && ok(s.region)) {
      Split in = a.splits.lookup(slice.getInput());
      SmallVector<int64_t> start(slice.getStart()), limit(slice.getLimit());
      int64_t d = in.dim, width = typeOf(slice.getInput()).getDimSize(d) / in.blocks;
      int64_t block = start[d] / width;
      start[d] = block * width / tp;
      limit[d] = (block + 1) * width / tp;
      slice.setStart(start);
      slice.setLimit(limit);
    }
  for (auto &[v, s] : a.splits)
    if (ok(s.region))
      v.setType(local(typeOf(v), s.dim));
  Builder b(ctx);
  for (auto &[v, s] : a.params) {
    if (!ok(s.region))
      continue;
    auto arg = llvm::cast<BlockArgument>(v);
    auto whole = typeOf(v);
    fn.setArgAttr(arg.getArgNumber(), "lcc.shard",
                  lcc::shard::splitAttr(ctx, kGroup, tp, s.dim, s.blocks, whole.getShape()));
    arg.setType(local(whole, s.dim));
  }
  // Megatron's f before each column matmul's input (one per input value),
  // g after each row matmul.
  llvm::DenseMap<Value, Value> copies;
  for (lcc::MatmulOp mm : a.columns) {
    if (!ok(a.regionOf[mm]))
      continue;
    Value x = mm.getLhs();
    Value &copy = copies[x];
    if (!copy) {
      OpBuilder ob(ctx);
      ob.setInsertionPointAfterValue(x);
      copy = lcc::ParallelCopyOp::create(ob, mm.getLoc(), x.getType(), x, kGroup);
    }
    mm.getLhsMutable().assign(copy);
  }
  for (lcc::MatmulOp mm : a.rows) {
    if (!ok(a.regionOf[mm]))
      continue;
    OpBuilder ob(mm->getBlock(), std::next(mm->getIterator()));
    auto sum = lcc::AllReduceOp::create(ob, mm.getLoc(), mm.getType(), mm.getResult(), kGroup,
                                        "sum");
    mm.getResult().replaceAllUsesExcept(sum.getResult(), sum);
  }
  fn.setType(FunctionType::get(ctx, fn.getBody().front().getArgumentTypes(),
                               fn.getResultTypes()));
}

void LccShardTensorParallelPass::runOnOperation() {
  ModuleOp module = getOperation();
  func::FuncOp fn = lcc::shard::forwardToSplit(module, function, tp, "lcc-shard-tp",
                                               "tensor parallelism splits the forward");
  if (!fn)
    return signalPassFailure();
  if (tp == 1)
    return;
  // Exclude the column matmuls of regions that cannot be split, until the
  // analysis is stable (each round excludes at least one).
  llvm::DenseSet<Operation *> excluded;
  Analysis a;
  while (true) {
    a = analyze(fn, excluded);
    size_t before = excluded.size();
    for (lcc::MatmulOp mm : a.columns)
      if (a.failed.contains(a.root(a.regionOf[mm])))
        excluded.insert(mm);
    if (excluded.size() == before)
      break;
  }
  if (a.columns.empty()) {
    fn.emitError() << "lcc-shard-tp: no matmul pair of @" << function
                   << " can be split over " << int64_t(tp)
                   << " ranks (Megatron column/row-parallel regions: a parameter [in, out] "
                      "whose output features divide by tp, then a parameter [out, d])";
    return signalPassFailure();
  }
  if (failed(lcc::shard::declareGroup(module, kGroup, tp, "lcc-shard-tp")))
    return signalPassFailure();
  rewrite(fn, a);
}

} // namespace
