//===- Pipelines.cpp - the one place pass order is written ----------------===//
//
// Upstream passes are composed from their textual names, as `mlir-opt` users
// would write them, so the pipelines here can be replayed by hand with
// `lcc-opt` and compared with ../shared/TOOLCHAIN.md. This is the only file
// that includes InitAllPasses.h (a slow header).
//
//===----------------------------------------------------------------------===//
#include "passes/Pipelines.h"
#include "passes/Passes.h"
#include "passes/pipeline/PipelineStep.h"

#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

using namespace mlir;

namespace lcc {

static void ensureUpstreamPassesRegistered() {
  static std::once_flag once;
  std::call_once(once, [] { mlir::registerAllPasses(); });
}

/// Loops, math and memrefs to the LLVM dialect: the last step of host code
/// on every target.
static constexpr const char *kToLLVM =
    "convert-scf-to-cf,convert-math-to-llvm,convert-math-to-libm,expand-strided-metadata,"
    "lower-affine,finalize-memref-to-llvm,convert-to-llvm,reconcile-unrealized-casts";

static void addTextual(OpPassManager &pm, llvm::StringRef pipeline) {
  ensureUpstreamPassesRegistered();
  std::string errors;
  llvm::raw_string_ostream os(errors);
  if (failed(parsePassPipeline(pipeline, pm, os)))
    llvm::report_fatal_error(llvm::Twine("lcc: internal pipeline does not parse: ") + errors);
}

/// lcc-lora on `options.function` when --lora names targets.
static void addLora(OpPassManager &pm, const TrainStepOptions &options) {
  if (options.loraTargets.empty())
    return;
  LccLoraPassOptions lora;
  lora.function = options.function;
  lora.rank = options.loraRank;
  lora.alpha = options.loraAlpha;
  lora.rslora = options.loraRslora;
  lora.seed = options.loraSeed;
  lora.targets.assign(options.loraTargets.begin(), options.loraTargets.end());
  pm.addPass(createLccLoraPass(lora));
}

/// lcc-precision on `function` unless the policy is fp32.
static void addPrecision(OpPassManager &pm, const TrainStepOptions &options,
                         llvm::StringRef function) {
  if (options.precision == Precision::FP32)
    return;
  LccPrecisionPassOptions precision;
  precision.function = function.str();
  precision.precision = std::string(modeName(options.precision));
  pm.addPass(createLccPrecisionPass(precision));
}

void buildTrainStepPipeline(OpPassManager &pm, const TrainStepOptions &options) {
  // Tensor parallelism splits the forward; autodiff then derives the split
  // backward.
  if (options.tp > 1) {
    LccShardTensorParallelPassOptions tensor;
    tensor.function = options.function;
    tensor.tp = options.tp;
    pm.addPass(createLccShardTensorParallelPass(tensor));
    // After lcc-shard-tp, which leaves the head matmul feeding the loss whole.
    LccShardVocabParallelPassOptions vocab;
    vocab.function = options.function;
    vocab.tp = options.tp;
    pm.addPass(createLccShardVocabParallelPass(vocab));
    // After both: it splits what their regions leave whole between them.
    if (options.sequenceParallel) {
      LccSequenceParallelPassOptions sequence;
      sequence.function = options.function;
      sequence.tp = options.tp;
      pm.addPass(createLccSequenceParallelPass(sequence));
    }
  }
  // Adapters, after tensor parallelism (which they follow: a split W's
  // adapters are split as it is) and before everything else, which sees
  // them as ordinary parameters.
  addLora(pm, options);
  // The precision policy on the forward; autodiff derives the backward's.
  addPrecision(pm, options, options.function);
  // A pipeline stage: its part of the forward (which the precision policy
  // and tensor parallelism have already rewritten), differentiated alone.
  if (options.pp > 1) {
    LccPartitionPipelinePassOptions partition;
    partition.function = options.function;
    partition.stages = options.pp * options.virtualStages;
    partition.virtualStages = options.virtualStages;
    partition.schedule = options.pipelineSchedule;
    partition.microbatches = options.accum;
    partition.stageStarts.assign(options.stageStarts.begin(), options.stageStarts.end());
    pm.addPass(createLccPartitionPipelinePass(partition));
    LccSplitStagePassOptions split;
    split.function = options.function;
    split.stage = options.stage;
    split.virtualStages = options.virtualStages;
    pm.addPass(createLccSplitStagePass(split));
  }
  // The train step clones @<function>_grad, so autodiff must run first.
  LccAutodiffPassOptions autodiff;
  autodiff.function = options.function;
  // Loss scaling seeds the backward with the scale (lcc-build-train-step).
  autodiff.seedArg = parseMode<LossScale>(options.lossScale) == LossScale::Dynamic;
  pm.addPass(createLccAutodiffPass(autodiff));
  // Recomputation chooses what the backward reads again from the forward,
  // before the step (micro-batch loop, pipeline parts) is built around it.
  if (options.recompute != RecomputeMode::None) {
    LccRecomputePassOptions recompute;
    recompute.function = options.function;
    recompute.mode = std::string(modeName(options.recompute));
    recompute.layers = options.recomputeLayers;
    pm.addPass(createLccRecomputePass(recompute));
  }
  // Sharded steps reduce gradients while the last micro-batch's backward
  // still runs (lcc-overlap-collectives), so that one is not in the loop.
  LccBuildTrainStepPassOptions step = options;
  step.peelLast = options.shard != ShardMode::None;
  int64_t dpRanks = options.world / (options.tp * options.pp);
  pm.addPass(createLccBuildTrainStepPass(step));
  // Sharding rewrites the finished step: it needs the gradient markers and
  // the optimizer's ops, and must run before anything fuses them away.
  if (options.shard == ShardMode::DP) {
    LccShardDataParallelPassOptions dp;
    dp.dp = dpRanks;
    dp.bucketMb = options.bucketMb;
    pm.addPass(createLccShardDataParallelPass(dp));
  } else if (options.shard != ShardMode::None) {
    LccShardZeroPassOptions zero;
    zero.stage = options.shard == ShardMode::Zero1 ? 1 : options.shard == ShardMode::Zero2 ? 2 : 3;
    zero.dp = dpRanks;
    zero.bucketMb = options.bucketMb;
    pm.addPass(createLccShardZeroPass(zero));
  }
}

int64_t attentionMinScores(AttentionMode attention, bool cuda) {
  if (attention == AttentionMode::Fused)
    return 1;
  if (attention == AttentionMode::Decomposed || cuda)
    return 0;
  return 512 * 512;
}

void buildGenerationPipeline(OpPassManager &pm, const TrainStepOptions &options,
                             llvm::StringRef entry, int64_t context, bool cache,
                             llvm::StringRef symbol) {
  // The adapters the step trains, on the forward the entry is made from.
  addLora(pm, options);
  LccBuildGenerationPassOptions o;
  o.entry = entry.str();
  o.context = context;
  o.cache = cache;
  o.symbol = symbol.str();
  pm.addPass(createLccBuildGenerationPass(o));
  // The step's precision policy (the CUDA fused attention needs half
  // operands), after the entry is made, so that the cache stays f32.
  addPrecision(pm, options, symbol.empty() ? entry : symbol);
}

void buildLowerToLinalgPipeline(OpPassManager &pm, int64_t keepAttentionMinScores,
                                bool outlineLayers, int64_t pipelineChunks) {
  // Each repeated layer becomes one function, so that everything from here
  // on (lowering, fusion, bufferization, the memory plan, kernels, LLVM)
  // works on one copy of it; after sharding, whose collectives stay in the
  // step between the calls. What CSE merged across a layer's forward and
  // backward on the inline step is now either returned by the forward (the
  // pass makes layout ops again instead of saving both forms) or computed
  // again by the backward (attention probabilities, norm statistics): plans
  // are smaller than the inline step's (lcc-layer-functions.test).
  // A pipeline stage's parts (lcc-build-train-step) hold its layers: their
  // runs become layer functions the parts call, so a deep stage compiles
  // each layer once, as the step without a pipeline does.
  // The text-generation entries too (lcc-build-generation): each is the
  // model's forward again, as deep as the step's.
  if (outlineLayers) {
    std::vector<std::string> functions = {"forward", "train_step", "prefill*", "decode_step"};
    for (const std::string &part : lcc::pipeline::partFunctionNames(pipelineChunks))
      functions.push_back("train_step_" + part);
    for (const std::string &function : functions) {
      LccOutlineLayersPassOptions layers;
      layers.function = function;
      layers.ifPresent = true;
      pm.addPass(createLccOutlineLayersPass(layers));
    }
  }
  // The gradient of a tensor sliced several ways (q/k/v) is one concat of
  // the slices' gradients, not a sum of zero-padded copies.
  pm.addPass(createLccFoldZeroConcatsPass());
  // Composite ops without a direct lowering (attention) become simpler lcc
  // ops, unless the fused attention kernels take them whole.
  LccDecomposePassOptions decompose;
  decompose.keepAttentionMinScores = keepAttentionMinScores;
  pm.addPass(createLccDecomposePass(decompose));
  // Every lcc op becomes linalg on tensors: the target-neutral hand-off point.
  pm.addPass(createLccLowerToLinalgPass());
  // Folds the tensor.empty/fill/broadcast scaffolding the patterns leave.
  // Bottom-up: a micro-batch loop's body is folded before the loop itself
  // (top-down, folding the loop's carried values revisits its whole body:
  // 0.21 s against 0.09 s on GPT-2 with --accum=8; the same IR).
  addTextual(pm, "func.func(canonicalize{top-down=false},cse)");
  // Elementwise chains become one kernel with their consumer (GEMMs stay
  // separate for the libraries); then clean up what fusion leaves.
  pm.addPass(createLccFusePass());
  // Whole-tensor reductions (gradient norms) become partials plus their
  // combination, so they spread over SMs and cores instead of one.
  pm.addPass(createLccSplitReductionsPass());
  addTextual(pm, "func.func(canonicalize,cse)");
}

/// One zero fill per accumulator, then one-shot bufferization. tensor.empty
/// must become allocations first (TOOLCHAIN.md pitfall 3); function
/// boundaries use identity layouts so callers see plain strided descriptors.
/// A layer function (lcc-outline-layers) is bufferized once, whatever the
/// number of its calls (both analyses grow faster than a function's length).
/// With `inlineLayers` the calls are then inlined, so that what follows sees
/// one function; otherwise they stay (the memory plan places each call's
/// temporaries, kernels are outlined from the layer functions once).
static void addBufferization(OpPassManager &pm, bool inlineLayers) {
  // Sums carried over micro-batches stay in one buffer each.
  pm.addPass(createLccAccumulateInPlacePass());
  // Each accumulator gets its own zero fill, so bufferization need not copy a
  // shared one before every writer.
  pm.addPass(createLccCloneFillsPass());
  addTextual(pm, "eliminate-empty-tensors,empty-tensor-to-alloc-tensor,"
                 "one-shot-bufferize{bufferize-function-boundaries "
                 "function-boundary-type-conversion=identity-layout-map}");
  // A layer function returns its out-params as they are (destination-passing
  // style): its callers use their own buffers instead, so what a call writes
  // into the step's out-params needs no copy there.
  addTextual(pm, inlineLayers ? "inline{default-pipeline=''},symbol-dce"
                              : "drop-equivalent-buffer-results");
}

/// Bufferized functions to the LLVM dialect: GEMMs to the runtime's BLAS
/// (runtime/cpu/CpuKernels.h), each loop nest its own kernel function (LLVM's loop
/// passes are quadratic in one huge function), f32 exp/tanh/log inline as
/// polynomials so the loops vectorize, then the standard conversions; last,
/// kernels lose the descriptor fields they never read.
static void addKernelsToLLVM(OpPassManager &pm) {
  pm.addPass(createLccGemmToLibraryPass());
  pm.addPass(createLccOutlineKernelsPass());
  addTextual(pm, "func.func(convert-linalg-to-loops)");
  pm.addPass(createLccApproximateMathPass());
  addTextual(pm, kToLLVM);
  pm.addPass(createLccPruneKernelArgsPass());
}

void buildLinalgToLLVMPipeline(OpPassManager &pm) {
  addBufferization(pm, /*inlineLayers=*/true);
  // Frees every intermediate buffer; results are returned owned by the caller.
  addTextual(pm, "buffer-deallocation-pipeline");
  // Returned views/arguments are copied with bufferization.clone by the
  // deallocation pipeline; only convert-bufferization-to-memref lowers clones.
  // canonicalize drops the self-copies bufferization leaves for results
  // updated in place (memref.copy %p, %p).
  addTextual(pm, "convert-bufferization-to-memref,canonicalize");
  addKernelsToLLVM(pm);
}

void addExportedOnly(OpPassManager &pm, llvm::ArrayRef<std::string> functions) {
  addTextual(pm, "symbol-privatize{exclude=" + llvm::join(functions, ",") + "},symbol-dce");
}

/// Linalg on tensors to bufferized functions whose temporaries live in one
/// arena: what the CPU and CUDA AOT pipelines share.
static void addAotBuffers(OpPassManager &pm, int64_t overlap) {
  // Results become caller-owned out-params while still on tensors, so that
  // bufferization writes each result's last op straight into the runtime's
  // buffer (no copies, no buffers handed across the ABI).
  pm.addPass(createLccOutParamsPass());
  // Collectives start early and are waited for late, in the final op order
  // (fusion is done), while values are still SSA (the waits keep the
  // collectives' buffers alive through bufferization and the memory plan).
  LccOverlapCollectivesPassOptions overlapOptions;
  overlapOptions.depth = overlap;
  pm.addPass(createLccOverlapCollectivesPass(overlapOptions));
  addBufferization(pm, /*inlineLayers=*/false);
  // Temporaries become views of one arena the runtime allocates once (the
  // plan's peak is known at compile time); what cannot be planned is freed by
  // the deallocation pipeline as usual (only run when there is such a buffer).
  pm.addPass(createLccPlanMemoryPass());
  pm.addPass(createLccFreeUnplannedPass());
  // canonicalize drops the self-copies bufferization leaves for parameters
  // and optimizer state updated in place (memref.copy %p, %p).
  addTextual(pm, "convert-bufferization-to-memref,func.func(canonicalize)");
}

/// The train step when asked for, then linalg (which attentions stay whole
/// for the fused kernels: the train options' choice, else `attention`).
static void addAotLinalg(OpPassManager &pm, const std::optional<TrainStepOptions> &train,
                         AttentionMode attention, bool cuda, bool outlineLayers) {
  if (train)
    buildTrainStepPipeline(pm, *train);
  // @init's initializers of repeated layers too (they differ in their seeds,
  // which become arguments): one fill per parameter is otherwise the part of
  // a deep model's compile that grows fastest. Not for the GPU, whose
  // kernels take buffers only (the seeds would be scalar kernel arguments).
  if (outlineLayers && !cuda) {
    LccOutlineLayersPassOptions layers;
    layers.function = "init";
    layers.ifPresent = true;
    pm.addPass(createLccOutlineLayersPass(layers));
  }
  buildLowerToLinalgPipeline(pm, attentionMinScores(train ? train->attention : attention, cuda),
                             outlineLayers, train ? train->virtualStages : 1);
}

void buildAotMemoryPlanPipeline(OpPassManager &pm, int64_t overlap, AttentionMode attention,
                                bool outlineLayers) {
  addAotLinalg(pm, std::nullopt, attention, /*cuda=*/false, outlineLayers);
  addAotBuffers(pm, overlap);
}

void buildAotCpuPipeline(OpPassManager &pm, const std::optional<TrainStepOptions> &train,
                         int64_t overlap, AttentionMode attention, bool outlineLayers) {
  addAotLinalg(pm, train, attention, /*cuda=*/false, outlineLayers);
  addAotBuffers(pm, overlap);
  // What the step passes each layer call comes from tables, so the step does
  // not grow with depth past this point.
  pm.addPass(createLccLoopLayerCallsPass());
  // Public functions keep memref descriptors; the AOT compiler's entry
  // wrappers build them from bare pointers (AotCompiler.h). Contiguous
  // memref.copy becomes memcpy; strided ones are kernels (lcc-outline-kernels).
  addKernelsToLLVM(pm);
  // Big kernels run in parts on the runtime's threads (runtime/cpu/Parallel.h).
  pm.addPass(createLccParallelDispatchPass());
}

void buildAotCudaPipeline(OpPassManager &pm, const CudaTargetOptions &target,
                          const std::optional<TrainStepOptions> &train, int64_t overlap,
                          AttentionMode attention, bool outlineLayers) {
  addAotLinalg(pm, train, attention, /*cuda=*/true, outlineLayers);
  // Layer calls stay: their kernels are outlined and fused once, and what
  // lcc-gpu-kernels proves about their buffers holds at every call
  // (passes/gpu/HostBuffers.h).
  addAotBuffers(pm, overlap);
  LccGemmToLibraryPassOptions gemm;
  gemm.prefix = "lcc_cuda_";
  pm.addPass(createLccGemmToLibraryPass(gemm));
  LccOutlineKernelsPassOptions outline;
  outline.gpu = true;
  pm.addPass(createLccOutlineKernelsPass(outline));
  pm.addPass(createLccGpuKernelsPass());
  if (target.chip == "emulated") {
    // The kernels run on the CPU (tests without a GPU): host functions
    // lowered with the host code, and a table of them by launch id.
    pm.addPass(createLccEmulateGpuKernelsPass());
    addTextual(pm, kToLLVM);
    pm.addPass(createLccPruneKernelArgsPass());
    pm.addPass(createLccEmulatedKernelTablePass());
    return;
  }
  // Device code: loops to branches, then NVVM with bare-pointer kernel
  // arguments (the runtime passes one pointer per buffer), then PTX. Math
  // functions become libdevice calls, linked from the toolkit.
  std::string attach = "nvvm-attach-target{chip=" + target.chip + " features=" + target.features +
                       " O=3";
  if (!target.libdevice.empty())
    attach += " l=" + target.libdevice;
  attach += "}";
  addTextual(pm, "gpu.module(expand-strided-metadata,lower-affine,convert-scf-to-cf,"
                 "convert-gpu-to-nvvm{index-bitwidth=64 use-bare-ptr-memref-call-conv=1},"
                 "canonicalize,cse),reconcile-unrealized-casts," +
                     attach + ",gpu-module-to-binary{format=isa}");
  // Host code: only pointer arithmetic and calls of the runtime (and of
  // layer functions, which pass pointers rather than descriptors once
  // pruned: they read little else).
  addTextual(pm, kToLLVM);
  pm.addPass(createLccPruneKernelArgsPass());
}

std::string findInCudaToolkit(const std::string &relative) {
  std::vector<std::string> roots;
  for (const char *var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *v = std::getenv(var); v && *v)
      roots.push_back(v);
  roots.push_back("/usr/local/cuda");
  for (const std::string &root : roots) {
    std::string path = root + "/" + relative;
    if (llvm::sys::fs::exists(path))
      return path;
  }
  return "";
}

std::string findLibdevice() { return findInCudaToolkit("nvvm/libdevice/libdevice.10.bc"); }

void buildPipelineUpTo(OpPassManager &pm, Phase phase,
                       const std::optional<TrainStepOptions> &train) {
  if (phase == Phase::Input)
    return;
  if (phase == Phase::TrainStep || train)
    buildTrainStepPipeline(pm, train ? *train : TrainStepOptions());
  if (phase == Phase::TrainStep)
    return;
  buildLowerToLinalgPipeline(
      pm, attentionMinScores(train ? train->attention : AttentionMode::Auto, false));
  if (phase == Phase::Linalg)
    return;
  buildLinalgToLLVMPipeline(pm);
}

namespace {
struct AotPipelineOptions : PassPipelineOptions<AotPipelineOptions> {
  Option<bool> outlineLayers{*this, "outline-layers",
                             llvm::cl::desc("Bufferize each repeated layer once (lcc-outline-layers; "
                                            "false: lcc --inline-layers)"),
                             llvm::cl::init(true)};
};
} // namespace

void registerPipelines() {
  PassPipelineRegistration<>("lcc-lower-pipeline",
                             "lcc dialect to target-neutral linalg on tensors",
                             [](OpPassManager &pm) { buildLowerToLinalgPipeline(pm); });
  PassPipelineRegistration<AotPipelineOptions>(
      "lcc-aot-cpu-pipeline", "lcc dialect (with @train_step) to the LLVM dialect, AOT ABI",
      [](OpPassManager &pm, const AotPipelineOptions &options) {
        buildAotCpuPipeline(pm, std::nullopt, 2, AttentionMode::Auto, options.outlineLayers);
      });
  PassPipelineRegistration<>(
      "lcc-aot-cuda-pipeline",
      "lcc dialect (with @train_step) to CUDA: PTX in a gpu.binary plus LLVM host code (sm_90)",
      [](OpPassManager &pm) {
        CudaTargetOptions target;
        target.libdevice = findLibdevice();
        buildAotCudaPipeline(pm, target);
      });
  PassPipelineRegistration<>("lcc-cpu-pipeline", "lcc dialect to the LLVM dialect for the CPU",
                             [](OpPassManager &pm) { buildPipelineUpTo(pm, Phase::LLVM); });
}

} // namespace lcc
