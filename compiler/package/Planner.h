//===- Planner.h - --shard=auto: dp, ZeRO, tp, pp, recompute, SP -*- C++ -*-===//
//
// The search behind `lcc --shard=auto` (docs/memory.md "The planner"). It
// enumerates every way to run a model on `world` ranks: tensor-parallel
// size t, pipeline size p, data-parallel size d = world / (t p), the ZeRO
// stage, the micro-batch size b and count M, the pipeline schedule and its
// virtual stages V, the recomputation and sequence parallelism; predicts
// each one's step time and per-rank memory; and ranks those that fit.
//
// Nothing here reads IR. What the compiler knows comes in as Measurements
// of small compiled probes (compiler/package/PlannerProbe.h): the model cut
// to one and two layers, which separate a layer from the rest.
// - Time: the cost model (CostModel.h) over the probe's ops at the
//   candidate's micro-batch, for its (t, SP, recompute).
// - Activations: the compiled plan's arenas at micro-batch 1 and 2 (what
//   grows with the batch and what does not), extrapolated to the stage's
//   layers and the micro-batches its schedule keeps in flight.
// - Model states: the step's own parameter and state buffers compiled for
//   the candidate's dp x tp ranks and ZeRO stage.
// - What sharding adds to the arenas (dp's gradient buckets, ZeRO-3's
//   gathered layer): the plan at dp = 2 against dp = 1, taken as the same
//   at any dp.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_COMPILER_PACKAGE_PLANNER_H
#define LCC_COMPILER_PACKAGE_PLANNER_H

#include "compiler/package/CostModel.h"
#include "passes/Modes.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lcc::planner {

/// The compiled settings a probe depends on: a tensor-parallel group's,
/// or (for the model states and the buffers sharding adds) dp x tp ranks.
struct ProbeKey {
  int64_t tp = 1;
  bool sequenceParallel = false;
  RecomputeMode recompute = RecomputeMode::None;
  ShardMode shard = ShardMode::None;
  int64_t dp = 1;
  bool operator<(const ProbeKey &o) const {
    return std::tie(tp, sequenceParallel, recompute, shard, dp) <
           std::tie(o.tp, o.sequenceParallel, o.recompute, o.shard, o.dp);
  }
};

/// One probe: the model with `layers` layers and micro-batch b, compiled
/// for tp x dp ranks. Seconds are the cost model's sum over the ops (tp
/// collectives included) of one micro-batch on one rank; bytes are the
/// compiled plan's lines.
struct Measurement {
  double forwardSeconds = 0;     ///< @forward
  double forwardGradSeconds = 0; ///< @forward_grad: forward, backward, recomputation
  double stepSeconds = 0;        ///< @train_step at accum 1: also the optimizer
  double forwardFlops = 0;       ///< of @forward, per rank (the model's FLOPs, for MFU)
  double tpBytes = 0;            ///< sent per rank by the tp collectives of @forward_grad
  double streamBytes = 0;        ///< the activation a pipeline stage sends on
  double keptBytes = 0;          ///< forward values of the layers the backward reads
  int64_t params = 0, state = 0; ///< per rank, one copy (the step's arguments)
  bool planned = false;          ///< whether arena and io were compiled
  int64_t arena = 0, io = 0;
};

/// Measures a probe; `plan` asks for the arenas too (a compile to the
/// memory plan, slower than the rest). An error rules out the key (a tp
/// that does not divide the heads).
using MeasureFn = llvm::function_ref<llvm::Expected<Measurement>(
    const ProbeKey &key, int64_t layers, int64_t micro, bool plan)>;

/// What the user asked for; a field set (tp > 0, ...) fixes that choice.
struct Problem {
  Cluster cluster;
  int64_t world = 1;
  int64_t layers = 1;      ///< of the whole model
  int64_t globalBatch = 1; ///< sequences per step
  int64_t seq = 1;         ///< tokens per sequence
  int64_t memBudget = 0;   ///< bytes per rank (0: the cluster's memory)
  int64_t tp = 0, pp = 0, micro = 0;
  std::optional<ShardMode> shard;
  std::optional<RecomputeMode> recompute;
  std::optional<bool> sequenceParallel;
  std::optional<pipeline::ScheduleKind> schedule;
};

/// One candidate and what the model predicts for it.
struct Plan {
  int64_t tp = 1, pp = 1, dp = 1;
  ShardMode shard = ShardMode::None;
  int64_t micro = 1, microbatches = 1; ///< b and M (accumulation without pp)
  pipeline::ScheduleKind schedule = pipeline::ScheduleKind::OneFOneB;
  int64_t virtualStages = 1;
  RecomputeMode recompute = RecomputeMode::None;
  bool sequenceParallel = false;

  double stepSeconds = 0, computeSeconds = 0, commSeconds = 0;
  /// A micro-batch on the busiest stage, and the optimizer once per step.
  double forwardSeconds = 0, backwardSeconds = 0, optimizerSeconds = 0;
  double tokensPerSecond = 0, mfu = 0, bubble = 0;
  double memoryBytes = 0; ///< per rank, the busiest
  double commBytes = 0;   ///< sent per rank per step
  double modelFlops = 0;  ///< per step, all ranks (3 x forward, no recomputation)
  bool fits = false;
};

/// "tp2 pp2 dp2 zero1 b4 M8 interleaved(V=2) selective sp": the flags' choice.
std::string describePlan(const Plan &plan);

/// Predicts `plan`'s time and memory (its choices set, the rest filled in).
llvm::Error evaluatePlan(const Problem &problem, MeasureFn measure, Plan &plan);

/// Every valid candidate, best first: those that fit the budget by
/// predicted step time (ties broken by memory, then the description, so the
/// order is deterministic), then those that do not. Errors when nothing
/// can be built at all.
llvm::Expected<std::vector<Plan>> searchPlans(const Problem &problem, MeasureFn measure);

/// The ranked table `lcc --shard=auto` prints: the first `rows` plans.
std::string planTable(const std::vector<Plan> &plans, size_t rows);
/// Where `plan`'s predicted step time goes, one line.
std::string planBreakdown(const Plan &plan);

} // namespace lcc::planner

#endif
