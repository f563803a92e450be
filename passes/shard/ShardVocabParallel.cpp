//===- ShardVocabParallel.cpp - Megatron's vocab-parallel embedding and loss ===//
//
// The token embedding [V, D] and the LM head are a GPT's largest tensors,
// and the logits [..., V] its largest activation. Megatron-LM splits all
// three over the tensor-parallel group by vocabulary rows: rank r holds rows
// [r * V/tp, (r + 1) * V/tp), which are also the token ids it answers for.
//
//   embedding (gather(E, tokens)): each rank looks up the tokens that fall in
//       its rows (others read row 0 and are zeroed), and one all_reduce (sum)
//       assembles the whole embedding; its gradient passes unchanged, so each
//       rank's scatter-add reaches only its own rows.
//   LM head (matmul(x, E^T) tied, also as x @ transpose(E) from ONNX, or
//       matmul(x, W) with W [D, V]): its input
//       passes through lcc.parallel_copy (the gradient of x sums every rank's
//       share), each rank computes its slice of the logits [..., V/tp].
//   cross-entropy of those logits: the log-sum-exp and the target's logit
//       are assembled from three all_reduces of per-row values ([...]), never
//       of the logits: the maximum (a constant shift, under lcc.stop_gradient,
//       since max has no VJP and the loss does not depend on it), the sum of
//       exponentials and the target's shifted logit (only the rank that holds
//       the target has a nonzero one). loss = mean(log(sum) - target logit)
//       over targets != ignore_index, as lcc.cross_entropy.
//   Autodiff then derives the backward: softmax - one-hot on each rank's
//   slice, no communication but the parallel_copy's all_reduce of dx.
//
// A table is split when every use is one of these (a table that is gathered
// only by what is not a function input, such as a position table indexed by
// an iota, stays whole: splitting it would only add an all_reduce). A V that
// does not divide by tp (GPT-2's 50257) is padded, as Megatron pads it: each
// rank holds ceil(V/tp) rows, the last ones zero rows the runtime adds when
// it cuts the table (runtime/support/Sharding.h) and drops when it joins pieces;
// their logits are masked to -FLT_MAX, so they get no probability and no
// gradient and stay zero. Index arithmetic runs in f32, exact for V <= 2^24. This rank's
// ids come from shard_slice(iota(V)), the one rank-dependent value SPMD code
// has. Runs after lcc-shard-tp (which leaves a head matmul feeding the loss
// whole), before lcc-autodiff.
//
//===----------------------------------------------------------------------===//
#include "passes/shard/Passes.h"
#include "passes/shard/ShardUtils.h"

#include "dialects/lcc/vjp/VjpUtils.h"

#include <limits>

namespace lcc {
#define GEN_PASS_DEF_LCCSHARDVOCABPARALLELPASS
#include "passes/shard/Passes.h.inc"
} // namespace lcc

using namespace mlir;
namespace vjp = lcc::vjp;

namespace {

constexpr llvm::StringLiteral kGroup = "tp";
constexpr int64_t kExactF32 = int64_t(1) << 24;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// min(max(v, 0), hi), elementwise.
Value clampTo(OpBuilder &b, Location loc, Value v, int64_t hi) {
  Value lo = lcc::MaximumOp::create(b, loc, v.getType(), v, vjp::scalar(b, loc, v, 0));
  return lcc::MinimumOp::create(b, loc, v.getType(), lo, vjp::scalar(b, loc, v, double(hi)));
}

RankedTensorType typeOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

/// A parameter split by vocabulary rows, and the ops that use it.
struct Table {
  BlockArgument arg;
  int64_t dim = 0; // 0: [V, D] (embedding, tied head); 1: an untied head [D, V]
  llvm::SmallVector<lcc::GatherOp> gathers;
  llvm::SmallVector<lcc::MatmulOp> heads;
};

/// Whether `v` is a function input, possibly reshaped, transposed, sliced
/// or converted (the token ids, as frontends pass them).
bool fromInput(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!llvm::isa<lcc::ReshapeOp, lcc::TransposeOp, lcc::SliceOp, lcc::ConvertOp>(def))
      return false;
    v = def->getOperand(0);
  }
  auto arg = llvm::cast<BlockArgument>(v);
  auto fn = llvm::dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  return fn && fn.getArgAttr(arg.getArgNumber(), "lcc.input");
}

