//===- Schedule.h - pipeline schedules, checked before they run -*- C++ -*-===//
//
// A pipeline-parallel step runs each micro-batch through S = P*V stages
// spread over P ranks (V "virtual" stages per rank when interleaved: stage s
// lives on rank s % P). A schedule is, per rank, the order of its compute
// actions (forward F, backward B; with the backward split as zero-bubble
// schedules do, B is the input gradient and W the weight gradient) and of
// the point-to-point transfers between neighbouring stages: activations
// forward, their gradients backward. The order is fixed at compile time.
//
// Transfers are grouped as NCCL's ncclGroupStart/End groups are: everything
// between two compute actions is posted at once and the group returns when
// each of its sends met its receive. A group may also be started and waited
// for later (a Wait action: the runtime's start/wait tickets), so that
// computation runs while it is in flight: what it receives is usable only
// after the wait. Sends and receives between two ranks
// match in posting order (NCCL has no tags), so simulate() plays every rank's
// program with these rendezvous semantics: it proves a schedule cannot hang
// (or names the ranks and transfers it hangs on), that every receive gets
// the data its computation needs, and computes the schedule's time, bubble
// and in-flight micro-batches from per-action costs.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_PIPELINE_SCHEDULE_H
#define LCC_PASSES_PIPELINE_SCHEDULE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lcc::pipeline {

enum class ScheduleKind {
  GPipe,        // all forwards, then all backwards: M micro-batches in flight
  OneFOneB,     // 1F1B (PipeDream-flush, Megatron): at most P - rank in flight
  Interleaved,  // interleaved 1F1B over V virtual stages per rank (Megatron)
  ZeroBubbleH1, // 1F1B with the backward split: weight gradients deferred
                // into the bubbles, 1F1B's peak memory (Qi et al. 2024)
  Custom,       // an order given by hand (parseSchedule)
};
llvm::StringRef scheduleName(ScheduleKind kind);
/// "gpipe", "1f1b", "interleaved", "zb-h1".
std::optional<ScheduleKind> parseScheduleKind(llvm::StringRef name);

/// One send or receive of a transfer group.
struct Transfer {
  bool send = false;
  int64_t peer = 0;
  bool gradient = false; // a gradient going backward, else an activation forward
  /// The stage that sent it (its receiver is stage + 1 for activations,
  /// stage - 1 for gradients) and its micro-batch.
  int64_t stage = 0;
  int64_t microbatch = 0;
};

struct Action {
  enum Kind : uint8_t { Forward, Backward, BackwardInput, BackwardWeight, Transfers, Wait } kind;
  int64_t stage = 0; // compute actions: the (virtual) stage
  int64_t microbatch = 0;
  std::vector<Transfer> transfers; // Transfers: posted together
  /// Transfers: whether the rank waits for the group here; if not, a later
  /// Wait does (for every group started before it).
  bool wait = true;
};

struct Schedule {
  ScheduleKind kind = ScheduleKind::OneFOneB;
  int64_t ranks = 1, microbatches = 1, virtualStages = 1;
  std::vector<std::vector<Action>> program; // per rank
  int64_t stages() const { return ranks * virtualStages; }
  int64_t rankOf(int64_t stage) const { return stage % ranks; }
};

/// `kind` for P = `ranks`, M = `microbatches`, V = `virtualStages` (1 except
/// for Interleaved, which needs V >= 2 and M a multiple of P, as Megatron's);
/// transfers inserted and grouped.
llvm::Expected<Schedule> buildSchedule(ScheduleKind kind, int64_t ranks, int64_t microbatches,
                                       int64_t virtualStages = 1);

/// A hand-made order, one stage per rank: the ranks' computations separated
/// by '|', each F, B, I or W with its micro-batch ("F0 F1 B0 B1 | F0 B0 F1
/// B1"); the transfers are added as buildSchedule adds them. Errors for
/// text that is no such order; whether it can run is simulate()'s question.
llvm::Expected<Schedule> parseSchedule(llvm::StringRef text, int64_t microbatches);

/// The timing model: compute costs of one stage (a backward that is not
/// split costs backwardInput + backwardWeight). A transfer's data arrives
/// `transfer` after its send is posted (a network's latency, paid once per
/// message) and is received once it has and the receive is posted.
struct Costs {
  double forward = 1, backwardInput = 1, backwardWeight = 1, transfer = 0;
  /// Whether a rank waits at a group for its sends too (NCCL, the CUDA
  /// target: one group on one stream) or, as lcc-run's CPU ranks, only for
  /// its receives, its sends completing while it computes, before its next
  /// group is posted. A schedule that cannot hang waiting for its sends
  /// cannot hang without (each rank posts every transfer no later), so the
  /// compile-time proof waits for them.
  bool waitForSends = true;
  /// Per stage, a factor on its computations' costs (unbalanced stages);
  /// empty: 1 for all.
  std::vector<double> stageScale;
};

struct Simulation {
  double makespan = 0;
  /// Idle time over busy time of the busiest rank: Megatron's bubble
  /// fraction, (P - 1) / M for 1F1B with balanced stages.
  double bubble = 0;
  std::vector<double> busy;      // per rank
  std::vector<int64_t> inFlight; // per rank: peak micro-batch stages whose activations are held
  /// Every computation as it ran: the papers' timeline (lcc --schedule-picture).
  struct Block {
    int64_t rank;
    Action::Kind kind;
    int64_t stage, microbatch;
    double start, end;
  };
  std::vector<Block> blocks;
};

/// Plays `schedule` (see the file comment). Fails when a rank would wait
/// forever (naming every blocked rank and what it waits for), when a send
/// meets a receive of other data, or when an action runs before its inputs.
llvm::Expected<Simulation> simulate(const Schedule &schedule, const Costs &costs = {});

/// The bubble fraction the literature gives for `kind` with balanced stages
/// (transfers free): (P - 1) / M, interleaved (P - 1) / (V M), ZB-H1
/// (P - 1)(F + I - W) / (M (F + I + W)) for a weight gradient no slower than
/// the input gradient (a third of 1F1B's with equal costs).
double formulaBubble(ScheduleKind kind, int64_t ranks, int64_t microbatches, int64_t virtualStages,
                     const Costs &costs = {});

/// "F3@s1" style text of a rank's program, for errors and tests.
std::string describe(const Action &action);

} // namespace lcc::pipeline

#endif
