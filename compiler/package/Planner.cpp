//===- Planner.cpp - --shard=auto: dp, ZeRO, tp, pp, recompute, SP --------===//
#include "compiler/package/Planner.h"

#include "compiler/package/RecomputeChoice.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace lcc::planner {

namespace {

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t k = 1; k <= n; ++k)
    if (n % k == 0)
      out.push_back(k);
  return out;
}

/// A candidate's costs at micro-batch b, split into one layer and the rest
/// (embedding, head, loss) by the one- and two-layer probes.
struct Fitted {
  // Seconds per micro-batch.
  double layerForward = 0, layerBackward = 0, baseForward = 0, baseBackward = 0;
  // Seconds per step (the optimizer, unsharded).
  double layerOptimizer = 0, baseOptimizer = 0;
  double layerFlops = 0, baseFlops = 0, layerTp = 0, baseTp = 0, stream = 0;
  // Bytes of one copy: the parameters of a tp rank (what dp reduces) and
  // the parameters and state a rank holds under the candidate's sharding.
  double layerParams = 0, baseParams = 0, layerHeld = 0, baseHeld = 0;
  // arena(L, b) = arena0 + b arenaSample + L arenaLayer + L b arenaLayerSample:
  // what grows with neither the batch nor the layers, with the batch outside
  // the layers, with the layers alone (their gradients, live once per step)
  // and with both (activations, held once per micro-batch in flight); plus
  // what sharding adds, shardBase + L shardLayer.
  double arena0 = 0, arenaSample = 0, arenaLayer = 0, arenaLayerSample = 0;
  double shardBase = 0, shardLayer = 0, io = 0;
  // A layer's activations the backward reads, per sample: a pipeline holds
  // them once more for each further micro-batch in flight (the peak of a
  // step without one may not show them, hidden under the gradients').
  double keptLayerSample = 0;
};

/// The layer counts of the memory probes (the time probes use 1 and 2:
/// an op's cost does not depend on its neighbours).
constexpr int64_t kMemoryLayers[2] = {2, 4};

/// Measures each probe once.
class Probes {
public:
  explicit Probes(MeasureFn measure) : measure_(measure) {}

  /// The first error any probe gave (for "nothing can be built").
  const std::string &firstError() const { return firstError_; }

  const Measurement *get(const ProbeKey &key, int64_t layers, int64_t micro, bool plan) {
    auto at = std::make_tuple(key, layers, micro);
    auto it = cache_.find(at);
    if (it != cache_.end() && (!it->second || it->second->planned || !plan))
      return it->second ? &*it->second : nullptr;
    auto m = measure_(key, layers, micro, plan);
    if (!m) {
      std::string message = llvm::toString(m.takeError());
      if (firstError_.empty())
        firstError_ = message;
      cache_[at] = std::nullopt;
      return nullptr;
    }
    m->planned = plan;
    cache_[at] = *m;
    return &*cache_[at];
  }