/// The cross-entropy that reads `mm`'s result as its logits and is its only
/// user, in a float type the decomposition keeps (f32, f64); null otherwise.
lcc::CrossEntropyOp lossOf(lcc::MatmulOp mm) {
  Value logits = mm.getResult();
  Type elem = typeOf(logits).getElementType();
  if (!logits.hasOneUse() || !(elem.isF32() || elem.isF64()))
    return {};
  auto ce = llvm::dyn_cast<lcc::CrossEntropyOp>(*logits.getUsers().begin());
  return ce && ce.getLogits() == logits ? ce : lcc::CrossEntropyOp();
}

struct LccShardVocabParallelPass
    : lcc::impl::LccShardVocabParallelPassBase<LccShardVocabParallelPass> {
  using Base::Base;

  void runOnOperation() override;

  /// The table `arg` is, or nothing when one of its uses cannot be split.
  std::optional<Table> classify(BlockArgument arg);
  /// Rewrites `gather` to look up this rank's rows; returns the whole embedding.
  Value embedding(OpBuilder &b, lcc::GatherOp gather, Value ids, int64_t vocab);
  /// The loss of `ce`, whose logits are this rank's slice.
  Value crossEntropy(OpBuilder &b, lcc::CrossEntropyOp ce, Value ids, int64_t vocab);
};

std::optional<Table> LccShardVocabParallelPass::classify(BlockArgument arg) {
  Table t{arg, -1, {}, {}};
  for (OpOperand &use : arg.getUses()) {
    Operation *user = use.getOwner();
    int64_t dim = -1;
    if (auto gather = llvm::dyn_cast<lcc::GatherOp>(user)) {
      if (use.getOperandNumber() == 0 && (int64_t(gather.getAxis()) == 0 || int64_t(gather.getAxis()) == -2) &&
          fromInput(gather.getIndices())) {
        t.gathers.push_back(gather);
        dim = 0;
      }
    } else if (auto mm = llvm::dyn_cast<lcc::MatmulOp>(user)) {
      if (use.getOperandNumber() == 1 && !mm.getTransposeLhs() && lossOf(mm)) {
        t.heads.push_back(mm);
        dim = mm.getTransposeRhs() ? 0 : 1;
      }
    } else if (auto tr = llvm::dyn_cast<lcc::TransposeOp>(user)) {
      // ONNX's tied head: x @ transpose(E).
      Value v = tr.getResult();
      auto mm = v.hasOneUse() ? llvm::dyn_cast<lcc::MatmulOp>(*v.getUsers().begin())
                              : lcc::MatmulOp();
      if (tr.getPerm() == ArrayRef<int64_t>{1, 0} && mm && mm.getRhs() == v &&
          !mm.getTransposeLhs() && !mm.getTransposeRhs() && lossOf(mm)) {
        t.heads.push_back(mm);
        dim = 0;
      }
    }
    if (dim < 0 || (t.dim >= 0 && t.dim != dim))
      return std::nullopt;
    t.dim = dim;
  }
  if (t.dim < 0)
    return std::nullopt;
  return t;
}

Value LccShardVocabParallelPass::embedding(OpBuilder &b, lcc::GatherOp gather, Value ids,
                                           int64_t vocab) {
  Location loc = gather.getLoc();
  Value idx = gather.getIndices();
  auto idxType = typeOf(idx);
  auto f32 = b.getF32Type();
  int64_t rows = typeOf(ids).getDimSize(0);
  // The token, clamped into [0, vocab) as lcc.gather clamps it (so exactly
  // one rank holds it); its row on this rank, clamped into range; in range
  // iff unclamped.
  Value token = clampTo(b, loc, lcc::ConvertOp::create(b, loc, idxType.clone(f32), idx),
                        vocab - 1);
  Value local = vjp::sub(b, loc, token, vjp::sliceAxis(b, loc, ids, 0, 0, 1));
  Value row = clampTo(b, loc, local, rows - 1);
  Value mine = vjp::cmp(b, loc, "eq", row, local);
  gather.getIndicesMutable().assign(lcc::ConvertOp::create(b, loc, idxType, row));
  b.setInsertionPointAfter(gather);
  auto out = typeOf(gather.getResult());
  SmallVector<int64_t> maskShape(idxType.getShape());
  maskShape.append(out.getRank() - idxType.getRank(), 1);
  Value masked = vjp::select(b, loc, vjp::reshape(b, loc, mine, maskShape), gather.getResult(),
                             vjp::scalar(b, loc, gather.getResult(), 0));
  Value sum = lcc::AllReduceOp::create(b, loc, out, masked, kGroup, "sum");
  gather.getResult().replaceAllUsesExcept(sum, masked.getDefiningOp());
  return sum;
}

