//===- Passes.td - lcc gpu passes --------------------------*- tablegen -*-===//
//
// Passes of the CUDA target: kernels to GPU launches, and their emulation on the CPU
// (--arch=emulated).
// The order in which passes run is written only in passes/Pipelines.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_GPU_PASSES_TD
#define LCC_PASSES_GPU_PASSES_TD

include "mlir/Pass/PassBase.td"

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
      16 bytes; in a layer function, wherever each call puts them) get `memref.assume_alignment`, so LLVM's load/store
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
    ranges in their allocation; distinct arguments of a public function are
    distinct allocations; in a layer function, disjoint where each of its
    calls puts them: passes/gpu/HostBuffers.h), and the calls of one level become one `multi` kernel whose
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

#endif // LCC_PASSES_GPU_PASSES_TD
