//===- Exports.cpp - what lcc-run writes after training -------------------===//
#include "tools/lcc-run/Exports.h"

#include "runtime/support/AtomicFile.h"
#include "runtime/support/TrainBin.h"
#include "tools/lcc-run/AppendFile.h"
#include "tools/lcc-run/HfModel.h"
#include "tools/lcc-run/OnnxExport.h"
#include "tools/lcc-run/PeftAdapter.h"

namespace lcc::run {

namespace {

Status named(const char *flag, const Status &st) {
  return Status::failure(std::string(flag) + ": " + st.message());
}

/// --export-hf DIR: the (merged) weights, the tokenizer of the model the run
/// started from and, a SentencePiece --tokenizer, under the name LLaMA-family
/// directories give it (llama.cpp's converter reads it), replacing its
/// tokenizer.model.
Status exportHf(const Options &opt, const json::Value &manifest,
                const std::map<std::string, HostTensor> &weights) {
  std::map<std::string, HostTensor> merged = weights;
  if (Status st = mergeLora(manifest, merged); !st)
    return named("--merge-lora", st);
  if (Status st = writeHfModel(opt.exportHf, *manifest.get("hf"), merged, opt.exportHfShardBytes);
      !st)
    return named("--export-hf", st);
  if (!opt.initFrom.empty())
    if (Status st = copyTokenizerFiles(opt.initFrom, opt.exportHf); !st)
      return named("--export-hf", st);
  if (opt.tokenizer.empty())
    return {};
  std::string tokenizer;
  if (!readWholeFile(opt.tokenizer, tokenizer))
    return Status::failure("--tokenizer: cannot read " + opt.tokenizer);
  if (Status st = writeFileAtomically(opt.exportHf + "/tokenizer.model", tokenizer.data(),
                                      tokenizer.size());
      !st)
    return named("--export-hf", st);
  return {};
}

} // namespace

Status writeExports(const Options &opt, const DistributedRun &job, const Trainer &trainer,
                    const std::map<std::string, std::string> &meta, const json::Value &manifest) {
  if (opt.exportPath.empty() && opt.exportOnnx.empty() && opt.exportHf.empty() &&
      opt.exportPeft.empty())
    return {};
  SafetensorsFile weights;
  if (Status st = wholeSnapshot(job, trainer, false, meta, weights); !st)
    return st;
  if (job.rank != 0)
    return {};
  if (!opt.exportPath.empty())
    if (Status st = writeSafetensors(opt.exportPath, weights); !st)
      return st;
  if (!opt.exportPeft.empty())
    if (Status st = writePeftAdapter(opt.exportPeft, manifest, weights.tensors); !st)
      return named("--export-peft", st);
  if (!opt.exportHf.empty())
    if (Status st = exportHf(opt, manifest, weights.tensors); !st)
      return st;
  if (!opt.exportOnnx.empty()) {
    TrainBin file;
    if (Status st = TrainBin::open(opt.program, file); !st)
      return st;
    TrainBinBytes model = file.find("onnx", "any", -1);
    if (!model.data)
      return Status::failure("--export-onnx: " + opt.program +
                             " was not compiled from an ONNX model");
    if (Status st = exportOnnx(model.data, model.size, weights, opt.exportOnnx); !st)
      return named("--export-onnx", st);
  }
  return {};
}

} // namespace lcc::run
