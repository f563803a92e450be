//===- lcc.cpp - the lcc compiler driver ----------------------------------===//
//
//   lcc model.lcc [--emit=mlir] [--compile-to=input|train-step|linalg|llvm] [-o OUT]
//   lcc model.lcc --run-forward [--seed=N]
//   lcc model.lcc --train-steps=N [--optimizer=...] [--lr=...] ...
// Training flags (tools/lcc/TrainFlags.cpp; docs/training.md): --train,
// --optimizer, --lr, --warmup, --decay, --decay-steps, --min-lr, --weight-decay,
// --clip, --accum, --precision, --loss-scale-init, --loss-scale-window.
//
// Every user error is one line "lcc: error: ..." or "file:line:col: error: ..."
// and exit code 2; internal failures are bugs and exit 3.
//
//===----------------------------------------------------------------------===//
#include "compiler/cpu/JitExecutor.h"
#include "compiler/cpu/LlvmSetup.h"
#include "compiler/package/DistributedPlan.h"
#include "compiler/package/Package.h"
#include "compiler/package/PipelinePlan.h"
#include "compiler/package/RecomputeChoice.h"
#include "runtime/cpu/CpuProgram.h"
#include "runtime/support/Format.h"
#include "dialects/lcc/LccDialect.h"
#include "dialects/lcc/LccOps.h"
#include "frontends/dsl/Importer.h"
#include "frontends/onnx/OnnxModel.h"
#include "frontends/onnx/OnnxTraining.h"
#include "runtime/support/Safetensors.h"
#include "runtime/cuda/kernels/FlashParams.h"
#include "passes/Pipelines.h"
#include "runtime/support/HostTensor.h"
#include "tools/lcc/TrainFlags.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <random>

using namespace mlir;
using namespace lcc::driver;
namespace cl = llvm::cl;

static cl::OptionCategory lccCat("lcc options");
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.lcc>"), cl::cat(lccCat));
static cl::opt<std::string> outputFile("o", cl::desc("Output file (default: stdout)"),
                                       cl::value_desc("file"), cl::init("-"), cl::cat(lccCat));
static cl::opt<std::string> emit("emit",
                                 cl::desc("What to write: none, mlir or train-bin (the default "
                                          "when -o is given without --compile-to)"),
                                 cl::init("none"), cl::cat(lccCat));
static cl::opt<std::string> schedulePicture(
    "schedule-picture",
    cl::desc("--pp: draw the schedule's per-rank timeline (F, B, I, W blocks per micro-batch, "
             "bubbles blank) into this SVG file"),
    cl::value_desc("file.svg"), cl::cat(lccCat));
static cl::opt<bool> planFlag("plan",
                              cl::desc("Compile the training step and print its memory plan "
                                       "(with -o, also write the train.bin)"),
                              cl::cat(lccCat));
static cl::opt<bool> reportFlag("report",
                                cl::desc("Compile the training step and print what fusion, "
                                         "kernel outlining and the GEMM library calls did"),
                                cl::cat(lccCat));
static cl::opt<std::string> cpuFlag("cpu",
                                    cl::desc("CPU the train.bin code targets: x86-64-v3 (AVX2, "
                                             "FMA; default), x86-64, or an LLVM CPU name"),
                                    cl::init("x86-64-v3"), cl::cat(lccCat));
static cl::opt<std::string> targetFlag("target",
                                       cl::desc("What train.bin runs on: cpu (default) or cuda "
                                                "(NVIDIA GPU kernels, PTX and cubin)"),
                                       cl::init("cpu"), cl::cat(lccCat));
static cl::opt<std::string> archFlag("arch",
                                     cl::desc("--target=cuda: the GPU architecture (sm_90 for "
                                              "H100/H200, the default; sm_80 for A100), or "
                                              "emulated (the kernels run on the CPU, for "
                                              "testing without a GPU)"),
                                     cl::init("sm_90"), cl::cat(lccCat));
static cl::opt<std::string>
    compileTo("compile-to",
              cl::desc("Stop after phase: input, train-step, linalg, llvm, or aot "
                       "(the train step through -o train.bin's "
                       "pipeline for --target, to the LLVM dialect)"),
              cl::init("input"), cl::cat(lccCat));
static cl::opt<bool> printPipeline(
    "print-pipeline",
    cl::desc("Print the passes --compile-to runs, as lcc-opt --pass-pipeline text (lcc-opt "
             "replays the compile from --compile-to=input), and stop"),
    cl::cat(lccCat));
static cl::opt<bool> runForward("run-forward",
                                cl::desc("JIT-run @init and @forward on a seeded random batch "
                                         "and print the loss"),
                                cl::cat(lccCat));
static cl::opt<uint64_t> seed("seed", cl::desc("Seed for parameter init and the random batch"),
                              cl::init(1337), cl::cat(lccCat));
