//===- Passes.td - lcc tensor passes -----------------------*- tablegen -*-===//
//
// Passes of the lcc dialect to linalg on tensors: repeated layers outlined, decomposition,
// lowering, fusion, split reductions.
// The order in which passes run is written only in passes/Pipelines.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_TENSOR_PASSES_TD
#define LCC_PASSES_TENSOR_PASSES_TD

include "mlir/Pass/PassBase.td"

def LccOutlineLayersPass : Pass<"lcc-outline-layers", "::mlir::ModuleOp"> {
  let summary = "Repeated layers of a function become calls of one function per layer kind";
  let description = [{
    Outlines a function's repeated layers, so that what follows works on
    one copy of each (the AOT pipelines run it on the lcc dialect before
    lowering, on @forward and @train_step, and the CPU one on @init; the
    CUDA pipeline inlines the layers back after one-shot bufferization). In
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
    written `outs` argument would be read-only), except scalar constants
    the runs of a class disagree on: those are compared by type only and
    become trailing arguments, so that @init's layers, whose initializers
    differ only in their seeds, are one function
    (`call @init_layer0(%seed0, %seed1)`). Layout ops (lcc.transpose,
    lcc.reshape) are made again too: a run that reads a value of an earlier
    run of its layer instance and also a chain of layout ops the earlier
    run applied to it (a backward reading the attention output and its
    transposed, flattened form) computes the chain itself, so the earlier
    run returns one of the two. Names only propose runs: a
    near-twin (one more op) is another class. Classes of fewer than
    `min-repeats` runs stay inline, unless a run holds an op
    `{lcc.recomputed}` (lcc-recompute's copies of forward values: inline,
    CSE would merge them back into the forward's). `lcc.layers = {functions, calls}` on the
    module counts them (lcc --report). On the lcc dialect, `inline`,
    `symbol-dce` and `cse` undo it exactly (same ops, same order). With
    `explain`, the first op of every run left inline gets a remark saying
    why: it differs from the layer most runs of its kind share (how many
    ops, the first op that differs, or the same ops wired otherwise), or
    too few runs share its structure (`min-repeats`).
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"forward\"",
           "The function whose layers are outlined (a glob such as prefill*: each it matches)">,
    Option<"minRepeats", "min-repeats", "int64_t", /*default=*/"2",
           "Runs of one structure needed to outline them">,
    Option<"ifPresent", "if-present", "bool", /*default=*/"false",
           "A module without the function is left alone (else an error)">,
    Option<"explain", "explain", "bool", /*default=*/"false",
           "Remark at each layer run left inline, with the reason">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect"];
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
    attention kernels (`lcc_attention_fwd`/`_bwd`, runtime/cpu/Attention.h),
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

#endif // LCC_PASSES_TENSOR_PASSES_TD
