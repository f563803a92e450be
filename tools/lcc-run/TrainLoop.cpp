//===- TrainLoop.cpp - lcc-run's training steps ---------------------------===//
//
// Batches depend only on (seed, step), so a run resumed from a checkpoint
// sees exactly the batches an uninterrupted run would have seen, and its
// losses are bitwise equal.
//
//===----------------------------------------------------------------------===//
#include "tools/lcc-run/TrainLoop.h"

#include "runtime/train/Checkpoint.h"
#include "tools/lcc-run/Preemption.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>

namespace lcc::run {

using Clock = std::chrono::steady_clock;

int fail(const std::string &message) {
  std::fprintf(stderr, "%s\n", message.c_str());
  return 2;
}

std::string formatDuration(double seconds) {
  char buf[32];
  long s = std::lround(seconds);
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s / 60) % 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lds", s);
  return buf;
}

Status makeFeed(const std::vector<Slot> &inputs, bool micro, Feed &feed) {
  for (const Slot &s : inputs) {
    bool rankOk = s.shape.size() == 2 || (micro && s.shape.size() == 3);
    if ((s.name != "tokens" && s.name != "targets") || s.dtype != ElementType::I32 || !rankOk ||
        (feed.seq && s.shape != feed.tokens.shape() && s.shape != feed.targets.shape()))
      return Status::failure("lcc-run feeds token models: inputs 'tokens' and optionally "
                             "'targets', i32 [batch, seq]; this model has input '" +
                             s.name + "'");
    feed.micro = s.shape.size() == 3 ? s.shape[0] : 1;
    feed.batch = s.shape[s.shape.size() - 2];
    feed.seq = s.shape.back();
    feed.hasTargets |= s.name == "targets";
    (s.name == "tokens" ? feed.tokens : feed.targets) = HostTensor(s.dtype, s.shape);
  }
  if (feed.seq == 0)
    return Status::failure("the model has no input named 'tokens'");
  if (!feed.hasTargets) // the model shifts tokens itself; the sampler still wants a buffer
    feed.targets = HostTensor(ElementType::I32, feed.tokens.shape());
  return {};
}

namespace {

/// Micro-batch k of feed for sampler step `index`.
void fill(const Sampler &sampler, uint64_t index, int64_t k, Feed &feed) {
  int64_t n = feed.batch * feed.seq;
  if (feed.parts == 1) {
    sampler.fill(index, feed.tokens.data<int32_t>() + k * n, feed.targets.data<int32_t>() + k * n);
    return;
  }
  feed.globalTokens.resize(size_t(n * feed.parts));
  feed.globalTargets.resize(size_t(n * feed.parts));
  sampler.fill(index, feed.globalTokens.data(), feed.globalTargets.data());
  std::copy_n(feed.globalTokens.data() + feed.part * n, n, feed.tokens.data<int32_t>() + k * n);
  std::copy_n(feed.globalTargets.data() + feed.part * n, n, feed.targets.data<int32_t>() + k * n);
}

std::map<std::string, const HostTensor *> inputsOf(const Feed &feed) {
  std::map<std::string, const HostTensor *> m = {{"tokens", &feed.tokens}};
  if (feed.hasTargets)
    m["targets"] = &feed.targets;
  return m;
}

/// The mean @forward loss over the first `batches` batches of `sampler`.
Status evaluate(Trainer &trainer, const Sampler &sampler, Feed &feed, int64_t batches,
                double &mean) {
  double sum = 0;
  for (int64_t b = 0; b < batches; ++b) {
    fill(sampler, uint64_t(b), 0, feed);
    double loss;
    if (Status st = trainer.evalLoss(inputsOf(feed), loss); !st)
      return st;
    sum += loss;
  }
  mean = sum / double(batches);
  return {};
}

/// A step's numbers are broken (outside fp16's skipped overflow steps).
bool nonFinite(const StepResult &r) {
  return !std::isfinite(r.loss) || (r.lossScale == 0 && !std::isfinite(r.gradNorm));
}

std::string numberText(double x) {
  return std::isnan(x)   ? std::string("nan")
         : std::isinf(x) ? (x > 0 ? "inf" : "-inf")
                         : std::to_string(x);
}

/// One run's steps. Failing members return false with `error` (printed by
/// run(), empty when another rank reports it) and `code` set.
class Loop {
public:
  Loop(Options &opt, Trainer &trainer, const DistributedRun &job, const LoopSetup &setup,
       LoopResult &out)
      : opt(opt), trainer(trainer), job(job), setup(setup), out(out) {}

