//===- PartitionPipeline.cpp - pipeline stages of a model function --------===//
//
// See Passes.td (lcc-partition-pipeline) for what a piece is and how its
// cost and memory are counted. This file reads the pieces from the IR; the
// cut itself is passes/pipeline/Partition.h's, the activations in flight
// the schedule simulator's.
//
//===----------------------------------------------------------------------===//
#include "dialects/lcc/LccOps.h"
#include "passes/pipeline/Partition.h"
#include "passes/pipeline/Passes.h"
#include "passes/pipeline/Schedule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"

namespace lcc {
#define GEN_PASS_DEF_LCCPARTITIONPIPELINEPASS
#include "passes/pipeline/Passes.h.inc"
} // namespace lcc

using namespace mlir;
using namespace lcc::pipeline;

namespace {

/// FLOPs of one execution of `op` (nested ops included), from the cost
/// interface; 0 for ops without one.
int64_t flopsOf(Operation *op) {
  int64_t n = 0;
  op->walk([&](Operation *nested) {
    if (auto cost = llvm::dyn_cast<lcc::CostOpInterface>(nested))
      n += cost.getFlops();
  });
  return n;
}

struct LccPartitionPipelinePass
    : lcc::impl::LccPartitionPipelinePassBase<LccPartitionPipelinePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto fn = module.lookupSymbol<func::FuncOp>(function);
    if (!fn || fn.isExternal()) {
      module.emitError() << "lcc-partition-pipeline: no function @" << function
                         << " with a body to cut into stages";
      return signalPassFailure();
    }
    if (stages < 1 || virtualStages < 1 || stages % virtualStages) {
      fn.emitError() << "lcc-partition-pipeline: " << int64_t(stages)
                     << " stages cannot be spread evenly as " << int64_t(virtualStages)
                     << " per rank";
      return signalPassFailure();
    }

    // The pieces, and the piece of every op of the body.
    std::vector<Piece> pieces;
    std::vector<std::pair<Operation *, size_t>> pieceOf; // per op of the body, in order
    Block &body = fn.getBody().front();
    Operation *lastLayerOp = nullptr;
    for (Operation &op : body.without_terminator())
      if (lcc::layerOf(op.getLoc()))
        lastLayerOp = &op;
    llvm::StringMap<size_t> layerPiece;
    bool afterLast = false;
    for (Operation &op : body.without_terminator()) {
      std::optional<lcc::LayerKey> key = lcc::layerOf(op.getLoc());
      size_t piece;
      if (key) {
        auto [it, fresh] = layerPiece.try_emplace(key->instance, pieces.size());
        if (fresh) {
          pieces.push_back({key->instance, true, 0, 0, 0});
        } else if (it->second + 1 != pieces.size()) {
          op.emitError() << "lcc-partition-pipeline: the ops of layer " << key->instance
                         << " are not contiguous in @" << function << " (this one follows layer "
                         << pieces.back().name << "), so no stage boundary can separate them";
          return signalPassFailure();
        }
        piece = it->second;
      } else if (pieces.empty() || afterLast) {
        // Before the first layer, or after the last: the embedding's and the
        // head's pieces.
        if (pieces.empty() || pieces.back().layer)
          pieces.push_back(
              {pieces.empty() ? "before the first layer" : "after the last layer", false, 0, 0, 0});
        piece = pieces.size() - 1;
      } else {
        piece = pieces.size() - 1; // between layers: with the layer before
      }
      pieceOf.push_back({&op, piece});
      if (&op == lastLayerOp)
        afterLast = true;
    }

    // Costs, state and activations per piece.
    llvm::DenseSet<Value> counted;
    for (auto [op, piece] : pieceOf) {
      Piece &p = pieces[piece];
      p.cost += 3.0 * double(flopsOf(op));
      for (Value v : op->getOperands()) {
        auto arg = llvm::dyn_cast<BlockArgument>(v);
        if (arg && arg.getOwner() == &body && fn.getArgAttr(arg.getArgNumber(), "lcc.param") &&
            counted.insert(v).second)
          p.stateBytes += 4 * lcc::staticBytes(v.getType());
      }
      for (Type t : op->getResultTypes())
        p.activationBytes += lcc::staticBytes(t);
    }

    // The activations each stage holds at the schedule's peak.
    std::optional<ScheduleKind> kind = parseScheduleKind(schedule);
    if (!kind) {
      fn.emitError() << "lcc-partition-pipeline: unknown schedule '" << schedule
                     << "' (gpipe, 1f1b, interleaved or zb-h1)";
      return signalPassFailure();
    }
    int64_t ranks = stages / virtualStages;
    int64_t m = microbatches > 0 ? int64_t(microbatches) : 4 * ranks;
    llvm::Expected<Schedule> built = buildSchedule(*kind, ranks, m, virtualStages);
    llvm::Expected<Simulation> sim =
        built ? simulate(*built) : llvm::Expected<Simulation>(built.takeError());
    if (!sim) {
      fn.emitError() << "lcc-partition-pipeline: " << llvm::toString(sim.takeError());
      return signalPassFailure();
    }
    std::vector<int64_t> inFlight;
    for (int64_t s = 0; s < stages; ++s)
      inFlight.push_back(sim->inFlight[size_t(s % ranks)]);

    llvm::Expected<StagePlan> plan =
        stageStarts.empty()
            ? balanceStages(pieces, inFlight,
                            memoryLimit > 0 ? std::optional<int64_t>(memoryLimit) : std::nullopt)
            : stagesAt(pieces, inFlight, stageStarts);
    if (!plan) {
      fn.emitError() << "lcc-partition-pipeline: @" << function << ": "
                     << llvm::toString(plan.takeError());
      return signalPassFailure();
    }

    // Stage of each piece, then of each op; per stage (for lcc --plan) its
    // cost, memory, layers and micro-batches in flight.
    Builder b(&getContext());
    std::vector<int64_t> stageOf(pieces.size());
    SmallVector<Attribute> costs, bytes, layerNames, held;
    for (size_t s = 0; s < plan->first.size(); ++s) {
      size_t end = s + 1 < plan->first.size() ? plan->first[s + 1] : pieces.size();
      std::string layers;
      for (size_t i = plan->first[s]; i < end; ++i) {
        stageOf[i] = int64_t(s);
        if (pieces[i].layer)
          layers += (layers.empty() ? "" : ", ") + pieces[i].name;
      }
      costs.push_back(b.getI64IntegerAttr(int64_t(plan->cost[s])));
      bytes.push_back(b.getI64IntegerAttr(plan->memory[s]));
      layerNames.push_back(b.getStringAttr(layers));
      held.push_back(b.getI64IntegerAttr(inFlight[s]));
    }
    for (auto [op, piece] : pieceOf)
      op->setAttr("lcc.stage", b.getI64IntegerAttr(stageOf[piece]));
    fn->setAttr("lcc.stage_costs", b.getArrayAttr(costs));
    fn->setAttr("lcc.stage_bytes", b.getArrayAttr(bytes));
    fn->setAttr("lcc.stage_layers", b.getArrayAttr(layerNames));
    fn->setAttr("lcc.stage_in_flight", b.getArrayAttr(held));
    if (!explain)
      return;
    for (size_t s = 0; s < plan->first.size(); ++s) {
      StringRef layers = llvm::cast<StringAttr>(layerNames[s]).getValue();
      fn.emitRemark() << "stage " << s << ": layers " << layers << "; cost "
                      << int64_t(plan->cost[s]) << " FLOPs, " << plan->memory[s] << " bytes with "
                      << inFlight[s] << " micro-batches in flight";
    }
  }
};

} // namespace
