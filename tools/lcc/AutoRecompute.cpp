//===- AutoRecompute.cpp - --recompute=auto for one compiled variant ------===//
#include "compiler/package/RecomputeChoice.h"
#include "runtime/cpu/CpuProgram.h"
#include "tools/lcc/TrainFlags.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace lcc::driver {

std::string chooseRecompute(
    mlir::ModuleOp module, TrainStepOptions &t, const std::string &where,
    llvm::function_ref<llvm::Expected<Package>(mlir::ModuleOp, const TrainStepOptions &)> compile,
    std::optional<Package> &chosen) {
  int64_t layers =
      int64_t(layerInstances(module.lookupSymbol<mlir::func::FuncOp>(t.function)).size());
  // Each rung compiled on a copy of the model and its plan read: what
  // lcc-run will allocate, not an estimate. The packages are kept until the
  // choice is made (a handful: 3 + log2 of the layers).
  std::vector<std::pair<RecomputeRung, Package>> packages;
  auto measure = [&](const RecomputeRung &rung) -> llvm::Expected<RecomputeTrial> {
    mlir::OwningOpRef<mlir::ModuleOp> copy = module.clone();
    TrainStepOptions r = t;
    r.recompute = rung.mode;
    r.recomputeLayers = rung.layers;
    auto compiled = compile(*copy, r);
    if (!compiled)
      return compiled.takeError();
    RecomputeTrial trial{rung, memoryPlanBytes(compiled->manifest),
                         recomputedFlops(compiled->manifest)};
    packages.emplace_back(rung, std::move(*compiled));
    return trial;
  };
  std::vector<RecomputeTrial> tried;
  auto best = lcc::chooseRecompute(layers, memBudget, measure, tried);
  if (!best)
    return (where.empty() ? "" : where + ": ") + llvm::toString(best.takeError());
  t.recompute = best->rung.mode;
  t.recomputeLayers = best->rung.layers;
  for (auto &[rung, package] : packages)
    if (rung.mode == best->rung.mode && rung.layers == best->rung.layers)
      chosen = std::move(package);
  // Always said, --quiet or not: it is a decision the user did not write.
  llvm::raw_ostream &os = llvm::outs();
  os << "--recompute=auto" << (where.empty() ? "" : " (" + where + ")") << ": "
     << describeRung(best->rung, layers) << ", plan " << formatBytes(best->planBytes)
     << " per rank (--mem=" << formatBytes(memBudget) << "), "
     << llvm::format("%.3g", double(best->flops) * 1e-9) << " GFLOP more per micro-batch\n"
     << "  tried:";
  for (const RecomputeTrial &trial : tried)
    os << (&trial == &tried.front() ? " " : "; ") << describeRung(trial.rung, layers) << " "
       << formatBytes(trial.planBytes);
  os << "\n";
  return "";
}

} // namespace lcc::driver
