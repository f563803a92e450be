//===- PipelinePlan.h - what lcc --plan says about pipeline stages -*- C++ -*-===//
//
// A stage's program (lcc --pp) after the train-step phase carries its cut:
// lcc-partition-pipeline's per-stage layers, costs and micro-batches in
// flight on the model function. This reports them with the schedule's
// bubble, and draws the schedule as the papers do.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_COMPILER_PACKAGE_PIPELINEPLAN_H
#define LCC_COMPILER_PACKAGE_PIPELINEPLAN_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace lcc {

/// "pipeline stage S of P: layers ...; cost; micro-batches held" for the
/// stage program `module`, and before stage 0's the schedule's line: its
/// bubble by the literature's formula and by simulation with the stages'
/// costs. Empty when `module` is no stage.
std::string pipelinePlanReport(mlir::ModuleOp module, llvm::StringRef schedule,
                               int64_t microbatches);

/// Writes the per-rank timeline of `schedule` on the stages of `module`
/// (their costs; the backward twice the forward, split in halves when the
/// schedule splits it) to `path` as SVG: one row per rank, F, B, I and W
/// blocks numbered by micro-batch, idle time blank.
llvm::Error writeSchedulePicture(mlir::ModuleOp module, llvm::StringRef schedule,
                                 int64_t microbatches, const std::string &path);

} // namespace lcc

#endif