  /// The costs of (t, SP, recompute) = `key` under `shard` on `dp`
  /// replicas at micro-batch `micro`; nullopt when a probe failed.
  std::optional<Fitted> fit(ProbeKey key, ShardMode shard, int64_t dp, int64_t micro) {
    key.shard = ShardMode::None, key.dp = 1;
    // The optimizer's time from a probe without recomputation: CSE may
    // merge copies inlined into @train_step. Sharding's memory from one
    // without recomputation or SP either: it shards parameters and state.
    ProbeKey plain{key.tp, false, RecomputeMode::None, ShardMode::None, 1};
    ProbeKey plainOpt = key;
    plainOpt.recompute = RecomputeMode::None;
    ProbeKey sharded{key.tp, false, RecomputeMode::None, shard, dp};
    ProbeKey two{key.tp, false, RecomputeMode::None, shard, std::min<int64_t>(dp, 2)};
    const Measurement *one = get(key, 1, micro, false), *both = get(key, 2, micro, false);
    const Measurement *optOne = get(plainOpt, 1, micro, false),
                      *optTwo = get(plainOpt, 2, micro, false);
    // Memory from probes of lo and hi layers: at one or two layers the
    // plan's peak is the head's temporaries as much as the layers', so a
    // layer's bytes are measured where layers already dominate.
    const int64_t lo = kMemoryLayers[0], hi = kMemoryLayers[1];
    const double span = double(hi - lo);
    const Measurement *m11 = get(key, lo, 1, true), *m21 = get(key, hi, 1, true),
                      *m12 = get(key, lo, 2, true), *m22 = get(key, hi, 2, true);
    const Measurement *held1 = get(sharded, lo, 1, false), *held2 = get(sharded, hi, 1, false);
    const Measurement *z1 = get(two, lo, 1, true), *z2 = get(two, hi, 1, true);
    const Measurement *r1 = get(plain, lo, 1, true), *r2 = get(plain, hi, 1, true);
    for (const Measurement *m :
         {one, both, optOne, optTwo, m11, m21, m12, m22, held1, held2, z1, z2, r1, r2})
      if (!m)
        return std::nullopt;
    Fitted f;
    f.layerForward = both->forwardSeconds - one->forwardSeconds;
    f.baseForward = one->forwardSeconds - f.layerForward;
    double layerBoth = both->forwardGradSeconds - one->forwardGradSeconds;
    f.layerBackward = layerBoth - f.layerForward;
    f.baseBackward = one->forwardGradSeconds - layerBoth - f.baseForward;
    auto optimizer = [](const Measurement *m) { return m->stepSeconds - m->forwardGradSeconds; };
    f.layerOptimizer = optimizer(optTwo) - optimizer(optOne);
    f.baseOptimizer = optimizer(optOne) - f.layerOptimizer;
    f.layerFlops = both->forwardFlops - one->forwardFlops;
    f.baseFlops = one->forwardFlops - f.layerFlops;
    f.layerTp = both->tpBytes - one->tpBytes;
    f.baseTp = one->tpBytes - f.layerTp;
    f.stream = one->streamBytes;
    f.layerParams = double(m21->params - m11->params) / span;
    f.baseParams = double(m11->params) - double(lo) * f.layerParams;
    f.layerHeld = double(held2->params + held2->state - held1->params - held1->state) / span;
    f.baseHeld = double(held1->params + held1->state) - double(lo) * f.layerHeld;
    f.arenaLayerSample = double((m22->arena - m12->arena) - (m21->arena - m11->arena)) / span;
    f.arenaLayer = double(m21->arena - m11->arena) / span - f.arenaLayerSample;
    f.arenaSample = double(m12->arena - m11->arena) - double(lo) * f.arenaLayerSample;
    f.arena0 =
        double(m11->arena) - f.arenaSample - double(lo) * (f.arenaLayer + f.arenaLayerSample);
    f.shardLayer = double((z2->arena - r2->arena) - (z1->arena - r1->arena)) / span;
    f.shardBase = double(z1->arena - r1->arena) - double(lo) * f.shardLayer;
    f.keptLayerSample = (m21->keptBytes - m11->keptBytes) / span;
    f.io = double(m11->io) + double(micro - 1) * double(m12->io - m11->io);
    return f;
  }

private:
  MeasureFn measure_;
  std::map<std::tuple<ProbeKey, int64_t, int64_t>, std::optional<Measurement>> cache_;
  std::string firstError_;
};

/// The schedule simulator, played once per shape: its times are sums and
/// maxima of the costs, so scaling every cost scales them. Keyed by the
/// backward's and the transfer's ratio to the forward (to 1e-4).
class Pipelines {
public:
  llvm::Expected<PipelineTime> time(pipeline::ScheduleKind kind, int64_t p, int64_t m, int64_t v,
                                    double forward, double backward, double transfer) {
    if (!(forward > 0))
      return pipelineTime(kind, p, m, v, forward, backward, transfer);
    long long b = std::llround(backward / forward * 1e4),
              x = std::llround(transfer / forward * 1e4);
    auto key = std::make_tuple(int(kind), p, m, v, b, x);
    auto it = cache_.find(key);
    if (it == cache_.end()) {
      auto pt = pipelineTime(kind, p, m, v, 1.0, double(b) * 1e-4, double(x) * 1e-4);
      if (!pt)
        return pt.takeError();
      it = cache_.emplace(key, *pt).first;
    }
    PipelineTime out = it->second;
    out.makespan *= forward;
    return out;
  }

private:
  std::map<std::tuple<int, int64_t, int64_t, int64_t, long long, long long>, PipelineTime> cache_;
};

