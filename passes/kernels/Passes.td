//===- Passes.td - lcc kernels passes ----------------------*- tablegen -*-===//
//
// Passes of buffers to kernels, shared by the CPU and CUDA targets: library calls for GEMMs
// and attention, loop nests outlined as kernel functions.
// The order in which passes run is written only in passes/Pipelines.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_KERNELS_PASSES_TD
#define LCC_PASSES_KERNELS_PASSES_TD

include "mlir/Pass/PassBase.td"

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
    matrix dims, in elements, and last beta (runtime/cpu/CpuKernels.h documents
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

    With `explain`, every generic that reduces two buffers into one and
    multiplies but is not a GEMM gets a remark saying why (its body has a
    fused op, a dimension does not fit A[m, k] B[k, n], more than 3 batch
    dimensions, ...): such a product runs as a loop nest, far slower than
    the library.
  }];
  let options = [
    Option<"prefix", "prefix", "std::string", /*default=*/"\"lcc_\"",
           "Prefix of the runtime GEMM functions called (lcc_ for the CPU, lcc_cuda_ for CUDA)">,
    Option<"explain", "explain", "bool", /*default=*/"false",
           "A remark at each multiplying reduction left a loop nest, saying why">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
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

#endif // LCC_PASSES_KERNELS_PASSES_TD