static cl::list<std::string> overrides("set",
                                       cl::desc("Override config constants: --set batch=8,seq=64"),
                                       cl::CommaSeparated, cl::cat(lccCat));

static cl::OptionCategory onnxCat("lcc options for ONNX models");
static cl::opt<int64_t> batchFlag("batch", cl::desc("Size of symbolic dimension 0 of the inputs"),
                                  cl::init(0), cl::cat(onnxCat));
static cl::opt<bool> untieFlag(
    "untie", cl::desc("Train an embedding and its exported copy for the logits as two "
                      "parameters instead of one tied one"),
    cl::init(false), cl::cat(onnxCat));
static cl::list<std::string> trainableFlag(
    "trainable",
    cl::desc("Train float initializers matching these glob patterns although lcc judged them "
             "buffers (masks, RoPE tables, exporter constants; docs/onnx.md)"),
    cl::CommaSeparated, cl::cat(onnxCat));
static cl::opt<int64_t> seqFlag("seq", cl::desc("Size of symbolic dimension 1 of the inputs"),
                                cl::init(0), cl::cat(onnxCat));
static cl::list<std::string> dimFlag("dim",
                                     cl::desc("Sizes of symbolic dimensions by name "
                                              "(comma-separated, e.g. --dim batch_size=8)"),
                                     cl::CommaSeparated, cl::cat(onnxCat));
static cl::opt<std::string> lossFlag(
    "loss",
    cl::desc("auto (the graph's one scalar float output if it has one, else cross-entropy), "
             "cross-entropy (next-token loss on output 0, the logits) or the name of a scalar "
             "loss output"),
    cl::init("auto"), cl::cat(onnxCat));
static cl::opt<bool> timing("timing",
                            cl::desc("Print the wall time of each compilation phase, and MLIR's "
                                     "per-pass timing of the lowering (stderr)"),
                            cl::cat(lccCat));
static cl::opt<bool> quiet("quiet", cl::desc("Do not print the parameter report"),
                           cl::cat(lccCat));

/// Wall seconds of parsing and verifying the input (--timing).
static double parseSeconds = 0;
/// The ONNX model's bytes, for the train.bin's "onnx" section (empty for .lcc).
static llvm::StringRef onnxSource;
/// Initial parameter values that go into the train.bin as data (ONNX models).
static std::vector<std::pair<std::string, lcc::HostTensor>> initialParameters;
/// An ONNX model's float initializers kept constant, and why (printed with
/// the parameter report).
static std::vector<std::pair<std::string, std::string>> onnxBuffers;
static std::vector<std::string> onnxNotices;

static int fail(const std::string &message) {
  llvm::errs() << message << "\n";
  return 2;
}

/// The AOT compiler's options from the flags (-o train.bin, --compile-to=aot).
static lcc::AotOptions aotOptions() {
  lcc::AotOptions o;
  o.cpu = cpuFlag;
  o.passTiming = timing;
  o.overlap = overlapFlag;
  o.outlineLayers = !inlineLayersFlag;
  o.attention = modes.attention;
  o.target = targetFlag;
  o.cudaArch = archFlag;
  return o;
}

/// One line per parameter and the total, from @forward's `lcc.param` arguments.
static void printParameterReport(func::FuncOp forward, llvm::raw_ostream &os) {
  int64_t total = 0, trainable = 0;
  size_t width = 4;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    if (auto name = forward.getArgAttrOfType<StringAttr>(i, "lcc.param"))
      width = std::max(width, name.getValue().size());
  os << "parameters:\n";
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    auto name = forward.getArgAttrOfType<StringAttr>(i, "lcc.param");
    if (!name)
      continue;
    auto type = llvm::cast<RankedTensorType>(forward.getArgument(i).getType());
    std::string shape;
    llvm::raw_string_ostream ss(shape);
    ss << "[";
    llvm::interleaveComma(type.getShape(), ss);
    ss << "]";
    os << "  " << name.getValue();
    os.indent(width - name.getValue().size() + 2);
    bool frozen = bool(forward.getArgAttr(i, "lcc.frozen"));
    // Weight decay where it departs from the rule (matrices decay).
    bool matrix = type.getRank() >= 2;
    const char *decay = frozen                                            ? "  frozen"
                        : matrix && forward.getArgAttr(i, "lcc.no_decay") ? "  no decay"
                        : !matrix && forward.getArgAttr(i, "lcc.decay")   ? "  decay"
                                                                          : "";
    os << llvm::left_justify(shape, 16) << " "
       << llvm::right_justify(lcc::withCommas(type.getNumElements()), 13) << decay << "\n";
    total += type.getNumElements();
    if (!frozen)
      trainable += type.getNumElements();
  }
  os << "  total: " << lcc::withCommas(total) << " parameters";
  if (trainable != total)
    os << ", " << lcc::withCommas(trainable) << " trainable";
  os << "\n";
  if (!onnxBuffers.empty())
    os << "initializers kept constant (not trained; docs/onnx.md):\n";
  for (const auto &[name, why] : onnxBuffers)
    os << "  " << name << ": " << why << "\n";
  for (const std::string &notice : onnxNotices)
    os << notice << "\n";
}