bool shardsState(ShardMode m) {
  return m == ShardMode::Zero1 || m == ShardMode::Zero2 || m == ShardMode::Zero3;
}

/// Fills `plan`'s predictions from `f`; false when the choice cannot run.
llvm::Error predict(const Problem &problem, const Fitted &f, Pipelines &pipelines, Plan &plan) {
  const Cluster &c = problem.cluster;
  int64_t t = plan.tp, p = plan.pp, d = plan.dp, b = plan.micro, m = plan.microbatches;
  int64_t stageLayers = (problem.layers + p - 1) / p;
  // The busiest stage: its layers and, conservatively, all of the rest.
  double forward = double(stageLayers) * f.layerForward + f.baseForward;
  double backward = double(stageLayers) * f.layerBackward + f.baseBackward;
  // Ranks are numbered tp fastest, then dp, then pp (Megatron's order): a
  // stage's neighbour is t d ranks away, a dp group's members t apart.
  Link ppLink = groupLink(c, 2, t * d), dpLink = groupLink(c, d, t);
  double heldLayers = double(stageLayers);
  if (p == 1) {
    plan.computeSeconds = double(m) * (forward + backward);
    plan.bubble = 0;
  } else {
    double v = double(plan.virtualStages);
    double transfer = collectiveSeconds(Collective::SendRecv, 2, f.stream, ppLink);
    auto pt = pipelines.time(plan.schedule, p, m, plan.virtualStages, forward / v, backward / v,
                             transfer);
    if (!pt)
      return pt.takeError();
    plan.computeSeconds = pt->makespan;
    plan.bubble = pt->bubble;
    heldLayers = double(pt->inFlight) * double(stageLayers) / v;
  }
  double params = double(stageLayers) * f.layerParams + f.baseParams;
  double held = double(stageLayers) * f.layerHeld + f.baseHeld;
  double optimizer = double(stageLayers) * f.layerOptimizer + f.baseOptimizer;
  if (shardsState(plan.shard))
    optimizer /= double(d);
  // Data parallelism: the gradients' all-reduce once per step (ZeRO-1/2's
  // reduce-scatter and all-gather send the same), ZeRO-3 also gathers the
  // parameters for each micro-batch's forward and backward. Not overlapped
  // with the computation.
  double dpSeconds = 0, dpBytes = 0;
  if (d > 1) {
    double share = double(d - 1) / double(d) * params;
    dpSeconds = collectiveSeconds(Collective::AllReduce, d, params, dpLink);
    dpBytes = 2 * share;
    if (plan.shard == ShardMode::Zero3) {
      dpSeconds += 2 * double(m) * collectiveSeconds(Collective::AllGather, d, params, dpLink);
      dpBytes += 2 * double(m) * share;
    }
  }
  plan.commSeconds = dpSeconds;
  plan.forwardSeconds = forward;
  plan.backwardSeconds = backward;
  plan.optimizerSeconds = optimizer;
  plan.commBytes = dpBytes + double(m) * (double(stageLayers) * f.layerTp + f.baseTp) +
                   (p > 1 ? 2 * double(m) * f.stream : 0);
  plan.stepSeconds = plan.computeSeconds + optimizer + dpSeconds;
  double tokens = double(problem.globalBatch) * double(problem.seq);
  plan.tokensPerSecond = tokens / plan.stepSeconds;
  plan.modelFlops =
      3 * double(m) * double(d) * double(t) * (double(problem.layers) * f.layerFlops + f.baseFlops);
  plan.mfu = plan.modelFlops / (plan.stepSeconds * double(problem.world) * c.peakFlops);
  // Memory: the plan's lines for the stage's share, the activations of
  // every micro-batch stage in flight.
  double layers = double(stageLayers);
  double arena = f.arena0 + double(b) * (f.arenaSample + layers * f.arenaLayerSample) +
                 layers * (f.arenaLayer + f.shardLayer) + f.shardBase +
                 std::max(0.0, heldLayers - layers) * double(b) * f.keptLayerSample;
  plan.memoryBytes = 2 * held + std::max(0.0, arena) + f.io + c.runtimeBytes;
  double budget = problem.memBudget ? double(problem.memBudget) : c.memoryBytes;
  plan.fits = plan.memoryBytes <= budget;
  return llvm::Error::success();
}

