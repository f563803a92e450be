//===- Options.cpp - lcc-run's command line -------------------------------===//
//
// Hand-written (no LLVM cl) so the runtime tool links nothing of the compiler.
// Flags take `--name value` or `--name=value`.
//
//===----------------------------------------------------------------------===//
#include "Options.h"
#include "Preemption.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <map>

namespace lcc::run {

static const char *kUsage =
    R"(usage: lcc-run TRAIN.BIN --data FILE [options]
       lcc-run TRAIN.BIN --resume CKPT --generate --prompt TEXT [options]

Trains the model compiled into TRAIN.BIN (lcc MODEL -o TRAIN.BIN), or generates
text with it.

data:
  --data FILE          training tokens: .txt/other = bytes, .bin/.u16 = uint16,
                       .u32 = uint32, llm.c .bin headers are detected
  --val FILE           validation tokens (default: the last --val-fraction of --data)
  --val-fraction F     held-out fraction of --data when no --val (default 0.1)
  --format F           auto, u16, u32 or bytes (default auto)
  --seed N             batch sampling seed (default 1337, or the checkpoint's)
  --order O            random (default, or the checkpoint's: each row a random
                       window, as nanoGPT) or sequential (row r of batch k is
                       window k*batch+r, windows at 0, seq, 2*seq, ... (the last
                       one aligned to the end), wrapping: to replay another
                       framework's run)
run:
  --steps N            optimizer steps to reach (default 300)
  --threads N          CPU threads (default $LCC_NUM_THREADS, else every CPU this
                       process may use); a run is bitwise reproducible per count
  --log-every N        progress line every N steps (default 10)
  --eval-every N       validation loss every N steps (default: at the end)
  --eval-batches N     batches per evaluation (default 10)
  --csv FILE           metrics CSV (step, loss, lr, grad norm, tokens/s, val loss)
  --plot FILE.png      loss curve at the end
  --tensorboard DIR    the same metrics (and the fp16 loss scale) as TensorBoard event
                       files in DIR (tensorboard --logdir DIR)
  --on-nan P           a non-finite loss or gradient norm: stop (default: error naming
                       the step, exit 2), skip (undo that update, go on) or continue
  --preempt-signals S  signals that stop the run after the step in flight with a
                       checkpoint in --save, exit 0 (default TERM,USR1; `none`: the
                       signals' default actions); every rank stops at the same step
checkpoints:
  --save DIR           write checkpoints into DIR (at the end, and every --save-every)
  --save-every N       checkpoint every N steps
  --keep N             checkpoints kept in DIR (default 3)
  --resume PATH        continue from a checkpoint (DIR: its latest one); `auto`: from
                       --save DIR's latest checkpoint if it has one, else start fresh
                       (a requeued job keeps its command line)
  --on-save-error E    stop (default: exit 2, the previous checkpoint intact) or
                       continue (warn, train on, try again at the next save) when a
                       checkpoint cannot be written (full disk, read-only, removed)
  --init-from DIR      start from a Hugging Face model directory (config.json and
                       safetensors weights, as save_pretrained writes them; docs/hf.md)
  --export FILE        trained weights as safetensors, named as the model's parameters
  --export-onnx FILE   (models compiled from .onnx) the original model with the trained
                       weights, for ONNX Runtime and other engines
  --export-hf DIR      trained weights as a Hugging Face model directory, for
                       transformers, vLLM and llama.cpp's converter
  --export-hf-shard-size BYTES
                       largest weight file of --export-hf before it shards (default 5e9)
  --merge-lora         (lcc --lora train.bins) --export-hf folds the adapters into the
                       base weights
  --export-peft DIR    (lcc --lora) the adapters as PEFT saves them
  --init-adapter DIR   (lcc --lora) start the adapters from a PEFT directory
  --quiet              only errors and the final summary
generation (instead of training; from --resume, --init-from or fresh weights):
  --generate           print a continuation of --prompt, then prefill and decode tokens/s
  --prompt TEXT        the text to continue (a byte-level model, vocab 256: its bytes;
                       with --tokenizer: its pieces; otherwise token ids separated by spaces)
  --tokenizer FILE     a SentencePiece model (tokenizer.model) for a model of token ids;
                       --export-hf copies it into the directory
  --max-tokens N       tokens to generate (default 64; fewer when the context fills)
  --temperature T      sampling temperature (default 0.8; 0: greedy, the likeliest token)
  --top-k K            sample among the K likeliest tokens (default 40; 0: all)
  --top-p P            then among the fewest whose probabilities sum to P (default 0.95)
  --seed N             the sampling seed (default 1337): the same seed, the same text
gpu (the train.bin compiled with lcc --target=cuda):
  --no-graph           run each step eagerly instead of replaying it as one CUDA
                       graph (for debugging; slower)
distributed (the train.bin compiled with lcc --shard=MODE --world=N):
  -n N, --nproc N      start N ranks on this machine (RANK, WORLD_SIZE, MASTER_ADDR,
                       MASTER_PORT set as torchrun does); without -n, lcc-run is the
                       one rank those variables (or SLURM/Open MPI's) describe
  --backend B          gloo (host buffers) or nccl (GPU buffers); default: the one
                       the train.bin's target needs
  --timeout S          seconds a rank waits for the others before failing (default
                       $LCC_DIST_TIMEOUT, else 300)
  --log-dir DIR        each rank's output in DIR/rank-<r>.log (default: only rank 0's
                       progress and every rank's errors are shown)
)";

bool parseOptions(int argc, char **argv, Options &o, std::string &message, bool &help) {
  help = false;
  o.preemptSignals = {SIGTERM, SIGUSR1};
  auto toInt = [&](const std::string &flag, const std::string &v, int64_t &out, int64_t min) {
    char *end = nullptr;
    errno = 0;
    long long x = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end || errno || x < min) {
      message = "lcc-run: error: " + flag + " expects an integer >= " + std::to_string(min) +
                ", got '" + v + "'";
      return false;
    }
    out = x;
    return true;
  };
  // A number `accept` takes (also false for NaN), else "expects <what>".
  auto toReal = [&](const std::string &flag, const std::string &v, double &out,
                    bool (*accept)(double), const char *what) {
    char *end = nullptr;
    out = std::strtod(v.c_str(), &end);
    if (v.empty() || *end || !accept(out)) {
      message = "lcc-run: error: " + flag + " expects " + what + ", got '" + v + "'";
      return false;
    }
    return true;
  };
  using Setter = std::function<bool(const std::string &, const std::string &)>;
  std::map<std::string, Setter> valued = {
      {"--data",
       [&](auto &, auto &v) {
         o.data = v;
         return true;
       }},
      {"--val",
       [&](auto &, auto &v) {
         o.val = v;
         return true;
       }},
      {"--val-fraction",
       [&](auto &f, auto &v) {
         return toReal(
             f, v, o.valFraction, [](double x) { return x >= 0 && x < 1; }, "a number in [0, 1)");
       }},
      {"--format",
       [&](auto &, auto &v) {
         o.format = v;
         return true;
       }},
      {"--seed",
       [&](auto &f, auto &v) {
         int64_t s;
         if (!toInt(f, v, s, 0))
           return false;
         o.seed = uint64_t(s);
         return true;
       }},
      {"--order",
       [&](auto &f, auto &v) {
         SampleMode mode;
         if (!parseSampleMode(v, mode)) {
           message = "lcc-run: error: " + f + " expects random or sequential, got '" + v + "'";
           return false;
         }
         o.order = mode;
         return true;
       }},
      {"--steps", [&](auto &f, auto &v) { return toInt(f, v, o.steps, 0); }},
      {"--threads", [&](auto &f, auto &v) { return toInt(f, v, o.threads, 1); }},
      {"--log-every", [&](auto &f, auto &v) { return toInt(f, v, o.logEvery, 1); }},
      {"--eval-every", [&](auto &f, auto &v) { return toInt(f, v, o.evalEvery, 0); }},
      {"--eval-batches", [&](auto &f, auto &v) { return toInt(f, v, o.evalBatches, 1); }},
      {"--csv",
       [&](auto &, auto &v) {
         o.csv = v;
         return true;
       }},
      {"--plot",
       [&](auto &, auto &v) {
         o.plot = v;
         return true;
       }},
      {"--tensorboard",
       [&](auto &, auto &v) {
         o.tensorboard = v;
         return true;
       }},
      {"--save",
       [&](auto &, auto &v) {
         o.saveDir = v;
         return true;
       }},
      {"--save-every", [&](auto &f, auto &v) { return toInt(f, v, o.saveEvery, 0); }},
      {"--keep", [&](auto &f, auto &v) { return toInt(f, v, o.keep, 1); }},
      {"--resume",
       [&](auto &, auto &v) {
         o.resume = v;
         return true;
       }},
      {"--export",
       [&](auto &, auto &v) {
         o.exportPath = v;
         return true;
       }},
      {"--export-onnx",
       [&](auto &, auto &v) {
         o.exportOnnx = v;
         return true;
       }},
      {"--init-from",
       [&](auto &, auto &v) {
         o.initFrom = v;
         return true;
       }},
      {"--init-adapter",
       [&](auto &, auto &v) {
         o.initAdapter = v;
         return true;
       }},
      {"--export-peft",
       [&](auto &, auto &v) {
         o.exportPeft = v;
         return true;
       }},
      {"--export-hf",
       [&](auto &, auto &v) {
         o.exportHf = v;
         return true;
       }},
      {"--export-hf-shard-size",
       [&](auto &f, auto &v) { return toInt(f, v, o.exportHfShardBytes, 1); }},
      {"--nproc", [&](auto &f, auto &v) { return toInt(f, v, o.ranks, 1); }},
      {"--prompt",
       [&](auto &, auto &v) {
         o.prompt = v;
         return true;
       }},
      {"--tokenizer",
       [&](auto &, auto &v) {
         o.tokenizer = v;
         return true;
       }},
      {"--max-tokens", [&](auto &f, auto &v) { return toInt(f, v, o.maxTokens, 0); }},
      {"--top-k", [&](auto &f, auto &v) { return toInt(f, v, o.topK, 0); }},
      {"--temperature",
       [&](auto &f, auto &v) {
         return toReal(
             f, v, o.temperature, [](double x) { return x >= 0 && x < 1e6; }, "a number >= 0");
       }},
      {"--top-p",
       [&](auto &f, auto &v) {
         return toReal(
             f, v, o.topP, [](double x) { return x > 0 && x <= 1; }, "a number in (0, 1]");
       }},
      {"--log-dir",
       [&](auto &, auto &v) {
         o.logDir = v;
         return true;
       }},
      {"--backend",
       [&](auto &f, auto &v) {
         if (v != "gloo" && v != "nccl") {
           message = "lcc-run: error: " + f + " expects gloo or nccl, got '" + v + "'";
           return false;
         }
         o.backend = v;
         return true;
       }},
      {"--on-nan",
       [&](auto &f, auto &v) {
         static const std::map<std::string, NanPolicy> kPolicies = {
             {"stop", NanPolicy::Stop},
             {"skip", NanPolicy::Skip},
             {"continue", NanPolicy::Continue}};
         auto it = kPolicies.find(v);
         if (it == kPolicies.end()) {
           message = "lcc-run: error: " + f + " expects stop, skip or continue, got '" + v + "'";
           return false;
         }
         o.onNan = it->second;
         return true;
       }},
      {"--on-save-error",
       [&](auto &f, auto &v) {
         if (v != "stop" && v != "continue") {
           message = "lcc-run: error: " + f + " expects stop or continue, got '" + v + "'";
           return false;
         }
         o.continueAfterSaveError = v == "continue";
         return true;
       }},
      {"--preempt-signals",
       [&](auto &f, auto &v) {
         o.preemptSignals.clear();
         if (v == "none")
           return true;
         for (size_t at = 0; at <= v.size();) {
           size_t comma = std::min(v.find(',', at), v.size());
           std::string name = v.substr(at, comma - at);
           if (name.rfind("SIG", 0) == 0)
             name = name.substr(3);
           const auto &known = preemptionSignalNames();
           auto it = std::find_if(known.begin(), known.end(),
                                  [&](const auto &k) { return k.second == name; });
           if (it == known.end()) {
             message = "lcc-run: error: " + f + " expects `none` or signal names among TERM, " +
                       "USR1, USR2, INT, HUP, XCPU separated by commas, got '" + v + "'";
             return false;
           }
           o.preemptSignals.push_back(it->first);
           at = comma + 1;
         }
         return true;
       }},
      {"--timeout",
       [&](auto &f, auto &v) {
         return toReal(
             f, v, o.timeout, [](double x) { return x > 0 && x < 1e7; }, "seconds > 0");
       }},
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-n")
      arg = "--nproc";
    else if (arg.rfind("-n=", 0) == 0)
      arg = "--nproc=" + arg.substr(3);
    if (arg == "-h" || arg == "--help") {
      help = true;
      message = kUsage;
      return false;
    }
    if (arg == "--quiet") {
      o.quiet = true;
      continue;
    }
    if (arg == "--merge-lora") {
      o.mergeLora = true;
      continue;
    }
    if (arg == "--generate") {
      o.generate = true;
      continue;
    }
    if (arg == "--no-graph") {
      o.noGraph = true;
      continue;
    }
    if (arg.rfind("--", 0) == 0) {
      std::string flag = arg, value;
      bool inline_ = false;
      if (size_t eq = arg.find('='); eq != std::string::npos) {
        flag = arg.substr(0, eq);
        value = arg.substr(eq + 1);
        inline_ = true;
      }
      auto it = valued.find(flag);
      if (it == valued.end()) {
        message = "lcc-run: error: unknown option '" + flag + "' (see lcc-run --help)";
        return false;
      }
      if (!inline_) {
        if (i + 1 >= argc) {
          message = "lcc-run: error: " + flag + " needs a value";
          return false;
        }
        value = argv[++i];
      }
      if (!it->second(flag, value))
        return false;
      continue;
    }
    if (!o.program.empty()) {
      message = "lcc-run: error: more than one train.bin given ('" + o.program + "' and '" +
                arg + "')";
      return false;
    }
    o.program = arg;
  }
  if (o.program.empty()) {
    message = "lcc-run: error: no train.bin given\n" + std::string(kUsage);
    return false;
  }
  if ((!o.initFrom.empty() || !o.initAdapter.empty()) && !o.resume.empty()) {
    message = "lcc-run: error: --init-from and --resume both say where to start; give one";
    return false;
  }
  if (o.resume == "auto" && o.saveDir.empty()) {
    message = "lcc-run: error: --resume auto continues from --save DIR's latest checkpoint; "
              "give --save DIR";
    return false;
  }
  if (o.resume == "auto" && o.generate) {
    message = "lcc-run: error: --generate needs a checkpoint to --resume from, not auto";
    return false;
  }
  if (o.generate != o.prompt.has_value()) {
    message = o.generate ? "lcc-run: error: --generate needs --prompt TEXT"
                         : "lcc-run: error: --prompt applies to --generate";
    return false;
  }
  if (!o.tokenizer.empty() && !o.generate && o.exportHf.empty()) {
    message = "lcc-run: error: --tokenizer applies to --generate and --export-hf";
    return false;
  }
  if (o.generate && o.ranks > 0) {
    message = "lcc-run: error: --generate runs in one process (no -n)";
    return false;
  }
  if (o.data.empty() && !o.generate) {
    message = "lcc-run: error: no training data, give --data FILE (for example "
              "data/kjv-genesis-exodus.txt)";
    return false;
  }
  return true;
}

} // namespace lcc::run
