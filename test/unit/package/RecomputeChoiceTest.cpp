//===- RecomputeChoiceTest.cpp - the --recompute=auto search ----------------===//
//
// compiler/package/RecomputeChoice.h against an exhaustive scan of a ladder
// whose plans are given by hand: the chosen rung is the first that fits,
// found with few measurements, and the errors say the smallest plan.
//
//===----------------------------------------------------------------------===//
#include "compiler/package/RecomputeChoice.h"

#include <gtest/gtest.h>

#include <map>

namespace {

using lcc::RecomputeMode;
using lcc::RecomputeRung;
using lcc::RecomputeTrial;

/// A ladder of `layers` layers whose plan at rung i is plans[i].
struct FakeLadder {
  int64_t layers;
  std::vector<int64_t> plans;
  int calls = 0;
  llvm::Expected<RecomputeTrial> operator()(const RecomputeRung &rung) {
    ++calls;
    std::vector<RecomputeRung> ladder = lcc::recomputeLadder(layers);
    for (size_t i = 0; i < ladder.size(); ++i)
      if (ladder[i].mode == rung.mode && ladder[i].layers == rung.layers)
        return RecomputeTrial{rung, plans[i], int64_t(i) * 10};
    return llvm::createStringError("not a rung");
  }
};

TEST(RecomputeChoice, Ladder) {
  std::vector<RecomputeRung> ladder = lcc::recomputeLadder(4);
  std::vector<std::string> names;
  for (const RecomputeRung &r : ladder)
    names.push_back(lcc::describeRung(r, 4));
  EXPECT_EQ(names, (std::vector<std::string>{
                       "none", "selective on 1 of 4 layers", "selective on 2 of 4 layers",
                       "selective", "full on 1 of 4 layers (the rest selective)",
                       "full on 2 of 4 layers (the rest selective)",
                       "full on 3 of 4 layers (the rest selective)", "full"}));
  EXPECT_EQ(lcc::recomputeLadder(1).size(), 3u); // none, selective, full
  EXPECT_EQ(lcc::recomputeLadder(0).size(), 1u); // none
}

// Every budget on a falling ladder: the answer is the first rung that fits,
// as a scan finds it, in at most 3 + ceil(log2(L)) measurements.
TEST(RecomputeChoice, FirstFittingRungOfAFallingLadder) {
  // Falling along each segment, rising where full begins (as measured on
  // small models, where full's peak moves to the last layer's backward).
  const int64_t layers = 12;
  const int64_t rungs = int64_t(lcc::recomputeLadder(layers).size()), selective = layers - 1;
  std::vector<int64_t> plans;
  for (int64_t i = 0; i < rungs; ++i)
    plans.push_back(1000 - 30 * i + (i > selective ? 5 * (rungs - i) : 0));
  for (int64_t budget = plans.back(); budget <= plans.front() + 10; ++budget) {
    FakeLadder ladder{layers, plans};
    std::vector<RecomputeTrial> tried;
    auto chosen = lcc::chooseRecompute(layers, budget, std::ref(ladder), tried);
    ASSERT_TRUE(bool(chosen)) << budget;
    int64_t first = 0;
    while (plans[size_t(first)] > budget)
      ++first;
    RecomputeRung want = lcc::recomputeLadder(layers)[size_t(first)];
    EXPECT_EQ(chosen->rung.mode, want.mode) << budget;
    EXPECT_EQ(chosen->rung.layers, want.layers) << budget;
    EXPECT_EQ(chosen->planBytes, plans[size_t(first)]);
    EXPECT_LE(chosen->planBytes, budget);
    EXPECT_LE(ladder.calls, 3 + 4) << budget;
    EXPECT_EQ(size_t(ladder.calls), tried.size());
  }
}

// When nothing fits: the smallest plan measured, and which rung gave it
// (here all-selective, smaller than all-full, as on small models).
TEST(RecomputeChoice, ImpossibleBudgetNamesTheMinimum) {
  FakeLadder ladder{2, {500, 400, 420, 410}};
  std::vector<RecomputeTrial> tried;
  auto chosen = lcc::chooseRecompute(2, 399, std::ref(ladder), tried);
  ASSERT_FALSE(bool(chosen));
  EXPECT_EQ(llvm::toString(chosen.takeError()),
            "no recomputation fits --mem=399 B per rank: the smallest plan is 400 B (400 bytes, "
            "with selective)");
}

// A budget the plan already meets costs one measurement.
TEST(RecomputeChoice, NoneWhenItFits) {
  FakeLadder ladder{3, {100, 90, 80, 70, 60, 50, 40}};
  std::vector<RecomputeTrial> tried;
  auto chosen = lcc::chooseRecompute(3, 100, std::ref(ladder), tried);
  ASSERT_TRUE(bool(chosen));
  EXPECT_EQ(chosen->rung.mode, RecomputeMode::None);
  EXPECT_EQ(ladder.calls, 1);
}

TEST(RecomputeChoice, ByteSizes) {
  EXPECT_EQ(lcc::parseByteSize("80GB"), 80000000000);
  EXPECT_EQ(lcc::parseByteSize("16GiB"), int64_t(16) << 30);
  EXPECT_EQ(lcc::parseByteSize("512mb"), 512000000);
  EXPECT_EQ(lcc::parseByteSize("1.5e9"), 1500000000);
  EXPECT_EQ(lcc::parseByteSize("123456"), 123456);
  EXPECT_EQ(lcc::parseByteSize("2 KiB"), 2048);
  for (const char *bad : {"", "GB", "-1GB", "0", "12XB", "1e", "nan", "1e30"})
    EXPECT_EQ(lcc::parseByteSize(bad), std::nullopt) << bad;
  EXPECT_EQ(lcc::formatBytes(16000000000), "16.00 GB");
  EXPECT_EQ(lcc::formatBytes(999), "999 B");
}

} // namespace
