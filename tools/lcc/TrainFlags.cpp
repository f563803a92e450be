//===- TrainFlags.cpp - lcc's training and distribution flags -------------===//
//
// The flags that become lcc-build-train-step's options and the sharding
// pipeline's (docs/training.md, docs/distributed.md), kept apart from the
// driver so lcc.cpp stays about what to compile and where it goes.
//
//===----------------------------------------------------------------------===//
#include "tools/lcc/TrainFlags.h"
#include "compiler/package/RecomputeChoice.h"

#include "passes/pipeline/Schedule.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>

namespace cl = llvm::cl;

namespace lcc::driver {

int64_t configConstant(mlir::ModuleOp module, llvm::StringRef name) {
  if (auto config = module->getAttrOfType<mlir::DictionaryAttr>("lcc.config"))
    if (auto v = config.getAs<mlir::IntegerAttr>(name))
      return v.getInt();
  return 0;
}

// Training (docs/training.md): nanoGPT's AdamW defaults; the schedule is
// constant unless --lr-schedule=cosine, because a cosine needs the run's length.
cl::OptionCategory trainCat("lcc training options");
cl::opt<bool> train("train",
                           cl::desc("Build @train_step before lowering (linalg/llvm phases)"),
                           cl::cat(trainCat));
cl::opt<std::string> optimizerFlag("optimizer", cl::desc("adamw or sgd"),
                                          cl::init("adamw"), cl::cat(trainCat));
cl::opt<double> lrFlag("lr", cl::desc("Peak learning rate"), cl::init(6e-4),
                              cl::cat(trainCat));
cl::opt<int64_t> warmupFlag("warmup", cl::desc("Linear warmup steps"), cl::init(0),
                                   cl::cat(trainCat));
cl::opt<std::string> decayFlag("lr-schedule", cl::desc("constant or cosine"), cl::init("constant"),
                               cl::cat(trainCat));
// The schedule's first name, kept for old command lines: next to
// --weight-decay and --no-decay it read as if it were about weight decay.
static cl::alias decayAlias("decay", cl::desc("Alias for --lr-schedule"), cl::aliasopt(decayFlag),
                            cl::cat(trainCat));
cl::opt<int64_t> decayStepsFlag("decay-steps",
                                       cl::desc("cosine: step at which lr reaches --min-lr"),
                                       cl::init(0), cl::cat(trainCat));
cl::opt<double> minLrFlag("min-lr", cl::desc("cosine: final lr (default 0.1 * lr)"),
                                 cl::init(-1.0), cl::cat(trainCat));
cl::opt<double> weightDecayFlag(
    "weight-decay", cl::desc("Weight decay (default 0.1 for adamw, 0 for sgd)"), cl::init(-1.0),
    cl::cat(trainCat));
cl::opt<double> momentumFlag("momentum", cl::desc("SGD momentum"), cl::init(0.9),
                                    cl::cat(trainCat));
cl::opt<bool> nesterovFlag("nesterov", cl::desc("SGD Nesterov momentum"),
                                  cl::cat(trainCat));
cl::opt<double> clipFlag("clip", cl::desc("Global gradient-norm clip (0: off)"),
                                cl::init(1.0), cl::cat(trainCat));
cl::opt<int64_t> accumFlag("accum", cl::desc("Micro-batches per step"), cl::init(1),
                                  cl::cat(trainCat));
cl::opt<bool> unrollAccumFlag(
    "unroll-accum",
    cl::desc("Clone the backward once per micro-batch instead of a loop over them (for "
             "comparisons; compile time grows with --accum)"),
    cl::cat(trainCat));
cl::opt<bool> inlineLayersFlag(
    "inline-layers",
    cl::desc("Compile each repeated layer where it is used instead of as one function per "
             "layer kind (for comparisons; compile time grows with depth)"),
    cl::cat(trainCat));
cl::opt<int64_t> trainSteps("train-steps",
                                   cl::desc("JIT-run @init then N train steps on seeded random "
                                            "batches, printing loss, grad norm and lr"),
                                   cl::init(0), cl::cat(trainCat));

cl::OptionCategory distCat("lcc options for distributed training");
cl::opt<std::string>
    shardFlag("shard",
              cl::desc("Distribute the step over data-parallel ranks: none, dp, zero1, zero2, "
                       "zero3 (docs/distributed.md), or auto (the planner picks the sharding, "
                       "tp, pp, micro-batches, schedule, recomputation and sequence parallelism "
                       "for --world, --mem and --cluster; docs/memory.md)"),
              cl::init("none"), cl::cat(distCat));
cl::opt<std::string> worldFlag(
    "world",
    cl::desc("Data-parallel ranks to compile the step for: N, or a list (1,2,4,8, the default "
             "with --shard); lcc-run -n picks the matching code"),
    cl::init(""), cl::cat(distCat));
cl::alias worldAlias("n", cl::desc("Alias for --world"), cl::aliasopt(worldFlag),
                            cl::cat(distCat));
cl::opt<int64_t> tpFlag("tp",
                               cl::desc("Tensor-parallel ranks (Megatron column/row-parallel "
                                        "attention and MLP, vocab-parallel embedding and "
                                        "loss); --world counts all ranks"),
                               cl::init(1), cl::cat(distCat));
cl::opt<int64_t> ppFlag("pp",
                        cl::desc("Pipeline stages: the model is cut into P stages by cost and "
                                 "memory, one per rank, their micro-batches in --pp-schedule's "
                                 "order; --world counts all ranks (docs/distributed.md)"),
                        cl::init(1), cl::cat(distCat));
static cl::opt<int64_t>
    microbatchesFlag("microbatches", cl::desc("--pp: micro-batches per step (default 4 per stage)"),
                     cl::init(0), cl::cat(distCat));
static cl::opt<std::string>
    ppScheduleFlag("pp-schedule",
                   cl::desc("--pp: gpipe, 1f1b (default), interleaved (1F1B over --virtual "
                            "stages per rank) or zb-h1"),
                   cl::init("1f1b"), cl::cat(distCat));
static cl::opt<int64_t>
    virtualFlag("virtual",
                cl::desc("--pp: stages per rank, V (the interleaved schedule's; default 2 with "
                         "it, and V > 1 implies it): the model is cut into P x V stages"),
                cl::init(0), cl::cat(distCat));
static cl::opt<std::string> stagesFlag(
    "stages",
    cl::desc("--pp: auto (balanced, default) or the layers (from 0) that start stages 1, 2, "
             "... (e.g. 2 for layers 0-1 | 2-3; P x V - 1 of them)"),
    cl::init("auto"), cl::cat(distCat));
cl::opt<int64_t> ppStageFlag("pp-stage",
                             cl::desc("--pp with --compile-to/--emit=mlir: the pipeline rank "
                                      "whose step to print"),
                             cl::init(0), cl::cat(distCat));
cl::opt<std::string> precisionFlag(
    "precision",
    cl::desc("fp32 (default), bf16 or fp16: matmul and attention in bf16/fp16, the rest and the "
             "optimizer in f32 (lcc-precision); fp16 adds dynamic loss scaling"),
    cl::init("fp32"), cl::cat(distCat));
cl::opt<std::string> attentionFlag(
    "attention",
    cl::desc("auto (default: fused on the CPU where Tq * Tk >= 512 * 512, else decomposed), "
             "decomposed (matmuls and softmax kernels) or fused (one kernel each for the "
             "forward and the backward, never storing the [Tq, Tk] scores; on CUDA with "
             "--precision=bf16|fp16)"),
    cl::init("auto"), cl::cat(distCat));
static cl::opt<bool> sequenceParallelFlag(
    "sequence-parallel",
    cl::desc("With --tp: norms, residual adds and the other token-wise ops between tensor-parallel "
             "regions run on 1/tp of the tokens per rank (Megatron sequence parallelism; "
             "lcc-sequence-parallel)"),
    cl::init(false), cl::cat(distCat));
cl::opt<std::string> recomputeFlag(
    "recompute",
    cl::desc("What the backward computes again instead of keeping from the forward "
             "(lcc-recompute, docs/memory.md): none (default), selective (cheap ops whose "
             "inputs are kept anyway: norms, GELU, ...), full (each layer from its input) or "
             "auto (the least extra FLOPs that fit --mem)"),
    cl::init("none"), cl::cat(distCat));
cl::opt<int64_t> recomputeLayersFlag(
    "recompute-layers",
    cl::desc("--recompute=selective|full: only the first N layers (full: the rest selective)"),
    cl::init(-1), cl::cat(distCat));
static cl::opt<std::string>
    memFlag("mem",
            cl::desc("Memory per rank the step's plan must fit (80GB = 80e9 bytes, 16GiB, "
                     "512MB, or bytes): --recompute=auto (the default with --mem) picks the "
                     "least recomputation that fits; other modes are checked against it"),
            cl::init(""), cl::cat(distCat));
int64_t memBudget = 0;
cl::opt<std::string> clusterFlag(
    "cluster",
    cl::desc("--shard=auto: the machines, a preset (h100-node, h200-node, a100-node, cpu: this "
             "machine, the default) or a JSON file (docs/memory.md)"),
    cl::init("cpu"), cl::cat(distCat));
cl::opt<int64_t> globalBatchFlag(
    "global-batch",
    cl::desc("--shard=auto: sequences per step over all ranks (default: the model's batch x "
             "--world)"),
    cl::init(0), cl::cat(distCat));
cl::opt<int64_t> planRowsFlag("plan-rows",
                              cl::desc("--shard=auto: plans the table shows (default 8)"),
                              cl::init(8), cl::cat(distCat));
bool autoShard = false;
/// Whether applyPlan set the flags (its choices count as given).
static bool planApplied = false;
static cl::opt<double> lossScaleInitFlag(
    "loss-scale-init", cl::desc("fp16: the first loss scale (default 65536, as torch's GradScaler)"),
    cl::init(65536.0), cl::cat(distCat));
static cl::opt<int64_t> lossScaleWindowFlag(
    "loss-scale-window",
    cl::desc("fp16: finite steps in a row after which the loss scale doubles (default 2000)"),
    cl::init(2000), cl::cat(distCat));
cl::opt<double> bucketFlag("bucket-mb",
                                  cl::desc("Largest bucket of gradients per collective (MiB)"),
                                  cl::init(25.0), cl::cat(distCat));
cl::opt<int64_t>
    overlapFlag("overlap",
                cl::desc("Collectives in flight while the step computes (0: each one waits "
                         "where it is issued)"),
                cl::init(2), cl::cat(distCat));

/// The world sizes to compile for (--world), parsed by parseWorlds.
std::vector<int64_t> worlds;
Modes modes;

/// `flag`'s value as a mode into `out`; an error message, or empty.
template <typename E> static std::string parseFlag(const cl::opt<std::string> &flag, E &out) {
  if (std::optional<E> mode = lcc::parseMode<E>(flag.getValue())) {
    out = *mode;
    return "";
  }
  return "unknown --" + flag.ArgStr.str() + "=" + flag.getValue() + "; expected " +
         lcc::modeChoices<E>();
}

/// The world sizes of --world into `worlds`; an error message, or empty.
static std::string parseWorlds() {
  worlds.clear();
  std::string text = worldFlag;
  int64_t model = tpFlag * ppFlag; // ranks one model replica spans
  if (text.empty())
    text = modes.shard != lcc::ShardMode::None ? "1,2,4,8" : std::to_string(model);
  for (llvm::StringRef item : llvm::split(text, ',')) {
    int64_t n = 0;
    if (item.getAsInteger(10, n) || n < 1 || n > (1 << 20))
      return "--world expects ranks >= 1 (N or a list like 2,4), got '" + text + "'";
    if (llvm::is_contained(worlds, n))
      return "--world lists " + std::to_string(n) + " twice";
    worlds.push_back(n);
  }
  // Without --world, the default sizes that hold one model replica.
  if (worldFlag.empty() && model > 1)
    llvm::erase_if(worlds, [&](int64_t n) { return n % model != 0; });
  if (worlds.empty())
    worlds.push_back(model);
  return "";
}

/// --virtual's V and the schedule it implies: interleaved takes 2 unless
/// told, and V > 1 alone means interleaved.
static int64_t virtualStages() {
  if (virtualFlag > 0)
    return virtualFlag;
  return ppScheduleFlag == "interleaved" ? 2 : 1;
}
/// --microbatches, else 4 per pipeline rank (docs/distributed.md).
static int64_t microbatches() {
  return microbatchesFlag > 0 ? int64_t(microbatchesFlag) : 4 * ppFlag;
}
static std::string pipelineSchedule() {
  return virtualFlag > 1 && !ppScheduleFlag.getNumOccurrences() ? "interleaved"
                                                                : ppScheduleFlag.getValue();
}

uint64_t initSeed = 1337;

lcc::TrainStepOptions trainStepOptions() {
  lcc::TrainStepOptions o;
  o.loraSeed = initSeed;
  o.optimizer = optimizerFlag;
  o.lr = lrFlag;
  o.warmup = warmupFlag;
  o.schedule = decayFlag;
  o.decaySteps = decayStepsFlag;
  o.minLr = minLrFlag;
  o.weightDecay = weightDecayFlag;
  o.momentum = momentumFlag;
  o.nesterov = nesterovFlag;
  o.clip = clipFlag;
  o.accum = accumFlag;
  o.unrollAccum = unrollAccumFlag;
  o.shard = modes.shard;
  o.tp = tpFlag;
  o.sequenceParallel = sequenceParallelFlag;
  o.pp = ppFlag;
  o.stage = ppStageFlag;
  if (ppFlag > 1) {
    o.accum = microbatches();
    o.pipelineSchedule = pipelineSchedule();
    o.virtualStages = virtualStages();
    if (stagesFlag != "auto")
      for (llvm::StringRef item : llvm::split(stagesFlag.getValue(), ','))
        o.stageStarts.push_back(std::stoll(item.str()));
  }
  // The train.bin loop sets each variant's world; other phases use the one
  // world given (main refuses a list there).
  o.world = worlds.empty() ? 1 : worlds.front();
  o.bucketMb = bucketFlag;
  (void)parseLora(o); // checked by checkTrainFlags
  o.precision = modes.precision;
  o.attention = modes.attention;
  o.recompute = modes.recompute;
  o.recomputeLayers = recomputeLayersFlag;
  // fp16's narrow range needs loss scaling; bf16 has f32's exponent range.
  if (modes.precision == lcc::Precision::FP16) {
    o.lossScale = std::string(lcc::modeName(lcc::LossScale::Dynamic));
    o.lossScaleInit = lossScaleInitFlag;
    o.lossScaleWindow = lossScaleWindowFlag;
  }
  return o;
}

std::string checkTrainFlags(bool onePhase) {
  lcc::Optimizer optimizer;
  lcc::Schedule schedule;
  autoShard = shardFlag == "auto";
  for (std::string e : {parseFlag(optimizerFlag, optimizer), parseFlag(decayFlag, schedule),
                        autoShard ? "" : parseFlag(shardFlag, modes.shard)})
    if (!e.empty())
      return e;
  if (std::string e = parseWorlds(); !e.empty())
    return e;
  TrainStepOptions lora;
  if (std::string e = parseLora(lora); !e.empty())
    return e;
  // The planner's probes have no adapters (their memory would be misjudged).
  if (!lora.loraTargets.empty() && autoShard)
    return "--lora with --shard=auto is not supported yet (dp, ZeRO, --tp and --pp are)";
  if (autoShard && (worlds.size() != 1 || onePhase || trainSteps > 0))
    return "--shard=auto plans for one --world=N and compiles a train.bin (-o) or --plan";
  if (!autoShard && !planApplied &&
      (clusterFlag.getNumOccurrences() || globalBatchFlag.getNumOccurrences() ||
       planRowsFlag.getNumOccurrences()))
    return "--cluster, --global-batch and --plan-rows apply to --shard=auto";
  if (tpFlag < 1)
    return "--tp must be >= 1, got " + std::to_string(int64_t(tpFlag));
  if (sequenceParallelFlag && tpFlag < 2)
    return "--sequence-parallel splits the tokens over the --tp ranks: it needs --tp >= 2";
  if (ppFlag < 1)
    return "--pp must be >= 1, got " + std::to_string(int64_t(ppFlag));
  if (ppFlag > 1) {
    if (accumFlag > 1)
      return "--pp runs --microbatches per step; --accum is for steps without pipeline stages";
    if (microbatchesFlag < 0)
      return "--microbatches must be >= 1";
    std::string schedule = pipelineSchedule();
    if (!lcc::pipeline::parseScheduleKind(schedule))
      return "unknown --pp-schedule=" + schedule + "; expected gpipe, 1f1b, interleaved or zb-h1";
    int64_t v = virtualStages();
    if (virtualFlag.getNumOccurrences() && virtualFlag < 1)
      return "--virtual must be >= 1, got " + std::to_string(int64_t(virtualFlag));
    if (schedule == "interleaved" && v < 2)
      return "--pp-schedule=interleaved runs at least 2 stages per rank; got --virtual=" +
             std::to_string(v);
    if (schedule != "interleaved" && v > 1)
      return "--virtual=" + std::to_string(v) + " needs --pp-schedule=interleaved; " + schedule +
             " runs one stage per rank";
    int64_t m = microbatches();
    if (schedule == "interleaved" && m % ppFlag)
      return "--pp-schedule=interleaved needs --microbatches (" + std::to_string(m) +
             ") to be a multiple of --pp (" + std::to_string(int64_t(ppFlag)) +
             "), as Megatron's interleaved schedule does";
    if (ppStageFlag < 0 || ppStageFlag >= ppFlag)
      return "--pp-stage must be a pipeline rank (0.." + std::to_string(ppFlag - 1) + ")";
    if (stagesFlag != "auto") {
      int64_t count = 0;
      for (llvm::StringRef item : llvm::split(stagesFlag.getValue(), ',')) {
        int64_t n = 0;
        if (item.getAsInteger(10, n) || n < 0)
          return "--stages expects auto or layer numbers like 2 or 1,3, got '" + stagesFlag + "'";
        ++count;
      }
      int64_t stages = ppFlag * v;
      if (count != stages - 1)
        return "--stages lists the layers that start stages 1.." + std::to_string(stages - 1) +
               ": " + std::to_string(stages - 1) + " numbers, got " + std::to_string(count);
    }
  } else if (microbatchesFlag.getNumOccurrences() || ppScheduleFlag.getNumOccurrences() ||
             stagesFlag.getNumOccurrences() || ppStageFlag.getNumOccurrences() ||
             virtualFlag.getNumOccurrences()) {
    return "--microbatches, --pp-schedule, --virtual, --stages and --pp-stage apply to --pp > 1 "
           "only";
  }
  int64_t model = tpFlag * ppFlag;
  for (int64_t w : autoShard ? std::vector<int64_t>{} : worlds)
    if (w % model != 0)
      return "--world=" + std::to_string(w) + " is not a multiple of " +
             (ppFlag > 1 ? "--tp x --pp = " + std::to_string(model)
                         : "--tp=" + std::to_string(int64_t(tpFlag))) +
             (ppFlag > 1 ? " (ranks = data-parallel x tensor-parallel x pipeline)"
                         : " (ranks = data-parallel x tensor-parallel)");
  if (llvm::any_of(worlds, [&](int64_t w) { return w > model; }) &&
      modes.shard == lcc::ShardMode::None && !autoShard)
    return "--world=" + worldFlag + " needs a --shard mode (dp, zero1, zero2 or zero3)";
  if (worlds.size() > 1 && onePhase)
    return "--compile-to/--emit=mlir print one step: give one --world (the default with --shard "
           "is 1,2,4,8)";
  if (trainSteps > 0 && (modes.shard != lcc::ShardMode::None || tpFlag > 1 || ppFlag > 1))
    return "--train-steps runs one process on whole tensors; a sharded step runs with lcc-run "
           "-n N (compile it with -o)";
  for (std::string e :
       {parseFlag(precisionFlag, modes.precision), parseFlag(attentionFlag, modes.attention),
        parseFlag(recomputeFlag, modes.recompute)})
    if (!e.empty())
      return e;
  memBudget = 0;
  if (memFlag.getNumOccurrences()) {
    std::optional<int64_t> bytes = lcc::parseByteSize(memFlag);
    if (!bytes)
      return "--mem expects a size per rank like 80GB, 16GiB, 512MB or a number of bytes, got '" +
             memFlag + "'";
    memBudget = *bytes;
    if (!recomputeFlag.getNumOccurrences() && !planApplied)
      modes.recompute = lcc::RecomputeMode::Auto;
  }
  if (autoShard && !recomputeFlag.getNumOccurrences() && !planApplied)
    modes.recompute = lcc::RecomputeMode::Auto; // the planner's choice (uniform over layers)
  if (autoShard && recomputeLayersFlag.getNumOccurrences())
    return "--shard=auto chooses the recomputation of every layer; --recompute-layers is not "
           "searched";
  if (modes.recompute == lcc::RecomputeMode::Auto && !memBudget && !autoShard)
    return "--recompute=auto needs --mem=BYTES, the memory per rank to fit (e.g. --mem=16GB)";
  if (memBudget && onePhase)
    return "--mem is checked against the compiled plan: use it with -o or --plan, not "
           "--compile-to or --emit=mlir";
  if (recomputeLayersFlag.getNumOccurrences() &&
      (recomputeLayersFlag < 0 || modes.recompute == lcc::RecomputeMode::None ||
       modes.recompute == lcc::RecomputeMode::Auto))
    return "--recompute-layers=N (N >= 0) applies to --recompute=selective or full";
  if ((lossScaleInitFlag.getNumOccurrences() || lossScaleWindowFlag.getNumOccurrences()) &&
      modes.precision != lcc::Precision::FP16)
    return "--loss-scale-init and --loss-scale-window apply to --precision=fp16 only";
  if (!(lossScaleInitFlag > 0) || !std::isfinite(double(lossScaleInitFlag)))
    return "--loss-scale-init must be a positive number";
  if (lossScaleWindowFlag < 1)
    return "--loss-scale-window must be >= 1";
  if (overlapFlag < 0)
    return "--overlap must be 0 or more";
  if (bucketFlag <= 0)
    return "--bucket-mb must be positive";
  if (accumFlag < 1 || warmupFlag < 0)
    return "--accum must be >= 1 and --warmup >= 0";
  if (schedule == lcc::Schedule::Cosine && decayStepsFlag <= warmupFlag)
    return "--lr-schedule=cosine needs --decay-steps (the step at which lr reaches --min-lr) "
           "greater than --warmup";
  return "";
}

lcc::planner::Problem plannerChoices() {
  lcc::planner::Problem p;
  p.world = worlds.front();
  p.memBudget = memBudget;
  if (tpFlag.getNumOccurrences())
    p.tp = tpFlag;
  if (ppFlag.getNumOccurrences())
    p.pp = ppFlag;
  if (modes.recompute != lcc::RecomputeMode::Auto)
    p.recompute = modes.recompute;
  if (sequenceParallelFlag.getNumOccurrences())
    p.sequenceParallel = bool(sequenceParallelFlag);
  if (ppScheduleFlag.getNumOccurrences())
    p.schedule = lcc::pipeline::parseScheduleKind(ppScheduleFlag);
  return p;
}

std::string applyPlan(const lcc::planner::Plan &plan) {
  shardFlag = std::string(lcc::modeName(plan.shard));
  tpFlag = plan.tp;
  ppFlag = plan.pp;
  sequenceParallelFlag = plan.sequenceParallel;
  recomputeFlag = std::string(lcc::modeName(plan.recompute));
  // Each call sets every choice (the verification loop applies several).
  accumFlag = plan.pp > 1 ? 1 : plan.microbatches;
  microbatchesFlag = plan.pp > 1 ? plan.microbatches : 0;
  ppScheduleFlag = lcc::pipeline::scheduleName(plan.schedule).str();
  virtualFlag = plan.virtualStages;
  planApplied = true;
  return checkTrainFlags(false);
}

} // namespace lcc::driver
