//===- Passes.td - lcc cpu passes --------------------------*- tablegen -*-===//
//
// Passes of the CPU target after kernels: inline math, pruned kernel arguments, parallel
// dispatch on the runtime's threads.
// The order in which passes run is written only in passes/Pipelines.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_CPU_PASSES_TD
#define LCC_PASSES_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

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
    llvm.call @lcc_parallel_for(@<kernel>_task, %args, N)
    ```

    where `%args` is a stack array holding the call's arguments (8 bytes
    each) and `@<kernel>_task(ctx, lo, hi)` loads them back and calls the
    kernel on [lo, hi). Each kernel has one task, shared by all its calls: an
    argument that is the same constant in every call is rematerialized in
    the task; one that differs between calls (init's seeds) is stored like
    the pointers. A task per call (one per parameter in init) would be code,
    and compile time, growing with the layers. The
    runtime (runtime/cpu/Parallel.h) splits [0, N) into one fixed part per thread.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // LCC_PASSES_CPU_PASSES_TD