/// A random batch: every integer input uniform in [0, vocab), float inputs N(0, 1).
static std::vector<lcc::HostTensor> randomBatch(func::FuncOp forward, int64_t vocab,
                                                uint64_t batchSeed) {
  std::mt19937_64 rng(batchSeed);
  std::vector<lcc::HostTensor> inputs;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    if (!forward.getArgAttr(i, "lcc.input"))
      continue;
    auto type = llvm::cast<RankedTensorType>(forward.getArgument(i).getType());
    std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
    Type et = type.getElementType();
    if (et.isInteger(32) || et.isInteger(64)) {
      auto t = lcc::HostTensor::zeros(et.isInteger(32) ? lcc::ElementType::I32 : lcc::ElementType::I64, shape);
      std::uniform_int_distribution<int64_t> dist(0, vocab - 1);
      for (int64_t k = 0; k < t.numElements(); ++k)
        t.setDouble(k, double(dist(rng)));
      inputs.push_back(std::move(t));
    } else {
      auto t = lcc::HostTensor::zeros(et.isF64() ? lcc::ElementType::F64 : lcc::ElementType::F32, shape);
      std::normal_distribution<double> dist;
      for (int64_t k = 0; k < t.numElements(); ++k)
        t.setDouble(k, dist(rng));
      inputs.push_back(std::move(t));
    }
  }
  return inputs;
}

/// A failure inside lcc, not the user's: exit code 3.
static int internalError(llvm::Error error) {
  llvm::errs() << "lcc: internal error: " << llvm::toString(std::move(error)) << "\n";
  return 3;
}

static int runForwardPass(ModuleOp module, func::FuncOp forward) {
  int64_t vocab = configConstant(module, "vocab");
  if (vocab <= 0)
    return fail("lcc: error: --run-forward needs a positive `vocab` config constant, to draw "
                "random token ids");
  auto jit = lcc::CpuJit::compile(module, modes.attention);
  if (!jit)
    return internalError(jit.takeError());
  auto params = (*jit)->call("init", {});
  if (!params)
    return internalError(params.takeError());
  std::vector<lcc::HostTensor> args = std::move(*params);
  for (auto &t : randomBatch(forward, vocab, seed + 1))
    args.push_back(std::move(t));
  auto results = (*jit)->call("forward", args);
  if (!results)
    return internalError(results.takeError());
  double loss = (*results)[0].getDouble(0);
  llvm::outs() << llvm::format("loss: %.6f  (uniform predictor: ln(%lld) = %.6f)\n", loss,
                               (long long)vocab, std::log(double(vocab)));
  return 0;
}

