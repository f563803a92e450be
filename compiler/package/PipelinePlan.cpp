//===- PipelinePlan.cpp - what lcc --plan says about pipeline stages ------===//
#include "compiler/package/PipelinePlan.h"

#include "passes/pipeline/PipelineStep.h"
#include "runtime/support/AtomicFile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;
using namespace lcc::pipeline;

namespace lcc {

namespace {

/// What lcc-partition-pipeline left on the rank's model function (one
/// entry per stage: where.stages() of them).
struct StageInfo {
  StageOf where;
  std::vector<int64_t> costs, inFlight;
  std::vector<std::string> layers;
};

std::optional<StageInfo> stageInfo(ModuleOp module) {
  auto fn = module.lookupSymbol<func::FuncOp>("forward");
  std::optional<StageOf> where = fn ? stageOf(fn) : std::nullopt;
  auto costs = fn ? fn->getAttrOfType<ArrayAttr>("lcc.stage_costs") : ArrayAttr();
  auto held = fn ? fn->getAttrOfType<ArrayAttr>("lcc.stage_in_flight") : ArrayAttr();
  auto layers = fn ? fn->getAttrOfType<ArrayAttr>("lcc.stage_layers") : ArrayAttr();
  if (!where || !costs || !held || !layers)
    return std::nullopt;
  StageInfo info;
  info.where = *where;
  for (Attribute a : costs)
    info.costs.push_back(llvm::cast<IntegerAttr>(a).getInt());
  for (Attribute a : held)
    info.inFlight.push_back(llvm::cast<IntegerAttr>(a).getInt());
  for (Attribute a : layers)
    info.layers.push_back(llvm::cast<StringAttr>(a).str());
  if (int64_t(info.costs.size()) != info.where.stages())
    return std::nullopt;
  return info;
}

/// Forward 1, backward 2 (input and weight gradients 1 each), scaled per
/// stage by its cost over the most expensive stage's.
Costs stageCosts(const StageInfo &info) {
  Costs c;
  int64_t most = std::max<int64_t>(1, *std::max_element(info.costs.begin(), info.costs.end()));
  for (int64_t cost : info.costs)
    c.stageScale.push_back(double(cost) / double(most));
  return c;
}

llvm::Expected<Simulation> simulated(const StageInfo &info, llvm::StringRef schedule,
                                     int64_t microbatches, const Costs &costs) {
  std::optional<ScheduleKind> kind = parseScheduleKind(schedule);
  if (!kind)
    return llvm::createStringError("unknown schedule '" + schedule.str() + "'");
  llvm::Expected<Schedule> built =
      buildSchedule(*kind, info.where.ranks, microbatches, info.where.virtualStages);
  if (!built)
    return built.takeError();
  return simulate(*built, costs);
}

} // namespace

std::string pipelinePlanReport(ModuleOp module, llvm::StringRef schedule, int64_t microbatches) {
  std::optional<StageInfo> info = stageInfo(module);
  if (!info)
    return "";
  std::string out;
  llvm::raw_string_ostream os(out);
  if (info->where.rank == 0) {
    std::optional<ScheduleKind> kind = parseScheduleKind(schedule);
    double formula =
        kind ? formulaBubble(*kind, info->where.ranks, microbatches, info->where.virtualStages) : 0;
    os << "pipeline: " << info->where.stages() << " stages";
    if (info->where.virtualStages > 1)
      os << " on " << info->where.ranks << " ranks (" << info->where.virtualStages << " each)";
    os << ", " << schedule << ", " << microbatches << " micro-batches: bubble "
       << llvm::format("%.3f", formula) << " (the schedule's formula, balanced stages)";
    if (llvm::Expected<Simulation> sim =
            simulated(*info, schedule, microbatches, stageCosts(*info)))
      os << ", " << llvm::format("%.3f", sim->bubble) << " simulated with these stages' costs";
    else
      llvm::consumeError(sim.takeError());
    os << "\n";
  }
  // The rank's stages (one unless interleaved), then what it holds: with
  // several stages, a micro-batch in flight on each counts once per stage.
  for (int64_t c = 0; c < info->where.virtualStages; ++c) {
    size_t s = size_t(info->where.stageOfChunk(c));
    os << "pipeline stage " << s << " of " << info->where.stages();
    if (info->where.virtualStages > 1)
      os << " (rank " << info->where.rank << ")";
    os << ": layers " << info->layers[s] << "; "
       << llvm::format("%.3f", double(info->costs[s]) / 1e9)
       << " GFLOP per micro-batch (forward and backward)";
    if (c + 1 < info->where.virtualStages)
      os << "\n";
  }
  int64_t held = info->inFlight[size_t(info->where.rank)];
  os << "; activations of " << held
     << (info->where.virtualStages > 1 ? held == 1 ? " micro-batch stage" : " micro-batch stages"
         : held == 1                   ? " micro-batch"
                                       : " micro-batches")
     << " in flight at the peak (in the arena below)\n";
  return out;
}

llvm::Error writeSchedulePicture(ModuleOp module, llvm::StringRef schedule, int64_t microbatches,
                                 const std::string &path) {
  std::optional<StageInfo> info = stageInfo(module);
  if (!info)
    return llvm::createStringError("--schedule-picture needs --pp > 1");
  llvm::Expected<Simulation> sim = simulated(*info, schedule, microbatches, stageCosts(*info));
  if (!sim)
    return sim.takeError();
  // 40 pixels per unit of time (a balanced stage's forward), 30 per rank.
  const double unit = 40, row = 30, left = 60;
  double width = left + sim->makespan * unit + 10, height = row * double(info->where.ranks) + 40;
  std::string svg;
  llvm::raw_string_ostream os(svg);
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << int(width) << "\" height=\""
     << int(height) << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  os << "<text x=\"4\" y=\"" << int(height - 10) << "\">" << schedule << ", "
     << info->where.stages() << " stages on " << info->where.ranks << " ranks, " << microbatches
     << " micro-batches: bubble " << llvm::format("%.3f", sim->bubble) << " (blank: idle)</text>\n";
  for (int64_t r = 0; r < info->where.ranks; ++r)
    os << "<text x=\"4\" y=\"" << int(row * double(r) + 20) << "\">rank " << r << "</text>\n";
  for (const Simulation::Block &b : sim->blocks) {
    const char *fill = "#4e79a7", *label = "F"; // forward: blue
    if (b.kind == Action::Backward)
      fill = "#59a14f", label = "B"; // green
    else if (b.kind == Action::BackwardInput)
      fill = "#76b7b2", label = "I"; // teal
    else if (b.kind == Action::BackwardWeight)
      fill = "#f28e2b", label = "W"; // orange
    // A rank's later stages (interleaved) paler, as Megatron draws them.
    int64_t chunk = b.stage / info->where.ranks;
    double opacity = info->where.virtualStages > 1
                         ? 1.0 - 0.5 * double(chunk) / double(info->where.virtualStages - 1)
                         : 1.0;
    double x = left + b.start * unit, w = (b.end - b.start) * unit;
    int y = int(row) * int(b.rank) + 5;
    os << "<rect x=\"" << llvm::format("%.1f", x) << "\" y=\"" << y << "\" width=\""
       << llvm::format("%.1f", w) << "\" height=\"" << int(row) - 8 << "\" fill=\"" << fill
       << "\" fill-opacity=\"" << llvm::format("%.2f", opacity) << "\" stroke=\"white\"/>\n";
    os << "<text x=\"" << llvm::format("%.1f", x + w / 2) << "\" y=\"" << y + 15
       << "\" text-anchor=\"middle\" fill=\"white\">" << label << b.microbatch << "</text>\n";
  }
  os << "</svg>\n";
  if (Status st = writeFileAtomically(path, svg.data(), svg.size()); !st)
    return llvm::createStringError(st.message());
  return llvm::Error::success();
}

} // namespace lcc