/// Why `plan`'s shape cannot run on the problem, or empty.
std::string invalid(const Problem &problem, const Plan &plan) {
  if (problem.world % (plan.tp * plan.pp))
    return "tp x pp does not divide the world";
  if (plan.pp > problem.layers)
    return "more pipeline stages than layers";
  if (problem.globalBatch % (plan.dp * plan.micro))
    return "the global batch is not a multiple of dp x micro-batch";
  if ((plan.dp > 1) != (plan.shard != ShardMode::None))
    return "data parallelism needs a sharding mode, and one rank per replica none";
  if (plan.sequenceParallel && plan.tp == 1)
    return "sequence parallelism needs tp";
  if (plan.pp > 1 && plan.schedule == pipeline::ScheduleKind::Interleaved &&
      (plan.virtualStages < 2 || plan.microbatches % plan.pp ||
       plan.pp * plan.virtualStages > problem.layers))
    return "the interleaved schedule needs V >= 2 stages of layers per rank and M a multiple "
           "of pp";
  return "";
}

} // namespace

std::string describePlan(const Plan &plan) {
  std::string out = "tp" + std::to_string(plan.tp) + " pp" + std::to_string(plan.pp) + " dp" +
                    std::to_string(plan.dp);
  if (plan.shard != ShardMode::None)
    out += " " + std::string(modeName(plan.shard));
  out += " b" + std::to_string(plan.micro) + " M" + std::to_string(plan.microbatches);
  if (plan.pp > 1) {
    out += " " + pipeline::scheduleName(plan.schedule).str();
    if (plan.virtualStages > 1)
      out += "(V=" + std::to_string(plan.virtualStages) + ")";
  }
  if (plan.recompute != RecomputeMode::None)
    out += " " + std::string(modeName(plan.recompute));
  if (plan.sequenceParallel)
    out += " sp";
  return out;
}

llvm::Error evaluatePlan(const Problem &problem, MeasureFn measure, Plan &plan) {
  plan.dp = problem.world / std::max<int64_t>(1, plan.tp * plan.pp);
  plan.microbatches = problem.globalBatch / std::max<int64_t>(1, plan.dp * plan.micro);
  if (std::string why = invalid(problem, plan); !why.empty())
    return fail(describePlan(plan) + ": " + why);
  Probes probes(measure);
  auto f =
      probes.fit({plan.tp, plan.sequenceParallel, plan.recompute}, plan.shard, plan.dp, plan.micro);
  if (!f)
    return fail(describePlan(plan) + ": " + probes.firstError());
  Pipelines pipelines;
  return predict(problem, *f, pipelines, plan);
}

