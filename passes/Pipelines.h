//===- Pipelines.h - the one place pass order is written --------*- C++ -*-===//
#ifndef LCC_PASSES_PIPELINES_H
#define LCC_PASSES_PIPELINES_H

#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"

#include <optional>
#include <vector>

namespace lcc {

/// Phases a compilation can stop after (`lcc --compile-to=<phase>`).
enum class Phase {
  Input,     ///< the lcc dialect as the frontend produced it
  TrainStep, ///< lcc dialect plus @forward_grad and @train_step (docs/training.md)
  Linalg,    ///< target-neutral linalg on tensors
  LLVM,      ///< LLVM dialect for the host CPU
  /// The train step through the AOT pipeline of `-o train.bin` for lcc's
  /// --target (compiler/cpu/AotCompiler.h: buildAotPipeline), to the LLVM
  /// dialect; lcc builds it, buildPipelineUpTo does not.
  Aot,
};

/// The options of `lcc-build-train-step` (optimizer, lr, schedule, ...) and
/// how the step is distributed over ranks.
struct TrainStepOptions : LccBuildTrainStepPassOptions {
  ShardMode shard = ShardMode::None;
  /// Ranks the step is compiled for: tp tensor-parallel x world / tp
  /// data-parallel.
  int64_t world = 1;
  /// Tensor-parallel ranks (lcc-shard-tp; 1: none).
  int64_t tp = 1;
  /// With tp: the residual stream between tp regions split by tokens
  /// (lcc-sequence-parallel).
  bool sequenceParallel = false;
  /// Pipeline stages (lcc-partition-pipeline, lcc-split-stage; 1: none):
  /// the step is the one of `stage`, its micro-batches `accum` in
  /// `pipelineSchedule`'s order; `stageStarts` the user's cut (layers that
  /// start stages 1, 2, ...), empty for the balanced one.
  int64_t pp = 1;
  int64_t stage = 0;
  /// Stages per pipeline rank (interleaved: V; the model is cut into pp x V
  /// stages, rank r running stages r, r + pp, ...).
  int64_t virtualStages = 1;
  std::vector<int64_t> stageStarts;
  /// Largest bucket of gradients per collective, in MiB.
  double bucketMb = 25.0;
  /// lcc-precision before autodiff. fp16 also needs lossScale = "dynamic"
  /// (the driver sets both).
  Precision precision = Precision::FP32;
  /// decomposed (matmuls and softmax kernels), fused (lcc-decompose keeps
  /// lcc.attention whole: the runtime's fused kernels, runtime/cpu/Attention.h),
  /// or auto (attentionMinScores).
  AttentionMode attention = AttentionMode::Auto;
  /// What the backward makes again (lcc-recompute) for the first
  /// `recomputeLayers` layers (-1: all; with full, the rest selective). The
  /// driver resolves auto to one of the others before building.
  RecomputeMode recompute = RecomputeMode::None;
  int64_t recomputeLayers = -1;
  /// lcc-lora first of all (no targets: none): adapters of rank loraRank
  /// on the weights loraTargets match, the rest frozen.
  std::vector<std::string> loraTargets;
  int64_t loraRank = 8;
  double loraAlpha = 16.0;
  bool loraRslora = false;
  uint64_t loraSeed = 1337; ///< A's initial values (the driver's --seed)
};

/// Which attentions stay whole for the fused kernels (lcc-decompose's
/// keep-attention-min-scores): 1 for fused (all), 0 for decomposed
/// (none), and for auto those whose Tq * Tk is at least 512 * 512 on the
/// CPU, where the fused kernels were measured faster (and use a fraction of
/// the memory), none on CUDA (its kernels have not run on a GPU yet).
int64_t attentionMinScores(AttentionMode attention, bool cuda);

/// @forward -> @forward_grad (lcc-autodiff) -> @train_step (lcc-build-train-step)
/// -> distributed over ranks (lcc-shard-dp or lcc-shard-zero) when asked.
void buildTrainStepPipeline(mlir::OpPassManager &pm, const TrainStepOptions &options);

/// @<entry> (prefill or decode_step, lcc-build-generation) of a module that
/// holds the model imported at batch 1 and the entry's length, with the
/// step's adapters and precision (`options`); `context`: the cache length;
/// `cache`: false for a prefill without KV cache (models whose attention is
/// not one op); `symbol`: the function's name (default: the entry's).
void buildGenerationPipeline(mlir::OpPassManager &pm, const TrainStepOptions &options,
                             llvm::StringRef entry, int64_t context, bool cache = true,
                             llvm::StringRef symbol = "");

/// lcc dialect -> linalg/tensor/arith/math on tensors (target neutral).
/// Attentions with Tq * Tk >= `keepAttentionMinScores` (> 0) stay whole for
/// the fused kernels (attentionMinScores). With `outlineLayers` (the AOT
/// pipelines), repeated layers of @forward and @train_step first become
/// functions (lcc-outline-layers), so that lowering and all that follows
/// work on one copy of each.
/// `pipelineChunks`: the stages per pipeline rank (its parts' functions
/// whose layers are outlined too).
void buildLowerToLinalgPipeline(mlir::OpPassManager &pm, int64_t keepAttentionMinScores = 0,
                                bool outlineLayers = false, int64_t pipelineChunks = 1);

/// linalg on tensors -> LLVM dialect for the CPU (bufferization, loops, LLVM).
void buildLinalgToLLVMPipeline(mlir::OpPassManager &pm);

/// Everything from the lcc dialect up to `phase`. The train-step passes run
/// when `phase` is TrainStep (with default options when `train` is empty) or
/// when `train` is given (so the linalg/llvm phases lower @train_step too).
void buildPipelineUpTo(mlir::OpPassManager &pm, Phase phase,
                       const std::optional<TrainStepOptions> &train = std::nullopt);

/// buildAotCpuPipeline up to the memory plan (lcc-plan-memory sets each
/// function's `lcc.arena_bytes`): the planner's probes need the plan only.
void buildAotMemoryPlanPipeline(mlir::OpPassManager &pm, int64_t overlap, AttentionMode attention,
                                bool outlineLayers);

/// The ahead-of-time CPU pipeline (train.bin): train step (when `train` is
/// given), linalg, then destination-passing ABI (lcc-out-params), bufferization
/// and LLVM with bare-pointer arguments (compiler/cpu/AotCompiler.h). `overlap`:
/// collectives in flight while the step computes (lcc-overlap-collectives).
/// `attention`: decomposed, fused or auto (attentionMinScores); `train`'s
/// own choice wins when given. `outlineLayers`: repeated layers of @forward
/// and @train_step are bufferized once per layer kind (lcc-outline-layers).
void buildAotCpuPipeline(mlir::OpPassManager &pm,
                         const std::optional<TrainStepOptions> &train = std::nullopt,
                         int64_t overlap = 2, AttentionMode attention = AttentionMode::Auto,
                         bool outlineLayers = true);

/// Only `functions` stay (made private otherwise, then dropped when unused):
/// the AOT pipelines' first step (@forward_grad is inside @train_step).
void addExportedOnly(mlir::OpPassManager &pm, llvm::ArrayRef<std::string> functions);

/// What the CUDA pipeline targets (compiler/cuda).
struct CudaTargetOptions {
  /// "emulated": the kernels become host functions that the runtime's GPU
  /// emulator runs (lcc-emulate-gpu-kernels), no PTX.
  std::string chip = "sm_90";
  /// PTX ISA features for the NVPTX back end; PTX 8.0 is what sm_90 needs.
  std::string features = "+ptx80";
  /// libdevice bitcode (the CUDA toolkit's nvvm/libdevice/libdevice.10.bc)
  /// for the math functions kernels call; empty: none linked.
  std::string libdevice;
};

/// The ahead-of-time CUDA pipeline: the CPU one up to the memory plan, then
/// GEMMs to cuBLASLt calls (lcc-gemm-to-library{prefix=lcc_cuda_}), kernels
/// outlined for the GPU and made gpu.funcs plus launches (lcc-gpu-kernels),
/// the device module to NVVM and PTX (a gpu.binary holding PTX), the host
/// code to the LLVM dialect. compiler/cuda assembles the PTX with ptxas.
void buildAotCudaPipeline(mlir::OpPassManager &pm, const CudaTargetOptions &target,
                          const std::optional<TrainStepOptions> &train = std::nullopt,
                          int64_t overlap = 2, AttentionMode attention = AttentionMode::Auto,
                          bool outlineLayers = true);

/// `relative` (e.g. "bin/ptxas") under the CUDA toolkit's root: $CUDA_HOME,
/// $CUDA_PATH, then /usr/local/cuda; "" when none has it.
std::string findInCudaToolkit(const std::string &relative);
/// The toolkit's nvvm/libdevice/libdevice.10.bc, or "".
std::string findLibdevice();

/// Registers the pipelines with the pass registry (`lcc-opt --lcc-cpu-pipeline`).
void registerPipelines();

} // namespace lcc

#endif
