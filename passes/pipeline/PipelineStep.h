//===- PipelineStep.h - a stage's micro-batches in schedule order -*- C++ -*-===//
//
// What lcc-build-train-step runs in place of the micro-batch loop on a
// pipeline stage (a model function cut by lcc-split-stage, differentiated by
// lcc-autodiff): the stage's forward, input-gradient and weight-gradient
// work for every micro-batch, in the order the schedule gives its rank, with
// the transfers between them as lcc.exchange ops.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_PIPELINE_PIPELINESTEP_H
#define LCC_PASSES_PIPELINE_PIPELINESTEP_H

#include "passes/pipeline/Schedule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace lcc::pipeline {

/// The pipeline rank a function is the program of (lcc-split-stage's
/// `lcc.pipeline` attribute, copied to @F_grad): its rank in the `pp` group,
/// the group's size, the stages each rank runs (V; more than one when
/// interleaved: rank r runs stages r, r + P, ...), and the model's loss type
/// (which only the last rank returns).
struct StageOf {
  int64_t rank = 0, ranks = 1, virtualStages = 1;
  mlir::Type loss;
  /// Per stage of the rank, in order: how many values it receives and sends
  /// (their arguments and results come stage by stage).
  llvm::SmallVector<int64_t> recvs, sends;
  bool last() const { return rank == ranks - 1; }
  int64_t stages() const { return ranks * virtualStages; }
  /// The (global) stage number of the rank's `chunk`-th stage.
  int64_t stageOfChunk(int64_t chunk) const { return chunk * ranks + rank; }
};
std::optional<StageOf> stageOf(mlir::func::FuncOp fn);

/// The process group over which a parameter held by pipeline ranks
/// `holders` (sorted, at least two, of `ranks`) has its gradient summed:
/// "pp" when every rank holds it, "pp_ends" for the first and the last
/// (Megatron's embedding group), else "pp_tied_<r>_<r>...", a group of those
/// ranks of pp. All of them but "pp" are groups of some ranks of the pp axis
/// (train.bin's process_groups `of`, `members`: tiedGroupMembers).
std::string tiedGroupName(llvm::ArrayRef<int64_t> holders, int64_t ranks);
/// The ranks of pp in a group tiedGroupName names other than "pp"; none for
/// any other name.
std::optional<llvm::SmallVector<int64_t>> tiedGroupMembers(llvm::StringRef name, int64_t ranks);

/// Every value `op` reads: its operands and what its regions capture.
llvm::SmallVector<mlir::Value> readsOf(mlir::Operation *op);

/// The functions a stage's parts become, `@<step>_<name>` (the forward, the
/// backward, and the backward's input- and weight-gradient halves; one set
/// per stage of the rank, partFunctionName), called
/// per micro-batch; the pipeline outlines the layers inside them too.
inline constexpr llvm::StringLiteral kForwardFunction = "pp_forward",
                                     kBackwardFunction = "pp_backward",
                                     kInputGradFunction = "pp_input_grad",
                                     kWeightGradFunction = "pp_weight_grad";
inline constexpr llvm::StringLiteral kPartFunctions[] = {kForwardFunction, kBackwardFunction,
                                                         kInputGradFunction, kWeightGradFunction};
/// A part's name for the rank's `chunk`-th stage: `<part>_c<chunk>` when
/// the rank runs several (interleaved), else `<part>`; and all of them.
std::string partFunctionName(llvm::StringRef part, int64_t chunk, int64_t virtualStages);
std::vector<std::string> partFunctionNames(int64_t virtualStages);

/// What the micro-batches leave for the rest of the step.
struct StageResults {
  mlir::Value lossSum;                     // the last stage's, summed; null on the others
  llvm::SmallVector<mlir::Value> gradSums; // per trainable parameter (@F_grad's lcc.grad_of)
};

/// Runs `gradFn`'s body at `b` once per micro-batch of the schedule, split in
/// its parts (forward: what the sent values or the loss need; input
/// gradient: what the received values' gradients need; weight gradient: the
/// rest), each part outlined once as a function of the step's module and
/// called in `schedule`'s order for this stage's rank. `fixed` maps
/// the arguments every micro-batch shares (parameters, the loss seed);
/// `input(arg, k)` gives batch input `arg` of micro-batch k. Transfers become
/// lcc.exchange ops on `group`, each posted and completed where the
/// schedule posts it. Gradients and losses are summed in the order the
/// schedule runs them (micro-batch order in every built-in schedule).
/// Fails (with an error at `loc`) when the schedule is not one this stage
/// can run.
mlir::FailureOr<StageResults>
buildStageMicroBatches(mlir::OpBuilder &b, mlir::Location loc, mlir::func::FuncOp gradFn,
                       const Schedule &schedule, llvm::StringRef group,
                       const mlir::IRMapping &fixed,
                       llvm::function_ref<mlir::Value(unsigned, int64_t)> input);

/// Makes the stage's model function (lcc-split-stage's, after autodiff read
/// it) the stage's part of an evaluation: what it received becomes an
/// lcc.exchange from the previous stage at its start, what it sent one to
/// the next at its end, and every stage returns the last one's loss
/// (broadcast over `group`).
mlir::LogicalResult makeStageEvaluation(mlir::func::FuncOp fn, llvm::StringRef group);

} // namespace lcc::pipeline

#endif
