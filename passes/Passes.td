//===- Passes.td - lcc passes ------------------------------*- tablegen -*-===//
//
// One pass per file; the order in which they run is written only in
// Pipelines.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_TD
#define LCC_PASSES_TD

include "mlir/Pass/PassBase.td"
include "DistributedPasses.td"

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
  ];
  let dependentDialects = ["::lcc::LccDialect", "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect"];
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

def LccFoldZeroConcatsPass : Pass<"lcc-fold-zero-concats"> {
  let summary = "Sums of zero-padded gradients (add of concats with zero parts) become one concat";
  let description = [{
    On lcc ops, before lowering. A slice's VJP pads its gradient back with
    zero parts (a concat with `lcc.fill 0`), so a tensor sliced three ways
    (GPT-2's fused q/k/v projection) gets
    `add(add(concat(gq, 0), concat(0, gk, 0)), concat(0, gv))`: zero fills,
    copies and full-size adds. An `lcc.add` of two concats along the same
    axis becomes one concat of the segments both partitions cut the axis
    into: a segment zero on one side takes the other side's part unchanged,
    zero on both sides is one (smaller) fill, and only values on both sides
    add. Zero parts may be split; a part with values must lie exactly on a
    segment, or the add is left alone (with a remark saying so). The q/k/v
    case becomes `concat(gq, gk, gv)`. Results are the same values
    (x + 0 = x).
  }];
  let dependentDialects = ["::lcc::LccDialect"];
}

def LccDecomposePass : Pass<"lcc-decompose"> {
  let summary = "Split composite lcc ops into simpler lcc ops";
  let description = [{
    Rewrites `lcc.attention` into matmul, causal_mask and softmax (repeating
    key/value heads for grouped-query attention), so that backends without a
    fused attention kernel can run it.

    ```mlir
    %o = lcc.attention %q, %k, %v {causal = true} : ...
    // becomes
    %s = lcc.matmul %q, %k {transpose_rhs = true} ...
    %m = lcc.causal_mask %s' ...   %p = lcc.softmax %m ...   %o = lcc.matmul %p, %v ...
    ```

    `lcc.attention_grad` (the attention's VJP) likewise becomes the
    recomputed probabilities and five matmuls. With `keep-attention` both
    stay whole: bufferization turns them into calls of the runtime's fused
    attention kernels (`lcc_attention_fwd`/`_bwd`, runtime/Attention.h),
    which never materialize the [Tq, Tk] scores.
  }];
  let options = [
    Option<"keepAttention", "keep-attention", "bool", /*default=*/"false",
           "Leave lcc.attention and lcc.attention_grad whole for the fused kernels">,
    Option<"keepAttentionMinScores", "keep-attention-min-scores", "int64_t", /*default=*/"0",
           "Also leave whole those whose Tq * Tk is at least this (0: none), where the fused "
           "kernels beat the decomposition">,
  ];
  let dependentDialects = ["::lcc::LccDialect"];
}

def LccLowerToLinalgPass : Pass<"lcc-lower-to-linalg"> {
  let summary = "Lower lcc ops to linalg, tensor, arith and math on tensors";
  let description = [{
    Target-neutral lowering: the result is linalg on tensors that both the CPU
    (LLVM) and the CUDA (NVVM) paths consume. Composite ops that are not
    lowered directly must be decomposed first (`lcc-decompose`); an lcc op
    left behind is an error naming the op.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    // scatter_add lowers to an scf.for over its indices.
    "::mlir::scf::SCFDialect"
  ];
}

def LccOutParamsPass : Pass<"lcc-out-params", "::mlir::ModuleOp"> {
  let summary = "Destination-passing ABI: function results become caller-owned out-params";
  let description = [{
    The ahead-of-time ABI (train.bin): the runtime owns every buffer, so a
    compiled function must write its results into memory the caller passes
    rather than return buffers it allocated. On linalg-on-tensors, every
    public function with a body gets one `memref` argument per result
    (`{lcc.result = i}`, the result's shape and element type, identity
    layout) after its own arguments, and its results are stored with
    `bufferization.materialize_in_destination ... restrict writable`;
    the function then returns nothing. One-shot bufferization with empty
    tensor elimination makes the last op of each result write straight into
    the caller's buffer.

    ```mlir
    func.func @f(%x: tensor<4xf32>) -> tensor<4xf32>            // before
    func.func @f(%x: tensor<4xf32>, %out: memref<4xf32> {lcc.result = 0})  // after
    ```
    A layer function (`lcc.layer`) gets it on tensors: a trailing tensor
    argument per result `{lcc.result = i}`, a `tensor.empty` at each call,
    results `materialize_in_destination` into them, other arguments
    `bufferization.writable = false`: its caller allocates what it returns.
    A call result whose one use stores it into the caller's own out-param
    gets that out-param instead of the `tensor.empty` (a restrict, writable
    `bufferization.to_tensor`), so the layer writes it there.
    Results must be statically shaped ranked tensors; anything else is an
    error naming the function and result.
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect",
                           "::mlir::memref::MemRefDialect"];
}

def LccOutlineKernelsPass : Pass<"lcc-outline-kernels", "::mlir::ModuleOp"> {
  let summary = "Outline each loop nest of a bufferized function into a kernel function";
  let description = [{
    Runs on memrefs, after bufferization. Every top-level op with regions in
    a public function (a linalg op, an scf.for) becomes a private function
    `@<function>_k<N>` tagged `lcc.kernel` and is replaced by a call. Values
    the op uses from outside become arguments, except constants, which are
    cloned into the kernel.

    Why: the step function is thousands of loop nests long. As one LLVM
    function, loop passes that are linear per loop become quadratic overall
    (IndVarSimplify took 145 s of 160 s on gpt-tiny's step); as kernels each
    is optimized alone. The kernels are also the unit the fusion pass groups
    and the CUDA target launches.

    A linalg kernel doing at least `min-parallel-work` scalar operations
    (iterations times body ops) with a static parallel loop dimension that
    indexes every output is made splittable: it is lowered to loops right
    away, and the loop over that dimension runs from two trailing `index`
    arguments `lo` to `hi`. The kernel gets `lcc.parallel = N` (the
    dimension's size) and the call passes 0 and N, so it still runs whole;
    `lcc-parallel-dispatch` later turns such calls into parts on threads.

    A kernel equal to one outlined before (same body and types, e.g. the same
    op in the next layer, or the forward inside @train_step and in @forward)
    is not created again: the call goes to the first one. A `memref.copy`
    between non-contiguous views becomes a `linalg.copy` kernel first (the
    runtime's generic `memrefCopy` is an element loop on one thread);
    contiguous copies stay (they become memcpy).

    With `gpu` (the CUDA target) kernels keep their linalg op for
    `lcc-gpu-kernels`, nothing is made splittable, every copy becomes a
    kernel (host code never touches device memory) and constant globals are
    referenced from inside the kernel rather than passed from the host.
  }];
  let options = [
    Option<"minParallelWork", "min-parallel-work", "int64_t", /*default=*/"32768",
           "Smallest work (iterations x body ops) for which a kernel is made splittable; "
           "0 never">,
    Option<"gpu", "gpu", "bool", /*default=*/"false",
           "Outline for lcc-gpu-kernels (CUDA target): linalg kept, every copy a kernel">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect", "::mlir::affine::AffineDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::linalg::LinalgDialect"];
}

def LccEmulateGpuKernelsPass : Pass<"lcc-emulate-gpu-kernels", "::mlir::ModuleOp"> {
  let summary = "CUDA kernels (gpu.func) become host functions that the runtime's GPU emulator runs";
  let description = [{
    `lcc --target=cuda --arch=emulated`, after `lcc-gpu-kernels`, in place of
    the NVVM/PTX lowering: the generated kernels run on the CPU, so they are
    checked numerically where there is no GPU. Each `gpu.func` of
    `gpu.module @lcc_kernels` becomes a public `func.func` of the same name
    and body (`lcc.emulated_kernel`, its argument types in
    `lcc.kernel_args`); `gpu.thread_id x` / `block_id x` / `block_dim x` /
    `grid_dim x` become calls of `lcc_emu_thread_id` ... (dimensions y and z:
    0, or 1 for sizes), `gpu.barrier` a call of `lcc_emu_barrier`, an f32
    `gpu.shuffle xor` a call of `lcc_emu_shuffle_xor(value, offset)` (always
    valid: lcc shuffles whole warps), workgroup memory a mutable global per
    kernel (the emulator runs one block at a time). The kernels that
    synchronize their threads are listed in `lcc.gpu_synchronizing`. Other
    gpu ops, private memory and other shuffles are errors.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def LccEmulatedKernelTablePass : Pass<"lcc-emulated-kernel-table", "::mlir::ModuleOp"> {
  let summary = "Launch ids to the emulated kernels: argv wrappers and an exported table";
  let description = [{
    After `lcc-emulate-gpu-kernels` and the lowering to the LLVM dialect. The
    runtime launches kernel `id` with the host code's argv of bare pointers;
    each emulated kernel (listed by id in `lcc.gpu_kernels`) gets an internal
    wrapper `lcc_emu_argv_<id>(ptr argv)` that expands each pointer into the
    descriptor of the static layout in `lcc.kernel_args` (the static offset
    included, as a GPU kernel applies it to its bare pointer), and the module
    exports `lcc_emu_kernels` (the wrappers by id), `lcc_emu_kernel_sync` (1
    where the kernel synchronizes its threads) and `lcc_emu_kernel_count`.
    An argument without a static layout is an error.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def LccGpuKernelsPass : Pass<"lcc-gpu-kernels", "::mlir::ModuleOp"> {
  let summary = "Kernel functions become CUDA kernels (gpu.func) and their calls launches";
  let description = [{
    CUDA target, after `lcc-outline-kernels{gpu}`. Every `lcc.kernel`
    function (memref arguments of static shape and strides; a run-time
    offset, as a ZeRO rank's piece has, the host adds to the bare pointer
    and the kernel sees offset 0; one linalg op or one
    `scf.for` of row updates) becomes a `gpu.func` kernel of the same name
    in `gpu.module @lcc_kernels`, mapped onto threads by one of four schemes
    recorded as `lcc.mapping` (passes/GpuKernelBodies.h):

    - `threads`: one thread per point of the leading parallel dimensions
      that index every output (row-major, so neighbouring threads touch
      neighbouring elements); the rest of the nest is the CPU's loop form
      inside the thread. An elementwise kernel whose innermost size is a
      multiple of `lanes` gives each thread `lanes` neighbouring elements
      (`lcc.lanes`), and arguments whose pointers every launch site proves
      16-byte aligned (device allocations, views at constant multiples of
      16 bytes) get `memref.assume_alignment`, so LLVM's load/store
      vectorizer turns the lanes' accesses into 128-bit loads and stores;
    - `rows`: a reduction of at least `min-block-reduction` elements with an
      `out = combine(out, f(in))` body (add, mul, max, min on f32), read
      contiguously or with few outputs: one block per output, threads
      striding over the reduced elements, partials combined by warp
      shuffles and shared memory in a fixed order (deterministic);
    - `slices`: the embedding gradient's loop of row updates: one thread per
      element of the row, walking the rows in order (no atomics);
    - `serial`: one thread, for what fits none of the above.

    Horizontal fusion (passes/GpuMultiTensor.h): a run of calls of
    `threads` kernels in a host function, with only pure ops between them,
    is regrouped by dependence level (a call depends on an earlier one when
    either may write bytes the other touches, by the buffers' static byte
    ranges in their allocation; distinct host arguments are distinct
    allocations), and the calls of one level become one `multi` kernel whose
    blocks are split among them (at most `max-fused-args` buffers each):
    AdamW's per-parameter updates become one launch per stage for all
    parameters. A kernel only run inside fused ones is dropped.

    Constant globals a kernel reads are copied into the device module. The
    module gets `gpu.container_module` and `lcc.gpu_kernels`, the kernel
    names in launch-id order. Each call of a kernel from a host function
    becomes

    ```
    func.call @lcc_cuda_launch(%id, %grid, %block, %argv, %argc) : (i64, i64, i64, i64, i64) -> ()
    ```

    where `%argv` is a stack array (one per host function) holding the
    aligned pointer of each memref argument: kernels take bare pointers
    (`convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv}`) and apply their
    static offsets themselves, which is why dynamic layouts are refused.
    Host code never dereferences a buffer, so it can run (and be recorded)
    without a GPU: the runtime's launch-sequence tests do exactly that.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "Threads per block (a multiple of 32, at most 1024)">,
    Option<"lanes", "lanes", "int64_t", /*default=*/"4",
           "Neighbouring innermost elements per thread of an elementwise kernel (1, 2, 4 "
           "or 8; 4 f32 = one 128-bit access)">,
    Option<"maxFusedArgs", "max-fused-args", "int64_t", /*default=*/"256",
           "Horizontal fusion: the most buffers one fused launch takes (2 KiB of "
           "parameters; 0: no fusion)">,
    Option<"minBlockReduction", "min-block-reduction", "int64_t", /*default=*/"128",
           "Smallest reduction given a whole block (the rows mapping)">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::func::FuncDialect",
                           "::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect",
                           "::mlir::affine::AffineDialect", "::mlir::memref::MemRefDialect"];
}

def LccGemmToLibraryPass : Pass<"lcc-gemm-to-library", "::mlir::ModuleOp"> {
  let summary = "Replace matmul loop nests on memrefs by calls to the runtime's BLAS GEMM";
  let description = [{
    CPU only, after bufferization. A `linalg.generic` computing
    `C[b..., m, n] += A * B` with one reduction dimension (A over batch, m, k;
    B over batch, k, n; up to 3 batch dimensions, broadcasts allowed; f32 or
    f64; or bf16 A and B extended to an f32 C, the bf16 matmul of
    `lcc-precision`) becomes `func.call @lcc_sgemm` / `@lcc_dgemm` /
    `@lcc_bf16gemm` with 28 i64
    arguments: batch sizes (3), M, N, K, then for A, B and C the aligned base
    pointer, the offset, and the strides of the batch dims (3) and of the two
    matrix dims, in elements, and last beta (runtime/CpuKernels.h documents
    the ABI). beta is 0 when C's zero fill comes right before the GEMM (only
    views, casts and constants in between): the fill is erased and the GEMM
    overwrites C without reading it; else 1, C += A B. Other generics are
    left alone.

    For the CUDA target the callees are `lcc_cuda_sgemm` / `lcc_cuda_dgemm`
    (`prefix=lcc_cuda_`), the same ABI on device pointers, which the CUDA
    runtime runs with cuBLASLt. With a prefix other than `lcc_`, the fused
    attention's runtime calls (`lcc_attention_fwd/_bwd`, from lcc.attention
    kept whole) are retargeted the same way (`lcc_cuda_attention_fwd/_bwd`);
    the CUDA kernels take bf16/f16 operands and head sizes 16, 32, 64, 128,
    and any other call is an error at the attention's location. So are the
    collectives' calls (`lcc_all_reduce`, ..., `lcc_wait`, not the host
    query `lcc_group_rank`): the CUDA runtime enqueues them on its streams.
  }];
  let options = [
    Option<"prefix", "prefix", "std::string", /*default=*/"\"lcc_\"",
           "Prefix of the runtime GEMM functions called (lcc_ for the CPU, lcc_cuda_ for CUDA)">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

def LccPlanMemoryPass : Pass<"lcc-plan-memory", "::mlir::ModuleOp"> {
  let summary = "Static buffer assignment: a function's temporaries become views of one arena";
  let description = [{
    Runs on memrefs after bufferization and before buffer deallocation (so it
    sees allocations as bufferization left them). In each public function
    (one straight-line block), every `memref.alloc` of a static,
    identity-layout type whose uses (and its views' uses) stay inside the
    function gets a byte offset in one arena, assigned by liveness (from its
    first use to its last) so that buffers alive at the same time never
    overlap. The function gains a last
    argument `memref<Pxi8> {lcc.arena}` and the attribute `lcc.arena_bytes =
    P` (the plan's peak); each planned allocation becomes a `memref.view` of
    the arena at its offset (64-byte aligned) and its deallocations vanish.
    Allocations that cannot be planned stay heap allocations. The body of a
    micro-batch loop (`lcc.micro_batches`, lcc-build-train-step) is planned
    the same way on its own; its range is one buffer of the enclosing plan,
    alive at the loop, so every iteration reuses it. A layer function
    (`lcc.layer`, lcc-outline-layers) is planned as a leaf before its
    callers: it gains `memref<?xi8> {lcc.arena}` and one `index
    {lcc.arena_offset}` per plannable temporary, which become views of the
    arena there; each call spans the function's ops in the caller's
    timeline (an argument is used where the function uses it) and places
    the temporaries like the caller's own buffers, passing the caller's
    arena and their offsets. A function with control flow (blocks), a layer
    function calling another, or a call of one outside a planned function is
    an error.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect", "::mlir::arith::ArithDialect"];
}

def LccFusePass : Pass<"lcc-fuse", "::mlir::ModuleOp"> {
  let summary = "Fuse elementwise producers into their consumers (linalg on tensors)";
  let description = [{
    Target-neutral, on linalg on tensors (after lcc-lower-to-linalg): an
    all-parallel linalg.generic whose result has exactly one use is fused
    into that user (another elementwise op, a reduction, a broadcast), unless
    either side is a contraction, which stays a separate GEMM for the BLAS /
    cuBLASLt call. Chains such as bias + GELU, the max-subtract-exp of
    softmax, or the whole AdamW update of one parameter become one kernel.
    A fused kernel reads at most `max-inputs` tensors: a long chain (the
    global gradient norm's running sum, one add per parameter) continues in
    a new kernel past it, in the same order of arithmetic.
    The module gets `lcc.fusion = {kernels_before = N, kernels_after = M}`
    (linalg ops other than fills), which `lcc --report` prints. With
    `explain`, every linalg op that still reads a linalg.generic's result
    gets a remark saying why the two stayed apart (several uses, a
    broadcast read, a contraction, across a micro-batch loop, max-inputs):
    the way to ask "why was this not fused?" (Debian's LLVM is built
    without `-debug-only` and pass statistics).
  }];
  let options = [
    Option<"maxInputs", "max-inputs", "unsigned", /*default=*/"64",
           "Most tensors a fused kernel reads">,
    Option<"explain", "explain", "bool", /*default=*/"false",
           "Remark at each op left reading an unfused producer, with the reason">,
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def LccSplitReductionsPass : Pass<"lcc-split-reductions", "::mlir::ModuleOp"> {
  let summary = "Reduce a large tensor to a scalar in two stages: partials, then their combination";
  let description = [{
    Target-neutral, on linalg on tensors after lcc-fuse. A linalg.generic
    that reduces every dimension of at least `min-elements` points to
    scalars (a parameter's squared gradient norm, a large loss sum), whose
    body is `out_i = combine(out_i, f(ins))` for each output (add, mul, max,
    min: anything with a neutral element) with no output read elsewhere,
    becomes two generics:
      1. the same body over the same iteration space with the leading `k`
         dimensions parallel, each point of them reducing the rest into a
         partial (initialized to the combiner's neutral element);
      2. the combination of the partials into the original outputs.
    `k` is the fewest leading dimensions giving at least `min-partials`
    partials (else all but the last). The iteration space is not reshaped,
    so `linalg.index` and the inputs' maps are unchanged, and for row-major
    inputs each partial reduces one contiguous block.
    Why: a whole-tensor reduction is one block on the GPU (one SM reads the
    154 MB gradient of GPT-2's wte) and one thread on the CPU; split, stage
    1 is an ordinary row reduction over all SMs or cores. The summation
    order changes (partials first), and is still fixed: deterministic.
    A generic on memrefs means the pass runs after bufferization: an error.
  }];
  let options = [
    Option<"minElements", "min-elements", "int64_t", /*default=*/"16384",
           "Split reductions of at least this many points">,
    Option<"minPartials", "min-partials", "int64_t", /*default=*/"32",
           "Aim for at least this many partials (leading dimensions are added until reached)">,
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

def LccApproximateMathPass : Pass<"lcc-approximate-math"> {
  let summary = "Replace f32 libm calls (exp, tanh, erf, log, ...) by inline polynomials";
  let description = [{
    CPU code generation, on any IR with `math` ops (the pipelines run it on
    loops after bufferization). Each f32 `math` op named in `functions`
    becomes MLIR's polynomial approximation (Cephes/Eigen-style; a few ulp)
    built from arith ops, scalar or vector alike.

    Why: a call to `expf`/`tanhf` in a loop body stops LLVM's loop vectorizer
    and costs a call per element; on gpt-tiny-sized steps libm was ~20% of
    the profile. Inline polynomials vectorize to AVX2/FMA like any other
    arithmetic. f64 ops are left to libm (the gradient checks run in f64 and
    want libm's accuracy).
  }];
  let options = [
    ListOption<"functions", "functions", "std::string",
               "The math functions to approximate (default: exp, expm1, tanh, erf, "
               "log, log1p, log2)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

def LccOutlineLayersPass : Pass<"lcc-outline-layers", "::mlir::ModuleOp"> {
  let summary = "Repeated layers of a function become calls of one function per layer kind";
  let description = [{
    Outlines a function's repeated layers, so that what follows works on
    one copy of each (the AOT pipelines run it on the lcc dialect before
    lowering, on @forward and @train_step; the CUDA pipeline inlines the
    layers back after one-shot bufferization). In
    `@<function>` (one straight-line block, and the bodies of its
    micro-batch loops, each on its own) a run is a
    maximal sequence of consecutive effect-free ops named (`NameLoc`) after
    one layer instance: the name up to its first `<identifier>.<number>`
    component ("h.3." from the DSL's loops, "/transformer/h.3/attn/MatMul"
    from ONNX; not "Add_1", ONNX's node numbering). An op with effects (a
    collective) stays in the step and ends the run. Runs of one layer
    pattern ("h.*") and phase (in `@train_step` a layer's forward is phase 0,
    its backward phase 1, the optimizer's passes over its parameters the
    next) that are equal in structure (ops with their regions, attributes
    inherent and discardable, operand and result types, internal wiring, live-ins
    by first use, the results used after the run) become calls of one
    private function `@<function>_layer<N>` {lcc.layer = "h.*",
    lcc.layer_phase}, taking the live-ins and returning the live-outs.
    Constants, empty tensors and fills of them are made again inside (a
    written `outs` argument would be read-only). Layout ops (lcc.transpose,
    lcc.reshape) are made again too: a run that reads a value of an earlier
    run of its layer instance and also a chain of layout ops the earlier
    run applied to it (a backward reading the attention output and its
    transposed, flattened form) computes the chain itself, so the earlier
    run returns one of the two. Names only propose runs: a
    near-twin (one more op) is another class. Classes of fewer than
    `min-repeats` runs stay inline. `lcc.layers = {functions, calls}` on the
    module counts them (lcc --report). On the lcc dialect, `inline`,
    `symbol-dce` and `cse` undo it exactly (same ops, same order).
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"forward\"",
           "The function whose layers are outlined">,
    Option<"minRepeats", "min-repeats", "int64_t", /*default=*/"2",
           "Runs of one structure needed to outline them">,
    Option<"ifPresent", "if-present", "bool", /*default=*/"false",
           "A module without the function is left alone (else an error)">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def LccAccumulateInPlacePass : Pass<"lcc-accumulate-in-place", "::mlir::ModuleOp"> {
  let summary = "Loop-carried sums over micro-batches are updated in their own buffer";
  let description = [{
    On linalg on tensors, right before bufferization. For each micro-batch
    loop (`scf.for {lcc.micro_batches}`, lcc-build-train-step), each carried
    sum whose next value is an elementwise `linalg.generic` that reads the
    carried value (identity map, its only use) and does not read its own
    init gets the carried value as that init (each sum's zero fill is its
    own: lcc-clone-fills, right after). One-shot bufferization then keeps
    every sum in one buffer for the whole loop instead of allocating the
    next sum in every iteration:

    ```mlir
    %r = scf.for %k = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (tensor<8xf32>) {
      %g = ...
      %s = linalg.generic {...} ins(%acc, %g : ...) outs(%empty : tensor<8xf32>) {...}
      scf.yield %s : tensor<8xf32>
    } {lcc.micro_batches}
    // becomes ... outs(%acc : tensor<8xf32>) ...
    ```

    A sum that does not have this form is left as it is (still correct:
    bufferization copies) and counted in the statistics.
  }];
  let statistics = [
    Statistic<"numInPlace", "in-place", "Loop-carried sums written into their own buffer">,
    Statistic<"numLeft", "left", "Loop-carried sums left as they were">,
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect"];
}

def LccCloneFillsPass : Pass<"lcc-clone-fills"> {
  let summary = "Give every destination-passing user of a linalg.fill its own fill";
  let description = [{
    On linalg on tensors, right before bufferization. CSE merges identical
    `linalg.fill`s (the zero every reduction and GEMM accumulates into), so
    one filled tensor becomes the init of many ops. One-shot bufferization
    must then keep that buffer intact and copy it before each in-place
    writer: on gpt-tiny's train step that was ~500 full-size copies per
    step, the memory traffic of a second forward pass. This pass clones the
    fill (and its `tensor.empty`) right before each user that takes it as an
    `outs` operand, or as the start of a micro-batch loop's carried sum, so
    each writes into a fresh buffer it fills itself; a fill with one such
    user moves right before it. Uses as an input are
    left alone (reading needs no private copy). A fill on
    memrefs means the pass runs after bufferization: an error.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect"];
}

def LccFreeUnplannedPass : Pass<"lcc-free-unplanned", "::mlir::ModuleOp"> {
  let summary = "Free what lcc-plan-memory left to the heap (upstream's deallocation pipeline)";
  let description = [{
    AOT CPU, right after `lcc-plan-memory`. Buffers the memory plan could
    not place in the arena stay `memref.alloc`s (or clones and reallocs) and
    must be freed; this runs upstream's `buffer-deallocation-pipeline` for
    them. When there are none (every temporary of lcc's models is planned)
    the module is left alone: the deallocation pipeline's ownership analysis
    and its three canonicalizations cost about 1 s of GPT-2 124M's compile
    for nothing.

    The deallocation pipeline's own errors (an op with unknown memory
    effects on a buffer) fail this pass.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::bufferization::BufferizationDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect",
                           "::mlir::cf::ControlFlowDialect"];
}

def LccPruneKernelArgsPass : Pass<"lcc-prune-kernel-args", "::mlir::ModuleOp"> {
  let summary = "Drop the arguments a kernel never reads (LLVM dialect)";
  let description = [{
    On the LLVM dialect, after the conversion. A kernel (`lcc.kernel`, made
    by `lcc-outline-kernels`) receives each memref as a whole descriptor
    expanded into arguments (allocated and aligned pointers, offset, sizes,
    strides), but its shapes are static, so once its body is folded it reads
    only the aligned pointers (about 1 argument in 5 on gpt-tiny). The
    arguments it never reads are removed from the kernel and from every call,
    and what computed them in the callers is erased if nothing else uses it.
    Layer functions (`lcc.layer`, lcc-outline-layers) are pruned the same
    way after their kernels: they pass their memrefs on to kernels, so they
    too read little more than pointers.

    The step functions are one long block of such calls; without this, most
    of their instructions would move descriptor fields nobody reads, and
    their code generation is the longest single job of a big model's
    compile (GPT-2 124M). The trailing loop bounds of `lcc.parallel`
    kernels are always kept (`lcc-parallel-dispatch` needs them).

    A kernel or layer function used other than by direct calls (its address
    taken) is an error: its callers could not be rewritten.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def LccParallelDispatchPass : Pass<"lcc-parallel-dispatch", "::mlir::ModuleOp"> {
  let summary = "Run splittable kernels on the runtime's thread pool (LLVM dialect)";
  let description = [{
    AOT CPU, last, on the LLVM dialect. Each call to a kernel tagged
    `lcc.parallel = N` by `lcc-outline-kernels` (whose last two arguments,
    the loop bounds, must be the constants 0 and N) becomes

    ```
    llvm.call @lcc_parallel_for(@<kernel>_task<i>, %args, N)
    ```

    where `%args` is a stack array holding the call's non-constant arguments
    (8 bytes each) and `@<kernel>_task<i>(ctx, lo, hi)` loads them back,
    rematerializes the constant ones (sizes and strides, so LLVM still sees
    static shapes inside the kernel) and calls the kernel on [lo, hi). The
    runtime (runtime/Parallel.h) splits [0, N) into one fixed part per thread.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // LCC_PASSES_TD
