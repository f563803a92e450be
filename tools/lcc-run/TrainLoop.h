//===- TrainLoop.h - lcc-run's training steps -------------------*- C++ -*-===//
//
// The steps of one run once the program, the device, the job and the
// starting weights are in place (lcc-run.cpp does that): batches from the
// samplers, logging, metrics files, evaluation, checkpoints (the last one
// too), --on-nan and preemption, agreed by every rank after each step.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_TOOLS_LCC_RUN_TRAINLOOP_H
#define LCC_TOOLS_LCC_RUN_TRAINLOOP_H

#include "runtime/train/Trainer.h"
#include "tools/lcc-run/Data.h"
#include "tools/lcc-run/Distributed.h"
#include "tools/lcc-run/Metrics.h"
#include "tools/lcc-run/Options.h"
#include "tools/lcc-run/TensorBoard.h"

#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace lcc::run {

/// Prints `message` to stderr; returns 2 (a user error's exit code).
int fail(const std::string &message);

/// "12s", "3m05s", "1h02m".
std::string formatDuration(double seconds);

/// What the data feeder fills: the model's integer inputs `tokens` and
/// (optionally) `targets`, [B, T] or [K, B, T] with K micro-batches.
struct Feed {
  int64_t micro = 1, batch = 0, seq = 0;
  bool hasTargets = false;
  HostTensor tokens, targets;
  // Data parallel: the sampler draws the global batch of `parts` ranks (the
  // batch a 1-rank run of parts * batch rows would see) and this rank takes
  // rows [part * batch, (part + 1) * batch).
  int64_t parts = 1, part = 0;
  std::vector<int32_t> globalTokens, globalTargets;

  /// Tokens one step trains on, over all data-parallel ranks.
  int64_t tokensPerStep() const { return micro * batch * parts * seq; }
};

/// `micro`: the inputs may carry a leading micro-batch dimension (the step of
/// a model compiled with --accum=K takes [K, batch, seq]).
Status makeFeed(const std::vector<Slot> &inputs, bool micro, Feed &feed);

/// What the steps read and write besides the trainer (lcc-run.cpp opens them).
struct LoopSetup {
  Feed *stepFeed = nullptr, *evalFeed = nullptr;
  const Sampler *train = nullptr;
  const Sampler *val = nullptr; // null: no validation data
  int64_t evalBatches = 0;
  MetricsWriter *csv = nullptr; // not open: no --csv (or not rank 0)
  TensorBoardWriter *tensorboard = nullptr;
  std::map<std::string, std::string> meta; // every checkpoint's metadata
  bool lead = true;                        // rank 0: prints, writes metrics
};

/// What the steps did.
struct LoopResult {
  int64_t first = 0;  // the first step this run trained
  double seconds = 0; // wall time of the steps
  double lastLoss = NAN, lastVal = NAN;
  std::vector<MetricsRow> rows; // the finite steps' metrics
  int64_t nonFiniteSteps = 0;   // reported and gone on from (--on-nan)
  int stopSignal = 0;           // preempted by this signal (0: ran to the end)
};

/// Trains steps trainer.stepCount() + 1 .. opt.steps and, with --save,
/// writes the last checkpoint. 0, or the exit code after printing the error
/// (2 user error, 3 internal, 4 distributed). opt.continueAfterSaveError is
/// cleared for the last save.
int trainSteps(Options &opt, Trainer &trainer, const DistributedRun &job, const LoopSetup &setup,
               LoopResult &out);

} // namespace lcc::run

#endif
