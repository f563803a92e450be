//===- lcc-run.cpp - the training loop over a train.bin -------------------===//
//
// Loads the compiled program (runtime/CpuProgram), maps the token data
// (runtime/Data), and runs @train_step for the requested steps with logging,
// evaluation, checkpoints and export. Batches depend only on (seed, step), so
// a run resumed from a checkpoint sees exactly the batches an uninterrupted
// run would have seen, and its losses are bitwise equal.
//
// Exit codes: 0 success, 2 user error (bad flags, data, files), 3 internal.
//
//===----------------------------------------------------------------------===//
#include "Distributed.h"
#include "Launcher.h"
#include "OnnxExport.h"
#include "Options.h"
#include "Preemption.h"

#include "runtime/train/Checkpoint.h"
#include "runtime/cpu/CpuKernels.h"
#include "runtime/cpu/CpuProgram.h"
#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/CudaSession.h"
#include "runtime/cuda/EmulatedGpu.h"
#include "tools/lcc-run/AppendFile.h"
#include "tools/lcc-run/Data.h"
#include "tools/lcc-run/Generate.h"
#include "tools/lcc-run/HfModel.h"
#include "tools/lcc-run/Metrics.h"
#include "tools/lcc-run/PeftAdapter.h"
#include "tools/lcc-run/TensorBoard.h"
#include "runtime/cpu/Parallel.h"
#include "tools/lcc-run/Plot.h"
#include "runtime/support/AtomicFile.h"
#include "runtime/support/TrainBin.h"
#include "runtime/dist/Communicator.h"
#include "runtime/train/Trainer.h"

#include <chrono>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

using namespace lcc;
using Clock = std::chrono::steady_clock;

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "%s\n", message.c_str());
  return 2;
}

std::string duration(double seconds) {
  char buf[32];
  long s = std::lround(seconds);
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s / 60) % 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lds", s);
  return buf;
}

/// What the data feeder fills: the model's integer inputs `tokens` and
/// (optionally) `targets`, [B, T] or [K, B, T] with K micro-batches.
struct Feed {
  int64_t micro = 1, batch = 0, seq = 0;
  bool hasTargets = false;
  HostTensor tokens, targets;
  // Data parallel: the sampler draws the global batch of `parts` ranks (the
  // batch a 1-rank run of parts * batch rows would see) and this rank takes
  // rows [part * batch, (part + 1) * batch).
  int64_t parts = 1, part = 0;
  std::vector<int32_t> globalTokens, globalTargets;
};

/// `micro`: the inputs may carry a leading micro-batch dimension (the step of
/// a model compiled with --accum=K takes [K, batch, seq]).
Status makeFeed(const std::vector<Slot> &inputs, bool micro, Feed &feed) {
  for (const Slot &s : inputs) {
    bool rankOk = s.shape.size() == 2 || (micro && s.shape.size() == 3);
    if ((s.name != "tokens" && s.name != "targets") || s.dtype != ElementType::I32 || !rankOk ||
        (feed.seq && s.shape != feed.tokens.shape() && s.shape != feed.targets.shape()))
      return Status::failure("lcc-run feeds token models: inputs 'tokens' and optionally "
                             "'targets', i32 [batch, seq]; this model has input '" +
                             s.name + "'");
    feed.micro = s.shape.size() == 3 ? s.shape[0] : 1;
    feed.batch = s.shape[s.shape.size() - 2];
    feed.seq = s.shape.back();
    feed.hasTargets |= s.name == "targets";
    (s.name == "tokens" ? feed.tokens : feed.targets) = HostTensor(s.dtype, s.shape);
  }
  if (feed.seq == 0)
    return Status::failure("the model has no input named 'tokens'");
  if (!feed.hasTargets) // the model shifts tokens itself; the sampler still wants a buffer
    feed.targets = HostTensor(ElementType::I32, feed.tokens.shape());
  return {};
}

/// Micro-batch k of feed for sampler step `index`.
void fill(const Sampler &sampler, uint64_t index, int64_t k, Feed &feed) {
  int64_t n = feed.batch * feed.seq;
  if (feed.parts == 1) {
    sampler.fill(index, feed.tokens.data<int32_t>() + k * n, feed.targets.data<int32_t>() + k * n);
    return;
  }
  feed.globalTokens.resize(size_t(n * feed.parts));
  feed.globalTargets.resize(size_t(n * feed.parts));
  sampler.fill(index, feed.globalTokens.data(), feed.globalTargets.data());
  std::copy_n(feed.globalTokens.data() + feed.part * n, n, feed.tokens.data<int32_t>() + k * n);
  std::copy_n(feed.globalTargets.data() + feed.part * n, n, feed.targets.data<int32_t>() + k * n);
}

