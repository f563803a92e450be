//===- AutoRecompute.cpp - --recompute=auto for one compiled variant ------===//
#include "compiler/package/RecomputeChoice.h"
#include "runtime/cpu/CpuProgram.h"
#include "tools/lcc/TrainFlags.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace lcc::driver {

std::string chooseRecompute(
    mlir::ModuleOp module, TrainStepOptions &t, const std::string &where,
    llvm::function_ref<llvm::Expected<Package>(mlir::ModuleOp, const TrainStepOptions &)> compile) {
  int64_t layers =
      int64_t(layerInstances(module.lookupSymbol<mlir::func::FuncOp>(t.function)).size());
  // Each rung compiled on a copy of the model and its plan read: what
  // lcc-run will allocate, not an estimate.
  auto measure = [&](const RecomputeRung &rung) -> llvm::Expected<RecomputeTrial> {
    mlir::OwningOpRef<mlir::ModuleOp> trial = module.clone();
    TrainStepOptions r = t;
    r.recompute = rung.mode;
    r.recomputeLayers = rung.layers;
    auto compiled = compile(*trial, r);
    if (!compiled)
      return compiled.takeError();
    return RecomputeTrial{rung, memoryPlanBytes(compiled->manifest),
                          recomputedFlops(compiled->manifest)};
  };
  std::vector<RecomputeTrial> tried;
  auto chosen = lcc::chooseRecompute(layers, memBudget, measure, tried);
  if (!chosen)
    return (where.empty() ? "" : where + ": ") + llvm::toString(chosen.takeError());
  t.recompute = chosen->rung.mode;
  t.recomputeLayers = chosen->rung.layers;
  // Always said, --quiet or not: it is a decision the user did not write.
  llvm::raw_ostream &os = llvm::outs();
  os << "--recompute=auto" << (where.empty() ? "" : " (" + where + ")") << ": "
     << describeRung(chosen->rung, layers) << ", plan " << formatBytes(chosen->planBytes)
     << " per rank (--mem=" << formatBytes(memBudget) << "), "
     << llvm::format("%.3g", double(chosen->flops) * 1e-9) << " GFLOP more per micro-batch\n"
     << "  tried:";
  for (const RecomputeTrial &trial : tried)
    os << (&trial == &tried.front() ? " " : "; ") << describeRung(trial.rung, layers) << " "
       << formatBytes(trial.planBytes);
  os << "\n";
  return "";
}

} // namespace lcc::driver
