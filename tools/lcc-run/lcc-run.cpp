//===- lcc-run.cpp - the training loop over a train.bin -------------------===//
//
// One run: loads the compiled program (runtime/CpuProgram) and the device it
// was compiled for, joins the job (Distributed.h; with -n it starts the local
// ranks instead, Launcher.h), starts from a checkpoint, Hugging Face weights
// or the program's init, maps the token data (Data.h), then trains
// (TrainLoop.h) and writes the exports (Exports.h), or generates text
// (Generate.h).
//
// Exit codes: 0 success, 2 user error (bad flags, data, files), 3 internal,
// 4 distributed failure (docs/distributed.md); 128 + signal when preempted
// with nothing saved.
//
//===----------------------------------------------------------------------===//
#include "tools/lcc-run/Distributed.h"
#include "tools/lcc-run/Exports.h"
#include "tools/lcc-run/Launcher.h"
#include "tools/lcc-run/Options.h"
#include "tools/lcc-run/Preemption.h"
#include "tools/lcc-run/TrainLoop.h"

#include "runtime/cpu/CpuKernels.h"
#include "runtime/cpu/CpuProgram.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/CudaSession.h"
#include "runtime/cuda/EmulatedGpu.h"
#include "runtime/dist/Communicator.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/Trainer.h"
#include "tools/lcc-run/Data.h"
#include "tools/lcc-run/Generate.h"
#include "tools/lcc-run/HfModel.h"
#include "tools/lcc-run/Metrics.h"
#include "tools/lcc-run/PeftAdapter.h"
#include "tools/lcc-run/Plot.h"
#include "tools/lcc-run/TensorBoard.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sys/stat.h>
#include <unistd.h>

using namespace lcc;
using run::fail;

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

  run::Feed stepFeed, evalFeed;
  if (Status st = run::makeFeed(trainer.stepInputs(), /*micro=*/true, stepFeed); !st)
    return fail("lcc-run: error: " + opt.program + ": " + st.message());
  if (Status st = run::makeFeed(trainer.forwardInputs(), /*micro=*/false, evalFeed); !st)
    return fail("lcc-run: error: " + opt.program + ": " + st.message());
  // Data-parallel ranks train on different rows; tensor-parallel ranks of
  // one data-parallel rank share its rows.
  if (auto dp = job.groupRanks.find("dp"); dp != job.groupRanks.end())
    for (run::Feed *f : {&stepFeed, &evalFeed}) {
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
                "', expected auto, u16, u32 or bytes");
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
  run::LoopSetup setup;
  setup.stepFeed = &stepFeed;
  setup.evalFeed = &evalFeed;
  setup.train = &trainSampler;
  setup.val = valSampler ? &*valSampler : nullptr;
  setup.evalBatches = evalBatches;
  setup.csv = &csv;
  setup.tensorboard = &tensorboard;
  setup.lead = lead;
  setup.meta = {{"lcc.data_seed", std::to_string(seed)}, {"lcc.data_order", sampleModeName(order)}};
  if (const json::Value *m = manifest.get("model"); m && m->isString())
    setup.meta["lcc.model"] = m->asString();

  if (!opt.quiet)
    std::printf(
        "training %s: steps %lld..%lld, %lld tokens/step, code %s, %s%s\n", opt.program.c_str(),
        static_cast<long long>(trainer.stepCount() + 1), static_cast<long long>(opt.steps),
        static_cast<long long>(stepFeed.tokensPerStep()), program.target().c_str(),
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
  run::LoopResult result;
  if (int code = run::trainSteps(opt, trainer, job, setup, result))
    return code;
  if (result.stopSignal) {
    // Preempted: a checkpoint and out, within the scheduler's grace period
    // (no exports: the run is not done; --resume auto goes on from here).
    if (csv.isOpen())
      (void)csv.close();
    (void)tensorboard.close();
    std::string name;
    bool saved = !opt.saveDir.empty() && latestCheckpoint(opt.saveDir, name);
    if (!lead)
      return saved ? 0 : 128 + result.stopSignal;
    if (!saved) {
      std::fprintf(
          stderr, "lcc-run: stopped by %s after step %lld; nothing saved (no --save DIR)\n",
          run::signalName(result.stopSignal).c_str(), static_cast<long long>(trainer.stepCount()));
      return 128 + result.stopSignal;
    }
    std::printf("stopped by %s after step %lld: checkpoint %s/%s; the same command with "
                "--resume auto (or --resume %s) continues\n",
                run::signalName(result.stopSignal).c_str(),
                static_cast<long long>(trainer.stepCount()), opt.saveDir.c_str(), name.c_str(),
                opt.saveDir.c_str());
    return 0;
  }
  if (Status st = run::writeExports(opt, job, trainer, setup.meta, manifest); !st)
    return fail("lcc-run: error: " + st.message());
  if (!lead)
    return 0;
  if (csv.isOpen()) {
    if (Status st = csv.close(); !st)
      return fail("lcc-run: error: " + st.message());
  }
  if (Status st = tensorboard.close(); !st)
    return fail("lcc-run: error: " + st.message());
  if (!opt.plot.empty()) {
    std::vector<MetricsRow> all = result.rows;
    if (!opt.csv.empty())
      (void)readMetrics(opt.csv, all); // a resumed run plots the whole history, if readable
    PlotSeries train, val;
    lossSeriesFromMetrics(all, train, val);
    if (Status st = writeLossPlot(opt.plot, train, val); !st)
      return fail("lcc-run: error: " + st.message());
  }
  int64_t ran = opt.steps - result.first + 1;
  if (result.nonFiniteSteps)
    std::fprintf(stderr, "lcc-run: warning: %lld steps had a non-finite loss or gradient norm\n",
                 static_cast<long long>(result.nonFiniteSteps));
  std::printf("done: %lld steps in %s (%.0f tokens/s), final loss %.4f",
              static_cast<long long>(std::max<int64_t>(ran, 0)),
              run::formatDuration(result.seconds).c_str(),
              ran > 0 ? double(stepFeed.tokensPerStep() * ran) / std::max(result.seconds, 1e-9)
                      : 0.0,
              result.lastLoss);
  if (std::isfinite(result.lastVal))
    std::printf(", val loss %.4f", result.lastVal);
  std::printf("\n");
  return 0;
}
