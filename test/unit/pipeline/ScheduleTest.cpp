//===- ScheduleTest.cpp - pipeline schedules against the literature -------===//
//
// The oracles are the published properties of each schedule: the bubble
// fractions of GPipe and 1F1B ((P-1)/M, Narayanan et al. 2021) and
// interleaved 1F1B ((P-1)/(V M), ibid.) and ZB-H1 ((P-1)(F+I-W)/(M(F+I+W)),
// Qi et al. 2024), the activations each keeps (GPipe all M, 1F1B P - rank,
// ZB-H1 at most P), a split-backward order timed by hand, and hand-made
// orders that must hang, mismatch or run a computation before its input.
//
//===----------------------------------------------------------------------===//
#include "passes/pipeline/Schedule.h"

#include "llvm/ADT/STLExtras.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace lcc::pipeline;

namespace {

Schedule build(ScheduleKind kind, int64_t p, int64_t m, int64_t v = 1) {
  auto s = buildSchedule(kind, p, m, v);
  if (!s) {
    ADD_FAILURE() << llvm::toString(s.takeError());
    return {};
  }
  return std::move(*s);
}

Simulation run(const Schedule &s, const Costs &c = {}) {
  auto sim = simulate(s, c);
  if (!sim) {
    ADD_FAILURE() << llvm::toString(sim.takeError());
    return {};
  }
  return *sim;
}

std::string failure(const Schedule &s) {
  auto sim = simulate(s);
  return sim ? std::string("(it ran)") : llvm::toString(sim.takeError());
}

struct Shape {
  int64_t p, m, v;
};

class OneStage : public ::testing::TestWithParam<Shape> {};

TEST_P(OneStage, GPipeAnd1F1BHaveTheirBubbleAndMemory) {
  auto [p, m, v] = GetParam();
  for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB}) {
    SCOPED_TRACE(scheduleName(kind).str());
    Simulation sim = run(build(kind, p, m));
    EXPECT_NEAR(sim.bubble, formulaBubble(kind, p, m, 1), 1e-12);
    EXPECT_NEAR(sim.bubble, double(p - 1) / double(m), 1e-12);
    ASSERT_EQ(sim.inFlight.size(), size_t(p));
    for (int64_t r = 0; r < p; ++r)
      EXPECT_EQ(sim.inFlight[size_t(r)], kind == ScheduleKind::GPipe ? m : std::min(p - r, m))
          << "rank " << r;
  }
}

TEST_P(OneStage, InterleavedDividesTheBubbleByV) {
  auto [p, m, v] = GetParam();
  Simulation sim = run(build(ScheduleKind::Interleaved, p, m, v));
  EXPECT_NEAR(sim.bubble, double(p - 1) / double(v * m), 1e-12);
  EXPECT_NEAR(sim.bubble, formulaBubble(ScheduleKind::Interleaved, p, m, v), 1e-12);
}

// ZB-H1 (Qi et al., ICLR'24): 1F1B's order with the backward split and up
// to `rank` weight gradients deferred: the paper's bubble,
// (P-1)(F+I-W) / (M(F+I+W)), a third of 1F1B's with equal costs, and 1F1B's
// peak memory (P micro-batches, on every rank at most).
TEST_P(OneStage, ZeroBubbleH1HasAThirdOf1F1BsBubbleAndItsPeakMemory) {
  auto [p, m, v] = GetParam();
  if (m < p)
    GTEST_SKIP() << "ZB-H1's formula assumes a full pipeline (M >= P)";
  Schedule s = build(ScheduleKind::ZeroBubbleH1, p, m);
  Simulation sim = run(s);
  EXPECT_NEAR(sim.bubble, double(p - 1) / double(3 * m), 1e-12);
  EXPECT_NEAR(sim.bubble, formulaBubble(ScheduleKind::ZeroBubbleH1, p, m, 1), 1e-12);
  Simulation classic = run(build(ScheduleKind::OneFOneB, p, m));
  EXPECT_NEAR(sim.bubble * 3, classic.bubble, 1e-12);
  for (int64_t r = 0; r < p; ++r)
    EXPECT_LE(sim.inFlight[size_t(r)], p) << "rank " << r;
  EXPECT_EQ(*std::max_element(sim.inFlight.begin(), sim.inFlight.end()),
            *std::max_element(classic.inFlight.begin(), classic.inFlight.end()));
  // Every backward is split: no rank runs a whole one.
  for (const std::vector<Action> &program : s.program)
    for (const Action &a : program)
      EXPECT_NE(a.kind, Action::Backward) << describe(a);
}

