//===- BuildTrainStep.cpp - @train_step from @forward_grad ----------------===//
//
// The whole training step is IR made of lcc ops only, so every later pass
// (fusion, sharding, both targets) sees the optimizer as ordinary tensor
// code: optimizer state and the step counter are explicit arguments and
// results, nothing is hidden in a runtime. Semantics follow PyTorch
// (clip_grad_norm_, AdamW, SGD) and nanoGPT's get_lr; docs/training.md has
// the formulas and the reasons for each default.
//
//===----------------------------------------------------------------------===//
#include "dialects/lcc/LccOps.h"
#include "dialects/lcc/vjp/VjpUtils.h"
#include "passes/pipeline/PipelineStep.h"
#include "passes/shard/ShardUtils.h"
#include "passes/train/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <limits>
#include <optional>

namespace lcc {
#define GEN_PASS_DEF_LCCBUILDTRAINSTEPPASS
#include "passes/train/Passes.h.inc"
} // namespace lcc

using namespace mlir;
namespace vjp = lcc::vjp;

namespace {

struct LccBuildTrainStepPass : lcc::impl::LccBuildTrainStepPassBase<LccBuildTrainStepPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(build(getOperation())))
      signalPassFailure();
  }

  LogicalResult build(ModuleOp module);
};

/// One trainable parameter: its argument index in @F_grad and its name.
struct Param {
  unsigned arg;
  StringAttr name;
  bool decay;
};

/// `v` with element type `element` (lcc.convert when it differs).
Value asElement(OpBuilder &b, Location loc, Value v, Type element) {
  auto type = vjp::tensorType(v);
  if (type.getElementType() == element)
    return v;
  return lcc::ConvertOp::create(b, loc, type.clone(element), v);
}

Value constant(OpBuilder &b, Location loc, Type element, double value) {
  return vjp::fill(b, loc, RankedTensorType::get({}, element), value);
}

/// Sum of squares of every element of `g`, as a rank-0 tensor of `element`.
Value sumOfSquares(OpBuilder &b, Location loc, Value g, Type element) {
  Value sq = vjp::mul(b, loc, g, g);
  int64_t rank = vjp::tensorType(g).getRank();
  if (rank > 0)
    sq = vjp::reduceSum(b, loc, sq, llvm::to_vector(llvm::seq<int64_t>(0, rank)), false);
  return asElement(b, loc, sq, element);
}

/// cos(pi * r) for r in [0, 1] from mul/add only (the dialect has no cos):
/// cos(pi r) = -sin(u) with u = pi (r - 1/2) in [-pi/2, pi/2], and sin's
/// Taylor series to u^21 there has a truncation error below 2e-18 (the first
/// omitted term, (pi/2)^23 / 23!), under f64 rounding.
Value cosPi(OpBuilder &b, Location loc, Value r, Type element) {
  Value u = vjp::mul(b, loc, vjp::sub(b, loc, r, constant(b, loc, element, 0.5)),
                     constant(b, loc, element, M_PI));
  Value u2 = vjp::mul(b, loc, u, u);
  // Horner in u^2: sin(u) = u (1 - u2/3! (1 - u2/(4*5) (1 - ...))) written
  // with the plain coefficients (-1)^k / (2k+1)!, highest first.
  double coeff[11];
  double fact = 1.0;
  for (int k = 0; k < 11; ++k) {
    if (k > 0)
      fact *= double(2 * k) * double(2 * k + 1);
    coeff[k] = (k % 2 ? -1.0 : 1.0) / fact;
  }
  Value acc = constant(b, loc, element, coeff[10]);
  for (int k = 9; k >= 0; --k)
    acc = vjp::add(b, loc, vjp::mul(b, loc, acc, u2), constant(b, loc, element, coeff[k]));
  return vjp::neg(b, loc, vjp::mul(b, loc, acc, u));
}