std::map<std::string, const HostTensor *> inputsOf(const Feed &feed) {
  std::map<std::string, const HostTensor *> m = {{"tokens", &feed.tokens}};
  if (feed.hasTargets)
    m["targets"] = &feed.targets;
  return m;
}

/// The mean @forward loss over the first `batches` batches of `sampler`.
Status evaluate(Trainer &trainer, const Sampler &sampler, Feed &feed, int64_t batches,
                double &mean) {
  double sum = 0;
  for (int64_t b = 0; b < batches; ++b) {
    fill(sampler, uint64_t(b), 0, feed);
    double loss;
    if (Status st = trainer.evalLoss(inputsOf(feed), loss); !st)
      return st;
    sum += loss;
  }
  mean = sum / double(batches);
  return {};
}

} // namespace

int main(int argc, char **argv) {
  // OpenBLAS chose its kernels when it was loaded, before main: on a CPU it
  // does not know, SSE3 ones (runtime/cpu/CpuKernels.h). Start again, once,
  // with the ones this CPU runs (the launcher's ranks inherit the choice).
  // (LCC_BLAS_RESTARTED guards against a second restart whatever happens.)
  if (const char *core = lcc::betterBlasCoreType(); core && !std::getenv("LCC_BLAS_RESTARTED") &&
                                                    setenv("OPENBLAS_CORETYPE", core, 1) == 0 &&
                                                    setenv("LCC_BLAS_RESTARTED", "1", 1) == 0)
    execv("/proc/self/exe", argv); // returns only if it failed: run on as we are
  run::Options opt;
  std::string message;
  bool help = false;
  if (!run::parseOptions(argc, argv, opt, message, help)) {
    std::fprintf(help ? stdout : stderr, "%s\n", message.c_str());
    return help ? 0 : 2;
  }
  if (opt.ranks > 0) {
    // lcc-run -n N: this process only starts and watches the N ranks.
    if (std::getenv("RANK") || std::getenv("WORLD_SIZE"))
      return fail("lcc-run: error: -n starts local ranks itself; under torchrun, SLURM or "
                  "mpirun (RANK/WORLD_SIZE set), run lcc-run without -n");
    std::vector<std::string> args;
    for (int i = 0; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "-n" || a == "--nproc") {
        ++i;
        continue;
      }
      if (a.rfind("-n=", 0) == 0 || a.rfind("--nproc=", 0) == 0)
        continue;
      args.push_back(a);
    }
    if (Status st = run::checkWorld(opt.program, opt.ranks); !st)
      return fail("lcc-run: error: " + st.message());
    // The ranks read the same timeout (--timeout, else $LCC_DIST_TIMEOUT).
    double timeout = opt.timeout;
    if (timeout <= 0) {
      const char *envTimeout = std::getenv("LCC_DIST_TIMEOUT");
      timeout = envTimeout ? std::strtod(envTimeout, nullptr) : 0;
      if (!(timeout > 0))
        timeout = 300;
    }
    return run::launchLocalRanks(int(opt.ranks), args, opt.logDir, timeout, opt.preemptSignals);
  }
  // From here on a preemption signal stops training cleanly (Preemption.h).
  if (!opt.generate)
    run::catchPreemption(opt.preemptSignals);
  if (opt.threads > 0)
    setNumThreads(int(opt.threads));

  Program program;
  // The job's size picks the code when the train.bin has one per world size.
  dist::DistEnv env;
  if (Status st = dist::distEnvFromEnvironment(env); !st)
    return fail("lcc-run: error: " + st.message());
  // With pipeline stages, each rank loads its stage's program.
  int64_t stage = -1;
  if (Status st = run::pipelineStage(opt.program, env.worldSize, env.rank, stage); !st)
    return fail("lcc-run: error: " + st.message());
  if (Status st = Program::load(opt.program, program, env.worldSize, stage); !st)
    return fail("lcc-run: error: " + st.message());
  // The collectives move the step's buffers: host memory on the CPU (Gloo),
  // device memory on the GPU (NCCL).
  // (An emulated GPU's memory is host memory.)
  bool deviceBuffers = program.isCuda() && program.cudaArch() != "emulated";
  std::string backend = opt.backend.empty() ? (deviceBuffers ? "nccl" : "gloo") : opt.backend;
  if (backend != (deviceBuffers ? "nccl" : "gloo"))
    return fail("lcc-run: error: --backend " + backend + " cannot move the buffers of " +
                opt.program + ": it was compiled for " +
                (deviceBuffers ? "CUDA (device buffers: use --backend nccl)"
                               : program.isCuda()
                                     ? "the emulated GPU (host buffers: use --backend gloo)"
                                     : "the CPU (host buffers: use --backend gloo)"));
  std::unique_ptr<GpuDevice> gpu;
  if (program.isCuda() && program.cudaArch() == "emulated") {
    // lcc --arch=emulated: the kernels run on the CPU (tests without a GPU).
    std::unique_ptr<EmulatedGpu> emulated;
    if (Status st = EmulatedGpu::create(program, emulated); !st)
      return fail("lcc-run: error: " + opt.program + ": " + st.message());
    gpu = std::move(emulated);
  } else if (program.isCuda()) {
    const CudaDriver *driver = nullptr;
    CudaDevice device;
    if (Status st = loadCudaDriver(0, driver, device); !st)
      return fail("lcc-run: error: no CUDA device: " + st.message() + "; " + opt.program +
                  " was compiled with --target=cuda (compile without it to train on the CPU)");
    // One GPU per rank, as the nccl backend picks it (NcclCommunicator.cpp):
    // LOCAL_RANK's, or the only one this process sees.
    int devices = 1;
    int ordinal = driver->deviceGetCount(&devices) == 0 && devices > 1 ? env.localRank : 0;
    std::unique_ptr<CudaSession> session;
    if (Status st = CudaSession::create(program, ordinal, session); !st)
      return fail("lcc-run: error: cannot run " + opt.program + " on " + device.name + ": " +
                  st.message());
    gpu = std::move(session);
  }
  Trainer trainer;
  if (Status st = Trainer::create(program, trainer, gpu.get()); !st)
    return fail("lcc-run: error: " + opt.program + ": " + st.message());
  trainer.useGraphs(gpu && !opt.noGraph);

  // NCCL's support for several graphs (or a graph and eager calls) with NCCL
  // work outstanding at once is known to deadlock when graphs of several
  // communicators are launched from one thread, which is what a step with
  // data- and tensor-parallel groups is; lcc never mixes (one stream, eager
  // collectives only while no step is queued), so it is turned off unless
  // the user chose.
  if (program.isCuda())
    setenv("NCCL_GRAPH_MIXING_SUPPORT", "0", /*overwrite=*/0);
  std::string error;
  run::DistributedRun job;
  if (Status st = run::joinJob(program.manifest(), backend, opt.timeout, job); !st)
    return fail("lcc-run: error: " + st.message()), 4; // docs/distributed.md: distributed failures
  if (gpu)
    gpu->setCollectiveTimeout(job.timeoutSeconds);
  trainer.setGroupRanks(job.groupRanks);
  const bool lead = job.rank == 0; // prints progress, writes metrics and exports
  if (!lead)
    opt.quiet = true;

  Feed stepFeed, evalFeed;
  if (Status st = makeFeed(trainer.stepInputs(), /*micro=*/true, stepFeed); !st)
    return fail("lcc-run: error: " + opt.program + ": " + st.message());
  if (Status st = makeFeed(trainer.forwardInputs(), /*micro=*/false, evalFeed); !st)
    return fail("lcc-run: error: " + opt.program + ": " + st.message());
  // Data-parallel ranks train on different rows; tensor-parallel ranks of
  // one data-parallel rank share its rows.
  if (auto dp = job.groupRanks.find("dp"); dp != job.groupRanks.end())
    for (Feed *f : {&stepFeed, &evalFeed}) {
      f->parts = job.groupSizes.at("dp");
      f->part = dp->second;
    }

  const json::Value &manifest = program.manifest();
  const json::Value *config = manifest.get("config");
  // The Hugging Face mapping (compiler/package/HfNames.h), for --init-from
  // and --export-hf.
  const json::Value *hf = manifest.get("hf");
  const bool lora = manifest.get("lora") != nullptr;
  if (!lora && (!opt.exportPeft.empty() || !opt.initAdapter.empty() || opt.mergeLora))
    return fail("lcc-run: error: --export-peft, --init-adapter and --merge-lora need a train.bin "
                "with LoRA adapters (lcc --lora=...)");
  if (lora && !opt.exportHf.empty() && !opt.mergeLora)
    return fail("lcc-run: error: --export-hf of a model with LoRA adapters needs --merge-lora "
                "(without it the export would hold the unchanged base weights; --export-peft "
                "writes the adapters alone)");
  if (opt.mergeLora && opt.exportHf.empty())
    return fail("lcc-run: error: --merge-lora applies to --export-hf");
  if (!hf && (!opt.initFrom.empty() || !opt.exportHf.empty() || !opt.exportPeft.empty()))
    return fail("lcc-run: error: " +
                std::string(!opt.initFrom.empty()   ? "--init-from"
                            : !opt.exportHf.empty() ? "--export-hf"
                                                    : "--export-peft") +
                ": " + opt.program +
                "'s model names no Hugging Face architecture (an `hf` section of a DSL "
                "model, lcc --hf-config for an ONNX export; docs/hf.md)");
  // Start: fresh init, or a checkpoint (which also brings back the data seed
  // and order).
  uint64_t seed = opt.seed.value_or(1337);
  SampleMode order = opt.order.value_or(SampleMode::Random);
  if (opt.resume == "auto") {
    // A requeued job: --save's latest checkpoint, or a fresh start when it
    // has none (a directory with a `latest` that names no complete
    // checkpoint is an error below, never a silent fresh start).
    struct stat sb;
    bool any = stat((opt.saveDir + "/latest").c_str(), &sb) == 0;
    opt.resume = any ? opt.saveDir : "";
    if (!any && !opt.quiet)
      std::printf("no checkpoint in %s yet: starting fresh\n", opt.saveDir.c_str());
  }
  if (!opt.resume.empty()) {
    SafetensorsFile ckpt;
    std::string used;
    bool unchecked = false;
    if (Status st = loadCheckpoint(opt.resume, ckpt, used, &unchecked); !st)
      return fail("lcc-run: error: " + st.message());
    if (unchecked && lead)
      std::fprintf(stderr,
                   "lcc-run: notice: %s has no checksums (written by an older lcc): "
                   "its tensors are not verified\n",
                   used.c_str());
    if (Status st = trainer.restore(ckpt); !st)
      return fail("lcc-run: error: " + used + ": " + st.message());
    auto s = ckpt.metadata.find("lcc.data_seed");
    if (!opt.seed && s != ckpt.metadata.end())
      seed = std::strtoull(s->second.c_str(), nullptr, 10);
    SampleMode saved;
    auto o = ckpt.metadata.find("lcc.data_order");
    if (o != ckpt.metadata.end() && !parseSampleMode(o->second, saved))
      return fail("lcc-run: error: " + used + ": lcc.data_order is '" + o->second +
                  "', expected random or sequential");
    if (!opt.order && o != ckpt.metadata.end())
      order = saved;
    if (!opt.quiet)
      std::fprintf(opt.generate ? stderr : stdout, "resumed from %s at step %lld\n", used.c_str(),
                   static_cast<long long>(trainer.stepCount()));
  } else if (!opt.initFrom.empty() || !opt.initAdapter.empty()) {
    std::map<std::string, HostTensor> weights;
    if (!opt.initFrom.empty())
      if (Status st = readHfModel(opt.initFrom, *hf, weights); !st)
        return fail("lcc-run: error: --init-from: " + st.message());
    if (!opt.initAdapter.empty())
      if (Status st = readPeftAdapter(opt.initAdapter, manifest, weights); !st)
        return fail("lcc-run: error: --init-adapter: " + st.message());
    if (Status st = trainer.initFrom(weights); !st)
      return fail("lcc-run: error: --init-from: " + st.message());
    if (!opt.quiet)
      std::fprintf(
          opt.generate ? stderr : stdout, "initialized from %s%s%s\n", opt.initFrom.c_str(),
          opt.initFrom.empty() || opt.initAdapter.empty() ? "" : " and ", opt.initAdapter.c_str());
  } else if (Status st = trainer.init(); !st) {
    return fail("lcc-run: error: " + st.message());
  }

  if (opt.generate)
    return run::generateText(trainer, opt);

  const json::Value *vocab = config ? config->get("vocab") : nullptr;
  DatasetOptions dopt;
  dopt.trainPath = opt.data;
  dopt.valPath = opt.val;
  dopt.valFraction = opt.val.empty() ? opt.valFraction : 0;
  dopt.vocabSize = vocab && vocab->isInt() ? uint32_t(vocab->asInt()) : uint32_t(INT32_MAX);
  dopt.seqLen = stepFeed.seq;
  if (!parseTokenFormat(opt.format, dopt.format))
    return fail("lcc-run: error: unknown --format '" + opt.format +
                "', expected auto, u16, "
                "u32 or bytes");
  Dataset data;
  if (Status st = Dataset::open(dopt, data); !st)
    return fail("lcc-run: error: " + st.message());

  Sampler trainSampler(data.train(), stepFeed.batch * stepFeed.parts, stepFeed.seq, seed,
                       order);
  std::optional<Sampler> valSampler;
  int64_t evalBatches = opt.evalBatches;
  if (data.hasVal()) {
    valSampler.emplace(data.val(), evalFeed.batch * evalFeed.parts, evalFeed.seq, seed,
                       SampleMode::Sequential);
    evalBatches = std::min<int64_t>(evalBatches, int64_t(valSampler->numSteps()));
  }

  MetricsWriter csv;
  if (!opt.csv.empty() && lead) {
    Status st = opt.resume.empty() ? MetricsWriter::create(opt.csv, csv)
                                   : MetricsWriter::resume(opt.csv, trainer.stepCount(), csv);
    if (!st)
      return fail("lcc-run: error: " + st.message());
  }
  TensorBoardWriter tensorboard;
  if (!opt.tensorboard.empty() && lead)
    if (Status st = TensorBoardWriter::open(opt.tensorboard, trainer.stepCount() + 1, tensorboard);
        !st)
      return fail("lcc-run: error: " + st.message());
  std::map<std::string, std::string> meta = {{"lcc.data_seed", std::to_string(seed)},
                                             {"lcc.data_order", sampleModeName(order)}};
  if (const json::Value *m = manifest.get("model"); m && m->isString())
    meta["lcc.model"] = m->asString();

  const int64_t tokensPerStep = stepFeed.micro * stepFeed.batch * stepFeed.parts * stepFeed.seq;
  const int64_t first = trainer.stepCount() + 1;
  if (!opt.quiet)
    std::printf(
        "training %s: steps %lld..%lld, %lld tokens/step, code %s, %s%s\n", opt.program.c_str(),
        static_cast<long long>(first), static_cast<long long>(opt.steps),
        static_cast<long long>(tokensPerStep), program.target().c_str(),
        gpu ? (gpu->description() + (opt.noGraph ? ", eager" : ", CUDA graph")).c_str()
            : (std::to_string(numThreads()) + " threads (" + blasDescription() + ")").c_str(),
        job.active() ? (", " + std::to_string(job.world) + " ranks (" + backend + ")").c_str()
                     : "");
  if (!opt.quiet || !lead) {
    // The plan (from the manifest) and what this process allocated for it:
    // equal when every temporary of the compiled code is planned. Every rank
    // says it (the others into their --log-dir file): ranks differ under ZeRO.
    std::printf("%smemory: plan %lld bytes, allocated %lld bytes (lcc --plan shows the plan)\n",
                job.active() ? ("rank " + std::to_string(job.rank) + ": ").c_str() : "",
                static_cast<long long>(memoryPlanBytes(manifest)),
                static_cast<long long>(trainer.stepMemoryBytes()));
  }
  // A distributed run writes one file per rank (run::saveShardedCheckpoint).
  int64_t savedStep = -1; // the step of the last checkpoint this run wrote
  auto save = [&]() -> Status {
    if (savedStep == trainer.stepCount())
      return {};
    struct stat sb;
    if (savedStep >= 0 && lead && stat(opt.saveDir.c_str(), &sb) != 0)
      std::fprintf(stderr,
                   "lcc-run: warning: checkpoint directory %s was removed during the "
                   "run; it is created again\n",
                   opt.saveDir.c_str());
    Status st;
    if (job.active()) {
      st = run::saveShardedCheckpoint(job, opt.saveDir, trainer.stepCount(), trainer, meta,
                                      opt.keep);
    } else {
      // One process: whole tensors (a ZeRO train.bin's 1-rank variant still
      // holds pieces, of one part each).
      SafetensorsFile whole;
      if (st = run::wholeSnapshot(job, trainer, true, meta, whole); st)
        st = saveCheckpoint(opt.saveDir, trainer.stepCount(), std::move(whole), opt.keep);
    }
    if (st)
      savedStep = trainer.stepCount();
    return st;
  };
  auto start = Clock::now();
  double lastLoss = NAN, lastVal = NAN;
  std::vector<MetricsRow> rows;
  // Fault injection for the tests (docs/distributed.md): LCC_RUN_KILL=R:S
  // makes rank R kill itself (SIGKILL) when step S starts, while the other
  // ranks are inside the step's collectives; R:S:stop stops it instead
  // (SIGSTOP: a stuck rank, alive but silent).
  // R:S:term sends it SIGTERM (a preemption, Preemption.h). LCC_RUN_AT_STEP=
  // S:COMMAND runs a shell command on rank 0 when step S starts (storage
  // faults: a disk filled, made read-only or removed at a known step).
  long long killRank = -1, killStep = -1, hookStep = -1;
  char killHow[8] = "";
  if (const char *k = std::getenv("LCC_RUN_KILL"))
    std::sscanf(k, "%lld:%lld:%7s", &killRank, &killStep, killHow);
  std::string hook;
  if (const char *h = std::getenv("LCC_RUN_AT_STEP"); h && std::strchr(h, ':')) {
    hookStep = std::atoll(h);
    hook = std::strchr(h, ':') + 1;
  }
  // Each step's results arrive in step order: on a GPU one step late (the
  // next step is queued before the host reads them, so it never waits for
  // the GPU between steps), except where the host needs the step done:
  // evaluation, a checkpoint, the last step. LCC_RUN_LATE_RESULTS=1 makes
  // a CPU run deliver them the GPU's way (the tests compare both).
  if (const char *late = std::getenv("LCC_RUN_LATE_RESULTS"); late && *late == '1')
    trainer.setLateResults(true);
  auto evalAt = [&](int64_t s) {
    return valSampler && ((opt.evalEvery > 0 && s % opt.evalEvery == 0) || s == opt.steps);
  };
  auto saveAt = [&](int64_t s) {
    return !opt.saveDir.empty() && opt.saveEvery > 0 && s % opt.saveEvery == 0 && s != opt.steps;
  };
  // Logs, evaluates and saves after step r.step; false with `error` set.
  // A step's numbers are broken (outside fp16's skipped overflow steps).
  auto nonFinite = [](const StepResult &r) {
    return !std::isfinite(r.loss) || (r.lossScale == 0 && !std::isfinite(r.gradNorm));
  };
  int stopSignal = 0;
  int64_t nonFiniteSteps = 0;
  // A checkpoint that could not be written: --on-save-error decides.
  auto saveFailed = [&](int64_t s, const Status &st, int &code) {
    std::string name, kept = "there is no earlier checkpoint";
    if (latestCheckpoint(opt.saveDir, name))
      kept = opt.saveDir + "/" + name + " is still the latest";
    std::string what = "cannot save the checkpoint of step " + std::to_string(s) + ": " +
                       st.message() + "; " + kept;
    if (opt.continueAfterSaveError) {
      if (lead)
        std::fprintf(stderr, "lcc-run: warning: %s; training goes on (--on-save-error=continue)\n",
                     what.c_str());
      return true;
    }
    error = "lcc-run: error: " + what + " (--on-save-error=continue trains on)";
    code = 2;
    return false;
  };
  auto handle = [&](const StepResult &r, int &code) {
    const int64_t s = r.step;
    double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    lastLoss = r.loss;
    if (nonFinite(r)) { // reported (process); metrics files hold finite values
      if (saveAt(s))
        if (Status st = save(); !st)
          return saveFailed(s, st, code);
      return true;
    }
    MetricsRow row{s, r.loss, r.lr, r.gradNorm, 0, std::nullopt, elapsed};
    row.tokensPerSec = double(tokensPerStep * (s - first + 1)) / std::max(elapsed, 1e-9);
    bool evalNow = evalAt(s);
    if (evalNow) {
      if (Status st = evaluate(trainer, *valSampler, evalFeed, evalBatches, lastVal); !st)
        return error = "lcc-run: internal error: " + st.message(), code = 3, false;
      row.valLoss = lastVal;
    }
    rows.push_back(row);
    if (csv.isOpen())
      if (Status st = csv.append(row); !st)
        return error = "lcc-run: error: " + st.message(), code = 2, false;
    if (tensorboard.isOpen()) {
      std::vector<ScalarPoint> points = {{"train/loss", r.loss},
                                         {"train/lr", r.lr},
                                         {"train/grad_norm", r.gradNorm},
                                         {"train/tokens_per_s", row.tokensPerSec}};
      if (r.lossScale > 0)
        points.emplace_back("train/loss_scale", r.lossScale);
      if (row.valLoss)
        points.emplace_back("val/loss", *row.valLoss);
      if (Status st = tensorboard.scalars(s, points); !st)
        return error = "lcc-run: error: " + st.message(), code = 2, false;
    }
    if (!opt.quiet && (s % opt.logEvery == 0 || s == first || s == opt.steps || evalNow)) {
      double perStep = elapsed / double(s - first + 1);
      std::printf("step %6lld/%lld | loss %.4f | lr %.2e | gnorm %.3f | %8.0f tok/s | ETA %s",
                  static_cast<long long>(s), static_cast<long long>(opt.steps), r.loss, r.lr,
                  r.gradNorm, row.tokensPerSec, duration(perStep * double(opt.steps - s)).c_str());
      if (row.valLoss)
        std::printf(" | val %.4f", *row.valLoss);
      if (r.lossScale > 0) // fp16: a non-finite norm means the step was skipped
        std::printf(" | scale %g%s", r.lossScale,
                    std::isfinite(r.gradNorm) ? "" : " | skipped (overflow)");
      std::printf("\n");
      std::fflush(stdout);
    }
    if (saveAt(s))
      if (Status st = save(); !st)
        return saveFailed(s, st, code);
    return true;
  };
  // Agrees with the other ranks on whether to stop (a preemption signal
  // reached any of them) and on which steps of `done` had a loss or gradient
  // norm that is not finite on any of them, applies --on-nan to those, then
  // handles each result; false with `error` and `code` set.
  auto process = [&](std::vector<StepResult> &done, bool &stop, int &code) {
    std::vector<int32_t> flags = {run::preemptionSignal()};
    for (const StepResult &r : done)
      flags.push_back(nonFinite(r));
    if (Status st = run::agree(job, flags); !st)
      return error = "lcc-run: error: " + st.message(), code = 4, false;
    stop = flags[0] != 0;
    stopSignal = stopSignal ? stopSignal : flags[0];
    for (size_t i = 0; i < done.size(); ++i) {
      if (!flags[i + 1])
        continue;
      const StepResult &r = done[i];
      auto text = [](double x) {
        return std::isnan(x)   ? std::string("nan")
               : std::isinf(x) ? (x > 0 ? "inf" : "-inf")
                               : std::to_string(x);
      };
      std::string what = nonFinite(r) ? "the loss is " + text(r.loss) + " and the gradient norm " +
                                            text(r.gradNorm) + " at step " + std::to_string(r.step)
                                      : "the loss or gradient norm is not finite at step " +
                                            std::to_string(r.step) + " (on another rank)";
      if (opt.onNan == run::NanPolicy::Stop)
        return error = lead ? "lcc-run: error: " + what +
                                  "; lower --lr or check the data (--on-nan=skip skips such "
                                  "steps)"
                            : "",
               code = 2, false;
      // (Skip runs step by step: `done` is the last step alone.)
      if (opt.onNan == run::NanPolicy::Skip)
        if (Status st = trainer.undoLastStep(); !st)
          return error = "lcc-run: internal error: " + st.message(), code = 3, false;
      ++nonFiniteSteps;
      if (lead)
        std::fprintf(stderr, "lcc-run: warning: %s: %s (--on-nan=%s)\n", what.c_str(),
                     opt.onNan == run::NanPolicy::Skip ? "update undone" : "training goes on",
                     opt.onNan == run::NanPolicy::Skip ? "skip" : "continue");
    }
    for (const StepResult &r : done)
      if (!handle(r, code))
        return false;
    return true;
  };
  // --on-nan=skip undoes a step right after it: its results cannot wait.
  const bool stepByStep = opt.onNan == run::NanPolicy::Skip;
  bool stop = false;
  for (int64_t s = first; s <= opt.steps && !stop; ++s) {
    if (s == killStep && job.rank == killRank)
      std::raise(std::strcmp(killHow, "stop") == 0   ? SIGSTOP
                 : std::strcmp(killHow, "term") == 0 ? SIGTERM
                                                     : SIGKILL);
    if (s == hookStep && job.rank == 0 && std::system(hook.c_str()) != 0)
      std::fprintf(stderr, "lcc-run: LCC_RUN_AT_STEP: '%s' failed\n", hook.c_str());
    for (int64_t k = 0; k < stepFeed.micro; ++k)
      fill(trainSampler, uint64_t((s - 1) * stepFeed.micro + k), k, stepFeed);
    std::vector<StepResult> done;
    Status st = trainer.startStep(inputsOf(stepFeed), done);
    if (st && (stepByStep || evalAt(s) || saveAt(s) || s == opt.steps))
      st = trainer.finishSteps(done);
    if (!st)
      return fail("lcc-run: internal error: " + st.message()), 3;
    if (int code = 0; !process(done, stop, code))
      return error.empty() ? code : (fail(error), code);
    if (stop) { // the step in flight (a GPU's) finishes, and is handled, first
      std::vector<StepResult> rest;
      if (Status st = trainer.finishSteps(rest); !st)
        return fail("lcc-run: internal error: " + st.message()), 3;
      bool again = false;
      if (int code = 0; !process(rest, again, code))
        return error.empty() ? code : (fail(error), code);
    }
  }
  double total = std::chrono::duration<double>(Clock::now() - start).count();

  if (!opt.saveDir.empty())
    if (Status st = save(); !st) {
      int code = 0;
      opt.continueAfterSaveError = false; // the last save: nothing comes after it
      saveFailed(trainer.stepCount(), st, code);
      return fail(error), code;
    }
  if (stop) {
    // Preempted: a checkpoint and out, within the scheduler's grace period
    // (no exports: the run is not done; --resume auto goes on from here).
    if (csv.isOpen())
      (void)csv.close();
    (void)tensorboard.close();
    std::string name;
    bool saved = !opt.saveDir.empty() && latestCheckpoint(opt.saveDir, name);
    if (!lead)
      return saved ? 0 : 128 + stopSignal;
    if (!saved) {
      std::fprintf(
          stderr, "lcc-run: stopped by %s after step %lld; nothing saved (no --save DIR)\n",
          run::signalName(stopSignal).c_str(), static_cast<long long>(trainer.stepCount()));
      return 128 + stopSignal;
    }
    std::printf("stopped by %s after step %lld: checkpoint %s/%s; the same command with "
                "--resume auto (or --resume %s) continues\n",
                run::signalName(stopSignal).c_str(), static_cast<long long>(trainer.stepCount()),
                opt.saveDir.c_str(), name.c_str(), opt.saveDir.c_str());
    return 0;
  }
  // Exports hold whole tensors: partitioned ones are gathered (every rank
  // takes part), rank 0 writes.
  SafetensorsFile weights;
  if (!opt.exportPath.empty() || !opt.exportOnnx.empty() || !opt.exportHf.empty() ||
      !opt.exportPeft.empty())
    if (Status st = run::wholeSnapshot(job, trainer, false, meta, weights); !st)
      return fail("lcc-run: error: " + st.message());
  if (!lead)
    return 0;
  if (!opt.exportPath.empty()) {
    Status st = writeSafetensors(opt.exportPath, weights);
    if (!st)
      return fail("lcc-run: error: " + st.message());
  }
  if (!opt.exportPeft.empty())
    if (Status st = writePeftAdapter(opt.exportPeft, manifest, weights.tensors); !st)
      return fail("lcc-run: error: --export-peft: " + st.message());
  if (!opt.exportHf.empty()) {
    std::map<std::string, HostTensor> merged = weights.tensors;
    if (Status st = mergeLora(manifest, merged); !st)
      return fail("lcc-run: error: --merge-lora: " + st.message());
    if (Status st = writeHfModel(opt.exportHf, *hf, merged, opt.exportHfShardBytes); !st)
      return fail("lcc-run: error: --export-hf: " + st.message());
    // The tokenizer of the model it started from goes with it; a
    // SentencePiece --tokenizer, under the name LLaMA-family directories
    // give it (llama.cpp's converter reads it), replaces its tokenizer.model.
    if (!opt.initFrom.empty())
      if (Status st = copyTokenizerFiles(opt.initFrom, opt.exportHf); !st)
        return fail("lcc-run: error: --export-hf: " + st.message());
    std::string tokenizer;
    if (!opt.tokenizer.empty() && !readWholeFile(opt.tokenizer, tokenizer))
      return fail("lcc-run: error: --tokenizer: cannot read " + opt.tokenizer);
    if (!opt.tokenizer.empty())
      if (Status st = writeFileAtomically(opt.exportHf + "/tokenizer.model", tokenizer.data(),
                                          tokenizer.size());
          !st)
        return fail("lcc-run: error: --export-hf: " + st.message());
  }
  if (!opt.exportOnnx.empty()) {
    TrainBin file;
    if (Status st = TrainBin::open(opt.program, file); !st)
      return fail("lcc-run: error: " + st.message());
    TrainBinBytes model = file.find("onnx", "any", -1);
    if (!model.data)
      return fail("lcc-run: error: --export-onnx: " + opt.program +
                  " was not compiled from an ONNX model");
    if (Status st = exportOnnx(model.data, model.size, weights, opt.exportOnnx); !st)
      return fail("lcc-run: error: --export-onnx: " + st.message());
  }
  if (csv.isOpen()) {
    if (Status st = csv.close(); !st)
      return fail("lcc-run: error: " + st.message());
  }
  if (Status st = tensorboard.close(); !st)
    return fail("lcc-run: error: " + st.message());
  if (!opt.plot.empty()) {
    std::vector<MetricsRow> all = rows;
    if (!opt.csv.empty())
      (void)readMetrics(opt.csv, all); // a resumed run plots the whole history, if readable
    PlotSeries train, val;
    lossSeriesFromMetrics(all, train, val);
    if (Status st = writeLossPlot(opt.plot, train, val); !st)
      return fail("lcc-run: error: " + st.message());
  }
  int64_t ran = opt.steps - first + 1;
  if (nonFiniteSteps && lead)
    std::fprintf(stderr, "lcc-run: warning: %lld steps had a non-finite loss or gradient norm\n",
                 static_cast<long long>(nonFiniteSteps));
  std::printf("done: %lld steps in %s (%.0f tokens/s), final loss %.4f", 
              static_cast<long long>(std::max<int64_t>(ran, 0)), duration(total).c_str(),
              ran > 0 ? double(tokensPerStep * ran) / std::max(total, 1e-9) : 0.0, lastLoss);
  if (std::isfinite(lastVal))
    std::printf(", val loss %.4f", lastVal);
  std::printf("\n");
  return 0;
}