// A group started early (not waited for) lets the rank compute meanwhile,
// but what it receives is there only after the Wait: using it before is
// caught, and so is a program that never waits.
TEST(Schedule, StartedTransfersAreUsableOnlyAfterTheWait) {
  Schedule s = build(ScheduleKind::ZeroBubbleH1, 2, 2);
  auto started = [](const Action &a) { return a.kind == Action::Transfers && !a.wait; };
  ASSERT_TRUE(llvm::any_of(s.program[1], started)) << "ZB-H1 starts the gradient's send";
  // Rank 0's receive of gradient 0, started instead of waited for, and its
  // input gradient run before the Wait.
  Schedule early = s;
  std::vector<Action> &p0 = early.program[0];
  auto recv = llvm::find_if(p0, [](const Action &a) {
    return a.kind == Action::Transfers &&
           llvm::any_of(a.transfers, [](const Transfer &t) { return !t.send && t.gradient; });
  });
  ASSERT_NE(recv, p0.end());
  recv->wait = false;
  auto input =
      std::find_if(recv, p0.end(), [](const Action &a) { return a.kind == Action::BackwardInput; });
  ASSERT_NE(input, p0.end());
  Action wait;
  wait.kind = Action::Wait;
  p0.insert(input + 1, wait);
  EXPECT_NE(failure(early).find("I0@s0 runs before the gradient of micro-batch 0 from stage 1"),
            std::string::npos)
      << failure(early);
  // Rank 1 without its Waits.
  Schedule never = s;
  llvm::erase_if(never.program[1], [](const Action &a) { return a.kind == Action::Wait; });
  EXPECT_NE(failure(never).find("rank 1 ends with transfers it started and never waited for"),
            std::string::npos)
      << failure(never);
}

