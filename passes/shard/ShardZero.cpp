//===- ShardZero.cpp - ZeRO stages 1-3: partitioned optimizer -------------===//
//
// ZeRO (Rajbhandari et al., 2020) removes the redundancy of data
// parallelism: of the model states every replica holds, each of N ranks
// keeps 1/N. This pass rewrites @train_step (built by lcc-build-train-step,
// gradients marked with lcc.gradient) for a data-parallel group "dp" of N:
//
//   stage 1 (P_os)     optimizer state partitioned: after the backward, the
//                      gradients are reduce-scattered (bucketed; each rank
//                      needs only the mean of its part), each rank updates
//                      its part of the parameters with its part of the
//                      state, the parts are all-gathered into the new
//                      replicated parameters. Communication 2 Psi, as data
//                      parallelism's all_reduce.
//   stage 2 (P_os+g)   + gradients partitioned: each bucket is reduce-
//                      scattered as soon as its gradients exist, so whole
//                      gradients die early and no rank holds the whole
//                      averaged gradient; the update and all_gather as in
//                      stage 1.
//   stage 3 (P_os+g+p) + parameters partitioned: @train_step and @forward
//                      take and return only this rank's part; the whole
//                      parameter is all-gathered just before its uses in the
//                      forward and again before its uses in the backward, so
//                      gathered copies live only around their uses (the
//                      memory planner frees them after their last use).
//
// Partitioning is flat (ShardUtils.h): a tensor is flattened, zero-padded to a
// multiple of N and cut into N contiguous parts. The optimizer is elementwise
// per parameter, so the pass re-issues each optimizer op on the parts;
// reductions over a whole gradient (the global norm of clipping) become a
// local sum plus an all_reduce(sum). Anything else on the optimizer path is
// an error naming the op. Frozen parameters stay replicated.
//
// Partitioned arguments and results carry `lcc.shard = {group, parts, shape}`
// so the runtime can cut initial values and reassemble checkpoints at any
// other world size. On a dp x tp grid a tensor-parallel piece (its own
// lcc.shard, group "tp") is partitioned like any tensor, and its attribute
// becomes the new one's `within`: the runtime cuts by tp, then by dp.
//
//===----------------------------------------------------------------------===//
#include "dialects/lcc/vjp/VjpUtils.h"
#include "passes/shard/Passes.h"
#include "passes/shard/ShardUtils.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace lcc {
#define GEN_PASS_DEF_LCCSHARDZEROPASS
#include "passes/shard/Passes.h.inc"
} // namespace lcc

using namespace mlir;
namespace vjp = lcc::vjp;
namespace shard = lcc::shard;

namespace {

constexpr llvm::StringLiteral kGroup = "dp";

/// Uses of a stage-3 parameter closer than this many ops share one gather:
/// a forward layer's uses are within a few ops of each other, while the
/// backward's uses come after the rest of the forward and backward.
constexpr int64_t kGatherReuseDistance = 32;

struct LccShardZeroPass : lcc::impl::LccShardZeroPassBase<LccShardZeroPass> {
  using Base::Base;

  void runOnOperation() override;

  LogicalResult fail(Operation *op, const Twine &message) {
    op->emitError() << "lcc-shard-zero: " << message;
    return failure();
  }