/// --train-steps=N: builds @train_step, JIT-runs @init and N steps on fresh
/// random batches (seed + step), zero optimizer state, 1-based step counter.
static int runTrainSteps(MLIRContext &context, ModuleOp module, func::FuncOp forward,
                         const std::string &diagnostics) {
  int64_t vocab = configConstant(module, "vocab");
  if (vocab <= 0)
    return fail("lcc: error: --train-steps needs a positive `vocab` config constant, to draw "
                "random token ids");
  // Random batches are drawn with @forward's (per micro-batch) shapes.
  PassManager pm(&context);
  lcc::buildTrainStepPipeline(pm, trainStepOptions());
  if (failed(pm.run(module)))
    return fail(diagnostics.empty() ? "lcc: error: cannot build the train step" : diagnostics);
  auto jit = lcc::CpuJit::compile(module, modes.attention);
  if (!jit)
    return internalError(jit.takeError());
  auto params = (*jit)->call("init", {});
  if (!params)
    return internalError(params.takeError());
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  const lcc::FunctionSignature *sig = (*jit)->signature("train_step");
  std::vector<lcc::HostTensor> all = std::move(*params), state;
  // @init returns every parameter; frozen ones are arguments but not results.
  std::vector<bool> isFrozen;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    if (forward.getArgAttr(i, "lcc.param"))
      isFrozen.push_back(bool(forward.getArgAttr(i, "lcc.frozen")));
  unsigned stepArg = 0;
  for (unsigned i = 0; i < step.getNumArguments(); ++i) {
    if (step.getArgAttr(i, "lcc.opt_state"))
      state.push_back(lcc::HostTensor::zeros(*sig->inputs[i].element, sig->inputs[i].shape));
    if (step.getArgAttr(i, "lcc.step"))
      stepArg = i;
  }
  int64_t k = accumFlag;
  for (int64_t s = 1; s <= trainSteps; ++s) {
    std::vector<lcc::HostTensor> args;
    for (const auto &p : all) // every parameter, trainable or frozen, in order
      args.push_back(p);
    for (auto &t : state)
      args.push_back(t);
    args.push_back(lcc::HostTensor::scalar<int64_t>(s));
    // K micro-batches stacked along a new leading dimension.
    std::vector<std::vector<lcc::HostTensor>> micro;
    for (int64_t m = 0; m < k; ++m)
      micro.push_back(randomBatch(forward, vocab, seed + 1 + uint64_t(s * k + m)));
    for (size_t in = 0; in < micro[0].size(); ++in) {
      const auto &sigIn = sig->inputs[stepArg + 1 + in];
      auto stacked = lcc::HostTensor::zeros(*sigIn.element, sigIn.shape);
      int64_t n = micro[0][in].numElements();
      for (int64_t m = 0; m < k; ++m)
        for (int64_t e = 0; e < n; ++e)
          stacked.setDouble(m * n + e, micro[m][in].getDouble(e));
      args.push_back(std::move(stacked));
    }
    auto results = (*jit)->call("train_step", args);
    if (!results) {
      llvm::errs() << "lcc: internal error: " << llvm::toString(results.takeError()) << "\n";
      return 3;
    }
    size_t r = 0;
    for (size_t i = 0; i < all.size(); ++i)
      if (!isFrozen[i])
        all[i] = std::move((*results)[r++]);
    for (auto &t : state)
      t = std::move((*results)[r++]);
    llvm::outs() << llvm::format("step %lld  loss %.6f  grad_norm %.6f  lr %.6g",
                                 (long long)s, (*results)[r].getDouble(0),
                                 (*results)[r + 1].getDouble(0), (*results)[r + 2].getDouble(0));
    if (results->size() > r + 3) // fp16: the loss scale this step used
      llvm::outs() << llvm::format("  loss_scale %g", (*results)[r + 3].getDouble(0));
    llvm::outs() << "\n";
  }
  return 0;
}

/// The manifest's Hugging Face mapping (compiler/package/HfNames.h), from
/// the whole parameters before any sharding; null without an hf section.
static lcc::json::Value hfMapping;

/// What a train.bin records of how it was compiled (with the step's options).
static lcc::PackageOptions packageOptions(const lcc::TrainStepOptions &t) {
  lcc::PackageOptions options;
  options.cpu = aotOptions();
  options.seed = seed;
  options.source = inputFile;
  options.sharding = modes.shard;
  options.hf = hfMapping;
  options.training =
      lcc::json::Value::object({{"optimizer", t.optimizer},
                                {"lr", double(t.lr)},
                                {"weight_decay", double(t.weightDecay)},
                                {"clip", double(t.clip)},
                                {"schedule", t.schedule},
                                {"warmup", static_cast<long long>(t.warmup)},
                                {"decay_steps", static_cast<long long>(t.decaySteps)},
                                {"accum", static_cast<long long>(t.accum)}});
  return options;
}