// With a weight gradient half the input gradient's cost the formula still
// holds (W fills less of each wait).
TEST(Schedule, ZeroBubbleH1FollowsTheFormulaForUnequalCosts) {
  Costs costs;
  costs.forward = 2;
  costs.backwardInput = 2;
  costs.backwardWeight = 1;
  for (auto [p, m] : {std::pair<int64_t, int64_t>{2, 4}, {4, 8}, {4, 16}}) {
    Simulation sim = run(build(ScheduleKind::ZeroBubbleH1, p, m), costs);
    EXPECT_NEAR(sim.bubble, formulaBubble(ScheduleKind::ZeroBubbleH1, p, m, 1, costs), 1e-12)
        << "p " << p << " m " << m;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, OneStage,
                         ::testing::Values(Shape{2, 2, 2}, Shape{2, 4, 2}, Shape{2, 8, 3},
                                           Shape{4, 4, 2}, Shape{4, 8, 2}, Shape{4, 16, 4},
                                           Shape{8, 16, 2}),
                         [](const auto &info) {
                           return "p" + std::to_string(info.param.p) + "_m" +
                                  std::to_string(info.param.m) + "_v" +
                                  std::to_string(info.param.v);
                         });

// A zero-bubble style order (backward split into input gradient I and weight
// gradient W, the last stage's W deferred) on 2 ranks, 2 micro-batches, unit
// costs, timed by hand: rank 1 receives act 0 at 1, runs F0 I0 by 3, trades
// grad 0 for act 1 at 3, runs F1 I1 by 5, sends grad 1 at 5 and runs W0 W1
// by 7; rank 0 runs F0 F1 by 2, waits to 3, runs I0 W0 by 5, receives grad 1
// at 5 and runs I1 W1 by 7. Busy 6 per rank: bubble 1/6 (1F1B's is 1/2).
TEST(Schedule, SplitBackwardTimedByHand) {
  Schedule s = build(ScheduleKind::OneFOneB, 2, 2);
  auto act = [](Action::Kind k, int64_t stage, int64_t mb) {
    Action a;
    a.kind = k;
    a.stage = stage;
    a.microbatch = mb;
    return a;
  };
  auto group = [](std::vector<Transfer> t) {
    Action a;
    a.kind = Action::Transfers;
    a.transfers = std::move(t);
    return a;
  };
  using K = Action;
  s.program[0] = {
      act(K::Forward, 0, 0),           group({{true, 1, false, 0, 0}}),
      act(K::Forward, 0, 1),           group({{true, 1, false, 0, 1}, {false, 1, true, 1, 0}}),
      act(K::BackwardInput, 0, 0),     act(K::BackwardWeight, 0, 0),
      group({{false, 1, true, 1, 1}}), act(K::BackwardInput, 0, 1),
      act(K::BackwardWeight, 0, 1)};
  s.program[1] = {group({{false, 0, false, 0, 0}}),
                  act(K::Forward, 1, 0),
                  act(K::BackwardInput, 1, 0),
                  group({{true, 0, true, 1, 0}, {false, 0, false, 0, 1}}),
                  act(K::Forward, 1, 1),
                  act(K::BackwardInput, 1, 1),
                  group({{true, 0, true, 1, 1}}),
                  act(K::BackwardWeight, 1, 0),
                  act(K::BackwardWeight, 1, 1)};
  Simulation sim = run(s);
  EXPECT_DOUBLE_EQ(sim.makespan, 7.0);
  EXPECT_DOUBLE_EQ(sim.bubble, 1.0 / 6.0);
  EXPECT_EQ(sim.inFlight, (std::vector<int64_t>{2, 2}));
}

TEST(Schedule, OneRankRunsEveryStageLocally) {
  Schedule s = build(ScheduleKind::Interleaved, 1, 3, 2);
  for (const Action &a : s.program[0])
    EXPECT_NE(a.kind, Action::Transfers) << describe(a);
  EXPECT_EQ(run(s).bubble, 0.0);
}

// Each transfer on its own, in order: in 1F1B's steady state a rank sends
// an activation forward while its neighbour sends a gradient back, and
// neither returns until the other receives.
TEST(Schedule, UngroupedTransfersHang) {
  Schedule s = build(ScheduleKind::OneFOneB, 2, 4);
  for (auto &program : s.program) {
    std::vector<Action> split;
    for (const Action &a : program) {
      if (a.kind != Action::Transfers) {
        split.push_back(a);
        continue;
      }
      for (const Transfer &t : a.transfers) {
        Action one = a;
        one.transfers = {t};
        split.push_back(one);
      }
    }
    program = split;
  }
  std::string why = failure(s);
  EXPECT_NE(why.find("hangs"), std::string::npos) << why;
  EXPECT_NE(why.find("rank 0 waits in {send act"), std::string::npos) << why;
  EXPECT_NE(why.find("rank 1 waits in {send grad"), std::string::npos) << why;
}

TEST(Schedule, SendsOutOfOrderAreCaught) {
  Schedule s = build(ScheduleKind::GPipe, 2, 3);
  // Rank 0 sends micro-batch 1's activation before micro-batch 0's (both
  // computed by then): F0 {send 0} F1 {send 1} becomes F0 F1 {send 1} {send 0}.
  std::vector<Action> &r0 = s.program[0];
  auto sendOf = [&](int64_t mb) {
    return std::find_if(r0.begin(), r0.end(), [&](const Action &a) {
      return a.kind == Action::Transfers && a.transfers.size() == 1 && a.transfers[0].send &&
             a.transfers[0].microbatch == mb;
    });
  };
  ASSERT_TRUE(sendOf(0) != r0.end() && sendOf(1) != r0.end());
  Action first = *sendOf(0);
  r0.erase(sendOf(0));
  r0.insert(sendOf(1) + 1, first);
  std::string why = failure(s);
  EXPECT_NE(why.find("pair in order"), std::string::npos) << why;
}

TEST(Schedule, ComputeBeforeItsInputIsCaught) {
  Schedule s = build(ScheduleKind::OneFOneB, 2, 2);
  // The last stage runs micro-batch 0's backward before its forward.
  std::vector<Action> &r1 = s.program[1];
  auto f = std::find_if(r1.begin(), r1.end(), [](const Action &a) {
    return a.kind == Action::Forward && a.microbatch == 0;
  });
  auto b = std::find_if(r1.begin(), r1.end(), [](const Action &a) {
    return a.kind == Action::Backward && a.microbatch == 0;
  });
  ASSERT_TRUE(f != r1.end() && b != r1.end());
  std::iter_swap(f, b);
  std::string why = failure(s);
  EXPECT_NE(why.find("rank 1: B0@s1 runs before its forward"), std::string::npos) << why;
}

TEST(Schedule, MissingWorkIsCaught) {
  Schedule s = build(ScheduleKind::GPipe, 1, 2);
  s.program[0].pop_back(); // micro-batch 1's backward
  std::string why = failure(s);
  EXPECT_NE(why.find("does not run all of micro-batch 1"), std::string::npos) << why;
}

TEST(Schedule, BadShapesAreRefused) {
  auto message = [](llvm::Expected<Schedule> s) {
    return s ? std::string("(built)") : llvm::toString(s.takeError());
  };
  EXPECT_NE(message(buildSchedule(ScheduleKind::Interleaved, 4, 6, 2)).find("multiple"),
            std::string::npos);
  EXPECT_NE(message(buildSchedule(ScheduleKind::Interleaved, 2, 4, 1)).find("at least 2"),
            std::string::npos);
  EXPECT_NE(message(buildSchedule(ScheduleKind::OneFOneB, 2, 4, 2)).find("runs one"),
            std::string::npos);
  EXPECT_NE(message(buildSchedule(ScheduleKind::GPipe, 0, 4)).find("at least one"),
            std::string::npos);
}

TEST(Schedule, NamesRoundTrip) {
  for (ScheduleKind k : {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::Interleaved})
    EXPECT_EQ(parseScheduleKind(scheduleName(k)), k);
  EXPECT_FALSE(parseScheduleKind("zero-bubble"));
}

// Transfers that take time add to the makespan but cannot make a correct
// schedule hang or go out of order.
TEST(Schedule, TransferLatencyOnlyDelays) {
  Costs slow;
  slow.transfer = 0.5;
  for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB}) {
    Schedule s = build(kind, 4, 8);
    EXPECT_GT(run(s, slow).makespan, run(s).makespan) << scheduleName(kind).str();
  }
}