  LogicalResult run(ModuleOp module);
  /// Partitioned gradients at the markers (stage 1: slices of all-reduced
  /// buckets; stages 2-3: reduce-scattered buckets).
  void shardGradients(func::FuncOp step, ArrayRef<lcc::GradientOp> markers,
                      llvm::DenseMap<Value, Value> &shards);
  /// Re-issues the optimizer ops on parts; `replicatedParam` gives the part of
  /// a replicated parameter argument on demand.
  LogicalResult shardOptimizer(func::FuncOp step, llvm::DenseMap<Value, Value> &shards,
                               const llvm::SetVector<Operation *> &slice,
                               const llvm::DenseSet<Value> &params,
                               SmallVectorImpl<Operation *> &replaced);
  /// Stages 1-2: the updated parameters' parts (result index, part) become
  /// whole results again, one all_gather per bucket.
  void gatherUpdatedParameters(OpBuilder &b, func::ReturnOp ret,
                               ArrayRef<std::pair<unsigned, Value>> updated);
  /// Stage 3: parameter arguments of `fn` become parts; every use outside
  /// `keep` gets a gathered copy right before it.
  void gatherBeforeUses(func::FuncOp fn, ArrayRef<unsigned> args,
                        const llvm::SetVector<Operation *> &keep);
};

void LccShardZeroPass::runOnOperation() {
  if (failed(run(getOperation())))
    signalPassFailure();
}

LogicalResult LccShardZeroPass::run(ModuleOp module) {
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  if (!step || step.isExternal())
    return fail(module, "no @train_step (run lcc-build-train-step first)");
  if (stage < 1 || stage > 3)
    return fail(module, "stage must be 1, 2 or 3, got " + std::to_string(int64_t(stage)));
  if (dp < 1)
    return fail(module, "dp must be >= 1, got " + std::to_string(int64_t(dp)));
  SmallVector<lcc::GradientOp> markers = shard::markersByReadiness(step);
  if (markers.empty())
    return fail(step, "@train_step has no lcc.gradient markers (built by lcc-build-train-step); "
                      "nothing to partition");
  if (failed(shard::declareGroup(module, kGroup, dp, "lcc-shard-zero")))
    return failure();
  Block *block = &step.getBody().front();

  // Trainable parameter arguments (by name) and optimizer state arguments.
  llvm::StringMap<unsigned> paramArg;
  llvm::StringMap<DictionaryAttr> tpSplit; // "lcc.param:<name>" or "lcc.opt_state:<name>"
  SmallVector<unsigned> stateArgs;
  for (unsigned i = 0; i < step.getNumArguments(); ++i) {
    // A tensor-parallel piece (lcc-shard-tp/-vocab): ZeRO partitions the
    // piece, and the attribute keeps how it was cut (shardAttr's `within`).
    if (auto split = step.getArgAttrOfType<DictionaryAttr>(i, "lcc.shard")) {
      auto group = split.getAs<StringAttr>("group");
      if (!group)
        return fail(step, "argument #" + std::to_string(i) +
                              " has an lcc.shard without a group");
      if (group.getValue() == kGroup || split.get("within"))
        return fail(step, "argument #" + std::to_string(i) +
                              " is already partitioned over data-parallel ranks");
      for (StringRef key : {"lcc.param", "lcc.opt_state"})
        if (auto name = step.getArgAttrOfType<StringAttr>(i, key))
          tpSplit[(key + ":" + name.getValue()).str()] = split;
    }
    if (auto name = step.getArgAttrOfType<StringAttr>(i, "lcc.param"))
      if (!step.getArgAttr(i, "lcc.frozen"))
        paramArg[name.getValue()] = i;
    if (step.getArgAttr(i, "lcc.opt_state"))
      stateArgs.push_back(i);
  }
  for (lcc::GradientOp m : markers)
    if (!paramArg.count(m.getParam()))
      return fail(m, "the gradient of '" + m.getParam() + "' has no parameter argument");
  // Scalar parameters have nothing to partition: they stay whole on every
  // rank with their state, and their gradients are averaged (as data
  // parallelism does).
  SmallVector<lcc::GradientOp> scalars;
  llvm::erase_if(markers, [&](lcc::GradientOp m) {
    if (m.getType().getRank() != 0)
      return false;
    scalars.push_back(m);
    return true;
  });
  // Scalar state (a scalar parameter's, loss scaling's) stays whole too.
  llvm::erase_if(stateArgs, [&](unsigned i) {
    return vjp::tensorType(step.getArgument(i)).getRank() == 0;
  });
  for (lcc::GradientOp m : scalars) {
    OpBuilder sb(m);
    Value mean = lcc::AllReduceOp::create(sb, m.getLoc(), m.getType(), m.getInput(), kGroup, "mean");
    m.getResult().replaceAllUsesWith(mean);
    m.erase();
  }

  // The optimizer: what the results need beyond the gradients' computation
  // (which includes the forward and backward).
  llvm::SetVector<Operation *> gradSide, slice;
  SmallVector<Value> work;
  for (lcc::GradientOp m : markers)
    work.push_back(m.getInput());
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || !gradSide.insert(def))
      continue;
    llvm::append_range(work, def->getOperands());
  }
  auto ret = llvm::cast<func::ReturnOp>(block->getTerminator());
  llvm::append_range(work, ret.getOperands());
  llvm::DenseSet<Operation *> seen;
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || gradSide.contains(def) || !seen.insert(def).second)
      continue;
    llvm::append_range(work, def->getOperands());
  }
  for (Operation &op : *block)
    if (seen.contains(&op) && !llvm::isa<lcc::GradientOp>(op))
      slice.insert(&op);

  // Stage 3: parameters arrive partitioned; the forward and backward gather
  // them before use, the optimizer uses the parts directly.
  llvm::DenseMap<Value, Value> shards;
  llvm::DenseSet<Value> replicatedParams;
  SmallVector<unsigned> paramArgs;
  for (lcc::GradientOp m : markers)
    paramArgs.push_back(paramArg[m.getParam()]);
  llvm::sort(paramArgs);
  if (stage == 3) {
    gatherBeforeUses(step, paramArgs, slice);
    for (unsigned i : paramArgs)
      shards[step.getArgument(i)] = step.getArgument(i);
  } else {
    for (unsigned i : paramArgs)
      replicatedParams.insert(step.getArgument(i));
  }
  // Optimizer state arrives partitioned in every stage.
  for (unsigned i : stateArgs) {
    BlockArgument arg = step.getArgument(i);
    auto layout = shard::flatLayout(vjp::tensorType(arg), dp);
    step.setArgAttr(i, "lcc.shard",
                    shard::shardAttr(module.getContext(), layout, kGroup,
                                     step.getArgAttrOfType<DictionaryAttr>(i, "lcc.shard")));
    arg.setType(layout.shardType());
    shards[arg] = arg;
  }

  shardGradients(step, markers, shards);
  SmallVector<Operation *> replaced;
  if (failed(shardOptimizer(step, shards, slice, replicatedParams, replaced)))
    return failure();

  // Results: state and (stage 3) parameters stay parts; stages 1-2 gather the
  // updated parameters so every rank holds them whole again, in buckets.
  OpBuilder b(ret);
  SmallVector<std::pair<unsigned, Value>> updated; // result index, its part
  for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
    Value v = ret.getOperand(i);
    auto it = shards.find(v);
    if (it == shards.end())
      continue;
    if (stage < 3 && step.getResultAttr(i, "lcc.param")) {
      updated.emplace_back(i, it->second);
      continue;
    }
    ret.setOperand(i, it->second);
    auto layout = shard::flatLayout(vjp::tensorType(v), dp);
    DictionaryAttr within;
    for (StringRef key : {"lcc.param", "lcc.opt_state"})
      if (auto name = step.getResultAttrOfType<StringAttr>(i, key))
        within = tpSplit.lookup((key + ":" + name.getValue()).str());
    step.setResultAttr(i, "lcc.shard",
                       shard::shardAttr(module.getContext(), layout, kGroup, within));
  }
  gatherUpdatedParameters(b, ret, updated);
  for (Operation *op : llvm::reverse(replaced)) {
    if (!op->use_empty())
      return fail(op, "internal: an optimizer op kept a use after partitioning");
    op->erase();
  }
  for (lcc::GradientOp m : markers)
    m.erase();
  step.setType(FunctionType::get(module.getContext(), block->getArgumentTypes(),
                                 ret.getOperandTypes()));

  shard::averageLoss(step, kGroup);
  if (auto forward = module.lookupSymbol<func::FuncOp>("forward");
      forward && !forward.isExternal()) {
    if (stage == 3) {
      // @forward (evaluation) takes the same partitioned parameters.
      SmallVector<unsigned> fwdArgs;
      for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
        auto name = forward.getArgAttrOfType<StringAttr>(i, "lcc.param");
        if (name && paramArg.count(name.getValue()) && !forward.getArgAttr(i, "lcc.frozen"))
          fwdArgs.push_back(i);
      }
      gatherBeforeUses(forward, fwdArgs, {});
      forward.setType(FunctionType::get(module.getContext(),
                                        forward.getBody().front().getArgumentTypes(),
                                        forward.getResultTypes()));
    }
    shard::averageLoss(forward, kGroup);
  }
  return success();
}