LogicalResult LccBuildTrainStepPass::build(ModuleOp module) {
  std::string gradName = function + "_grad";
  auto gradFn = module.lookupSymbol<func::FuncOp>(gradName);
  if (!gradFn)
    return module.emitError() << "lcc-build-train-step: no @" << gradName
                              << " (run lcc-autodiff on @" << function << " first)";
  if (module.lookupSymbol("train_step"))
    return module.emitError() << "lcc-build-train-step: @train_step already exists";
  if (gradFn.isExternal() || !gradFn.getBody().hasOneBlock())
    return gradFn.emitError() << "lcc-build-train-step: @" << gradName
                              << " must have a body of a single block";
  std::optional<lcc::Optimizer> opt = lcc::parseMode<lcc::Optimizer>(optimizer);
  if (!opt)
    return module.emitError() << "lcc-build-train-step: unknown optimizer '" << optimizer
                              << "'; expected " << lcc::modeChoices<lcc::Optimizer>();
  std::optional<lcc::Schedule> sched = lcc::parseMode<lcc::Schedule>(schedule);
  if (!sched)
    return module.emitError() << "lcc-build-train-step: unknown schedule '" << schedule
                              << "'; expected " << lcc::modeChoices<lcc::Schedule>();
  bool adamw = *opt == lcc::Optimizer::AdamW;
  bool cosine = *sched == lcc::Schedule::Cosine;
  if (accum < 1)
    return module.emitError() << "lcc-build-train-step: accum must be >= 1, got " << int64_t(accum);
  if (warmup < 0)
    return module.emitError() << "lcc-build-train-step: warmup must be >= 0, got " << int64_t(warmup);
  if (cosine && decaySteps <= warmup)
    return module.emitError() << "lcc-build-train-step: the cosine schedule needs decay-steps ("
                              << int64_t(decaySteps) << ") > warmup (" << int64_t(warmup)
                              << "): decay-steps is the step at which lr reaches min-lr";
  std::optional<lcc::LossScale> scaling = lcc::parseMode<lcc::LossScale>(lossScale);
  if (!scaling)
    return module.emitError() << "lcc-build-train-step: unknown loss-scale '" << lossScale
                              << "'; expected " << lcc::modeChoices<lcc::LossScale>();
  bool scaled = *scaling == lcc::LossScale::Dynamic;
  if (scaled && (!(lossScaleInit > 0) || !std::isfinite(double(lossScaleInit)) ||
                 lossScaleWindow < 1))
    return module.emitError() << "lcc-build-train-step: dynamic loss scaling needs "
                                 "loss-scale-init > 0 and loss-scale-window >= 1";
  double wd = weightDecay >= 0 ? weightDecay : (adamw ? 0.1 : 0.0);
  double lrMin = minLr >= 0 ? minLr : 0.1 * lr;
  bool withMomentum = !adamw && momentum != 0.0;

  // A pipeline stage (lcc-split-stage): its micro-batches run in the
  // schedule's order, with the other stages.
  std::optional<lcc::pipeline::StageOf> pipe = lcc::pipeline::stageOf(gradFn);
  bool lastStage = !pipe || pipe->last();

  // Parameters (trainable or frozen) first, the rest are batch inputs.
  SmallVector<Param> trainable;
  SmallVector<unsigned> params, inputs;
  std::optional<unsigned> seedArg; // lcc-autodiff{seed-arg}: the backward's seed
  for (unsigned i = 0; i < gradFn.getNumArguments(); ++i) {
    if (gradFn.getArgAttr(i, "lcc.loss_seed")) {
      seedArg = i;
      continue;
    }
    // What a stage receives from its neighbours (pipeline/PipelineStep.h).
    if (gradFn.getArgAttr(i, "lcc.pipeline_recv") || gradFn.getArgAttr(i, "lcc.pipeline_seed"))
      continue;
    auto name = gradFn.getArgAttrOfType<StringAttr>(i, "lcc.param");
    if (!name) {
      inputs.push_back(i);
      continue;
    }
    params.push_back(i);
    if (gradFn.getArgAttr(i, "lcc.frozen"))
      continue;
    // nanoGPT/HF: matrices decay, biases and norm weights (rank < 2) do not.
    bool decay = vjp::tensorType(gradFn.getArgument(i)).getRank() >= 2;
    if (gradFn.getArgAttr(i, "lcc.no_decay"))
      decay = false;
    if (gradFn.getArgAttr(i, "lcc.decay"))
      decay = true;
    trainable.push_back({i, name, decay});
  }
  auto gradResults = llvm::count_if(llvm::seq(gradFn.getNumResults()), [&](unsigned i) {
    return bool(gradFn.getResultAttr(i, "lcc.grad_of"));
  });
  if (pipe ? size_t(gradResults) != trainable.size()
           : gradFn.getNumResults() != trainable.size() + 1)
    return gradFn.emitError() << "lcc-build-train-step: @" << gradName << " returns "
                              << gradFn.getNumResults() << " values; expected the loss and "
                              << trainable.size() << " gradients (one per trainable parameter)";
  // Stages before the last see the loss's type only in lcc.pipeline.
  auto lossType = llvm::dyn_cast<RankedTensorType>(pipe ? pipe->loss : gradFn.getResultTypes()[0]);
  if (!lossType || lossType.getRank() != 0)
    return gradFn.emitError() << "lcc-build-train-step: @" << gradName
                              << " must return a rank-0 loss first";
  // Scalars (lr, norm, bias corrections) are computed in the loss's type.
  Type ct = lossType.getElementType();
  if (scaled && !seedArg && lastStage)
    return gradFn.emitError() << "lcc-build-train-step: loss-scale=dynamic needs the backward's "
                                 "seed as an argument of @"
                              << gradName << " (lcc-autodiff{seed-arg=true})";

  OpBuilder b(module.getContext());
  Builder &attrs = b;
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  for (unsigned i : params) {
    argTypes.push_back(gradFn.getArgument(i).getType());
    argAttrs.push_back(gradFn.getArgAttrDict(i) ? gradFn.getArgAttrDict(i)
                                                : attrs.getDictionaryAttr({}));
  }
  // Optimizer state: one value per (kind, trainable parameter), kinds outer.
  SmallVector<StringRef> kinds;
  if (adamw)
    kinds = {"m", "v"};
  else if (withMomentum)
    kinds = {"momentum"};
  // State is split like its parameter (tensor parallelism's lcc.shard).
  for (StringRef kind : kinds)
    for (const Param &p : trainable) {
      argTypes.push_back(gradFn.getArgument(p.arg).getType());
      NamedAttrList state;
      state.set("lcc.opt_state", attrs.getStringAttr(kind + ":" + p.name.getValue()));
      if (Attribute split = gradFn.getArgAttr(p.arg, "lcc.shard"))
        state.set("lcc.shard", split);
      argAttrs.push_back(state.getDictionary(module.getContext()));
    }
  // Loss-scaling state (GradScaler's): all zero at the start, so the runtime
  // initializes it like the optimizer state it sits with.
  unsigned ampBase = argTypes.size();
  if (scaled)
    for (StringRef what : {"log2_scale", "good_steps", "skipped"}) {
      argTypes.push_back(RankedTensorType::get({}, ct));
      argAttrs.push_back(attrs.getDictionaryAttr(attrs.getNamedAttr(
          "lcc.opt_state", attrs.getStringAttr("amp:" + what.str()))));
    }
  unsigned stepArg = argTypes.size();
  argTypes.push_back(RankedTensorType::get({}, attrs.getI64Type()));
  argAttrs.push_back(
      attrs.getDictionaryAttr(attrs.getNamedAttr("lcc.step", attrs.getUnitAttr())));
  unsigned firstInput = argTypes.size();
  for (unsigned i : inputs) {
    auto type = vjp::tensorType(gradFn.getArgument(i));
    if (accum > 1) {
      SmallVector<int64_t> shape{accum};
      llvm::append_range(shape, type.getShape());
      type = RankedTensorType::get(shape, type.getElementType());
    }
    argTypes.push_back(type);
    argAttrs.push_back(gradFn.getArgAttrDict(i) ? gradFn.getArgAttrDict(i)
                                                : attrs.getDictionaryAttr({}));
  }

  b.setInsertionPointAfter(gradFn);
  auto step = func::FuncOp::create(b, gradFn.getLoc(), "train_step",
                                   b.getFunctionType(argTypes, {}));
  step.setPublic();
  Block *block = step.addEntryBlock();
  b.setInsertionPointToStart(block);
  Location loc = gradFn.getLoc();

  // Loss and gradients, summed over the micro-batches.
  Block &gradBody = gradFn.getBody().front();
  // The loss scale, loss-scale-init * 2^log2_scale: powers of two keep
  // scaling and unscaling exact.
  Value lossScaleNow;
  if (scaled)
    lossScaleNow = vjp::scale(
        b, loc,
        lcc::PowOp::create(b, loc, RankedTensorType::get({}, ct), constant(b, loc, ct, 2.0),
                           block->getArgument(ampBase)),
        lossScaleInit);
  Value seed;
  if (seedArg)
    seed = scaled ? asElement(b, loc, lossScaleNow, lossType.getElementType())
                  : constant(b, loc, lossType.getElementType(), 1.0);
  // The body of @F_grad on one micro-batch (`input(n)` gives input n of it),
  // cloned at b's insertion point; returns the loss and the gradients.
  auto microBatch = [&](llvm::function_ref<Value(unsigned)> input) {
    IRMapping map;
    for (auto [n, i] : llvm::enumerate(params))
      map.map(gradFn.getArgument(i), block->getArgument(n));
    for (auto [n, i] : llvm::enumerate(inputs))
      map.map(gradFn.getArgument(i), input(n));
    if (seedArg)
      map.map(gradFn.getArgument(*seedArg), seed);
    for (Operation &op : gradBody.without_terminator())
      b.clone(op, map);
    auto ret = llvm::cast<func::ReturnOp>(gradBody.getTerminator());
    return llvm::map_to_vector(ret.getOperands(), [&](Value v) { return map.lookup(v); });
  };
  // Row k of input n, for a micro-batch at a place known at compile time.
  auto rowOf = [&](unsigned n, int64_t k) {
    Value in = block->getArgument(firstInput + n);
    auto full = vjp::tensorType(in);
    in = vjp::sliceAxis(b, loc, in, 0, k, k + 1);
    return vjp::reshape(b, loc, in, full.getShape().drop_front());
  };
  // A parameter's own ops here (the optimizer's, its gradient's sum over
  // micro-batches when unrolled or peeled) are named after it, so that a repeated layer's are found
  // like its forward and backward (lcc-outline-layers: "h.3.attn.c_attn.weight"
  // is of layer h.3).
  auto at = [&](unsigned n) { return NameLoc::get(trainable[n].name, loc); };
  Value lossSum;
  SmallVector<Value> gradSum(trainable.size());
  if (pipe) {
    std::optional<lcc::pipeline::ScheduleKind> kind =
        lcc::pipeline::parseScheduleKind(pipelineSchedule);
    if (!kind)
      return module.emitError() << "lcc-build-train-step: pipeline-schedule '" << pipelineSchedule
                                << "' is not one of gpipe, 1f1b, interleaved, zb-h1";
    llvm::Expected<lcc::pipeline::Schedule> order =
        pipelineOrder.empty()
            ? lcc::pipeline::buildSchedule(*kind, pipe->ranks, accum, pipe->virtualStages)
            : lcc::pipeline::parseSchedule(pipelineOrder, accum);
    if (!order)
      return module.emitError() << "lcc-build-train-step: " << llvm::toString(order.takeError());
    IRMapping fixed;
    for (auto [n, i] : llvm::enumerate(params))
      fixed.map(gradFn.getArgument(i), block->getArgument(n));
    if (seedArg)
      fixed.map(gradFn.getArgument(*seedArg), seed);
    FailureOr<lcc::pipeline::StageResults> stage = lcc::pipeline::buildStageMicroBatches(
        b, loc, gradFn, *order, "pp", fixed, [&](unsigned arg, int64_t k) -> Value {
          unsigned n = unsigned(llvm::find(inputs, arg) - inputs.begin());
          return accum > 1 ? rowOf(n, k) : block->getArgument(firstInput + n);
        });
    if (failed(stage))
      return failure();
    lossSum = lastStage ? stage->lossSum : constant(b, loc, lossType.getElementType(), 0.0);
    gradSum = stage->gradSums;
  } else if (accum == 1) {
    SmallVector<Value> out =
        microBatch([&](unsigned n) { return block->getArgument(firstInput + n); });
    lossSum = out[0];
    for (unsigned n = 0; n < trainable.size(); ++n)
      gradSum[n] = out[n + 1];
  } else if (unrollAccum) {
    // K clones, for comparison with the loop (same order of additions).
    for (int64_t k = 0; k < accum; ++k) {
      SmallVector<Value> out = microBatch([&](unsigned n) { return rowOf(n, k); });
      lossSum = k ? vjp::add(b, loc, lossSum, out[0]) : out[0];
      for (unsigned n = 0; n < trainable.size(); ++n)
        gradSum[n] = k ? vjp::add(b, at(n), gradSum[n], out[n + 1]) : out[n + 1];
    }
  } else {
    // One copy of the body in a loop over the micro-batches (compile time
    // does not grow with K). The sums start at zero, and 0 + x == x, so they
    // are bitwise those of the unrolled form. Micro-batch k is a view of
    // row k of each input.
    SmallVector<Value> init = {constant(b, loc, lossType.getElementType(), 0.0)};
    for (Type t : gradFn.getResultTypes().drop_front())
      init.push_back(vjp::fill(b, loc, t, 0.0));
    // With the last micro-batch after the loop, what follows the gradients
    // (a sharded step's bucket collectives) overlaps its backward.
    int64_t looped = peelLast ? accum - 1 : accum;
    Value lo = arith::ConstantIndexOp::create(b, loc, 0);
    Value hi = arith::ConstantIndexOp::create(b, loc, looped);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    auto loop = scf::ForOp::create(b, loc, lo, hi, one, init);
    loop->setAttr(lcc::kMicroBatchesAttr, attrs.getUnitAttr());
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value k = loop.getInductionVar();
    SmallVector<Value> out = microBatch([&](unsigned n) -> Value {
      Value in = block->getArgument(firstInput + n);
      auto full = vjp::tensorType(in);
      SmallVector<OpFoldResult> offsets(full.getRank(), b.getIndexAttr(0)),
          sizes = getAsIndexOpFoldResult(b.getContext(), full.getShape()),
          strides(full.getRank(), b.getIndexAttr(1));
      offsets[0] = k;
      sizes[0] = b.getIndexAttr(1);
      auto row = RankedTensorType::get(full.getShape().drop_front(), full.getElementType());
      return tensor::ExtractSliceOp::create(b, loc, row, in, offsets, sizes, strides);
    });
    SmallVector<Value> next;
    // Not named after the parameters: each sum must stay a generic of the
    // loop's body, which lcc-accumulate-in-place makes update its carried
    // buffer (a call's result is never the carried value's buffer).
    for (auto [acc, v] : llvm::zip(loop.getRegionIterArgs(), out))
      next.push_back(vjp::add(b, loc, acc, v));
    scf::YieldOp::create(b, loc, next);
    b.setInsertionPointAfter(loop);
    lossSum = loop.getResult(0);
    for (unsigned n = 0; n < trainable.size(); ++n)
      gradSum[n] = loop.getResult(n + 1);
    if (peelLast) {
      SmallVector<Value> last = microBatch([&](unsigned n) { return rowOf(n, accum - 1); });
      lossSum = vjp::add(b, loc, lossSum, last[0]);
      for (unsigned n = 0; n < trainable.size(); ++n)
        gradSum[n] = vjp::add(b, at(n), gradSum[n], last[n + 1]);
    }
  }
  Value loss = lossSum;
  SmallVector<Value> grads = gradSum;
  if (accum > 1)
    loss = vjp::scale(b, loc, lossSum, 1.0 / double(accum));
  // Every stage reports the last one's loss.
  if (pipe)
    loss = lcc::BroadcastOp::create(b, loc, loss.getType(), loss, "pp", pipe->ranks - 1);
  if (scaled) {
    // Unscaled in f32 (the gradients are f32 whatever the forward's
    // precision), with the micro-batch mean in the same multiply.
    Value inverse = vjp::div(b, loc, constant(b, loc, ct, 1.0 / double(accum)), lossScaleNow);
    for (unsigned n = 0; n < grads.size(); ++n)
      grads[n] = vjp::mul(b, at(n), grads[n],
                          asElement(b, at(n), inverse, vjp::tensorType(grads[n]).getElementType()));
  } else if (accum > 1) {
    for (unsigned n = 0; n < grads.size(); ++n)
      grads[n] = vjp::scale(b, at(n), grads[n], 1.0 / double(accum));
  }
  // A parameter several stages hold gets every stage's share of its
  // gradient; all of them then take the same step.
  auto tiedStages = [&](const Param &p) {
    auto tied = gradFn.getArgAttrOfType<DenseI64ArrayAttr>(p.arg, "lcc.pipeline_tied");
    return tied ? tied.asArrayRef() : ArrayRef<int64_t>();
  };
  for (auto [n, p] : llvm::enumerate(trainable))
    if (ArrayRef<int64_t> tied = tiedStages(p); !tied.empty())
      grads[n] = lcc::AllReduceOp::create(b, at(n), grads[n].getType(), grads[n],
                                          lcc::pipeline::tiedGroupName(tied, pipe->ranks), "sum");
  // Shares of a gradient over a group (lcc.partial_grad): summed once per
  // step, after accumulation, all of a group's in one all-reduce of their
  // concatenation (one message instead of one per parameter).
  llvm::MapVector<StringRef, SmallVector<unsigned>> partial;
  for (auto [n, p] : llvm::enumerate(trainable))
    if (auto group = gradFn.getArgAttrOfType<StringAttr>(p.arg, lcc::kPartialGradAttr))
      partial[group.getValue()].push_back(unsigned(n));
  for (auto &[group, members] : partial) {
    SmallVector<Value> shares = llvm::map_to_vector(members, [&](unsigned n) { return grads[n]; });
    for (auto [n, sum] :
         llvm::zip(members, lcc::shard::allReduceTogether(b, loc, shares, group, "sum")))
      grads[n] = sum;
  }
  // Where gradients meet the optimizer: the sharding passes all-reduce or
  // reduce-scatter them here (lcc.gradient folds away otherwise).
  for (auto [n, p] : llvm::enumerate(trainable))
    grads[n] = lcc::GradientOp::create(b, at(n), grads[n].getType(), grads[n], p.name);

  // Global norm (pre-clip) and clip_grad_norm_'s scale min(1, clip/(norm+1e-6)).
  // A parameter split over a tensor-parallel group (lcc-shard-tp) contributes
  // the sum over its parts; every rank then has the same norm.
  Value sumSq = constant(b, loc, ct, 0.0);
  for (auto [n, p] : llvm::enumerate(trainable)) {
    if (ArrayRef<int64_t> tied = tiedStages(p); !tied.empty() && tied.front() != pipe->rank)
      continue; // counted by the first stage holding it
    Value sq = sumOfSquares(b, at(n), grads[n], ct);
    if (auto split = gradFn.getArgAttrOfType<DictionaryAttr>(p.arg, "lcc.shard"))
      if (auto group = split.getAs<StringAttr>("group"))
        sq = lcc::AllReduceOp::create(b, at(n), sq.getType(), sq, group, "sum");
    sumSq = vjp::add(b, at(n), sumSq, sq);
  }
  if (pipe)
    sumSq = lcc::AllReduceOp::create(b, loc, sumSq.getType(), sumSq, "pp", "sum");
  Value norm = lcc::SqrtOp::create(b, loc, sumSq.getType(), sumSq);
  // Loss scaling: the step is taken only if every gradient is finite. An inf
  // or NaN anywhere makes the sum of squares inf or NaN, and both fail
  // "< +inf", so the norm doubles as the overflow check (one reduction, and
  // one all_reduce under sharding, which every rank then agrees on).
  Value finite;
  if (scaled)
    finite = vjp::cmp(b, loc, "lt", sumSq,
                      constant(b, loc, ct, std::numeric_limits<double>::infinity()));
  if (clip > 0) {
    Value coef = vjp::div(b, loc, constant(b, loc, ct, clip),
                          vjp::add(b, loc, norm, constant(b, loc, ct, 1e-6)));
    coef = lcc::MinimumOp::create(b, loc, coef.getType(), coef, constant(b, loc, ct, 1.0));
    for (unsigned n = 0; n < grads.size(); ++n)
      grads[n] = vjp::mul(b, at(n), grads[n],
                          asElement(b, at(n), coef, vjp::tensorType(grads[n]).getElementType()));
  }

  // Learning rate from it = step - 1 (nanoGPT's 0-based iteration).
  Value t = asElement(b, loc, block->getArgument(stepArg), ct);
  Value it = vjp::sub(b, loc, t, constant(b, loc, ct, 1.0));
  // The optimizer's own count (bias corrections) leaves out skipped steps.
  Value tOpt = scaled ? vjp::sub(b, loc, t, block->getArgument(ampBase + 2)) : t;
  Value lrNow = constant(b, loc, ct, lr);
  if (cosine) {
    double span = double(decaySteps - warmup);
    Value r = vjp::scale(b, loc, vjp::sub(b, loc, it, constant(b, loc, ct, double(warmup))),
                         1.0 / span);
    r = lcc::MaximumOp::create(b, loc, r.getType(), r, constant(b, loc, ct, 0.0));
    r = lcc::MinimumOp::create(b, loc, r.getType(), r, constant(b, loc, ct, 1.0));
    Value coeff = vjp::scale(
        b, loc, vjp::add(b, loc, cosPi(b, loc, r, ct), constant(b, loc, ct, 1.0)), 0.5);
    lrNow = vjp::add(b, loc, constant(b, loc, ct, lrMin), vjp::scale(b, loc, coeff, lr - lrMin));
  }
  if (warmup > 0) {
    Value warm = vjp::scale(b, loc, vjp::add(b, loc, it, constant(b, loc, ct, 1.0)),
                            lr / double(warmup + 1));
    Value inWarmup = vjp::cmp(b, loc, "lt", it, constant(b, loc, ct, double(warmup)));
    lrNow = vjp::select(b, loc, inWarmup, warm, lrNow);
  }

  // Per-parameter updates.
  SmallVector<Value> newParams, newState[2];
  Value stepSize, bc2Sqrt;
  if (adamw) {
    // Bias corrections 1 - beta^t, with t the 1-based step.
    Value bc1 = vjp::sub(b, loc, constant(b, loc, ct, 1.0),
                         lcc::PowOp::create(b, loc, t.getType(),
                                            constant(b, loc, ct, beta1), tOpt));
    Value bc2 = vjp::sub(b, loc, constant(b, loc, ct, 1.0),
                         lcc::PowOp::create(b, loc, t.getType(),
                                            constant(b, loc, ct, beta2), tOpt));
    stepSize = vjp::div(b, loc, lrNow, bc1);
    bc2Sqrt = lcc::SqrtOp::create(b, loc, bc2.getType(), bc2);
  }
  unsigned stateBase = params.size();
  for (auto [n, p] : llvm::enumerate(trainable)) {
    unsigned pos = llvm::find(params, p.arg) - params.begin();
    Value param = block->getArgument(pos);
    Location pl = at(n);
    Type et = vjp::tensorType(param).getElementType();
    Value g = grads[n];
    Value lrE = asElement(b, pl, lrNow, et);
    double pwd = p.decay ? wd : 0.0;
    if (adamw) {
      Value m = block->getArgument(stateBase + n);
      Value v = block->getArgument(stateBase + trainable.size() + n);
      m = vjp::add(b, pl, vjp::scale(b, pl, m, beta1), vjp::scale(b, pl, g, 1.0 - beta1));
      v = vjp::add(b, pl, vjp::scale(b, pl, v, beta2),
                   vjp::scale(b, pl, vjp::mul(b, pl, g, g), 1.0 - beta2));
      // Decoupled decay first, as torch.optim.AdamW: p *= 1 - lr * wd.
      if (pwd != 0.0)
        param = vjp::mul(b, pl, param,
                         vjp::sub(b, pl, constant(b, pl, et, 1.0), vjp::scale(b, pl, lrE, pwd)));
      Value vs = lcc::SqrtOp::create(b, pl, v.getType(), v);
      Value denom = vjp::add(b, pl, vjp::div(b, pl, vs, asElement(b, pl, bc2Sqrt, et)),
                             constant(b, pl, et, eps));
      Value upd = vjp::mul(b, pl, vjp::div(b, pl, m, denom), asElement(b, pl, stepSize, et));
      newParams.push_back(vjp::sub(b, pl, param, upd));
      newState[0].push_back(m);
      newState[1].push_back(v);
    } else {
      // torch.optim.SGD: weight decay is added to the gradient; the buffer
      // starts at zero so its first update is the gradient itself.
      if (pwd != 0.0)
        g = vjp::add(b, pl, g, vjp::scale(b, pl, param, pwd));
      if (withMomentum) {
        Value buf = block->getArgument(stateBase + n);
        buf = vjp::add(b, pl, vjp::scale(b, pl, buf, momentum), g);
        newState[0].push_back(buf);
        g = nesterov ? vjp::add(b, pl, g, vjp::scale(b, pl, buf, momentum)) : buf;
      }
      newParams.push_back(vjp::sub(b, pl, param, vjp::mul(b, pl, g, lrE)));
    }
    // A skipped step (loss scaling, overflow) returns the parameter and its
    // state as they came in. Next to the update, so that one kernel (and one
    // layer function, lcc-outline-layers) does both.
    if (scaled) {
      newParams[n] = vjp::select(b, pl, finite, newParams[n], block->getArgument(pos));
      for (unsigned s = 0; s < kinds.size(); ++s)
        newState[s][n] = vjp::select(b, pl, finite, newState[s][n],
                                     block->getArgument(stateBase + s * trainable.size() + n));
    }
  }

  // The loss scale halves on overflow and doubles after a window of finite
  // steps (torch.amp.GradScaler's update).
  SmallVector<Value> newAmp;
  if (scaled) {
    Value log2Scale = block->getArgument(ampBase), good = block->getArgument(ampBase + 1),
          skipped = block->getArgument(ampBase + 2);
    Value one = constant(b, loc, ct, 1.0), zero = constant(b, loc, ct, 0.0);
    Value goodNext = vjp::add(b, loc, good, one);
    Value grow = vjp::cmp(b, loc, "ge", goodNext, constant(b, loc, ct, double(lossScaleWindow)));
    newAmp.push_back(vjp::select(
        b, loc, finite, vjp::select(b, loc, grow, vjp::add(b, loc, log2Scale, one), log2Scale),
        vjp::sub(b, loc, log2Scale, one)));
    newAmp.push_back(
        vjp::select(b, loc, finite, vjp::select(b, loc, grow, zero, goodNext), zero));
    newAmp.push_back(vjp::add(b, loc, skipped, vjp::select(b, loc, finite, zero, one)));
  }

  SmallVector<Value> results;
  SmallVector<DictionaryAttr> resultAttrs;
  for (auto [n, p] : llvm::enumerate(trainable)) {
    results.push_back(newParams[n]);
    resultAttrs.push_back(attrs.getDictionaryAttr(attrs.getNamedAttr("lcc.param", p.name)));
  }
  for (unsigned s = 0; s < kinds.size(); ++s)
    for (unsigned n = 0; n < trainable.size(); ++n) {
      results.push_back(newState[s][n]);
      resultAttrs.push_back(argAttrs[stateBase + s * trainable.size() + n]);
    }
  for (auto [k, v] : llvm::enumerate(newAmp)) {
    results.push_back(v);
    resultAttrs.push_back(argAttrs[ampBase + k]);
  }
  auto output = [&](Value v, StringRef what) {
    results.push_back(v);
    resultAttrs.push_back(attrs.getDictionaryAttr(
        attrs.getNamedAttr("lcc.output", attrs.getStringAttr(what))));
  };
  output(loss, "loss");
  output(norm, "grad_norm");
  output(lrNow, "lr");
  if (scaled)
    output(lossScaleNow, "loss_scale");
  func::ReturnOp::create(b, loc, results);
  step.setType(b.getFunctionType(argTypes, ValueRange(results).getTypes()));
  step.setAllArgAttrs(argAttrs);
  step.setAllResultAttrs(resultAttrs);
  // A stage's model function becomes its part of the evaluation.
  if (pipe)
    if (auto fwd = module.lookupSymbol<func::FuncOp>(function))
      return lcc::pipeline::makeStageEvaluation(fwd, "pp");
  return success();
}

} // namespace
