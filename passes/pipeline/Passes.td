//===- Passes.td - lcc pipeline-parallel passes ------------*- tablegen -*-===//
//
// Passes of pipeline parallelism (issue 24): where the stages are cut, and
// (to come) the per-stage programs the schedule runs.
// The order in which passes run is written only in passes/Pipelines.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_PIPELINE_PASSES_TD
#define LCC_PASSES_PIPELINE_PASSES_TD

include "mlir/Pass/PassBase.td"

def LccPartitionPipelinePass : Pass<"lcc-partition-pipeline", "::mlir::ModuleOp"> {
  let summary = "Choose the pipeline stages of a model function by cost and memory";
  let description = [{
    On the lcc dialect, on the model function (`function`, before autodiff).
    Its ops become pieces in order: what runs before the first layer (the
    embedding), one piece per layer instance (the layer names the frontends
    give ops, `h.3.` from the DSL, `/transformer/h.3/...` from ONNX: the same
    names lcc-outline-layers reads; an unnamed op between two layers joins
    the layer before it), and what runs after the last (head and loss). A
    layer's ops must be contiguous. Stages are cut between two layers only,
    so the embedding stays with the first stage, the head with the last, and
    every stage runs a layer.

    Each piece's cost is three times its ops' FLOPs (`CostOpInterface`:
    forward, and a backward of about twice the forward); its state is four
    times the bytes of the parameters (`lcc.param` arguments) it is the first
    to use (parameter, gradient, two AdamW moments; a parameter used by two
    stages is a tied one, counted where first used); its activations are its
    ops' result bytes (what its backward may keep), per micro-batch. A stage
    holds as many micro-batches' activations as the schedule keeps in flight
    on its rank at the peak (`schedule`, `microbatches`, `virtual` stages
    per rank: simulated, passes/pipeline/Schedule.h). The cut minimizes the
    slowest stage's cost, then the largest stage's memory
    (passes/pipeline/Partition.h), under `memory-limit` bytes if set; or
    `stage-starts` gives the layers (numbered from 0) that start stages 1,
    2, ...

    Every op of the function gets `lcc.stage` (its stage number) and the
    function `lcc.stage_costs`, `lcc.stage_bytes`, `lcc.stage_layers` and
    `lcc.stage_in_flight` (per stage: for lcc --plan);
    `explain=true` remarks each stage's layers, cost and memory.

    Errors: no such function, fewer layers than stages, interleaved layers,
    boundaries that do not increase or fall outside the layers, a limit no
    cut meets.
  }];
  let options = [
    Option<"function", "function", "std::string", "\"forward\"", "The model function">,
    Option<"stages", "stages", "int64_t", "2", "Stages: pipeline ranks times virtual stages">,
    Option<"schedule", "schedule", "std::string", "\"1f1b\"",
           "gpipe, 1f1b, interleaved or zb-h1 (the activations in flight per stage)">,
    Option<"microbatches", "microbatches", "int64_t", "0",
           "Micro-batches per step (0: 4 per pipeline rank)">,
    Option<"virtualStages", "virtual", "int64_t", "1", "Stages per rank (interleaved)">,
    ListOption<"stageStarts", "stage-starts", "int64_t",
               "The layers that start stages 1, 2, ... (instead of the balanced cut)">,
    Option<"memoryLimit", "memory-limit", "int64_t", "0",
           "Bytes no stage may exceed (0: no limit)">,
    Option<"explain", "explain", "bool", "false", "Remark each stage's layers, cost and memory">,
  ];
}

def LccSplitStagePass : Pass<"lcc-split-stage", "::mlir::ModuleOp"> {
  let summary = "Keep one pipeline stage of a model function marked by lcc-partition-pipeline";
  let description = [{
    Rewrites the model function (`function`, every op marked with
    `lcc.stage` by lcc-partition-pipeline) into what stage `stage` of the
    pipeline computes for one micro-batch, the program of that stage's rank:

    - arguments: the parameters its ops read (a tied parameter, read by
      several stages, is an argument of each, `lcc.pipeline_tied` listing
      their ranks; the module declares the group its gradient is summed in,
      PipelineStep.h tiedGroupName), every batch input (each stage's rank
      reads the same batch), then the values it receives, each
      `{lcc.pipeline_recv = k}`;
    - ops: its own, and the ones of earlier stages that depend on no
      parameter whose results it reads (masks, positions: computed again
      rather than sent);
    - results: the last stage returns the loss; the others the values that
      cross into the next stage, each `{lcc.pipeline_send = k}`: results of
      parameter-dependent ops of this or an earlier stage read by a later
      one, in the order they are defined (the residual stream, and what an
      earlier stage computed for a later one, passed on through this one).

    With `virtual` = V > 1 (interleaved 1F1B), the S stages are spread over
    P = S / V ranks, stage s on rank s % P, and `stage` names the rank: its
    function holds its V stages ("chunks" r, r + P, ...) one after the
    other, each computed from its own received values (a value passed
    through is received again even where the rank computed it in an earlier
    chunk): the received values chunk by chunk, the sent values chunk by
    chunk, the loss last; `lcc.pipeline` adds `virtual`, `chunk_recvs` and
    `chunk_sends` (how many of each per chunk). A parameter two chunks of
    one rank read is an error.

    The function gets `lcc.pipeline = {stage, stages, loss}`; `@init` keeps the
    results of the parameters the stage reads (the others' initializers
    go). Errors: an op without `lcc.stage`, a stage that does not exist.
  }];
  let options = [
    Option<"function", "function", "std::string", "\"forward\"", "The model function">,
    Option<"stage", "stage", "int64_t", "0", "The stage to keep (from 0; with virtual, the rank)">,
    Option<"virtualStages", "virtual", "int64_t", "1", "Stages per rank (interleaved)">,
  ];
}

#endif