/// The whole tensors of `parts` (this rank's flat parts, one element type),
/// with one all_gather: the parts side by side as one row, the gathered
/// [N, S] rows cut into column blocks (parameter k's parts, rank by rank),
/// then unpadded and reshaped. A single part is gathered as it is.
static SmallVector<Value> gatherParts(OpBuilder &b, Location loc, ArrayRef<Value> parts,
                                      ArrayRef<shard::FlatLayout> layouts, int64_t dp) {
  if (parts.size() == 1)
    return {shard::fromShard(b, loc, parts.front(), layouts.front(), kGroup)};
  SmallVector<Value> rows;
  for (Value part : parts)
    rows.push_back(vjp::reshape(b, loc, part, {1, vjp::tensorType(part).getDimSize(0)}));
  Value row = vjp::concat(b, loc, rows, 1);
  auto rowType = vjp::tensorType(row);
  auto allType =
      RankedTensorType::get({dp, rowType.getDimSize(1)}, rowType.getElementType());
  Value all = lcc::AllGatherOp::create(b, loc, allType, row, kGroup, /*axis=*/0);
  SmallVector<Value> wholes;
  int64_t offset = 0;
  for (const shard::FlatLayout &layout : layouts) {
    Value column = vjp::sliceAxis(b, loc, all, 1, offset, offset + layout.shard);
    offset += layout.shard;
    Value whole = vjp::reshape(b, loc, column, {layout.padded()});
    if (layout.padded() != layout.numel)
      whole = vjp::sliceAxis(b, loc, whole, 0, 0, layout.numel);
    wholes.push_back(vjp::reshape(b, loc, whole, layout.full.getShape()));
  }
  return wholes;
}