Value LccShardVocabParallelPass::crossEntropy(OpBuilder &b, lcc::CrossEntropyOp ce, Value ids,
                                              int64_t vocab) {
  Location loc = ce.getLoc();
  Value logits = ce.getLogits();
  auto type = typeOf(logits);
  int64_t last = type.getRank() - 1;
  SmallVector<int64_t> rows(type.getShape().drop_back()), kept(rows);
  kept.push_back(1);
  auto rowType = RankedTensorType::get(rows, type.getElementType());
  auto keptType = RankedTensorType::get(kept, type.getElementType());
  // Padding columns (ids >= vocab, zero rows of the table) are no classes:
  // a logit of -FLT_MAX gives them no probability and no gradient.
  if (vocab % tp != 0)
    logits = vjp::select(
        b, loc, vjp::cmp(b, loc, "lt", ids, vjp::scalar(b, loc, ids, double(vocab))), logits,
        vjp::scalar(b, loc, logits, -double(std::numeric_limits<float>::max())));
  // The shift: the row's maximum over every rank's slice.
  Value max = lcc::ReduceMaxOp::create(b, loc, keptType, logits, ArrayRef<int64_t>{last}, true);
  max = lcc::AllReduceOp::create(b, loc, keptType, max, kGroup, "max");
  max = lcc::StopGradientOp::create(b, loc, keptType, max);
  Value shifted = vjp::sub(b, loc, logits, max);
  Value exp = lcc::ExpOp::create(b, loc, shifted.getType(), shifted);
  Value sum = vjp::reduceSum(b, loc, exp, {last}, false);
  sum = lcc::AllReduceOp::create(b, loc, rowType, sum, kGroup, "sum");
  // The target's shifted logit, from the one rank whose ids hold it. Targets
  // out of [0, vocab) are clamped into it, as lcc.cross_entropy does.
  auto targetType = RankedTensorType::get(rows, b.getF32Type());
  Value target = lcc::ConvertOp::create(b, loc, targetType, ce.getTargets());
  Value clamped = clampTo(b, loc, target, vocab - 1);
  Value hit = vjp::cmp(b, loc, "eq", vjp::reshape(b, loc, clamped, kept), ids);
  Value picked = vjp::reduceSum(
      b, loc, vjp::select(b, loc, hit, shifted, vjp::scalar(b, loc, shifted, 0)), {last}, false);
  picked = lcc::AllReduceOp::create(b, loc, rowType, picked, kGroup, "sum");
  Value nll = vjp::sub(b, loc, lcc::LogOp::create(b, loc, rowType, sum), picked);
  // Mean over the targets that count.
  Value counted = vjp::cmp(b, loc, "ne", target,
                           vjp::scalar(b, loc, target, double(int64_t(ce.getIgnoreIndex()))));
  Value total = vjp::select(b, loc, counted, nll, vjp::scalar(b, loc, nll, 0));
  Value count = vjp::select(b, loc, counted, vjp::scalar(b, loc, nll, 1),
                            vjp::scalar(b, loc, nll, 0));
  if (!rows.empty()) {
    SmallVector<int64_t> all = llvm::to_vector(llvm::seq<int64_t>(0, int64_t(rows.size())));
    total = vjp::reduceSum(b, loc, total, all, false);
    count = vjp::reduceSum(b, loc, count, all, false);
  }
  return vjp::div(b, loc, total, count);
}

