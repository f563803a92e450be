//===- Passes.td - lcc shard passes ------------------------*- tablegen -*-===//
//
// Passes of spreading a step over ranks: data, tensor and vocabulary parallelism, ZeRO, and
// the scheduling of the collectives they insert (docs/distributed.md).
// The order in which passes run is written only in passes/Pipelines.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_SHARD_PASSES_TD
#define LCC_PASSES_SHARD_PASSES_TD

include "mlir/Pass/PassBase.td"

def LccShardDataParallelPass : Pass<"lcc-shard-dp", "::mlir::ModuleOp"> {
  let summary = "Data parallelism: average gradients (bucketed all_reduce) and the loss over ranks";
  let description = [{
    Each of `dp` ranks trains on its own batch (the model's batch is the
    per-rank batch). At every `lcc.gradient` marker of `@train_step` the
    gradient becomes its mean over the ranks: gradients are grouped in
    buckets of at most `bucket-mb` MiB in the order backward produces them,
    each bucket flattened into one buffer and all-reduced (mean) right after
    its last gradient is computed. The loss of `@train_step` and `@forward` is
    averaged too. Declares process group `dp` on the module. `dp = 1` leaves
    the module unchanged.
  }];
  let options = [
    Option<"dp", "dp", "int64_t", /*default=*/"1", "Data-parallel ranks">,
    Option<"bucketMb", "bucket-mb", "double", /*default=*/"25.0",
           "Largest bucket of gradients per all_reduce, in MiB (DDP's default)">,
  ];
  let dependentDialects = ["::lcc::LccDialect"];
}