  int run();

private:
  bool evalAt(int64_t s) const {
    return setup.val && ((opt.evalEvery > 0 && s % opt.evalEvery == 0) || s == opt.steps);
  }
  bool saveAt(int64_t s) const {
    return !opt.saveDir.empty() && opt.saveEvery > 0 && s % opt.saveEvery == 0 && s != opt.steps;
  }
  Status save();
  bool saveFailed(int64_t s, const Status &st);
  bool handle(const StepResult &r);
  bool process(std::vector<StepResult> &done, bool &stop);
  bool failWith(std::string message, int exitCode) {
    error = std::move(message);
    code = exitCode;
    return false;
  }

  Options &opt;
  Trainer &trainer;
  const DistributedRun &job;
  const LoopSetup &setup;
  LoopResult &out;
  Clock::time_point start;
  int64_t savedStep = -1; // the step of the last checkpoint this run wrote
  std::string error;
  int code = 0;
};

// A distributed run writes one file per rank (run::saveShardedCheckpoint).
Status Loop::save() {
  if (savedStep == trainer.stepCount())
    return {};
  struct stat sb;
  if (savedStep >= 0 && setup.lead && stat(opt.saveDir.c_str(), &sb) != 0)
    std::fprintf(stderr,
                 "lcc-run: warning: checkpoint directory %s was removed during the "
                 "run; it is created again\n",
                 opt.saveDir.c_str());
  Status st;
  if (job.active()) {
    st =
        saveShardedCheckpoint(job, opt.saveDir, trainer.stepCount(), trainer, setup.meta, opt.keep);
  } else {
    // One process: whole tensors (a ZeRO train.bin's 1-rank variant still
    // holds pieces, of one part each).
    SafetensorsFile whole;
    if (st = wholeSnapshot(job, trainer, true, setup.meta, whole); st)
      st = saveCheckpoint(opt.saveDir, trainer.stepCount(), std::move(whole), opt.keep);
  }
  if (st)
    savedStep = trainer.stepCount();
  return st;
}

// A checkpoint that could not be written: --on-save-error decides.
bool Loop::saveFailed(int64_t s, const Status &st) {
  std::string name, kept = "there is no earlier checkpoint";
  if (latestCheckpoint(opt.saveDir, name))
    kept = opt.saveDir + "/" + name + " is still the latest";
  std::string what =
      "cannot save the checkpoint of step " + std::to_string(s) + ": " + st.message() + "; " + kept;
  if (opt.continueAfterSaveError) {
    if (setup.lead)
      std::fprintf(stderr, "lcc-run: warning: %s; training goes on (--on-save-error=continue)\n",
                   what.c_str());
    return true;
  }
  return failWith("lcc-run: error: " + what + " (--on-save-error=continue trains on)", 2);
}

// Logs, evaluates and saves after step r.step.
bool Loop::handle(const StepResult &r) {
  const int64_t s = r.step;
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  out.lastLoss = r.loss;
  if (nonFinite(r)) { // reported (process); metrics files hold finite values
    if (saveAt(s))
      if (Status st = save(); !st)
        return saveFailed(s, st);
    return true;
  }
  MetricsRow row{s, r.loss, r.lr, r.gradNorm, 0, std::nullopt, elapsed};
  row.tokensPerSec =
      double(setup.stepFeed->tokensPerStep() * (s - out.first + 1)) / std::max(elapsed, 1e-9);
  bool evalNow = evalAt(s);
  if (evalNow) {
    if (Status st = evaluate(trainer, *setup.val, *setup.evalFeed, setup.evalBatches, out.lastVal);
        !st)
      return failWith("lcc-run: internal error: " + st.message(), 3);
    row.valLoss = out.lastVal;
  }
  out.rows.push_back(row);
  if (setup.csv->isOpen())
    if (Status st = setup.csv->append(row); !st)
      return failWith("lcc-run: error: " + st.message(), 2);
  if (setup.tensorboard->isOpen()) {
    std::vector<ScalarPoint> points = {{"train/loss", r.loss},
                                       {"train/lr", r.lr},
                                       {"train/grad_norm", r.gradNorm},
                                       {"train/tokens_per_s", row.tokensPerSec}};
    if (r.lossScale > 0)
      points.emplace_back("train/loss_scale", r.lossScale);
    if (row.valLoss)
      points.emplace_back("val/loss", *row.valLoss);
    if (Status st = setup.tensorboard->scalars(s, points); !st)
      return failWith("lcc-run: error: " + st.message(), 2);
  }
  if (!opt.quiet && (s % opt.logEvery == 0 || s == out.first || s == opt.steps || evalNow)) {
    double perStep = elapsed / double(s - out.first + 1);
    std::printf("step %6lld/%lld | loss %.4f | lr %.2e | gnorm %.3f | %8.0f tok/s | ETA %s",
                static_cast<long long>(s), static_cast<long long>(opt.steps), r.loss, r.lr,
                r.gradNorm, row.tokensPerSec,
                formatDuration(perStep * double(opt.steps - s)).c_str());
    if (row.valLoss)
      std::printf(" | val %.4f", *row.valLoss);
    if (r.lossScale > 0) // fp16: a non-finite norm means the step was skipped
      std::printf(" | scale %g%s", r.lossScale,
                  std::isfinite(r.gradNorm) ? "" : " | skipped (overflow)");
    std::printf("\n");
    std::fflush(stdout);
  }
  if (saveAt(s))
    if (Status st = save(); !st)
      return saveFailed(s, st);
  return true;
}

// Agrees with the other ranks on whether to stop (a preemption signal
// reached any of them) and on which steps of `done` had a loss or gradient
// norm that is not finite on any of them, applies --on-nan to those, then
// handles each result.
bool Loop::process(std::vector<StepResult> &done, bool &stop) {
  std::vector<int32_t> flags = {preemptionSignal()};
  for (const StepResult &r : done)
    flags.push_back(nonFinite(r));
  if (Status st = agree(job, flags); !st)
    return failWith("lcc-run: error: " + st.message(), 4);
  stop = flags[0] != 0;
  out.stopSignal = out.stopSignal ? out.stopSignal : flags[0];
  for (size_t i = 0; i < done.size(); ++i) {
    if (!flags[i + 1])
      continue;
    const StepResult &r = done[i];
    std::string what = nonFinite(r)
                           ? "the loss is " + numberText(r.loss) + " and the gradient norm " +
                                 numberText(r.gradNorm) + " at step " + std::to_string(r.step)
                           : "the loss or gradient norm is not finite at step " +
                                 std::to_string(r.step) + " (on another rank)";
    if (opt.onNan == NanPolicy::Stop)
      return failWith(setup.lead ? "lcc-run: error: " + what +
                                       "; lower --lr or check the data (--on-nan=skip skips "
                                       "such steps)"
                                 : "",
                      2);
    // (Skip runs step by step: `done` is the last step alone.)
    if (opt.onNan == NanPolicy::Skip)
      if (Status st = trainer.undoLastStep(); !st)
        return failWith("lcc-run: internal error: " + st.message(), 3);
    ++out.nonFiniteSteps;
    if (setup.lead)
      std::fprintf(stderr, "lcc-run: warning: %s: %s (--on-nan=%s)\n", what.c_str(),
                   opt.onNan == NanPolicy::Skip ? "update undone" : "training goes on",
                   opt.onNan == NanPolicy::Skip ? "skip" : "continue");
  }
  for (const StepResult &r : done)
    if (!handle(r))
      return false;
  return true;
}

int Loop::run() {
  Feed &feed = *setup.stepFeed;
  out.first = trainer.stepCount() + 1;
  start = Clock::now();
  // Fault injection for the tests (docs/distributed.md): LCC_RUN_KILL=R:S
  // makes rank R kill itself (SIGKILL) when step S starts, while the other
  // ranks are inside the step's collectives; R:S:stop stops it instead
  // (SIGSTOP: a stuck rank, alive but silent).
  // R:S:term sends it SIGTERM (a preemption, Preemption.h). LCC_RUN_AT_STEP=
  // S:COMMAND runs a shell command on rank 0 when step S starts (storage
  // faults: a disk filled, made read-only or removed at a known step).
  long long killRank = -1, killStep = -1, hookStep = -1;
  char killHow[8] = "";
  if (const char *k = std::getenv("LCC_RUN_KILL"))
    std::sscanf(k, "%lld:%lld:%7s", &killRank, &killStep, killHow);
  std::string hook;
  if (const char *h = std::getenv("LCC_RUN_AT_STEP"); h && std::strchr(h, ':')) {
    hookStep = std::atoll(h);
    hook = std::strchr(h, ':') + 1;
  }
  // Each step's results arrive in step order: on a GPU one step late (the
  // next step is queued before the host reads them, so it never waits for
  // the GPU between steps), except where the host needs the step done:
  // evaluation, a checkpoint, the last step. LCC_RUN_LATE_RESULTS=1 makes
  // a CPU run deliver them the GPU's way (the tests compare both).
  if (const char *late = std::getenv("LCC_RUN_LATE_RESULTS"); late && *late == '1')
    trainer.setLateResults(true);
  auto failed = [&] { return error.empty() ? code : (fail(error), code); };
  // --on-nan=skip undoes a step right after it: its results cannot wait.
  const bool stepByStep = opt.onNan == NanPolicy::Skip;
  bool stop = false;
  for (int64_t s = out.first; s <= opt.steps && !stop; ++s) {
    if (s == killStep && job.rank == killRank)
      std::raise(std::strcmp(killHow, "stop") == 0   ? SIGSTOP
                 : std::strcmp(killHow, "term") == 0 ? SIGTERM
                                                     : SIGKILL);
    if (s == hookStep && job.rank == 0 && std::system(hook.c_str()) != 0)
      std::fprintf(stderr, "lcc-run: LCC_RUN_AT_STEP: '%s' failed\n", hook.c_str());
    for (int64_t k = 0; k < feed.micro; ++k)
      fill(*setup.train, uint64_t((s - 1) * feed.micro + k), k, feed);
    std::vector<StepResult> done;
    Status st = trainer.startStep(inputsOf(feed), done);
    if (st && (stepByStep || evalAt(s) || saveAt(s) || s == opt.steps))
      st = trainer.finishSteps(done);
    if (!st)
      return fail("lcc-run: internal error: " + st.message()), 3;
    if (!process(done, stop))
      return failed();
    if (stop) { // the step in flight (a GPU's) finishes, and is handled, first
      std::vector<StepResult> rest;
      if (Status st = trainer.finishSteps(rest); !st)
        return fail("lcc-run: internal error: " + st.message()), 3;
      bool again = false;
      if (!process(rest, again))
        return failed();
    }
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (!opt.saveDir.empty())
    if (Status st = save(); !st) {
      opt.continueAfterSaveError = false; // the last save: nothing comes after it
      saveFailed(trainer.stepCount(), st);
      return failed();
    }
  return 0;
}

} // namespace

int trainSteps(Options &opt, Trainer &trainer, const DistributedRun &job, const LoopSetup &setup,
               LoopResult &out) {
  return Loop(opt, trainer, job, setup, out).run();
}

} // namespace lcc::run
