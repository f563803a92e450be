//===- PartitionTest.cpp - pipeline stage cuts against brute force --------===//
//
// The oracle is enumeration: every way to cut the pieces into stages at the
// allowed points, the fastest (then leanest) kept, compared with
// balanceStages on models with random costs; plus cuts one can check by
// eye (equal layers split equally, a heavy head, 1F1B's heavier first
// stage under a memory limit) and the errors.
//
//===----------------------------------------------------------------------===//
#include "passes/pipeline/Partition.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

using namespace lcc::pipeline;

namespace {

std::vector<Piece> model(std::vector<double> layerCosts, double embedding = 1, double head = 1,
                         int64_t layerState = 100, int64_t layerActivations = 10) {
  std::vector<Piece> pieces;
  pieces.push_back({"embedding", false, embedding, 50, 5});
  for (size_t i = 0; i < layerCosts.size(); ++i)
    pieces.push_back({"h." + std::to_string(i), true, layerCosts[i], layerState, layerActivations});
  pieces.push_back({"head", false, head, 50, 20});
  return pieces;
}

StagePlan ok(llvm::Expected<StagePlan> p) {
  if (!p) {
    ADD_FAILURE() << llvm::toString(p.takeError());
    return {};
  }
  return std::move(*p);
}

std::string failure(llvm::Expected<StagePlan> p) {
  return p ? std::string("(it cut)") : llvm::toString(p.takeError());
}

std::vector<int64_t> oneFOneB(int64_t stages) {
  std::vector<int64_t> in;
  for (int64_t r = 0; r < stages; ++r)
    in.push_back(stages - r);
  return in;
}

double slowest(const StagePlan &p) { return *std::max_element(p.cost.begin(), p.cost.end()); }
int64_t largest(const StagePlan &p) { return *std::max_element(p.memory.begin(), p.memory.end()); }

/// Every cut, by enumeration: the best (slowest stage, then largest
/// memory) under `limit`.
std::optional<std::pair<double, int64_t>> bruteForce(const std::vector<Piece> &pieces,
                                                     const std::vector<int64_t> &inFlight,
                                                     std::optional<int64_t> limit) {
  std::vector<size_t> starts;
  for (size_t i = 1; i < pieces.size(); ++i)
    if (pieces[i - 1].layer && pieces[i].layer)
      starts.push_back(i);
  size_t stages = inFlight.size();
  std::optional<std::pair<double, int64_t>> best;
  std::vector<size_t> chosen;
  std::function<void(size_t)> pick = [&](size_t from) {
    if (chosen.size() + 1 == stages) {
      std::vector<size_t> first{0};
      first.insert(first.end(), chosen.begin(), chosen.end());
      double worst = 0;
      int64_t peak = 0;
      for (size_t s = 0; s < stages; ++s) {
        size_t end = s + 1 < stages ? first[s + 1] : pieces.size();
        double c = 0;
        int64_t state = 0, act = 0;
        for (size_t i = first[s]; i < end; ++i) {
          c += pieces[i].cost;
          state += pieces[i].stateBytes;
          act += pieces[i].activationBytes;
        }
        int64_t m = state + inFlight[s] * act;
        if (limit && m > *limit)
          return;
        worst = std::max(worst, c);
        peak = std::max(peak, m);
      }
      // Costs are integers here: exact comparisons.
      if (!best || worst < best->first || (worst == best->first && peak < best->second))
        best = {worst, peak};
      return;
    }
    for (size_t k = from; k < starts.size(); ++k) {
      chosen.push_back(starts[k]);
      pick(k + 1);
      chosen.pop_back();
    }
  };
  pick(0);
  return best;
}

TEST(Partition, EqualLayersSplitEqually) {
  std::vector<Piece> pieces = model(std::vector<double>(8, 10), /*embedding=*/0, /*head=*/0);
  StagePlan p = ok(balanceStages(pieces, oneFOneB(4)));
  EXPECT_EQ(p.first, (std::vector<size_t>{0, 3, 5, 7}));
  EXPECT_EQ(p.cost, (std::vector<double>{20, 20, 20, 20}));
}

// A heavy head (the vocabulary projection and loss) takes the last stage's
// share: that stage gets fewer layers.
TEST(Partition, AHeavyHeadShortensTheLastStage) {
  std::vector<Piece> pieces = model(std::vector<double>(8, 10), /*embedding=*/0, /*head=*/40);
  StagePlan p = ok(balanceStages(pieces, oneFOneB(2)));
  // 120 in all: stage 0 gets h.0-h.5 (60), stage 1 h.6, h.7 and the head (60).
  EXPECT_EQ(p.first, (std::vector<size_t>{0, 7}));
  EXPECT_EQ(p.cost, (std::vector<double>{60, 60}));
}

// Under 1F1B the first stage keeps P micro-batches' activations, the last
// one: with activations heavy and a memory limit, the first stage takes
// fewer layers than an even split (which is then over the limit).
TEST(Partition, AMemoryLimitMovesLayersOffTheFirstStage) {
  std::vector<Piece> pieces =
      model(std::vector<double>(8, 10), 0, 0, /*layerState=*/10, /*layerActivations=*/100);
  StagePlan even = ok(balanceStages(pieces, oneFOneB(2)));
  EXPECT_EQ(even.first, (std::vector<size_t>{0, 5}));
  ASSERT_EQ(even.memory.size(), 2u);
  // Stage 0: embedding + 4 layers, 2 in flight: 50 + 40 + 2 * (5 + 400).
  EXPECT_EQ(even.memory[0], 900);
  StagePlan limited = ok(balanceStages(pieces, oneFOneB(2), /*memoryLimit=*/800));
  EXPECT_EQ(limited.first, (std::vector<size_t>{0, 4}));
  EXPECT_LE(largest(limited), 800);
  EXPECT_EQ(limited.cost, (std::vector<double>{30, 50}));
  std::string why = failure(balanceStages(pieces, oneFOneB(2), /*memoryLimit=*/100));
  EXPECT_NE(why.find("no cut into 2 pipeline stages keeps every stage under 100 bytes; the least "
                     "peak any cut reaches is"),
            std::string::npos)
      << why;
}

TEST(Partition, MatchesEnumerationOnRandomModels) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> cost(1, 20), state(1, 50), act(1, 30);
  for (int trial = 0; trial < 200; ++trial) {
    size_t layers = 2 + size_t(trial % 7);
    std::vector<Piece> pieces;
    pieces.push_back({"embedding", false, double(cost(rng)), state(rng), act(rng)});
    for (size_t i = 0; i < layers; ++i)
      pieces.push_back({"h", true, double(cost(rng)), state(rng), act(rng)});
    pieces.push_back({"head", false, double(cost(rng)), state(rng), act(rng)});
    int64_t stages = 1 + trial % std::min<int64_t>(4, int64_t(layers));
    std::vector<int64_t> inFlight = oneFOneB(stages);
    std::optional<int64_t> limit;
    if (trial % 3 == 0)
      limit = 300 + 20 * (trial % 11);
    SCOPED_TRACE("trial " + std::to_string(trial));
    std::optional<std::pair<double, int64_t>> expected = bruteForce(pieces, inFlight, limit);
    llvm::Expected<StagePlan> got = balanceStages(pieces, inFlight, limit);
    if (!expected) {
      EXPECT_FALSE(bool(got));
      llvm::consumeError(got.takeError());
      continue;
    }
    StagePlan p = ok(std::move(got));
    EXPECT_EQ(slowest(p), expected->first);
    EXPECT_EQ(largest(p), expected->second);
    ASSERT_EQ(p.first.size(), size_t(stages));
    for (size_t s = 0; s < p.first.size(); ++s) // a layer starts every stage but the first
      EXPECT_TRUE(s == 0 ? p.first[s] == 0 : pieces[p.first[s]].layer);
  }
}