def LccShardTensorParallelPass : Pass<"lcc-shard-tp", "::mlir::ModuleOp"> {
  let summary = "Megatron tensor parallelism: column/row-parallel matmul pairs of @forward over tp ranks";
  let description = [{
    Runs on `@<function>` before lcc-autodiff. Finds regions that start at a
    column-parallel matmul (a parameter [in, out] used once, output features
    split over `tp` ranks, per block when the output is sliced into equal
    blocks such as a fused q/k/v projection) and end at row-parallel matmuls
    (a parameter [out, d] used once), with only ops between that keep the
    split (bias adds, elementwise, head reshapes, transposes, attention,
    rope; also the ONNX export's forms: transposed [out, in] weights,
    attention as matmuls of split operands with a constant scale and mask).
    The inputs of column matmuls go through `lcc.parallel_copy`, the
    results of row matmuls through `lcc.all_reduce` (sum), so autodiff builds
    Megatron's backward. Split parameters get `lcc.shard = {group = "tp",
    parts, dim, blocks, shape}`. Regions that would leak a split value
    elsewhere stay whole; no splittable pair at all is an error.
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"forward\"",
           "The forward function">,
    Option<"tp", "tp", "int64_t", /*default=*/"1", "Tensor-parallel ranks">,
  ];
  let dependentDialects = ["::lcc::LccDialect"];
}

def LccShardVocabParallelPass : Pass<"lcc-shard-vocab", "::mlir::ModuleOp"> {
  let summary = "Megatron vocab parallelism: embedding, LM head and cross-entropy split by vocabulary rows over tp ranks";
  let description = [{
    Runs on `@<function>` after lcc-shard-tp, before lcc-autodiff. A
    parameter [V, D] used only by gathers of token ids (function inputs) and
    by LM-head matmuls (transposed: tied embeddings) whose logits feed only a
    cross-entropy, or a head parameter [D, V], is split by vocabulary rows
    over `tp` ranks (`lcc.shard = {group = "tp", dim, ...}`). The gather
    looks up this rank's rows and an all_reduce (sum) assembles the
    embedding; the head's input goes through `lcc.parallel_copy`; the
    cross-entropy of the logit slice is assembled from all_reduces of
    per-row values (maximum under `lcc.stop_gradient`, sum of exponentials,
    target logit). A vocabulary that does not divide by tp is padded to
    ceil(V/tp) rows per rank (zero rows, their logits masked); one past 2^24
    rows stays whole, with a warning.
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"forward\"",
           "The forward function">,
    Option<"tp", "tp", "int64_t", /*default=*/"1", "Tensor-parallel ranks">,
  ];
  let dependentDialects = ["::lcc::LccDialect"];
}

def LccSequenceParallelPass : Pass<"lcc-sequence-parallel", "::mlir::ModuleOp"> {
  let summary = "Megatron sequence parallelism: the residual stream between tp regions split by tokens";
  let description = [{
    Runs on `@<function>` after lcc-shard-tp and lcc-shard-vocab, before
    autodiff (Korthikanti et al. 2022). Between tensor-parallel regions every
    rank of `tp` holds the whole residual stream and computes the same norms
    and residual adds on it. This pass splits that stream by tokens instead:
    the values of the stream's type (what the regions read through
    `parallel_copy` and write through `all_reduce`) are viewed as
    [tokens, features] and each rank keeps tokens [r N/tp, (r+1) N/tp).

    - `all_reduce` (sum) of the stream's type becomes `reduce_scatter`
      (axis 0): each rank receives only its tokens' sums.
    - Token-wise ops on the stream (elementwise, `layer_norm`, `rms_norm`,
      `convert`) run on the rank's tokens. An operand broadcast over the
      tokens (a norm's weight, a bias) has a share of its gradient on each
      rank: a parameter only such ops read gets `{lcc.partial_grad = "tp"}`
      (lcc-build-train-step sums all of them once per step, in one
      all-reduce), any other such operand goes through `parallel_copy`
      (summed where it is used). An operand with its own tokens (a position
      table) is broadcast to the stream and cut with `shard_slice`.
    - `parallel_copy` of the stream (a region's input) becomes `all_gather`
      (axis 0) back to the whole tokens.

    Autodiff then derives the backward (all_gather's VJP is reduce_scatter
    and the reverse). The losses are those of tensor parallelism; what the
    regions between tp blocks keep is divided by tp. A stream value read by
    any other op (a loss computed without the vocab-parallel head), a token
    count not divisible by tp, or a module without tp regions is an error.
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"forward\"",
           "The forward function">,
    Option<"tp", "tp", "int64_t", /*default=*/"1", "Tensor-parallel ranks">,
  ];
  let dependentDialects = ["::lcc::LccDialect"];
}

def LccShardZeroPass : Pass<"lcc-shard-zero", "::mlir::ModuleOp"> {
  let summary = "ZeRO stage 1/2/3: optimizer state, gradients and parameters partitioned over dp ranks";
  let description = [{
    Rewrites `@train_step` for `dp` data-parallel ranks as the ZeRO paper:
    stage 1 partitions the optimizer state (gradients all-reduced, each rank
    updates its part, parameters all-gathered), stage 2 also the gradients
    (reduce_scatter instead of all_reduce), stage 3 also the parameters
    (arguments are parts; each use in forward and backward is preceded by an
    all_gather). Tensors are partitioned flat: flattened, zero-padded to a
    multiple of `dp`, cut into `dp` parts. Partitioned arguments and results
    carry `lcc.shard = {group, parts, shape}`. Optimizer ops must be
    elementwise or whole-tensor sums; anything else is an error naming the op.
  }];
  let options = [
    Option<"stage", "stage", "int64_t", /*default=*/"1", "ZeRO stage: 1, 2 or 3">,
    Option<"dp", "dp", "int64_t", /*default=*/"1", "Data-parallel ranks">,
    Option<"bucketMb", "bucket-mb", "double", /*default=*/"25.0",
           "Largest bucket of gradients per collective, in MiB">,
  ];
  let dependentDialects = ["::lcc::LccDialect"];
}

def LccOverlapCollectivesPass : Pass<"lcc-overlap-collectives", "::mlir::ModuleOp"> {
  let summary = "Issue collectives early and wait late, so communication overlaps computation";
  let description = [{
    On tensors, after fusion and before bufferization (AOT CPU pipeline).
    Each all_reduce, all_gather and reduce_scatter gets a `ticket` and is
    moved to where it can start; an `lcc.wait` with the same ticket takes its
    place before the first use of its result. The runtime runs the started
    collectives on its communication thread, in start order, while the step
    computes (runtime/dist/Collectives.h).

    At most `depth` collectives are in flight (started, not waited for).
    Gradient buckets (data parallelism, ZeRO) start as soon as their last
    gradient exists and are waited for when the window needs room; ZeRO-3's
    parameter gathers, which could all start at once, start when the one
    `depth` back is waited for: the next layers' parameters arrive while this
    layer computes (ZeRO's prefetch), and at most `depth` gathered layers
    more than without overlap are alive at once. Starts keep program order,
    so every rank still issues the same collectives in the same order.
    Broadcast, send, recv and a collective that consumes another's result
    stay synchronous where they are. `depth=0` leaves everything synchronous.

    Functions with more than one block are an error; a function that already
    has waits is left alone.
  }];
  let options = [
    Option<"depth", "depth", "int64_t", /*default=*/"2",
           "Collectives in flight at once (0: all synchronous)">,
  ];
  let dependentDialects = ["::lcc::LccDialect"];
}

#endif // LCC_PASSES_SHARD_PASSES_TD
