//===- Options.h - lcc-run's command line ----------------------*- C++ -*-===//
#ifndef LCC_TOOLS_LCC_RUN_OPTIONS_H
#define LCC_TOOLS_LCC_RUN_OPTIONS_H

#include "tools/lcc-run/Data.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lcc::run {

/// What a non-finite loss or gradient norm does (--on-nan; fp16's skipped
/// overflow steps are loss scaling's business, not this).
enum class NanPolicy {
  Stop,     // an error naming the step, exit 2, nothing saved after it (default)
  Skip,     // the update is undone (parameters and state as before the step),
            // the step counts (data, learning rate), training goes on
  Continue, // reported, and training goes on with what the step wrote
};

struct Options {
  std::string program;      // train.bin
  std::string data, val;    // token files
  std::string format = "auto";
  double valFraction = 0.1;
  int64_t steps = 300;
  int64_t threads = 0;          // 0: runtime/cpu/Parallel.h's default
  std::optional<uint64_t> seed; // data sampling; default 1337 (or the checkpoint's)
  std::optional<SampleMode> order; // --order; default random (or the checkpoint's)
  int64_t logEvery = 10;
  int64_t evalEvery = 0;    // 0: only at the end when there is validation data
  int64_t evalBatches = 10;
  std::string csv, plot;
  std::string tensorboard; // event files' directory
  std::string saveDir;
  int64_t saveEvery = 0;    // 0: only at the end when --save is given
  int64_t keep = 3;         // checkpoints kept in --save
  std::string resume;       // a checkpoint directory or file; "auto": --save's
                            // latest checkpoint when there is one, else a fresh start
  NanPolicy onNan = NanPolicy::Stop;
  bool continueAfterSaveError = false; // --on-save-error=continue (default stop)
  // Signals that make the run stop cleanly after the step in flight, with a
  // checkpoint (preemption: SLURM, Kubernetes); empty with --preempt-signals=none.
  std::vector<int> preemptSignals;
  std::string exportPath;   // trained weights as safetensors
  std::string exportOnnx;   // trained weights in a copy of the original ONNX model
  std::string initFrom;     // a Hugging Face model directory to start from
  std::string exportHf;     // trained weights as a Hugging Face model directory
  std::string exportPeft;   // LoRA adapters as a PEFT directory
  std::string initAdapter;  // LoRA adapters to start from (a PEFT directory)
  bool mergeLora = false;   // --export-hf folds the adapters into the base weights
  int64_t exportHfShardBytes = 5000000000; // transformers' default max_shard_size, 5GB
  // Text generation (--generate; runtime/train/Generator.h) instead of training.
  bool generate = false;
  std::optional<std::string> prompt;
  std::string tokenizer; // a SentencePiece model: text in and out for a token-id model
  int64_t maxTokens = 64;
  double temperature = 0.8; // 0: greedy
  int64_t topK = 40;        // 0: no cut
  double topP = 0.95;       // 1: no nucleus cut
  bool quiet = false;
  bool noGraph = false;     // CUDA: run every step eagerly (no graph capture)
  // Distributed runs (docs/distributed.md).
  int64_t ranks = 0;        // -n N: start N local ranks (0: one process, or the
                            // rank an external launcher describes in the environment)
  std::string logDir;       // per-rank logs of -n runs
  std::string backend; // "": gloo for a CPU train.bin, nccl for a CUDA one
  double timeout = 0;       // seconds a collective may wait for a peer; 0: not
                            // given ($LCC_DIST_TIMEOUT, else 300)
};

/// Parses argv; on a user error returns false with a one-line message (or
/// the usage text for --help, with `help` set).
bool parseOptions(int argc, char **argv, Options &out, std::string &message, bool &help);

} // namespace lcc::run

#endif