// A message's latency counts from its send, once: GPipe on 2 ranks, 2
// micro-batches, latency 0.5, stage 1 four times as fast (F 0.25, B 0.5;
// stage 0: F 1, B 2). Rank 1 sends gradient 1 at 4.75 (it arrives at
// 5.25), but rank 0 posts its receive only at 6.25, after B0 (4.25 to
// 6.25), and takes it at once: B1 runs 6.25 to 8.25. Charging the latency
// from the receive instead (the old model) would end at 8.75.
TEST(Schedule, LatencyCountsFromTheSend) {
  Costs costs;
  costs.forward = 1;
  costs.backwardInput = costs.backwardWeight = 1;
  costs.transfer = 0.5;
  costs.stageScale = {1, 0.25};
  Simulation sim = run(build(ScheduleKind::GPipe, 2, 2), costs);
  EXPECT_DOUBLE_EQ(sim.makespan, 8.25);
  auto b1 = llvm::find_if(sim.blocks, [](const Simulation::Block &b) {
    return b.rank == 0 && b.kind == Action::Backward && b.microbatch == 1;
  });
  ASSERT_NE(b1, sim.blocks.end());
  EXPECT_DOUBLE_EQ(b1->start, 6.25);
}

// Where a rank waits only for what it receives (lcc-run's CPU ranks), ZB-H1's
// deferred weight gradients cover the latency of its steady state: only the
// warm-up and the cool-down pay it, the same at 8 and 16 micro-batches on
// 2 ranks. 1F1B pays it per micro-batch, and so does ZB-H1 where a rank also
// waits for its sends (one NCCL group).
TEST(Schedule, ZeroBubbleH1HidesLatencyWhereSendsDoNotBlock) {
  auto latencyCost = [](ScheduleKind kind, int64_t m, bool waitForSends) {
    Costs slow;
    slow.transfer = 0.4;
    slow.waitForSends = waitForSends;
    Costs free = slow;
    free.transfer = 0;
    Schedule s = build(kind, 2, m);
    return run(s, slow).makespan - run(s, free).makespan;
  };
  const auto zb = ScheduleKind::ZeroBubbleH1, oneF = ScheduleKind::OneFOneB;
  EXPECT_NEAR(latencyCost(zb, 8, false), latencyCost(zb, 16, false), 1e-9);
  EXPECT_LT(latencyCost(zb, 8, false), latencyCost(oneF, 8, false));
  EXPECT_GT(latencyCost(oneF, 16, false), latencyCost(oneF, 8, false) + 8 * 0.1);
  EXPECT_GT(latencyCost(zb, 16, true), latencyCost(zb, 8, true) + 8 * 0.1);
}

