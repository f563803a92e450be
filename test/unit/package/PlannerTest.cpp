//===- PlannerTest.cpp - --shard=auto's search on a model made of numbers -===//
//
// compiler/package/Planner.h against a synthetic model whose probes are
// exact linear functions of layers, micro-batch, tp and dp: the planner's
// extrapolation must give back the hand-computed step time and memory of
// the full model, and its ranking must follow them.
//
//===----------------------------------------------------------------------===//
#include "compiler/package/Planner.h"

#include <gtest/gtest.h>

namespace {

using namespace lcc;
using namespace lcc::planner;

// Per sample and layer: forward 1 ms, backward 2 ms (full recomputation:
// one more forward); outside the layers 0.5 ms and 1 ms. The optimizer:
// 0.1 ms per layer, 0.05 ms for the rest. Bytes: 1000 of parameters per
// layer and 500 outside, state twice that; activations 300 per sample and
// layer (60 with full recomputation), 100 per sample outside, 50 fixed, and
// 20 per layer that does not grow with the batch (gradients).
// Everything divides by tp; ZeRO-1/2 divide the state by dp, ZeRO-3 the
// parameters too; dp adds a 10-byte bucket, ZeRO-3 a 40-byte gathered layer.
int probes = 0;
llvm::Expected<Measurement> synthetic(const ProbeKey &key, int64_t layers, int64_t micro,
                                      bool plan) {
  ++probes;
  if (key.tp == 4)
    return llvm::createStringError("tp 4 does not divide the heads");
  double t = double(key.tp), L = double(layers), b = double(micro);
  bool full = key.recompute == RecomputeMode::Full;
  Measurement m;
  m.forwardSeconds = b * (L * 1e-3 + 0.5e-3) / t;
  m.forwardGradSeconds = m.forwardSeconds + b * (L * (full ? 3e-3 : 2e-3) + 1e-3) / t;
  m.stepSeconds = m.forwardGradSeconds + (L * 0.1e-3 + 0.05e-3) / t;
  m.forwardFlops = b * (L * 1e9 + 1e8) / t;
  m.keptBytes = b * L * (full ? 60 : 300) / t; // the activations, as the backward reads them
  double params = (L * 1000 + 500) / t, state = 2 * params, d = double(key.dp);
  bool zero = key.shard == ShardMode::Zero1 || key.shard == ShardMode::Zero2 ||
              key.shard == ShardMode::Zero3;
  m.params = int64_t(key.shard == ShardMode::Zero3 ? params / d : params);
  m.state = int64_t(zero ? state / d : state);
  if (plan) {
    m.arena = int64_t(50 + b * (100 + L * (full ? 60 : 300)) / t + L * 20 / t);
    if (key.dp > 1)
      m.arena += key.shard == ShardMode::Zero3 ? 40 : 10;
    m.io = int64_t(8 * micro);
  }
  return m;
}

/// The error's message, or empty: a failed check reports it, not an abort.
std::string ok(llvm::Error e) { return e ? llvm::toString(std::move(e)) : ""; }

Problem problem(int64_t world) {
  Problem p;
  p.cluster.name = "test";
  p.cluster.peakFlops = 1e12;
  p.cluster.memoryBytes = 1e9;
  p.cluster.memoryBandwidth = 1e12;
  p.cluster.devicesPerNode = 8;
  p.cluster.intraNode = {1e30, 0}; // communication free unless a test says
  p.cluster.interNode = {1e30, 0};
  p.world = world;
  p.layers = 8;
  p.globalBatch = 16;
  p.seq = 128;
  return p;
}

// One rank, b = 4, M = 4: 4 micro-batches of (8 x 3 ms + 1.5 ms) x 4
// samples, plus the optimizer's 0.85 ms. Memory: 2 x (8500 + 17000) of
// model states, 50 + 4 x (100 + 8 x 300) of arena, 32 of io.
TEST(Planner, OneRankMatchesTheHandSum) {
  Problem p = problem(1);
  Plan plan;
  plan.micro = 4;
  ASSERT_EQ(ok(evaluatePlan(p, synthetic, plan)), "");
  EXPECT_EQ(plan.microbatches, 4);
  EXPECT_NEAR(plan.stepSeconds, 4 * 4 * (8 * 3e-3 + 1.5e-3) + 0.85e-3, 1e-12);
  EXPECT_NEAR(plan.memoryBytes, 2 * (8500 + 17000) + 50 + 4 * (100 + 8 * 300) + 8 * 20 + 32, 1e-6);
  EXPECT_NEAR(plan.tokensPerSecond, 16 * 128 / plan.stepSeconds, 1e-6);
  // 3 x forward FLOPs of the step over the step time and peak.
  EXPECT_NEAR(plan.mfu, 3 * 4 * 4 * (8e9 + 1e8) / (plan.stepSeconds * 1e12), 1e-12);
}

// tp 2, dp 2 with ZeRO-3 and full recomputation: time halves per rank and
// the backward grows by a forward; model states divide by tp and dp (the
// parameters too), the arena gains ZeRO-3's gathered layer.
TEST(Planner, ShardingAndRecomputationMatchTheHandSum) {
  Problem p = problem(4);
  Plan plan;
  plan.tp = 2, plan.shard = ShardMode::Zero3, plan.micro = 2, plan.recompute = RecomputeMode::Full;
  ASSERT_EQ(ok(evaluatePlan(p, synthetic, plan)), "");
  EXPECT_EQ(plan.dp, 2);
  EXPECT_EQ(plan.microbatches, 4);
  double micro = 2 * (8 * 4e-3 + 1.5e-3) / 2, optimizer = 0.85e-3 / 2 / 2;
  EXPECT_NEAR(plan.stepSeconds, 4 * micro + optimizer, 1e-12);
  double params = 8500.0 / 2, held = params / 2 + 2 * params / 2;
  double arena = 50 + 2 * (100 + 8 * 60) / 2.0 + 8 * 20 / 2.0 + 40;
  EXPECT_NEAR(plan.memoryBytes, 2 * held + arena + 16, 1.0); // probes round to bytes
}

// dp's all-reduce on a 1 GB/s link without latency: 2 (d - 1)/d of the
// gradients' bytes, sent once per step after accumulation.
TEST(Planner, DataParallelAllReduceIsCharged) {
  Problem p = problem(2);
  p.cluster.intraNode = {1e9, 0};
  Plan plan;
  plan.shard = ShardMode::DP, plan.micro = 8;
  ASSERT_EQ(ok(evaluatePlan(p, synthetic, plan)), "");
  double compute = 8 * (8 * 3e-3 + 1.5e-3), optimizer = 0.85e-3;
  EXPECT_NEAR(plan.commSeconds, 2 * 0.5 * 8500 / 1e9, 1e-15);
  EXPECT_NEAR(plan.stepSeconds, compute + optimizer + plan.commSeconds, 1e-12);
}

// A pipeline's first rank holds P micro-batches of its stage under 1F1B:
// pp 2, 4 layers a stage, 2 in flight, each 4 layers of activations; the
// layers' gradients once.
TEST(Planner, PipelineMemoryCountsMicrobatchesInFlight) {
  Problem p = problem(2);
  Plan plan;
  plan.pp = 2, plan.micro = 1;
  ASSERT_EQ(ok(evaluatePlan(p, synthetic, plan)), "");
  EXPECT_EQ(plan.microbatches, 16);
  double held = 3 * (4 * 1000 + 500);
  double arena = 50 + 1 * (100 + 2 * 4 * 300) + 4 * 20;
  EXPECT_NEAR(plan.memoryBytes, 2 * held + arena + 8, 1e-6);
  // 1F1B's bubble with these stage costs: (P - 1) / (M + P - 1) of the
  // busiest rank's time at most, and more than none.
  EXPECT_GT(plan.bubble, 0);
  EXPECT_LT(plan.bubble, 1.0 / 16 + 1e-9);
}

TEST(Planner, SearchRanksFittingPlansByTimeDeterministically) {
  Problem p = problem(4);
  probes = 0;
  auto first = searchPlans(p, synthetic);
  ASSERT_TRUE(bool(first)) << llvm::toString(first.takeError());
  int once = probes;
  auto second = searchPlans(p, synthetic);
  ASSERT_TRUE(bool(second));
  EXPECT_EQ(probes, 2 * once); // each search measures each probe once
  ASSERT_EQ(first->size(), second->size());
  for (size_t i = 0; i < first->size(); ++i)
    EXPECT_EQ(describePlan((*first)[i]), describePlan((*second)[i]));
  for (size_t i = 1; i < first->size(); ++i) {
    const Plan &a = (*first)[i - 1], &b = (*first)[i];
    EXPECT_TRUE(a.fits >= b.fits);
    if (a.fits == b.fits)
      EXPECT_LE(a.stepSeconds, b.stepSeconds);
  }
  for (const Plan &plan : *first) {
    EXPECT_NE(plan.tp, 4) << "a probe that fails rules its tp out";
    EXPECT_EQ(plan.tp * plan.pp * plan.dp, 4);
    EXPECT_EQ(plan.dp * plan.micro * plan.microbatches, 16);
  }
}

// A budget below every plan: nothing fits, and the smallest is known.
TEST(Planner, TightBudgetFitsNothing) {
  Problem p = problem(2);
  p.memBudget = 1000;
  auto plans = searchPlans(p, synthetic);
  ASSERT_TRUE(bool(plans));
  for (const Plan &plan : *plans)
    EXPECT_FALSE(plan.fits);
  p.memBudget = 40000;
  plans = searchPlans(p, synthetic);
  ASSERT_TRUE(bool(plans));
  EXPECT_TRUE(plans->front().fits);
  EXPECT_LE(plans->front().memoryBytes, 40000);
}

// Fixed choices (--tp, --recompute ...) restrict the search to them.
TEST(Planner, FixedChoicesAreKept) {
  Problem p = problem(4);
  p.tp = 2;
  p.recompute = RecomputeMode::Selective;
  auto plans = searchPlans(p, synthetic);
  ASSERT_TRUE(bool(plans));
  for (const Plan &plan : *plans) {
    EXPECT_EQ(plan.tp, 2);
    EXPECT_EQ(plan.recompute, RecomputeMode::Selective);
  }
  p.tp = 4;
  auto none = searchPlans(p, synthetic);
  EXPECT_NE(ok(none.takeError()), "") << "no plan when every probe fails";
}

} // namespace