void LccShardVocabParallelPass::runOnOperation() {
  ModuleOp module = getOperation();
  func::FuncOp fn = lcc::shard::forwardToSplit(module, function, tp, "lcc-shard-vocab",
                                               "the vocabulary is split in the forward");
  if (!fn)
    return signalPassFailure();
  if (tp == 1)
    return;
  SmallVector<Table> tables;
  for (BlockArgument arg : fn.getArguments()) {
    auto type = llvm::dyn_cast<RankedTensorType>(arg.getType());
    if (!fn.getArgAttr(arg.getArgNumber(), "lcc.param") || !type || type.getRank() != 2 ||
        arg.use_empty())
      continue;
    std::optional<Table> t = classify(arg);
    if (!t)
      continue;
    int64_t vocab = type.getDimSize(t->dim);
    if (vocab > kExactF32) {
      // Not an error: the table stays whole, as the user's model still
      // trains; say why it is not split, since it costs memory on every rank.
      fn.emitWarning() << "lcc-shard-vocab: parameter '"
                       << fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "lcc.param").getValue()
                       << "' stays whole on every rank: its " << vocab
                       << " vocabulary rows exceed 2^24, past which f32 token ids are not exact";
      continue;
    }
    tables.push_back(*t);
  }
  if (tables.empty())
    return;
  if (failed(lcc::shard::declareGroup(module, kGroup, tp, "lcc-shard-vocab")))
    return signalPassFailure();

  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  Location loc = fn.getLoc();
  // This rank's token ids, one vector per vocabulary size.
  llvm::DenseMap<int64_t, Value> idsOf;
  auto ids = [&](int64_t vocab) {
    Value &v = idsOf[vocab];
    if (!v) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&fn.getBody().front());
      auto f32 = b.getF32Type();
      int64_t width = ceilDiv(vocab, tp);
      Value all = lcc::IotaOp::create(b, loc, RankedTensorType::get({width * tp}, f32), 0);
      v = lcc::ShardSliceOp::create(b, loc, RankedTensorType::get({width}, f32), all, kGroup, 0);
    }
    return v;
  };
  llvm::DenseMap<Value, Value> copies;
  for (Table &t : tables) {
    auto whole = typeOf(t.arg);
    int64_t vocab = whole.getDimSize(t.dim), width = ceilDiv(vocab, tp);
    SmallVector<int64_t> shape(whole.getShape());
    shape[t.dim] = width;
    fn.setArgAttr(t.arg.getArgNumber(), "lcc.shard",
                  lcc::shard::splitAttr(ctx, kGroup, tp, t.dim, 1, whole.getShape()));
    t.arg.setType(RankedTensorType::get(shape, whole.getElementType()));
    for (lcc::GatherOp gather : t.gathers) {
      b.setInsertionPoint(gather);
      embedding(b, gather, ids(vocab), vocab);
    }
    for (lcc::MatmulOp mm : t.heads) {
      lcc::CrossEntropyOp ce = lossOf(mm);
      Value x = mm.getLhs();
      Value &copy = copies[x];
      if (!copy) {
        b.setInsertionPointAfterValue(x);
        copy = lcc::ParallelCopyOp::create(b, mm.getLoc(), x.getType(), x, kGroup);
      }
      mm.getLhsMutable().assign(copy);
      if (auto tr = mm.getRhs().getDefiningOp<lcc::TransposeOp>())
        tr.getResult().setType(RankedTensorType::get(
            {typeOf(tr.getResult()).getDimSize(0), width}, whole.getElementType()));
      SmallVector<int64_t> logits(typeOf(mm.getResult()).getShape());
      logits.back() = width;
      mm.getResult().setType(typeOf(mm.getResult()).clone(logits));
      b.setInsertionPoint(ce);
      Value loss = crossEntropy(b, ce, ids(vocab), vocab);
      ce.getResult().replaceAllUsesWith(loss);
      ce.erase();
    }
  }
  fn.setType(FunctionType::get(ctx, fn.getBody().front().getArgumentTypes(),
                               fn.getResultTypes()));
}

} // namespace