// A hand-made order gets the transfers buildSchedule adds: 1F1B written
// out is 1F1B; text that is no order says where.
TEST(Schedule, ParsedOrderGetsTheSameTransfers) {
  llvm::Expected<Schedule> parsed =
      parseSchedule("F0 F1 B0 F2 B1 F3 B2 B3 | F0 B0 F1 B1 F2 B2 F3 B3", 4);
  ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
  Schedule built = build(ScheduleKind::OneFOneB, 2, 4);
  for (int64_t r = 0; r < 2; ++r) {
    std::vector<std::string> a, b;
    for (const Action &x : parsed->program[size_t(r)])
      a.push_back(describe(x));
    for (const Action &x : built.program[size_t(r)])
      b.push_back(describe(x));
    EXPECT_EQ(a, b) << "rank " << r;
  }
  llvm::Expected<Schedule> bad = parseSchedule("F0 X1 | F0", 2);
  ASSERT_FALSE(bool(bad));
  EXPECT_EQ(llvm::toString(bad.takeError()),
            "'X1' in the order of rank 0 is not F, B, I or W and a micro-batch (0..1)");
}

// Unbalanced stages: a last stage twice as slow (GPipe, 2 stages, 4
// micro-batches) computes 4 forwards of 2 and 4 backwards of 4, after rank
// 0's first forward, and sets the pace.
TEST(Schedule, StageScaleSlowsItsStage) {
  Costs costs;
  costs.stageScale = {1.0, 2.0};
  Simulation sim = run(build(ScheduleKind::GPipe, 2, 4), costs);
  EXPECT_DOUBLE_EQ(sim.busy[1], 4 * 2.0 + 4 * 4.0);
  EXPECT_DOUBLE_EQ(sim.busy[0], 4 * 1.0 + 4 * 2.0);
  EXPECT_GE(sim.makespan, 1.0 + sim.busy[1]);
}

} // namespace
