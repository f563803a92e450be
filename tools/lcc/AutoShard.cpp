//===- AutoShard.cpp - --shard=auto: plan, print the table, pick the best -===//
#include "compiler/package/PlannerProbe.h"
#include "compiler/package/RecomputeChoice.h"
#include "runtime/cpu/CpuProgram.h"
#include "tools/lcc/TrainFlags.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace mlir;

namespace lcc::driver {

std::string planShardAuto(AotOptions aot, std::map<std::string, int64_t> &overrides, bool verify,
                          ImportAt import) {
  auto start = std::chrono::steady_clock::now();
  auto cluster = planner::loadCluster(clusterFlag);
  if (!cluster)
    return "--cluster: " + llvm::toString(cluster.takeError());
  auto model = import(overrides);
  if (!model)
    return llvm::toString(model.takeError());
  // The probes are the model at 1 and 2 layers and micro-batch b: the
  // config must name those sizes.
  auto constant = [&](llvm::StringRef name) { return configConstant(**model, name); };
  int64_t layers = constant("layers"), batch = constant("batch"), seq = constant("seq");
  if (layers < 1 || batch < 1 || seq < 1)
    return "--shard=auto needs a .lcc model whose config sets `layers`, `batch` and `seq`: it "
           "compiles probes of 1 and 2 layers and sets the micro-batch";
  planner::Problem problem = plannerChoices();
  problem.cluster = *cluster;
  problem.layers = layers;
  problem.seq = seq;
  problem.globalBatch = globalBatchFlag > 0 ? int64_t(globalBatchFlag) : batch * problem.world;
  double elementBytes = modes.precision == Precision::FP32 ? 4 : 2;
  double features = double(constant("dim"));
  int64_t builds = 0, plans = 0;
  double planSeconds = 0; // of the probes compiled to their memory plan
  auto measure = [&](const planner::ProbeKey &key, int64_t probeLayers, int64_t micro,
                     bool plan) -> llvm::Expected<planner::Measurement> {
    std::map<std::string, int64_t> o = overrides;
    o["layers"] = probeLayers;
    o["batch"] = micro;
    auto probe = import(o);
    if (!probe)
      return probe.takeError();
    TrainStepOptions t = trainStepOptions();
    t.shard = key.shard;
    t.tp = key.tp;
    t.world = key.tp * key.dp;
    t.sequenceParallel = key.sequenceParallel;
    t.pp = 1;
    t.stage = 0;
    t.accum = 1;
    t.virtualStages = 1;
    t.stageStarts.clear();
    t.recompute = key.recompute;
    t.recomputeLayers = -1;
    MLIRContext *context = (**probe)->getContext();
    std::string why;
    // A probe that cannot be built rules its key out (tp that does not
    // divide the heads): its error is not the user's.
    ScopedDiagnosticHandler quiet(context, [&](Diagnostic &diag) {
      if (why.empty() && diag.getSeverity() == DiagnosticSeverity::Error)
        why = diag.str();
      return success();
    });
    PassManager pm(context);
    buildPipelineUpTo(pm, Phase::TrainStep, t);
    ++builds;
    if (failed(pm.run(**probe)))
      return llvm::createStringError("tp " + std::to_string(key.tp) + ": " + why);
    double stream =
        double(micro * seq) * features * elementBytes / double(key.sequenceParallel ? key.tp : 1);
    PackageOptions options;
    options.cpu = aot;
    plans += plan;
    auto planStart = std::chrono::steady_clock::now();
    auto m = planner::measureProbe(**probe, *cluster, key.tp, stream, plan, options);
    if (plan)
      planSeconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - planStart).count();
    return m;
  };
  auto ranked = planner::searchPlans(problem, measure);
  if (!ranked)
    return "--shard=auto: " + llvm::toString(ranked.takeError());
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double budget = problem.memBudget ? double(problem.memBudget) : cluster->memoryBytes;
  // Always printed, --quiet or not: the user asked for the choice.
  llvm::raw_ostream &os = llvm::outs();
  os << "--shard=auto: " << ranked->size() << " plans for " << problem.world << " ranks of "
     << cluster->name << ", " << problem.globalBatch << " x " << seq
     << " tokens per step, memory per rank " << formatBytes(int64_t(budget))
     << (problem.memBudget ? " (--mem)" : " (the device's)") << "\n"
     << planner::planTable(*ranked, size_t(std::max<int64_t>(1, planRowsFlag)))
     << "plan 1: " << planner::planBreakdown(ranked->front()) << "\n"
     << llvm::format("planned in %.2f s (%lld probes built, %lld memory plans compiled in "
                     "%.2f s)\n",
                     seconds, (long long)builds, (long long)plans, planSeconds);
  // The prediction extrapolates probes; the promise is the compiled plan's.
  // With a train.bin to write (`verify`), each candidate, best first, is
  // compiled to its memory plan (every pipeline stage's) until one fits;
  // --plan alone reports the prediction (models too large to compile here).
  auto compiledBytes = [&](const planner::Plan &plan) -> llvm::Expected<int64_t> {
    if (std::string e = applyPlan(plan); !e.empty())
      return llvm::createStringError("lcc refuses " + planner::describePlan(plan) + ": " + e);
    std::map<std::string, int64_t> o = overrides;
    o["batch"] = plan.micro;
    int64_t most = 0;
    for (int64_t stage = 0; stage < plan.pp; ++stage) {
      auto full = import(o);
      if (!full)
        return full.takeError();
      TrainStepOptions t = trainStepOptions();
      t.world = problem.world;
      t.stage = stage;
      PassManager pm((**full)->getContext());
      buildPipelineUpTo(pm, Phase::TrainStep, t);
      if (failed(pm.run(**full)))
        return llvm::createStringError("cannot build " + planner::describePlan(plan));
      PackageOptions options;
      options.cpu = aot;
      options.cpu.planOnly = true;
      auto package = compilePackage(**full, options);
      if (!package)
        return package.takeError();
      most = std::max(most, memoryPlanBytes(package->manifest));
    }
    return most;
  };
  const planner::Plan *best = nullptr;
  size_t tried = 0;
  for (planner::Plan &plan : *ranked) {
    if (!plan.fits || tried == 4)
      break;
    if (!verify) {
      best = &plan;
      break;
    }
    ++tried;
    auto bytes = compiledBytes(plan);
    if (!bytes)
      return "--shard=auto: " + llvm::toString(bytes.takeError());
    // The process: the compiled plan and the runtime's own memory.
    int64_t total = *bytes + int64_t(cluster->runtimeBytes);
    os << "plan " << (&plan - ranked->data()) + 1 << " compiles to " << formatBytes(total)
       << " per rank (" << formatBytes(*bytes) << " planned + "
       << formatBytes(int64_t(cluster->runtimeBytes)) << " runtime; predicted "
       << formatBytes(int64_t(plan.memoryBytes)) << ")\n";
    plan.memoryBytes = double(total);
    if (total <= budget) {
      best = &plan;
      break;
    }
  }
  if (!best) {
    const planner::Plan *smallest = &ranked->front();
    for (const planner::Plan &p : *ranked)
      if (p.memoryBytes < smallest->memoryBytes)
        smallest = &p;
    return "--shard=auto: no plan fits " + formatBytes(int64_t(budget)) +
           " per rank; the smallest, " + planner::describePlan(*smallest) + ", needs " +
           formatBytes(int64_t(smallest->memoryBytes)) + " (predicted)";
  }
  if (std::string e = applyPlan(*best); !e.empty())
    return "--shard=auto chose " + planner::describePlan(*best) + ", which lcc refuses: " + e;
  overrides["batch"] = best->micro;
  os << "compiling plan " << (best - ranked->data()) + 1 << ": --shard=" << modeName(best->shard)
     << " --tp=" << best->tp << " --pp=" << best->pp << " --set batch=" << best->micro
     << (best->pp > 1 ? " --microbatches=" : " --accum=") << best->microbatches
     << (best->pp > 1 ? " --pp-schedule=" + pipeline::scheduleName(best->schedule).str() : "")
     << (best->virtualStages > 1 ? " --virtual=" + std::to_string(best->virtualStages) : "")
     << " --recompute=" << modeName(best->recompute)
     << (best->sequenceParallel ? " --sequence-parallel" : "") << "\n";
  return "";
}

} // namespace lcc::driver
