//===- DistributedPlan.h - per-rank model states and traffic ----*- C++ -*-===//
//
// `lcc --plan --shard=MODE --world=N` answers "does it fit, and what does it
// cost" for any world size without lowering the model: the sharded
// @train_step already says what each rank holds (its argument types) and
// what it communicates (its collective ops). So the report works on models
// far too large to compile here (a 7.5B-parameter GPT at 64 ranks).
//
// Model states are counted as the ZeRO paper does (Rajbhandari et al. 2020,
// section 3.1): parameters, gradients and optimizer state per rank. With
// `precision` fp32 the bytes are the step's own (4-byte parameters and
// gradients, AdamW's two 4-byte moments: K = 8); with bf16 or fp16 they are
// the paper's mixed-precision accounting (2-byte parameters and gradients,
// K = 12 bytes of optimizer state per parameter: fp32 master copy, momentum
// and variance), so the numbers compare with the paper's Figure 1.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_COMPILER_PACKAGE_DISTRIBUTEDPLAN_H
#define LCC_COMPILER_PACKAGE_DISTRIBUTEDPLAN_H

#include "passes/Modes.h"

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <string>

namespace lcc {

struct DistributedPlan {
  ShardMode mode = ShardMode::None;
  int64_t world = 1;
  Precision precision = Precision::FP32;
  std::string groups;           // "dp=2 x tp=2" (the module's process groups)
  int64_t parameters = 0;       // trainable parameters of the whole model (Psi)
  // Per rank, in bytes under `precision`'s accounting.
  int64_t paramBytes = 0, gradBytes = 0, stateBytes = 0;
  int64_t frozenBytes = 0;
  // Bytes each rank sends per step (ring algorithms), and the same in units
  // of Psi elements (the paper's "communication volume": 2 Psi for data
  // parallelism, 3 Psi for ZeRO-3).
  int64_t sentBytes = 0;
  double volumeInPsi = 0;
  int64_t collectives = 0;      // collective ops per step
};

/// The plan of a module after lcc-build-train-step and the sharding pass of
/// `mode`, for `world` ranks.
DistributedPlan planDistributed(mlir::ModuleOp module, ShardMode mode, int64_t world,
                                Precision precision);

/// The report `lcc --plan` prints.
std::string distributedPlanReport(const DistributedPlan &plan);

} // namespace lcc

#endif
