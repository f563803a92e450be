//===- Passes.td - lcc buffer passes -----------------------*- tablegen -*-===//
//
// Passes of linalg on tensors to buffers: out-params, in-place accumulation, bufferization
// helpers, the memory plan.
// The order in which passes run is written only in passes/Pipelines.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_BUFFER_PASSES_TD
#define LCC_PASSES_BUFFER_PASSES_TD

include "mlir/Pass/PassBase.td"

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

    First, a sum whose other input is the result of a call of a layer
    function (lcc-outline-layers; lcc-out-params gave the call a
    `tensor.empty` out-param for it) moves into the layer: the function adds
    what it computed to its out-param in place, and each call passes the
    carried value as that out-param and yields its result. The layer
    function is one for all its calls, so it moves only when every call of
    the function has a sum with the same payload on that result, a payload
    using no value of the step; otherwise the sums stay in the loop. With
    `--accum`, a layer's gradients are then summed by its backward
    function: the step's loop keeps the sums of the parameters outside
    layers only (GPT-2: 5 of 149), and a layer's gradient needs no buffer
    besides its sum.

    ```mlir
    %r = scf.for ... iter_args(%acc = %zero) -> (tensor<8xf32>) {
      %g = func.call @layer(%x, %empty) : (...) -> tensor<8xf32>
      %s = linalg.generic {...} ins(%acc, %g : ...) outs(%fresh : ...) {...}
      scf.yield %s : tensor<8xf32>
    } {lcc.micro_batches}
    // becomes: %s = func.call @layer(%x, %acc); @layer adds its result to
    // its out-param (`ins(%out, %v) outs(%out)`) before storing it there.
    ```

    A sum that has neither form is left as it is (still correct:
    bufferization copies) and counted in the statistics.

    Last, a running sum that a layer function carries from call to call
    without a loop (lcc-build-train-step's pipeline parts take the
    gradients' sums as arguments and return them with the micro-batch's
    gradients added) is written in place the same way: when the function's
    result stores an elementwise sum of an argument read nowhere else, and
    every call passes for that argument a value read only there (or a fill,
    cloned for it) and a `tensor.empty` out-param, the function adds to its
    out-param in place and each call passes that value as the out-param
    instead of as the argument, which is dropped:

    ```mlir
    %s1 = func.call @part(%x, %s0, %empty) // @part: ins(%acc, %g) outs(%e) stored in %out
    // becomes: %s1 = func.call @part(%x, %s0); @part: ins(%out, %g) outs(%out)
    ```
  }];
  let statistics = [
    Statistic<"numIntoLayers", "into-layers", "Loop-carried sums done by the layer function called">,
    Statistic<"numInPlace", "in-place", "Loop-carried sums written into their own buffer">,
    Statistic<"numLeft", "left", "Loop-carried sums left as they were">,
    Statistic<"numCarriedInLayers", "carried-in-layers",
              "Sums a layer function carries from call to call, written in place">,
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
    `outs` operand, as the start of a micro-batch loop's carried sum, or as
    what a `bufferization.materialize_in_destination` stores (equal initial
    parameters, returned by @init or one of its layer functions), so
    each writes into a fresh buffer it fills itself; a fill with one such
    user moves right before it. Uses as an input are
    left alone (reading needs no private copy). A fill on
    memrefs means the pass runs after bufferization: an error.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect"];
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
    arena and their offsets. A layer function may call layer functions (a
    pipeline stage's part calls its layers, lcc-build-train-step): those
    are summarized first, and their temporaries at each call are the
    caller's own, placed by its callers in turn and passed on through its
    offset arguments. A function with control flow (blocks), layer
    functions calling each other in a cycle, or a call of one outside a
    planned function is an error.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect", "::mlir::arith::ArithDialect"];
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

def LccLoopLayerCallsPass : Pass<"lcc-loop-layer-calls", "::mlir::ModuleOp"> {
  let summary = "Consecutive calls of one layer function become a loop over layers";
  let description = [{
    On memrefs, after the memory plan (AOT CPU). A step calls each layer
    function once per layer (lcc-outline-layers), and every call passes its
    layer's parameters, gradients, saved activations and the offsets of the
    callee's temporaries: code that grows with depth in every pass after
    this one and in LLVM (at 48 layers, most of the step). Consecutive calls
    of one `lcc.layer` function, with only pure ops (views, casts,
    constants) between them, become one `scf.for` over the calls, in their
    order, at the place of the last call. Each argument position is, across
    the calls:

    - the same value (or equal pure ops, a cast of the arena): passed as is;
    - views of one buffer at constant byte offsets (the arena), or integer
      constants (the callee's temporaries' offsets): a constant global
      table, the view made again in the loop at the loaded offset;
    - arguments of an entry point (a public function of static buffers that
      nothing in the module calls; parameters, gradients, optimizer state):
      their argument numbers in the constant table, their addresses read
      from the runtime's array of the function's buffers (AotCompiler.h),
      the buffer rebuilt from its address in the loop (an LLVM descriptor
      cast to the memref; the conversion to LLVM cancels the cast);
    - other static identity-layout buffers: their addresses stored into a
      stack table before the loop, rebuilt the same way.

    An entry point that reads the runtime's array then takes it alone, as a
    `!llvm.ptr` argument (`lcc.buffer_table`): each buffer still used is made
    from its address at the start, and the others are dropped, so that its
    signature (about 9 values per buffer after lowering) does not grow with
    depth either.

    ```mlir
    call @layer(%v0, %p0, %arena, %c64) : (...) -> ()
    call @layer(%v1, %p1, %arena, %c128) : (...) -> ()
    // becomes
    scf.for %i = %c0 to %c2 step %c1 {
      // %v_i: a view of the arena at the offset loaded from a global,
      // %p_i: the buffer at the address the table holds, %c_i: loaded
      call @layer(%v_i, %p_i, %arena, %c_i) : (...) -> ()
    }
    ```

    A group of fewer than `min-calls` calls stays unrolled, and so does one
    where an argument fits none of the forms above (with `explain`, a remark
    says which). The calls run in the same order on the same buffers, so the
    results are bitwise those of the unrolled calls. `min-calls` below 2 is
    an error.
  }];
  let options = [
    Option<"minCalls", "min-calls", "int64_t", "2", "Fewest consecutive calls that become a loop">,
    Option<"explain", "explain", "bool", "false",
           "A remark at each group of calls: made a loop, or why not">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::LLVM::LLVMDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect"];
}

#endif // LCC_PASSES_BUFFER_PASSES_TD
