//===- PlannerProbe.h - what the planner measures of a compiled probe -*- C++ -*-===//
//
// The IR side of `lcc --shard=auto` (compiler/package/Planner.h): the cost
// of a probe, a model cut to a few layers and compiled for one
// tensor-parallel group. Each op's time is the cost model's roofline of
// its CostOpInterface FLOPs and bytes, each collective's the alpha-beta time
// over the group's link; the bytes are the probe's compiled memory plan.
// Elementwise ops and views count as lcc-fuse runs them: a chain of them is
// one kernel that reads the chain's inputs and writes its outputs once.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_COMPILER_PACKAGE_PLANNERPROBE_H
#define LCC_COMPILER_PACKAGE_PLANNERPROBE_H

#include "compiler/package/Package.h"
#include "compiler/package/Planner.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace lcc::planner {

/// Seconds, FLOPs and collective bytes sent per rank of one function's ops
/// on `cluster`, its collectives over groups of `groupSize` adjacent ranks.
struct FunctionCost {
  double seconds = 0, flops = 0, sentBytes = 0;
};
FunctionCost functionCost(mlir::func::FuncOp fn, const Cluster &cluster, int64_t groupSize);

/// The Measurement of `module` at the train-step phase (built for tp x dp
/// ranks, accumulation 1; its collectives timed as tp's); with `plan`, compiled to its memory plan
/// with `options` (AotOptions::planOnly is set here). `streamBytes`: the activation a pipeline
/// stage would send.
llvm::Expected<Measurement> measureProbe(mlir::ModuleOp module, const Cluster &cluster, int64_t tp,
                                         double streamBytes, bool plan, PackageOptions options);

} // namespace lcc::planner

#endif