void LccShardZeroPass::gatherUpdatedParameters(OpBuilder &b, func::ReturnOp ret,
                                               ArrayRef<std::pair<unsigned, Value>> updated) {
  // Buckets as for the gradients: consecutive results of one element type,
  // at most bucketMb of whole parameters each.
  SmallVector<RankedTensorType> types;
  for (auto [i, part] : updated)
    types.push_back(llvm::cast<RankedTensorType>(ret.getOperand(i).getType()));
  int64_t bytes = int64_t(bucketMb * 1024 * 1024);
  for (const SmallVector<size_t> &bucket : shard::bucketIndices(types, bytes)) {
    SmallVector<Value> parts;
    SmallVector<shard::FlatLayout> layouts;
    for (size_t k : bucket) {
      parts.push_back(updated[k].second);
      layouts.push_back(shard::flatLayout(types[k], dp));
    }
    SmallVector<Value> wholes = gatherParts(b, ret.getLoc(), parts, layouts, dp);
    for (auto [k, whole] : llvm::zip(bucket, wholes))
      ret.setOperand(updated[k].first, whole);
  }
}

void LccShardZeroPass::gatherBeforeUses(func::FuncOp fn, ArrayRef<unsigned> args,
                                        const llvm::SetVector<Operation *> &keep) {
  // The function's block and each micro-batch loop's body are handled on
  // their own: a parameter used in the loop is gathered in every iteration,
  // around its uses there, like the unrolled micro-batches did.
  SmallVector<Block *> blocks;
  lcc::forEachStepBlock(fn.getBody(), [&](Block &b) { blocks.push_back(&b); });
  llvm::DenseSet<Block *> stepBlocks(blocks.begin(), blocks.end());
  // The op of a step block that holds `op`, or null.
  auto topOf = [&](Operation *op) -> Operation * {
    for (; op; op = op->getParentOp())
      if (stepBlocks.contains(op->getBlock()))
        return op;
    return nullptr;
  };
  for (Block *block : blocks) {
    // A parameter's low-precision copy (lcc-precision) is part of the
    // parameter: where the backward uses a copy made in the forward, the
    // copy is made again there, so the gather is repeated there too instead
    // of the whole copy living from the forward to the backward.
    llvm::DenseMap<Operation *, int64_t> at;
    int64_t i = 0;
    for (Operation &op : *block)
      at[&op] = i++;
    for (unsigned a : args)
      for (Operation *user : llvm::to_vector(fn.getArgument(a).getUsers())) {
        auto convert = llvm::dyn_cast<lcc::ConvertOp>(user);
        if (!convert || convert->getBlock() != block || keep.contains(convert))
          continue;
        for (OpOperand &use : llvm::make_early_inc_range(convert->getUses())) {
          Operation *owner = block->findAncestorOpInBlock(*use.getOwner());
          if (!owner || at[owner] - at[convert] <= kGatherReuseDistance)
            continue;
          OpBuilder b(owner);
          use.set(b.clone(*convert)->getResult(0));
        }
      }
  }
  // One request per cluster of a parameter's uses in one block: consecutive
  // uses closer than kGatherReuseDistance ops share a gather.
  struct Request {
    BlockArgument arg;
    shard::FlatLayout layout;
    SmallVector<Operation *> users; // in program order; the first is where
  };
  llvm::MapVector<Block *, SmallVector<Request>> requestsIn;
  llvm::DenseMap<Operation *, int64_t> order;
  for (Block *block : blocks) {
    requestsIn[block];
    int64_t n = 0;
    for (Operation &op : *block)
      order[&op] = n++;
  }
  for (unsigned i : args) {
    BlockArgument arg = fn.getArgument(i);
    auto layout = shard::flatLayout(vjp::tensorType(arg), dp);
    SmallVector<Operation *> users;
    for (Operation *user : arg.getUsers())
      if (!keep.contains(user))
        users.push_back(topOf(user));
    llvm::sort(users, [&](Operation *a, Operation *b) {
      return a->getBlock() != b->getBlock() ? a->getBlock() < b->getBlock()
                                            : order[a] < order[b];
    });
    users.erase(std::unique(users.begin(), users.end()), users.end());
    for (Operation *user : users) {
      SmallVector<Request> &requests = requestsIn[user->getBlock()];
      if (requests.empty() || requests.back().arg != arg ||
          order[user] - order[requests.back().users.back()] > kGatherReuseDistance)
        requests.push_back({arg, layout, {}});
      requests.back().users.push_back(user);
    }
    arg.setType(layout.shardType());
    fn.setArgAttr(i, "lcc.shard",
                  shard::shardAttr(fn.getContext(), layout, kGroup,
                                   fn.getArgAttrOfType<DictionaryAttr>(i, "lcc.shard")));
  }
  // Requests starting within kGatherReuseDistance ops of each other (a
  // layer's weights) share one all_gather, issued before the first of their
  // uses, up to bucketMb of whole parameters of one element type.
  for (auto &entry : requestsIn) {
    SmallVector<Request> &requests = entry.second;
    llvm::stable_sort(requests, [&](const Request &a, const Request &b) {
      return order[a.users.front()] < order[b.users.front()];
    });
    SmallVector<RankedTensorType> types;
    for (const Request &r : requests)
      types.push_back(r.layout.full);
    auto apart = [&](size_t first, size_t i) {
      return order[requests[i].users.front()] - order[requests[first].users.front()] >
             kGatherReuseDistance;
    };
    for (const SmallVector<size_t> &group :
         shard::bucketIndices(types, int64_t(bucketMb * 1024 * 1024), apart)) {
      SmallVector<Value> parts;
      SmallVector<shard::FlatLayout> layouts;
      for (size_t k : group) {
        parts.push_back(requests[k].arg);
        layouts.push_back(requests[k].layout);
      }
      Operation *at = requests[group.front()].users.front();
      OpBuilder b(at);
      SmallVector<Value> wholes = gatherParts(b, at->getLoc(), parts, layouts, dp);
      for (auto [k, whole] : llvm::zip(group, wholes))
        for (Operation *user : requests[k].users)
          user->replaceUsesOfWith(requests[k].arg, whole);
    }
  }
}

