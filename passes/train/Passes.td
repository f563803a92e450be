//===- Passes.td - lcc train passes ------------------------*- tablegen -*-===//
//
// Passes of the training step: autodiff, the optimizer update around it, mixed precision.
// The order in which passes run is written only in passes/Pipelines.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_TRAIN_PASSES_TD
#define LCC_PASSES_TRAIN_PASSES_TD

include "mlir/Pass/PassBase.td"

def LccAutodiffPass : Pass<"lcc-autodiff", "::mlir::ModuleOp"> {
  let summary = "Reverse-mode autodiff: @F(params, batch) -> loss gives @F_grad";
  let description = [{
    For the function named by `function`, whose arguments carry
    `{lcc.param = "name"}` (trainable unless also `{lcc.frozen}`) and which
    returns a rank-0 float loss, adds a public function `@<function>_grad`
    with the same arguments returning the loss and the gradient of every
    trainable parameter, in argument order, each result tagged
    `{lcc.grad_of = "name"}`. `@<function>` is left unchanged.

    The forward ops are cloned into the new function and the backward is
    appended: a reverse sweep that asks each op on a path from a trainable
    parameter to the loss for its VJP (`VjpOpInterface`), accumulating
    fan-out with `lcc.add`. Nothing is built for frozen parameters, integer
    operands or values that do not reach the loss; a parameter that does not
    influence the loss gets `lcc.fill 0`. An op on such a path without a VJP
    is an error naming the op. With `seed-arg`, `@<function>_grad` takes one
    more argument, last, `{lcc.loss_seed}`: the cotangent of the loss, so
    every backward value is multiplied by it (fp16 loss scaling).

    A pipeline stage (lcc-split-stage) differs in two ways: its arguments
    `{lcc.pipeline_recv = k}` (what the previous stage sent) are
    differentiated like parameters, their gradients returned last, each
    `{lcc.grad_of_recv = k}` (sent back); and a stage that returns the
    values it sends on, `{lcc.pipeline_send = k}`, rather than the loss
    takes one trailing argument `{lcc.pipeline_seed = k}` per float send, its
    gradient (received from the next stage), as the seed.

    ```mlir
    func.func @forward(%w: tensor<4xf32> {lcc.param = "w"}, %x: tensor<4xf32> {lcc.input = "x"}) -> tensor<f32>
    // adds
    func.func @forward_grad(...) -> (tensor<f32>, tensor<4xf32> {lcc.grad_of = "w"})
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"forward\"",
           "The function to differentiate">,
    Option<"seedArg", "seed-arg", "bool", /*default=*/"false",
           "The loss's cotangent (the backward's seed) is a trailing rank-0 argument "
           "{lcc.loss_seed} of @<function>_grad instead of the constant 1: loss scaling "
           "passes the scale there">,
  ];
  let dependentDialects = ["::lcc::LccDialect"];
}

def LccBuildTrainStepPass : Pass<"lcc-build-train-step", "::mlir::ModuleOp"> {
  let summary = "From @F and @F_grad build @train_step: clipping, optimizer, schedule, accumulation";
  let description = [{
    Needs `@<function>_grad` (run `lcc-autodiff` first). Adds a public
    `@train_step` that computes the loss and gradients (the body of
    `@<function>_grad`, once per micro-batch), clips them by global
    norm, computes the learning rate from the step counter and applies AdamW
    or SGD. Everything the step reads or writes is an explicit value:

    ```
    @train_step(params..., state..., %step: tensor<i64> {lcc.step}, inputs...)
        -> (trainable params..., state..., loss, grad_norm, lr)
    ```

    `%step` is 1-based: the number of the update being made (torch's
    `state["step"]` after its increment). With `accum = K > 1` every input gets
    a leading dimension K and loss and gradients are averaged over the K
    micro-batches. The micro-batches are one `scf.for {lcc.micro_batches}`
    whose body is one copy of `@<function>_grad` on a view of row k of each
    input, carrying the loss and gradient sums (from zero, so the sums are
    bitwise those of K clones): compile time does not grow with K; how the
    later passes treat the loop is in docs/architecture.md. `peel-last` runs
    the last micro-batch after the loop (the sharded pipelines ask for it:
    their gradient collectives then overlap its backward). `unroll-accum`
    clones the body K times instead. Semantics, defaults and formulas:
    docs/training.md.

    `loss-scale=dynamic` (fp16; needs `lcc-autodiff{seed-arg}`) is
    torch.amp.GradScaler built into the step: three more rank-0 state values
    `amp:log2_scale`, `amp:good_steps`, `amp:skipped` (all zero at the start:
    the scale is `loss-scale-init * 2^log2_scale`) come after the optimizer
    state. The backward's seed is the scale; the gradients are divided by it
    in f32. A step whose gradients are not all finite (their global sum of
    squares is not below +inf) keeps parameters and optimizer state as they
    were and halves the scale; after `loss-scale-window` finite steps in a
    row it doubles. Bias corrections count only the steps taken (torch's
    optimizer step is skipped too); the learning rate schedule counts every
    step (torch's scheduler steps regardless). An extra output `loss_scale`
    is the scale this step used.

    A pipeline stage's `@<function>_grad` (`lcc.pipeline`: lcc-split-stage,
    then lcc-autodiff) runs its `accum` micro-batches in the order
    `pipeline-schedule` gives its rank (passes/pipeline/PipelineStep.h: the
    stage's forward, backward, input-gradient and weight-gradient parts are
    each one private function `@<step>_pp_<part>` (`lcc.layer`; with
    several stages per rank, interleaved, `@<step>_pp_<part>_c<chunk>` for
    the rank's chunk-th), called per
    micro-batch, the backward's adding the gradients to running sums; the
    transfers between stages lcc.exchange ops on group `pp`), after the schedule is proved not to hang. The loss (the last
    stage's) is broadcast to every stage; a parameter several stages hold
    (`lcc.pipeline_tied`) has its gradient summed over them (the group
    pipeline::tiedGroupName names: `pp`, `pp_ends`, `pp_tied_<r>_...`) and
    counted once, by
    the first, in the clipping norm, whose sum of squares is summed over the
    stages. A parameter `{lcc.partial_grad = "<group>"}` (lcc-sequence-parallel)
    has a share of its gradient on each rank of the group: all such
    gradients are summed over it once per step, after accumulation, as one
    all-reduce of their concatenation.
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"forward\"",
           "The forward function (its gradient is @<function>_grad)">,
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"adamw\"",
           "adamw or sgd">,
    Option<"lr", "lr", "double", /*default=*/"6e-4", "Peak learning rate">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "AdamW beta1">,
    Option<"beta2", "beta2", "double", /*default=*/"0.95", "AdamW beta2">,
    Option<"eps", "eps", "double", /*default=*/"1e-8", "AdamW epsilon">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"-1.0",
           "Weight decay; negative means the optimizer's default (0.1 adamw, 0 sgd)">,
    Option<"momentum", "momentum", "double", /*default=*/"0.9", "SGD momentum (0: no buffer)">,
    Option<"nesterov", "nesterov", "bool", /*default=*/"false", "SGD Nesterov momentum">,
    Option<"clip", "clip", "double", /*default=*/"1.0",
           "Global gradient-norm clipping threshold (0: off)">,
    Option<"schedule", "schedule", "std::string", /*default=*/"\"constant\"",
           "constant or cosine (both after linear warmup)">,
    Option<"warmup", "warmup", "int64_t", /*default=*/"0", "Linear warmup steps">,
    Option<"decaySteps", "decay-steps", "int64_t", /*default=*/"0",
           "cosine: the step at which lr reaches min-lr (counted like warmup)">,
    Option<"minLr", "min-lr", "double", /*default=*/"-1.0",
           "cosine: final learning rate; negative means 0.1 * lr">,
    Option<"accum", "accum", "int64_t", /*default=*/"1",
           "Gradient accumulation: micro-batches per step">,
    Option<"unrollAccum", "unroll-accum", "bool", /*default=*/"false",
           "Clone the backward once per micro-batch instead of looping over them "
           "(the old form, for comparisons: compile time grows with accum)">,
    Option<"peelLast", "peel-last", "bool", /*default=*/"false",
           "With accum > 1: the last micro-batch after the loop instead of in it (two "
           "copies of the backward whatever accum), so that what follows the gradients "
           "(sharding's collectives) can overlap its backward">,
    Option<"lossScale", "loss-scale", "std::string", /*default=*/"\"none\"",
           "none, or dynamic (fp16): the backward runs on scale * loss, a step whose "
           "gradients overflow is skipped and halves the scale">,
    Option<"lossScaleInit", "loss-scale-init", "double", /*default=*/"65536.0",
           "dynamic: the first loss scale (torch.amp.GradScaler's 2^16)">,
    Option<"lossScaleWindow", "loss-scale-window", "int64_t", /*default=*/"2000",
           "dynamic: the scale doubles after this many steps without overflow">,
    Option<"pipelineSchedule", "pipeline-schedule", "std::string", /*default=*/"\"1f1b\"",
           "A pipeline stage's order of micro-batches: gpipe, 1f1b, interleaved (the "
           "rank's stages from lcc.pipeline) or zb-h1">,
    Option<"pipelineOrder", "pipeline-order", "std::string", /*default=*/"\"\"",
           "Instead of pipeline-schedule, an order by hand: each rank's F, B, I, W per "
           "micro-batch, ranks separated by '|' (passes/pipeline/Schedule.h parseSchedule)">,
  ];
  let dependentDialects = ["::lcc::LccDialect", "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect"];
}

def LccBuildGenerationPass : Pass<"lcc-build-generation", "::mlir::ModuleOp"> {
  let summary = "A text-generation entry (prefill or one-token decode with a KV cache) from @forward";
  let description = [{
    Makes `@<entry>` from a copy of `@forward` imported at batch 1 (the
    frontend imports the model again at the entry's sequence length:
    `context` for `prefill`, 1 for `decode_step`); `@forward` stays. The
    loss's `lcc.cross_entropy` goes and its logits become the result
    (`lcc.output = "logits"`), taken at one position: the new input
    `position` (tensor<1xi32>: the prompt's last index for prefill, the new
    token's for decode). The keys and values of each `lcc.attention` (n-th in
    program order) are the KV cache, results `cache.k.<n>` / `cache.v.<n>`
    [1, Hkv, context, D].

    `prefill` runs the model over `context` tokens (the prompt, padded: the
    causal mask keeps padding out of the prompt's rows) and returns the cache;
    made from a shorter import (seq < context; named by `symbol`, such as
    `prefill_64`), it runs over that many and returns the cache padded with
    zero rows to `context`, the decode step's shape.
    `decode_step` takes the cache as inputs of the same names and returns it
    with row `position` written: each attention becomes the new key/value
    written at `position` (iota == position), then scores over the whole
    cache with the rows past `position` masked, softmax, values; rows past
    the position never reach a result, so the padding prefill left there and
    the previous steps' rows beyond do not matter. The ops that depend on
    the position are rewritten for a position known at run time: a
    parameter sliced `[0:1]` along its first dimension (a position table:
    `wpe[0:seq]` at seq 1) becomes a gather at `position`, `lcc.rope` uses
    cos/sin tables gathered at `position` (plus its offset). Other ops that
    depend on positions (`lcc.iota`, `lcc.causal_mask`), attention without
    `causal`, and a position table with fewer than `context` rows are errors.

    With `cache=false` (prefill only) the entry returns just the logits at
    `position`; the model's attention may be any ops (an ONNX export's
    decomposed one), as long as it is causal: text generation then runs the
    whole context for every token.
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"decode_step\"",
           "prefill or decode_step">,
    Option<"context", "context", "int64_t", /*default=*/"0",
           "The KV cache's length (prefill: 0 means @forward's sequence length)">,
    Option<"symbol", "symbol", "std::string", /*default=*/"\"\"",
           "The entry function's name (default: the entry's; prefill_<L> for a prefill "
           "over the first L positions of a longer context)">,
    Option<"cache", "cache", "bool", /*default=*/"true",
           "false: a prefill without KV cache results, for models whose attention is not "
           "one lcc.attention (ONNX graphs); lcc-run runs it again over the text so far "
           "for every token">,
  ];
  let dependentDialects = ["::lcc::LccDialect", "::mlir::func::FuncDialect"];
}

def LccLoraPass : Pass<"lcc-lora", "::mlir::ModuleOp"> {
  let summary = "Low-rank adapters (LoRA) on chosen matmul weights; the base model frozen";
  let description = [{
    Runs on `@<function>` and `@init` before `lcc-autodiff` (an error after
    it). Each parameter whose name matches one of `targets` (glob patterns)
    and which is used only as the right side of `lcc.matmul` (a weight W:
    `x @ W`, [in, out], or `x @ W^T`, [out, in]) gets two parameters, A
    [rank, in] (`<W less .weight>.lora_A.weight`) and B [out, rank]
    (`.lora_B.weight`), and every `y = x @ W` becomes
    `y + scale * ((x @ A^T) @ B^T)`, with scale = alpha / rank (alpha /
    sqrt(rank) with `rslora`), as PEFT computes it. `@init` gives A PEFT's
    Kaiming-uniform values (U(-1/sqrt(in), 1/sqrt(in)), seeded from `seed`
    and the name) and B zeros, so the adapted model starts exactly where the
    base model is. Every other parameter gets `lcc.frozen`: no gradient, no
    optimizer state. The module gets `lcc.lora` (rank, alpha, scale, rslora,
    and per adapter its base, A, B and orientation) for the manifest (PEFT
    export, merging). After `lcc-shard-tp`, a split W's adapters are split
    as it is: W's out features split (column-parallel) split B's rows, and A,
    which every rank holds, enters through `lcc.parallel_copy` (its gradient
    summed over tp); W's in features split (row-parallel) split A's columns,
    and B enters through `lcc.parallel_copy`. @init returns whole adapters.
    A pattern that matches no parameter, a matched parameter used otherwise
    than as a matmul's right side, one split other than by whole blocks,
    and `rank` < 1 are errors.
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"forward\"",
           "The loss function whose weights get adapters">,
    Option<"rank", "rank", "int64_t", /*default=*/"8", "r: the adapters' inner size">,
    Option<"alpha", "alpha", "double", /*default=*/"16.0", "lora_alpha: scale = alpha / rank">,
    Option<"rslora", "rslora", "bool", /*default=*/"false",
           "Rank-stabilized LoRA: scale = alpha / sqrt(rank)">,
    ListOption<"targets", "targets", "std::string",
               "Glob patterns over parameter names (e.g. h.*.attn.c_attn.weight)">,
    Option<"seed", "seed", "uint64_t", /*default=*/"1337", "Seed of A's initial values">,
  ];
  let dependentDialects = ["::lcc::LccDialect", "::mlir::func::FuncDialect",
                           "::mlir::arith::ArithDialect"];
}

def LccPrecisionPass : Pass<"lcc-precision", "::mlir::ModuleOp"> {
  let summary = "Mixed precision: matmul and attention of @forward in bf16/f16, the rest in f32";
  let description = [{
    Runs on `@<function>` before `lcc-autodiff` (an error after it). Every f32
    `lcc.matmul` and `lcc.attention` gets its operands converted to bf16 (or
    f16) and its result converted back to f32; their lowering multiplies in
    the low type and accumulates in f32 (tensor-core semantics; on the CPU
    target the rounding is emulated exactly). Everything else (norms,
    softmax, GELU, the loss, residual adds) stays f32, as under PyTorch's
    autocast. Autodiff then builds the backward's matmuls in bf16 as well and
    returns f32 parameter gradients (the convert's VJP converts back), so the
    master weights, the optimizer state and the gradient norm stay f32. The
    module gets `lcc.precision`. `precision=fp32` changes nothing; a function
    without f32 matmuls gets a warning.

    fp16's narrow range (largest 65504, smallest normal 2^-14) needs loss
    scaling: the driver pairs `precision=fp16` with
    `lcc-autodiff{seed-arg}` and `lcc-build-train-step{loss-scale=dynamic}`.
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"forward\"",
           "The loss function the policy applies to">,
    Option<"precision", "precision", "std::string", /*default=*/"\"bf16\"",
           "fp32 (nothing), bf16 or fp16">,
  ];
  let dependentDialects = ["::lcc::LccDialect", "::mlir::func::FuncDialect"];
}

def LccRecomputePass : Pass<"lcc-recompute", "::mlir::ModuleOp"> {
  let summary = "The backward computes forward values again instead of keeping them";
  let description = [{
    Runs on `@<function>_grad` right after `lcc-autodiff`, which reads forward
    values directly (everything it reads is kept from the forward to the
    backward). Per layer instance (the DSL's `h.3.`, ONNX's module path;
    the names `lcc-outline-layers` groups by), the backward ops of the layer
    that read a chosen forward value of the same layer read a copy made again
    right before the layer's backward needs it, so the original dies with the
    forward. What is chosen (`mode`; docs/memory.md states it per op):

    - `full`: every effect-free op of the layer's forward. Only what the layer
      reads from outside (its input, parameters, a collective's result) is
      kept: Chen et al.'s checkpointing, Megatron's full recomputation.
    - `selective`: the cheap ops (everything except GEMMs and whole
      attentions; a batched product of two activations at least as large as
      both, attention scores, counts as cheap) whose operands are kept anyway
      (read by the backward directly, chosen themselves, arguments or
      constants), so recomputation never keeps more than before: a norm's
      output from its input, GELU's output from its input.
    - `none`: nothing (the pass does nothing).

    `layers = k` (>= 0) applies the mode to the first k layer instances in
    forward order; with `full` the others are then `selective`. Collectives
    are never made again. The module records what was chosen for `lcc --report`:
    `lcc.recompute = {mode, layers = {<instance> = [ops, flops, bytes]}}`,
    the ops made again, their FLOPs per step, and the bytes of the forward
    values no longer kept.

    ```mlir
    // full: the backward of h.0 makes %h again from %x instead of keeping it
    %h = lcc.gelu %x loc("h.0.mlp")           // forward
    %h2 = lcc.gelu %x loc("h.0.mlp")          // backward of h.0
    %dw = lcc.matmul %h2, %g {transpose_lhs = true} loc("h.0.mlp")
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"forward\"",
           "The forward function; @<function>_grad is rewritten">,
    Option<"mode", "mode", "std::string", /*default=*/"\"none\"", "none, selective or full">,
    Option<"layers", "layers", "int64_t", /*default=*/"-1",
           "Layer instances (in forward order) the mode applies to; -1: all. With full, "
           "the others are selective">,
  ];
  let dependentDialects = ["::lcc::LccDialect"];
}

#endif // LCC_PASSES_TRAIN_PASSES_TD