TEST(Partition, MoreStagesThanLayersIsAnError) {
  std::string why = failure(balanceStages(model({10, 10}), oneFOneB(4)));
  EXPECT_NE(why.find("cannot cut the model into 4 pipeline stages: it has 2 layers, and each stage "
                     "needs at least one"),
            std::string::npos)
      << why;
}

TEST(Partition, UserBoundariesAreTakenAndChecked) {
  std::vector<Piece> pieces = model(std::vector<double>(6, 10));
  StagePlan p = ok(stagesAt(pieces, oneFOneB(3), {1, 4}));
  // Stages: embedding + h.0; h.1-h.3; h.4, h.5 + head.
  EXPECT_EQ(p.first, (std::vector<size_t>{0, 2, 5}));
  EXPECT_EQ(p.cost, (std::vector<double>{11, 30, 21}));
  EXPECT_NE(failure(stagesAt(pieces, oneFOneB(3), {4, 4})).find("must be increasing"),
            std::string::npos);
  EXPECT_NE(failure(stagesAt(pieces, oneFOneB(3), {0, 3})).find("in 1..5"), std::string::npos);
  EXPECT_NE(failure(stagesAt(pieces, oneFOneB(3), {2, 6})).find("got 6"), std::string::npos);
  EXPECT_NE(failure(stagesAt(pieces, oneFOneB(3), {2})).find("3 pipeline stages need 2 boundaries"),
            std::string::npos);
}

} // namespace