llvm::Expected<std::vector<Plan>> searchPlans(const Problem &problem, MeasureFn measure) {
  using pipeline::ScheduleKind;
  Probes probes(measure);
  Pipelines pipelines;
  std::vector<Plan> plans;
  auto choices = [](int64_t fixed, std::vector<int64_t> all) {
    return fixed > 0 ? std::vector<int64_t>{fixed} : all;
  };
  for (int64_t t : choices(problem.tp, divisors(problem.world))) {
    if (problem.tp == 0 && t > problem.cluster.devicesPerNode)
      continue; // tensor parallelism stays within a node, as Megatron's
    for (int64_t p : choices(problem.pp, divisors(problem.world / t))) {
      if (problem.world % (t * p) || p > problem.layers)
        continue;
      int64_t d = problem.world / (t * p);
      if (problem.globalBatch % d)
        continue;
      std::vector<ShardMode> shards =
          d == 1 ? std::vector<ShardMode>{ShardMode::None}
                 : std::vector<ShardMode>{ShardMode::DP, ShardMode::Zero1, ShardMode::Zero2,
                                          ShardMode::Zero3};
      if (problem.shard)
        shards = {*problem.shard};
      std::vector<int64_t> micros;
      for (int64_t b : divisors(problem.globalBatch / d))
        if (b <= 32 || problem.micro)
          micros.push_back(b);
      for (int64_t b : choices(problem.micro, micros)) {
        std::vector<std::pair<ScheduleKind, int64_t>> schedules = {{ScheduleKind::OneFOneB, 1}};
        if (p > 1)
          schedules = {{ScheduleKind::OneFOneB, 1},
                       {ScheduleKind::ZeroBubbleH1, 1},
                       {ScheduleKind::Interleaved, 2},
                       {ScheduleKind::GPipe, 1}};
        if (problem.schedule && p > 1)
          llvm::erase_if(schedules, [&](auto &s) { return s.first != *problem.schedule; });
        std::vector<RecomputeMode> recomputes = {RecomputeMode::None, RecomputeMode::Selective,
                                                 RecomputeMode::Full};
        if (problem.recompute)
          recomputes = {*problem.recompute};
        std::vector<bool> sps = {false, true};
        if (problem.sequenceParallel)
          sps = {*problem.sequenceParallel};
        for (RecomputeMode r : recomputes)
          for (bool sp : sps)
            for (ShardMode shard : shards) {
              if (sp && t == 1)
                continue;
              auto f = probes.fit({t, sp, r}, shard, d, b);
              if (!f)
                continue;
              for (auto [kind, v] : schedules) {
                Plan plan;
                plan.tp = t, plan.pp = p, plan.dp = d, plan.shard = shard, plan.micro = b;
                plan.microbatches = problem.globalBatch / (d * b);
                plan.schedule = kind, plan.virtualStages = v, plan.recompute = r;
                plan.sequenceParallel = sp;
                if (!invalid(problem, plan).empty())
                  continue;
                if (llvm::Error e = predict(problem, *f, pipelines, plan)) {
                  llvm::consumeError(std::move(e));
                  continue;
                }
                plans.push_back(plan);
              }
            }
      }
    }
  }
  if (plans.empty())
    return fail("no way to run the model on " + std::to_string(problem.world) + " ranks" +
                (probes.firstError().empty() ? "" : ": " + probes.firstError()));
  std::sort(plans.begin(), plans.end(), [](const Plan &a, const Plan &b) {
    if (a.fits != b.fits)
      return a.fits;
    if (a.stepSeconds != b.stepSeconds)
      return a.stepSeconds < b.stepSeconds;
    if (a.memoryBytes != b.memoryBytes)
      return a.memoryBytes < b.memoryBytes;
    return describePlan(a) < describePlan(b);
  });
  return plans;
}

std::string planTable(const std::vector<Plan> &plans, size_t rows) {
  std::string out;
  llvm::raw_string_ostream os(out);
  size_t width = 4;
  for (size_t i = 0; i < plans.size() && i < rows; ++i)
    width = std::max(width, describePlan(plans[i]).size());
  os << "  #  " << llvm::left_justify("plan", width)
     << "     step   tokens/s    MFU  memory/rank   sent/rank  bubble\n";
  for (size_t i = 0; i < plans.size() && i < rows; ++i) {
    const Plan &p = plans[i];
    os << llvm::format("%3zu  ", i + 1) << llvm::left_justify(describePlan(p), width)
       << llvm::format(" %8.4g %10.4g %5.1f%% %12s %11s %6.1f%%", p.stepSeconds, p.tokensPerSecond,
                       100 * p.mfu, formatBytes(int64_t(p.memoryBytes)).c_str(),
                       formatBytes(int64_t(p.commBytes)).c_str(), 100 * p.bubble)
       << (p.fits ? "" : "  (over budget)") << "\n";
  }
  return out;
}

std::string planBreakdown(const Plan &plan) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::format("a micro-batch's forward %.4g s and backward %.4g s", plan.forwardSeconds,
                     plan.backwardSeconds)
     << (plan.pp > 1 ? " on the busiest stage" : "") << " x " << plan.microbatches
     << llvm::format(" = %.4g s of computation", plan.computeSeconds);
  if (plan.pp > 1)
    os << llvm::format(" (bubble %.1f%%)", 100 * plan.bubble);
  os << llvm::format(", the optimizer %.4g s, data-parallel communication %.4g s",
                     plan.optimizerSeconds, plan.commSeconds);
  return out;
}

} // namespace lcc::planner
