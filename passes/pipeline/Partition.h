//===- Partition.h - pipeline stages balanced by cost and memory -*- C++ -*-===//
//
// Where a pipeline cuts the model: the forward is a sequence of pieces in
// order (what runs before the first layer, one piece per layer, what runs
// after the last), and a stage is a run of consecutive pieces. Cuts fall
// only between two layers, so the embedding stays with the first stage and
// the head and loss with the last, and every stage runs at least one layer.
//
// A stage's time is the sum of its pieces' costs (forward and backward); its
// memory is the state its pieces own (parameters, gradients, optimizer
// state) plus the activations its backward keeps, times the micro-batches
// the schedule has in flight on it at its peak (1F1B: P - rank; from
// simulate()), so the first stages of a 1F1B pipeline hold the most.
//
// balanceStages minimizes the slowest stage's time, then, among the cuts
// that reach it, the largest stage's memory; a memory limit restricts both
// to the cuts under it. Both are exact (dynamic programming over cut
// points, O(pieces^2 * stages)).
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_PIPELINE_PARTITION_H
#define LCC_PASSES_PIPELINE_PARTITION_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lcc::pipeline {

struct Piece {
  std::string name; // "embedding", "h.3", "head": for messages
  bool layer = false;
  double cost = 0;             // forward + backward, any consistent unit (FLOPs)
  int64_t stateBytes = 0;      // parameters, their gradients and optimizer state
  int64_t activationBytes = 0; // kept for the backward, per micro-batch
};

struct StagePlan {
  std::vector<size_t> first; // per stage, the index of its first piece
  std::vector<double> cost;  // per stage
  std::vector<int64_t> memory;
};

/// The cut of `pieces` into `inFlight.size()` stages (stage s holds
/// `inFlight[s]` micro-batches' activations at its peak) described above.
/// Fails when there are fewer layers than stages, or when no cut keeps
/// every stage under `memoryLimit` (naming the least limit that would do).
llvm::Expected<StagePlan> balanceStages(llvm::ArrayRef<Piece> pieces,
                                        llvm::ArrayRef<int64_t> inFlight,
                                        std::optional<int64_t> memoryLimit = std::nullopt);

/// The stages a user asked for: stage s > 0 starts at layer piece
/// `firstLayers[s - 1]` (counted among the layers: 0 is the first layer).
/// Fails when the boundaries do not increase, fall outside the layers, or
/// leave a stage without a layer.
llvm::Expected<StagePlan> stagesAt(llvm::ArrayRef<Piece> pieces, llvm::ArrayRef<int64_t> inFlight,
                                   llvm::ArrayRef<int64_t> firstLayers);

} // namespace lcc::pipeline

#endif