void LccShardZeroPass::shardGradients(func::FuncOp step, ArrayRef<lcc::GradientOp> markers,
                                      llvm::DenseMap<Value, Value> &shards) {
  Block *block = &step.getBody().front();
  OpBuilder b(step.getContext());
  int64_t bytes = int64_t(bucketMb * 1024 * 1024);
  SmallVector<Value> allGrads;
  for (lcc::GradientOp m : markers)
    allGrads.push_back(m.getInput());
  auto buckets = shard::buckets(markers, bytes);
  for (auto &bucket : buckets) {
    SmallVector<Value> grads;
    for (lcc::GradientOp m : bucket)
      grads.push_back(m.getInput());
    // Stage 2 reduces each bucket as soon as its gradients exist, so the
    // whole gradients die early; stage 1 keeps them until the backward is
    // done (the paper's P_os: full gradients, partitioned optimizer).
    // (Stage 1 sets the point once: the buckets then follow each other in
    // the order the backward finished them.)
    if (stage != 1 || &bucket == &buckets.front())
      shard::setInsertionAfterAll(b, block, stage == 1 ? ValueRange(allGrads) : ValueRange(grads));
    Location loc = bucket.front().getLoc();
    // Every gradient as [N, part] rows, side by side: row r of the bucket is
    // then rank r's part of every gradient, so one reduce_scatter along the
    // rows gives each rank exactly its parts.
    SmallVector<Value> rows;
    SmallVector<shard::FlatLayout> layouts;
    for (Value g : grads) {
      layouts.push_back(shard::flatLayout(vjp::tensorType(g), dp));
      Value flat = shard::flattenPadded(b, loc, g, layouts.back());
      rows.push_back(vjp::reshape(b, loc, flat, {int64_t(dp), layouts.back().shard}));
    }
    Value all = vjp::concat(b, loc, rows, 1);
    auto allType = vjp::tensorType(all);
    auto mineType = RankedTensorType::get({1, allType.getDimSize(1)}, allType.getElementType());
    Value mine = lcc::ReduceScatterOp::create(b, loc, mineType, all, kGroup, 0, "mean");
    int64_t offset = 0;
    for (auto [m, layout] : llvm::zip(bucket, layouts)) {
      Value part = vjp::sliceAxis(b, loc, mine, 1, offset, offset + layout.shard);
      offset += layout.shard;
      shards[m.getResult()] = vjp::reshape(b, loc, part, {layout.shard});
    }
  }
}