/// Builds the training step and writes the train.bin (-o).
static int writeTrainBinFile(MLIRContext &context, ModuleOp module, std::string &diagnostics) {
  // Fail before a long compilation, not after it.
  llvm::SmallString<256> dir(outputFile == "-" ? "./x" : outputFile.getValue());
  llvm::sys::path::remove_filename(dir);
  if (dir.empty())
    dir = ".";
  if (!llvm::sys::fs::is_directory(dir) ||
      llvm::sys::fs::access(dir, llvm::sys::fs::AccessMode::Write))
    return fail("lcc: error: cannot write '" + outputFile + "': " + std::string(dir) +
                " is not a writable directory");
  // One variant per world size: the world is compiled into the code (shapes
  // of the parts), so a train.bin for `lcc-run -n N` without recompiling
  // carries one per N (sections manifest.wN / code.wN).
  std::vector<lcc::Package> packages;
  std::optional<lcc::Package> package;
  double trainStepSeconds = 0;
  // With --pp, one program per pipeline rank too (sections manifest.wN.sK):
  // each rank runs its stage's (its stages', interleaved).
  std::vector<std::pair<int64_t, int64_t>> variants; // (world, stage or -1)
  for (int64_t world : worlds)
    for (int64_t stage = 0; stage < ppFlag; ++stage)
      variants.push_back({world, ppFlag > 1 ? stage : -1});
  // The step of `t` on `variant` (the train-step phase), or an error message.
  auto buildStep = [&](ModuleOp variant, const lcc::TrainStepOptions &t) -> std::string {
    PassManager pm(&context);
    if (failed(applyPassManagerCLOptions(pm)))
      return "lcc: error: bad pass manager options";
    if (timing)
      pm.enableTiming();
    lcc::buildPipelineUpTo(pm, lcc::Phase::TrainStep, t);
    if (failed(pm.run(variant)))
      return diagnostics.empty() ? "lcc: error: cannot build the train step" : diagnostics;
    return "";
  };
  for (auto [world, stage] : variants) {
    lcc::TrainStepOptions t = trainStepOptions();
    t.world = world;
    t.stage = std::max<int64_t>(stage, 0);
    std::string where = (variants.size() > 1 ? "world " + std::to_string(world) : "") +
                        (stage >= 0 ? " stage " + std::to_string(stage) : "");
    // --recompute=auto compiles rungs; the chosen one's package is kept.
    std::optional<lcc::Package> measured;
    if (modes.recompute == lcc::RecomputeMode::Auto) {
      auto compile = [&](ModuleOp trial,
                         const lcc::TrainStepOptions &r) -> llvm::Expected<lcc::Package> {
        if (std::string e = buildStep(trial, r); !e.empty())
          return llvm::createStringError(e);
        return lcc::compilePackage(trial, packageOptions(r));
      };
      if (std::string e = chooseRecompute(module, t, where, compile, measured); !e.empty())
        return fail("lcc: error: " + e);
    }
    OwningOpRef<ModuleOp> copy = variants.size() > 1 ? module.clone() : nullptr;
    ModuleOp variant = copy ? *copy : module;
    auto start = std::chrono::steady_clock::now();
    if (std::string e = buildStep(variant, t); !e.empty())
      return fail(e);
    // The sharded step alone says what each rank holds and sends: --plan
    // without -o stops here, so it works for models too large to compile.
    bool distributedPlan = planFlag && (modes.shard != lcc::ShardMode::None || tpFlag > 1 ||
                                        ppFlag > 1 || modes.precision != lcc::Precision::FP32);
    if (distributedPlan)
      llvm::outs() << lcc::pipelinePlanReport(variant, t.pipelineSchedule, t.accum)
                   << lcc::distributedPlanReport(
                          lcc::planDistributed(variant, modes.shard, world, modes.precision));
    if (!schedulePicture.empty() && stage == 0 && world == worlds.front())
      if (llvm::Error err =
              lcc::writeSchedulePicture(variant, t.pipelineSchedule, t.accum, schedulePicture))
        return fail("lcc: error: --schedule-picture: " + llvm::toString(std::move(err)));
    if (distributedPlan && outputFile == "-")
      continue;
    trainStepSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    auto compiled = measured ? llvm::Expected<lcc::Package>(std::move(*measured))
                             : lcc::compilePackage(variant, packageOptions(t));
    if (!compiled) {
      llvm::errs() << llvm::toString(compiled.takeError()) << "\n";
      return 3;
    }
    // A mode the user named is checked against --mem (auto's fits).
    if (int64_t plan = lcc::memoryPlanBytes(compiled->manifest);
        lcc::driver::memBudget && plan > lcc::driver::memBudget)
      return fail("lcc: error: " + (where.empty() ? "" : where + ": ") + "the plan needs " +
                  lcc::formatBytes(plan) + " per rank (" + std::to_string(plan) +
                  " bytes), more than --mem=" + lcc::formatBytes(lcc::driver::memBudget) +
                  " with --recompute=" + recomputeFlag + "; --recompute=auto picks what fits");
    compiled->world = worlds.size() > 1 || stage >= 0 ? world : 0;
    compiled->stage = stage;
    packages.push_back(std::move(*compiled));
  }
  if (packages.empty())
    return 0; // --plan alone with a sharding mode
  package = std::move(packages.front());
  packages.erase(packages.begin());
  if (timing) {
    std::vector<std::pair<std::string, double>> phases = {
        {"frontend (parse, verify)", parseSeconds},
        {"train step (autodiff, optimizer)", trainStepSeconds}};
    phases.insert(phases.end(), package->phaseSeconds.begin(), package->phaseSeconds.end());
    double total = 0;
    llvm::errs() << "compile time:\n";
    for (auto &[name, seconds] : phases) {
      llvm::errs() << llvm::format("  %7.2f s  %s\n", seconds, name.c_str());
      total += seconds;
    }
    llvm::errs() << llvm::format("  %7.2f s  total\n", total);
  }
  // A memory plan per stage (one world's: the first).
  if (planFlag)
    llvm::outs() << lcc::memoryPlanReport(package->manifest);
  // (Interleaved, each rank's program holds several stages: named by rank.)
  bool byRank = trainStepOptions().virtualStages > 1;
  for (int64_t stage = 1; planFlag && stage < ppFlag && stage <= int64_t(packages.size()); ++stage)
    llvm::outs() << (byRank ? "rank " : "stage ") << stage << ": "
                 << lcc::memoryPlanReport(packages[size_t(stage - 1)].manifest);
  if (reportFlag)
    llvm::outs() << lcc::compileReportText(package->manifest);
  if (outputFile == "-")
    return 0; // --plan alone: nothing to write
  if (!initialParameters.empty()) {
    lcc::SafetensorsFile params;
    for (auto &[name, value] : initialParameters)
      params.tensors[name] = std::move(value);
    if (lcc::Status st = lcc::serializeSafetensors(params, package->initParams); !st)
      return fail("lcc: error: cannot store the initial parameters: " + st.message());
  }
  package->onnxModel.assign(onnxSource.bytes_begin(), onnxSource.bytes_end());
  packages.insert(packages.begin(), std::move(*package));
  if (llvm::Error err = lcc::writePackage(packages, outputFile)) {
    llvm::errs() << llvm::toString(std::move(err)) << "\n";
    return 2; // the file system refused: the user's to fix
  }
  if (!quiet)
    llvm::errs() << "wrote " << outputFile << " (code for "
                 << (packages.front().cuda.names.empty()
                         ? packages.front().target
                         : "cuda-" + packages.front().cuda.arch + ", " +
                               std::to_string(packages.front().cuda.names.size()) +
                               " kernels, host " + packages.front().target)
                 << (worlds.size() > 1 ? ", " + std::to_string(worlds.size()) + " world sizes" : "")
                 << ")\n";
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  cl::HideUnrelatedOptions({&lccCat, &trainCat, &onnxCat, &distCat});
  std::string parseErrors;
  llvm::raw_string_ostream parseErrorStream(parseErrors);
  if (!cl::ParseCommandLineOptions(argc, argv, "lcc: an ahead-of-time compiler for training\n",
                                   &parseErrorStream)) {
    // LLVM prints "lcc: Unknown command line argument ..."; keep it to one line.
    llvm::StringRef first = llvm::StringRef(parseErrors).split('\n').first;
    first.consume_front("lcc: ");
    first = first.split(".  Try:").first;
    return fail("lcc: error: " + first.str() + "; see lcc --help");
  }
  if (inputFile.empty())
    return fail("lcc: error: no input file; usage: lcc MODEL.lcc [--emit=mlir] [-o OUT]");
  lcc::driver::initSeed = seed; // also LoRA's A (trainStepOptions)

  std::optional<lcc::Phase> phase = llvm::StringSwitch<std::optional<lcc::Phase>>(compileTo)
                                        .Case("input", lcc::Phase::Input)
                                        .Case("train-step", lcc::Phase::TrainStep)
                                        .Case("linalg", lcc::Phase::Linalg)
                                        .Case("llvm", lcc::Phase::LLVM)
                                        .Case("aot", lcc::Phase::Aot)
                                        .Default(std::nullopt);
  if (!phase)
    return fail("lcc: error: unknown phase '" + compileTo +
                "' for --compile-to; expected input, train-step, linalg, llvm or aot");
  // `lcc model.lcc -o train.bin` is the headline command: -o alone means a train.bin.
  if (emit.getNumOccurrences() == 0 && (outputFile.getNumOccurrences() || planFlag || reportFlag) &&
      compileTo.getNumOccurrences() == 0)
    emit = "train-bin";
  if (emit != "none" && emit != "mlir" && emit != "train-bin")
    return fail("lcc: error: unknown --emit=" + emit + "; expected none, mlir or train-bin");
  if (emit == "train-bin" &&
      ((outputFile == "-" && !planFlag && !reportFlag) || compileTo.getNumOccurrences()))
    return fail("lcc: error: --emit=train-bin writes a file: give -o FILE and no --compile-to");

  // Training flags are user input: reject bad values here (exit 2) rather
  // than as a pass failure.
  if (std::string e = checkTrainFlags(compileTo.getNumOccurrences() || emit == "mlir");
      !e.empty())
    return fail("lcc: error: " + e);
  if (std::string e = lcc::aotTargetError(targetFlag, archFlag); !e.empty())
    return fail("lcc: error: " + e);
  // The GPU's fused kernels run on tensor cores: half-precision operands.
  if (targetFlag == "cuda" && modes.attention == lcc::AttentionMode::Fused &&
      modes.precision == lcc::Precision::FP32)
    return fail("lcc: error: --target=cuda --attention=fused needs --precision=bf16 or fp16 (the "
                "fused kernels are tensor-core kernels); fp32 uses --attention=decomposed");

  lcc::dsl::ImportOptions options;
  options.seed = seed;
  for (const std::string &item : overrides) {
    std::vector<std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    int64_t value;
    if (kv.size() != 2 || kv[0].empty() || !absl::SimpleAtoi(kv[1], &value))
      return fail("lcc: error: --set expects name=integer, got '" + item + "'");
    options.overrides[kv[0]] = value;
  }

  llvm::StringRef path(inputFile);
  bool isOnnx = path.ends_with(".onnx");
  // Read once: an ONNX model's bytes are parsed and also go into the train.bin.
  std::unique_ptr<llvm::MemoryBuffer> source;
  {
    auto buffer = llvm::MemoryBuffer::getFile(inputFile, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/!isOnnx);
    if (!buffer)
      return fail(isOnnx ? inputFile + ": error: cannot read the file: " +
                               buffer.getError().message()
                         : "lcc: error: cannot read '" + inputFile + "': " +
                               buffer.getError().message());
    source = std::move(*buffer);
  }
  if (isOnnx)
    onnxSource = source->getBuffer();
  lcc::onnx_import::TrainingImportOptions onnxOptions;
  onnxOptions.loss = lossFlag;
  onnxOptions.graph.batch = batchFlag;
  onnxOptions.graph.seq = seqFlag;
  onnxOptions.graph.untie = untieFlag;
  onnxOptions.graph.trainable.assign(trainableFlag.begin(), trainableFlag.end());
  for (const std::string &text : trainableFlag)
    if (auto pattern = llvm::GlobPattern::create(text, /*MaxSubPatterns=*/1024); !pattern)
      return fail("lcc: error: bad --trainable pattern '" + text +
                  "': " + llvm::toString(pattern.takeError()));
  for (const std::string &item : dimFlag) {
    std::vector<std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    int64_t value;
    if (kv.size() != 2 || kv[0].empty() || !absl::SimpleAtoi(kv[1], &value) || value <= 0)
      return fail("lcc: error: --dim expects name=size, got '" + item + "'");
    onnxOptions.graph.dims[kv[0]] = value;
  }
  if (!isOnnx && (batchFlag.getNumOccurrences() || seqFlag.getNumOccurrences() ||
                  dimFlag.getNumOccurrences() || lossFlag.getNumOccurrences()))
    return fail("lcc: error: --batch, --seq, --dim and --loss apply to ONNX models; a .lcc "
                "model sets its sizes with --set");
  if (!isOnnx && (trainableFlag.getNumOccurrences() || untieFlag.getNumOccurrences()))
    return fail("lcc: error: --trainable and --untie apply to ONNX models; a .lcc model "
                "declares what it trains (docs/dsl.md)");

  DialectRegistry registry;
  registry.insert<lcc::LccDialect>();
  registerAllDialects(registry);
  registerAllExtensions(registry);
  MLIRContext context(registry);
  context.loadDialect<lcc::LccDialect, func::FuncDialect>();

  // Verifier and pass diagnostics become single "file:line:col: error: ..."
  // lines (the first error is reported when the phase fails); warnings
  // (a choice the compiler made for the user, such as a table left whole)
  // are printed as they come.
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    bool warning = diag.getSeverity() == DiagnosticSeverity::Warning;
    if (!warning && diag.getSeverity() != DiagnosticSeverity::Error)
      return success();
    std::string where;
    // The DSL names ops made inside loops by their iteration (a NameLoc
    // around the source position); ONNX names by node (around line 0).
    Location at = diag.getLocation();
    if (auto name = llvm::dyn_cast<NameLoc>(at))
      if (auto inner = llvm::dyn_cast<FileLineColLoc>(name.getChildLoc()); inner && inner.getLine())
        at = inner;
    if (auto loc = llvm::dyn_cast<FileLineColLoc>(at))
      where = (loc.getFilename().str() + ":" + std::to_string(loc.getLine()) + ":" +
               std::to_string(loc.getColumn()) + ": ");
    else
      where = "lcc: ";
    if (warning)
      llvm::errs() << where << "warning: " << diag.str() << "\n";
    else if (diagnostics.empty())
      diagnostics = where + "error: " + diag.str();
    return success();
  });

  // --shard=auto sets the distribution flags and the micro-batch first.
  if (autoShard && isOnnx)
    return fail("lcc: error: --shard=auto plans .lcc models (it sets their layers and batch)");
  if (autoShard)
    if (std::string e = planShardAuto(aotOptions(), options.overrides, outputFile != "-",
                                      [&](const auto &o) {
                                        lcc::dsl::ImportOptions probe = options;
                                        probe.overrides = o;
                                        return lcc::dsl::importDsl(source->getBuffer(), inputFile,
                                                                   context, probe);
                                      });
        !e.empty())
      return fail("lcc: error: " + e);
  auto parseStart = std::chrono::steady_clock::now();
  auto module = [&]() -> llvm::Expected<OwningOpRef<ModuleOp>> {
    if (!isOnnx)
      return lcc::dsl::importDsl(source->getBuffer(), inputFile, context, options);
    // In a train.bin the weights travel as data, not as code (section "params").
    onnxOptions.parametersAsData = emit == "train-bin";
    auto imported = lcc::onnx_import::importOnnxForTraining(source->getBuffer(), inputFile, context,
                                                            onnxOptions);
    if (!imported)
      return imported.takeError();
    if (onnxOptions.parametersAsData)
      initialParameters = std::move(imported->parameters);
    onnxBuffers = std::move(imported->buffers);
    onnxNotices = std::move(imported->notices);
    return std::move(imported->module);
  }();
  if (!module)
    return fail(llvm::toString(module.takeError()));
  if (failed(verify(**module)))
    return fail(diagnostics.empty() ? "lcc: error: the imported model does not verify"
                                    : diagnostics);
  parseSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - parseStart).count();

  auto forward = (**module).lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return fail("lcc: error: " + inputFile + " defines no forward function");
  // The GPU's fused attention kernels exist for some head sizes: a model
  // with another is told so at its attention, before any compiling.
  if (targetFlag == "cuda" && modes.attention == lcc::AttentionMode::Fused) {
    WalkResult unsupported = forward.walk([&](lcc::AttentionOp op) {
      int64_t d = op.getQuery().getType().getShape().back();
      if (lcc::flash::hasKernelFor(d))
        return WalkResult::advance();
      op.emitError() << "--attention=fused on CUDA has kernels for head sizes 16, 32, 64 and "
                        "128, not "
                     << d << "; use --attention=decomposed";
      return WalkResult::interrupt();
    });
    if (unsupported.wasInterrupted())
      return fail(diagnostics);
  }
  if (std::string error = lcc::driver::applyParameterFlags(forward); !error.empty())
    return fail("lcc: error: " + error);
  if (std::string error = lcc::driver::mapToHuggingFace(**module, forward, isOnnx, hfMapping);
      !error.empty())
    return fail("lcc: error: " + inputFile + ": " + error);
  if (!quiet)
    printParameterReport(forward, llvm::errs());

  if (runForward)
    return runForwardPass(**module, forward);
  if (trainSteps > 0)
    return runTrainSteps(context, **module, forward, diagnostics);

  if (emit == "train-bin") {
    // The model again at other sizes (an ONNX graph's batch and seq are
    // its symbolic dimensions 0 and 1).
    auto importAt =
        [&](const std::map<std::string, int64_t> &o) -> llvm::Expected<OwningOpRef<ModuleOp>> {
      if (!isOnnx) {
        lcc::dsl::ImportOptions at = options;
        at.overrides = o;
        return lcc::dsl::importDsl(source->getBuffer(), inputFile, context, at);
      }
      lcc::onnx_import::TrainingImportOptions at = onnxOptions;
      at.graph.batch = o.at("batch");
      at.graph.seq = o.at("seq");
      auto imported =
          lcc::onnx_import::importOnnxForTraining(source->getBuffer(), inputFile, context, at);
      if (!imported)
        return imported.takeError();
      return std::move(imported->module);
    };
    // (Only into a file: --plan alone shows the training memory, without them.)
    if (std::string e = outputFile == "-" ? ""
                                          : lcc::driver::addGenerationEntries(
                                                **module, isOnnx, importAt, options.overrides);
        !e.empty())
      return fail(diagnostics.empty() ? "lcc: error: " + e : diagnostics);
    return writeTrainBinFile(context, **module, diagnostics);
  }

  PassManager pm(&context);
  if (failed(applyPassManagerCLOptions(pm)))
    return fail("lcc: error: bad pass manager options");
  std::optional<lcc::TrainStepOptions> trainOptions;
  if (train || *phase == lcc::Phase::TrainStep)
    trainOptions = trainStepOptions();
  if (*phase == lcc::Phase::Aot) {
    lcc::prepareLoweringContext(&context); // the GPU binary's LLVM translations
    lcc::buildPipelineUpTo(pm, lcc::Phase::TrainStep, trainStepOptions());
    if (llvm::Error e = lcc::buildAotPipeline(pm, aotOptions()))
      return fail("lcc: error: " + llvm::toString(std::move(e)));
  } else {
    lcc::buildPipelineUpTo(pm, *phase, trainOptions);
  }
  if (printPipeline) {
    pm.printAsTextualPipeline(llvm::outs());
    llvm::outs() << "\n";
    return 0;
  }
  if (failed(pm.run(**module))) {
    llvm::errs() << (diagnostics.empty() ? "lcc: internal error: compilation failed"
                                         : diagnostics)
                 << "\n";
    return 3;
  }

  if (emit == "mlir") {
    std::string error;
    auto output = mlir::openOutputFile(outputFile, &error);
    if (!output)
      return fail("lcc: error: cannot write '" + outputFile + "': " + error);
    (**module).print(output->os());
    output->os() << "\n";
    output->keep();
  }
  return 0;
}