LogicalResult LccShardZeroPass::shardOptimizer(func::FuncOp step,
                                               llvm::DenseMap<Value, Value> &shards,
                                               const llvm::SetVector<Operation *> &slice,
                                               const llvm::DenseSet<Value> &replicatedParams,
                                               SmallVectorImpl<Operation *> &replaced) {
  llvm::DenseMap<Value, Value> paramParts; // replicated parameter -> its part
  // Whole-tensor sums of partitioned values are first this rank's partial
  // sums; adding partial sums (the norm's sum over all parameters) stays
  // partial, and only a value that needs the total gets one all_reduce. So
  // clipping costs one scalar all_reduce per step, not one per parameter.
  llvm::DenseMap<Value, Value> partials, totals;
  auto isZero = [](Value v) {
    auto fill = v.getDefiningOp<lcc::FillOp>();
    return fill && fill.getValue().isZero();
  };
  auto total = [&](Value old) {
    Value &t = totals[old];
    if (!t) {
      Value local = partials.lookup(old);
      OpBuilder b(local.getContext());
      b.setInsertionPointAfterValue(local);
      t = lcc::AllReduceOp::create(b, local.getLoc(), local.getType(), local, kGroup, "sum");
    }
    return t;
  };
  for (Operation *op : slice) {
    bool partialInput = llvm::any_of(op->getOperands(), [&](Value v) { return partials.count(v); });
    if (partialInput) {
      OpBuilder b(op);
      auto add = llvm::dyn_cast<lcc::AddOp>(op);
      auto convert = llvm::dyn_cast<lcc::ConvertOp>(op);
      bool addOfPartials = add && llvm::all_of(op->getOperands(), [&](Value v) {
                             return partials.count(v) || isZero(v);
                           });
      if (addOfPartials || convert) {
        IRMapping map;
        SmallVector<Value> parts;
        for (Value v : op->getOperands())
          if (partials.count(v))
            parts.push_back(partials.lookup(v));
        Value local = parts.size() == 1 && add ? parts[0] : nullptr;
        if (!local) {
          for (Value v : op->getOperands())
            if (partials.count(v))
              map.map(v, partials.lookup(v));
          local = b.clone(*op, map)->getResult(0);
        }
        partials[op->getResult(0)] = local;
        replaced.push_back(op);
        continue;
      }
      for (Value v : llvm::to_vector(op->getOperands()))
        if (partials.count(v))
          op->replaceUsesOfWith(v, total(v));
    }
    bool touches = llvm::any_of(op->getOperands(), [&](Value v) {
      return shards.count(v) || replicatedParams.contains(v);
    });
    if (!touches)
      continue; // scalar arithmetic (learning rate, bias corrections)
    replaced.push_back(op);
    OpBuilder b(op);
    Location loc = op->getLoc();
    if (auto sum = llvm::dyn_cast<lcc::ReduceSumOp>(op)) {
      if (sum.getType().getRank() != 0)
        return fail(op, "a partial reduction of a partitioned gradient or state cannot be "
                        "partitioned (only whole-tensor sums, as in clipping's norm)");
      Value part = shards.lookup(sum.getInput());
      if (!part)
        return fail(op, "a sum of a replicated parameter on the optimizer path cannot be "
                        "partitioned");
      partials[sum.getResult()] = vjp::reduceSum(b, loc, part, {0}, false);
      continue;
    }
    auto resultType = llvm::dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!shard::isElementwise(op) || op->getNumResults() != 1 || !resultType)
      return fail(op, "'" + op->getName().getStringRef() +
                          "' on the optimizer path cannot be partitioned (only elementwise "
                          "ops and whole-tensor sums can)");
    auto layout = shard::flatLayout(resultType, dp);
    IRMapping map;
    for (Value v : op->getOperands()) {
      auto type = vjp::tensorType(v);
      if (auto it = shards.find(v); it != shards.end()) {
        map.map(v, it->second);
      } else if (type.getRank() == 0) {
        continue; // a scalar broadcasts over the part
      } else if (type.getShape() == resultType.getShape()) {
        Value &part = paramParts[v];
        if (!part) {
          OpBuilder pb(op);
          part = shard::toShard(pb, loc, v, shard::flatLayout(type, dp), kGroup);
        }
        map.map(v, part);
      } else {
        return fail(op, "an operand broadcast along some dimensions cannot be partitioned flat");
      }
    }
    Operation *clone = b.clone(*op, map);
    clone->getResult(0).setType(
        RankedTensorType::get({layout.shard}, resultType.getElementType()));
    shards[op->getResult(0)] = clone->getResult(0);
  }
  Operation *ret = step.getBody().front().getTerminator();
  for (Value v : llvm::to_vector(ret->getOperands()))
    if (partials.count(v))
      ret->replaceUsesOfWith(v, total(v));
  return success();
}

} // namespace
