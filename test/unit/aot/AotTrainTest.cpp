//===- AotTrainTest.cpp - train.bin compiled, loaded and trained ----------===//
//
// Oracles:
//  - the JIT path of the autodiff issue (CpuJit calling @train_step, itself
//    checked against PyTorch and a C++ optimizer reference): the AOT code must
//    reproduce its losses on the same batches;
//  - an uninterrupted run: a run resumed from a checkpoint must produce
//    bitwise the same losses;
//  - the previous checkpoint: after kill -9 during a save it must still load.
//
//===----------------------------------------------------------------------===//
#include "compiler/cpu/JitExecutor.h"
#include "dialects/lcc/LccDialect.h"
#include "frontends/dsl/Importer.h"
#include "passes/Pipelines.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/cpu/CpuProgram.h"
#include "tools/lcc-run/Data.h"
#include "runtime/support/TrainBin.h"
#include "test/unit/common/StatusAssert.h"
#include "test/unit/common/TempDir.h"
#include "runtime/train/Trainer.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <cmath>
#include <csignal>
#include <fstream>
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

using namespace mlir;

namespace {

std::string readFile(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const std::string kCorpus = std::string(LCC_SOURCE_DIR) + "/data/kjv-genesis-exodus.txt";

/// gpt-tiny with one layer, batch 2, sequence 16, AdamW lr 1e-3 (nanoGPT's
/// other defaults), compiled by `lcc ... -o` at build time (CMakeLists.txt).
const std::string kTrainBin = LCC_AOT_TEST_BIN;

/// The same model through the DSL and the train-step passes, for the JIT.
struct Compiled {
  MLIRContext context;
  OwningOpRef<ModuleOp> module; // at the train-step phase
};

Compiled &compiled() {
  static Compiled *c = [] {
    auto *c = new Compiled(); // never destroyed: see the CpuJit exit-time note in JitExecutor.h
    c->context.loadDialect<lcc::LccDialect, func::FuncDialect>();
    lcc::dsl::ImportOptions options;
    options.overrides = {{"layers", 1}, {"batch", 2}, {"seq", 16}};
    auto module = lcc::dsl::importDsl(readFile(std::string(LCC_SOURCE_DIR) +
                                               "/examples/gpt-tiny.lcc"),
                                      "gpt-tiny.lcc", c->context, options);
    if (!module) {
      ADD_FAILURE() << llvm::toString(module.takeError());
      return c;
    }
    PassManager pm(&c->context);
    lcc::TrainStepOptions train;
    train.lr = 1e-3;
    lcc::buildPipelineUpTo(pm, lcc::Phase::TrainStep, train);
    if (failed(pm.run(**module))) {
      ADD_FAILURE() << "train-step pipeline failed";
      return c;
    }
    c->module = std::move(*module);
    return c;
  }();
  return *c;
}

struct Session {
  lcc::Program program;
  lcc::Trainer trainer;
  lcc::Dataset data;
  std::unique_ptr<lcc::Sampler> sampler;
  lcc::HostTensor tokens{lcc::ElementType::I32, {2, 16}}, targets{lcc::ElementType::I32, {2, 16}};

  bool open() {
    if (lcc::Status st = lcc::Program::load(kTrainBin, program); !st)
      return ADD_FAILURE() << st.message(), false;
    if (lcc::Status st = lcc::Trainer::create(program, trainer); !st)
      return ADD_FAILURE() << st.message(), false;
    lcc::DatasetOptions d;
    d.trainPath = kCorpus;
    d.vocabSize = 256;
    d.seqLen = 16;
    if (lcc::Status st = lcc::Dataset::open(d, data); !st)
      return ADD_FAILURE() << st.message(), false;
    sampler = std::make_unique<lcc::Sampler>(data.train(), 2, 16, /*seed=*/7);
    return true;
  }
  /// Steps until stepCount() == last; the losses of those steps.
  std::vector<double> trainTo(int64_t last) {
    std::vector<double> losses;
    while (trainer.stepCount() < last) {
      sampler->fill(uint64_t(trainer.stepCount()), tokens.data<int32_t>(),
                    targets.data<int32_t>());
      lcc::StepResult r;
      lcc::Status st = trainer.step({{"tokens", &tokens}, {"targets", &targets}}, r);
      if (!st) {
        ADD_FAILURE() << st.message();
        break;
      }
      losses.push_back(r.loss);
    }
    return losses;
  }
};

TEST(AotTrain, TrainBinManifestDescribesTheModel) {
  lcc::Program program;
  ASSERT_TRUE(bool(lcc::Program::load(kTrainBin, program)));
  const lcc::json::Value &m = program.manifest();
  EXPECT_EQ(m.get("model")->asString(), "gpt_tiny");
  EXPECT_EQ(m.get("config")->get("layers")->asInt(), 1);
  // wte, wpe, 12 per layer, ln_f weight and bias.
  EXPECT_EQ(m.get("params")->size(), 16u);
  EXPECT_EQ(m.get("state")->size(), 32u); // AdamW m and v of each
  const lcc::EntryPoint *step = program.entry("train_step");
  ASSERT_NE(step, nullptr);
  // params, state, step, tokens, targets in; params, state, loss, grad_norm, lr out.
  // ... and its arena (lcc-plan-memory).
  EXPECT_EQ(step->slots.size(), 16u + 32 + 1 + 2 + 16 + 32 + 3 + 1);
  // The best code this CPU runs that the file has (x86-64-v3's by default,
  // also on an AVX-512 machine, whose best target is x86-64-v4).
  std::vector<std::string> mine = lcc::hostCpuTargets();
  EXPECT_NE(std::find(mine.begin(), mine.end(), program.target()), mine.end());
}

// The acceptance check of issue 4: the AOT code's losses over the first 20
// AdamW steps match the JIT path's within 1e-4 on the same batches.
TEST(AotTrain, TwentyStepsMatchTheJit) {
  Session aot;
  ASSERT_TRUE(aot.open());
  ASSERT_TRUE(bool(aot.trainer.init()));
  std::vector<double> aotLosses = aot.trainTo(20);

  auto jit = lcc::CpuJit::compile(*compiled().module);
  ASSERT_TRUE(bool(jit)) << llvm::toString(jit.takeError());
  auto params = (*jit)->call("init", {});
  ASSERT_TRUE(bool(params));
  auto step = compiled().module->lookupSymbol<func::FuncOp>("train_step");
  std::vector<lcc::HostTensor> state;
  for (unsigned i = 0; i < step.getNumArguments(); ++i)
    if (step.getArgAttr(i, "lcc.opt_state")) {
      auto t = llvm::cast<RankedTensorType>(step.getArgument(i).getType());
      state.emplace_back(lcc::ElementType::F32,
                         std::vector<int64_t>(t.getShape().begin(), t.getShape().end()));
    }
  size_t np = params->size(), ns = state.size();
  for (int64_t s = 1; s <= 20; ++s) {
    aot.sampler->fill(uint64_t(s - 1), aot.tokens.data<int32_t>(), aot.targets.data<int32_t>());
    std::vector<lcc::HostTensor> args = *params;
    args.insert(args.end(), state.begin(), state.end());
    args.push_back(lcc::HostTensor::scalar<int64_t>(s));
    args.push_back(aot.tokens);
    args.push_back(aot.targets);
    auto out = (*jit)->call("train_step", args);
    ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
    std::copy(out->begin(), out->begin() + np, params->begin());
    std::copy(out->begin() + np, out->begin() + np + ns, state.begin());
    double jitLoss = (*out)[np + ns].getDouble(0);
    EXPECT_NEAR(aotLosses[size_t(s - 1)], jitLoss, 1e-4 * std::fabs(jitLoss)) << "step " << s;
  }
  // The model learns: the loss falls from ~ln(256).
  EXPECT_LT(aotLosses.back(), aotLosses.front() - 0.5);
}

// Save at step 10, restore into a fresh trainer (another Program instance, as
// a new process would), continue to 20: bitwise the uninterrupted losses.
TEST(AotTrain, ResumeReproducesTheLossesBitwise) {
  Session straight;
  ASSERT_TRUE(straight.open());
  ASSERT_TRUE(bool(straight.trainer.init()));
  std::vector<double> all = straight.trainTo(20);

  Session first;
  ASSERT_TRUE(first.open());
  ASSERT_TRUE(bool(first.trainer.init()));
  first.trainTo(10);
  lcc::test::TempDir tmp("lcc-aot-test");
  std::string dir = tmp.file("ckpt"), used;
  ASSERT_TRUE(lcc::test::isOk(lcc::saveCheckpoint(dir, 10, first.trainer.snapshot(true, {}), 3)));

  Session second;
  ASSERT_TRUE(second.open());
  lcc::SafetensorsFile ckpt;
  ASSERT_TRUE(lcc::test::isOk(lcc::loadCheckpoint(dir, ckpt, used)));
  EXPECT_EQ(used, dir + "/" + lcc::checkpointFileName(10));
  ASSERT_TRUE(bool(second.trainer.restore(ckpt)));
  EXPECT_EQ(second.trainer.stepCount(), 10);
  std::vector<double> rest = second.trainTo(20);
  ASSERT_EQ(rest.size(), 10u);
  for (size_t i = 0; i < 10; ++i)
    EXPECT_EQ(rest[i], all[10 + i]) << "step " << 11 + i; // bitwise
}

// kill -9 while a checkpoint is being written: the directory's latest
// checkpoint still loads and is complete (every tensor, the right step).
TEST(AotTrain, KillDuringSaveLeavesALoadableCheckpoint) {
  Session run;
  ASSERT_TRUE(run.open());
  ASSERT_TRUE(bool(run.trainer.init()));
  run.trainTo(2);
  lcc::SafetensorsFile snap = run.trainer.snapshot(true, {});
  // Large enough that a write takes a while, so kills land mid-write.
  snap.tensors["padding"] = lcc::HostTensor(lcc::ElementType::F32, {4, 1 << 20});
  lcc::test::TempDir tmp("lcc-aot-test");
  std::string dir = tmp.file("ckpt");
  ASSERT_TRUE(lcc::test::isOk(lcc::saveCheckpoint(dir, 1, snap, 2)));
  for (int round = 0; round < 12; ++round) {
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      for (int64_t step = 2 + round * 1000;; ++step)
        (void)lcc::saveCheckpoint(dir, step, snap, 2); // until killed mid-write
    }
    usleep(useconds_t(20000 + 7919 * round % 60000));
    kill(child, SIGKILL);
    int status;
    waitpid(child, &status, 0);
    lcc::SafetensorsFile back;
    std::string used;
    ASSERT_TRUE(lcc::test::isOk(lcc::loadCheckpoint(dir, back, used))) << "round " << round;
    Session fresh;
    ASSERT_TRUE(fresh.open());
    EXPECT_TRUE(bool(fresh.trainer.restore(back))) << used;
    EXPECT_EQ(back.tensors.size(), snap.tensors.size()) << used;
  }
}

// Memory planning: the compiled code allocates nothing itself (its shared
// object does not even import malloc), and what the runtime allocates for a
// step is exactly the plan in the manifest.
TEST(AotTrain, RuntimeAllocatesExactlyThePlan) {
  lcc::TrainBin bin;
  ASSERT_TRUE(bool(lcc::TrainBin::open(kTrainBin, bin)));
  lcc::TrainBinBytes code;
  for (const std::string &target : lcc::hostCpuTargets())
    if (!code.found())
      code = bin.find("code", target, -1);
  ASSERT_TRUE(code.found());
  std::string so(reinterpret_cast<const char *>(code.data), code.size);
  EXPECT_NE(so.find(std::string("\0lcc_sgemm\0", 11)), std::string::npos); // the scan works
  EXPECT_EQ(so.find(std::string("\0malloc\0", 8)), std::string::npos);
  EXPECT_EQ(so.find(std::string("\0free\0", 6)), std::string::npos);

  Session s;
  ASSERT_TRUE(s.open());
  int64_t allocated = s.trainer.stepMemoryBytes();
  int64_t plan = lcc::memoryPlanBytes(s.program.manifest());
  EXPECT_GT(plan, 0);
  EXPECT_EQ(allocated, plan);
  // The step's arena is smaller than the sum of its temporaries would be
  // without reuse; at least it is non-trivial and below the whole plan.
  const lcc::EntryPoint *step = s.program.entry("train_step");
  ASSERT_EQ(step->slots.back().role, lcc::Slot::Workspace);
  EXPECT_GT(step->slots.back().shape[0], 0);
  EXPECT_LT(step->slots.back().shape[0], plan);
}

// A train.bin from another lcc (another manifest version) is refused with
// what to do about it.
TEST(AotTrain, ManifestFromAnotherVersionIsRefused) {
  lcc::TrainBin bin;
  ASSERT_TRUE(bool(lcc::TrainBin::open(kTrainBin, bin)));
  lcc::TrainBinBytes m = bin.find("manifest", "any", -1);
  std::string text(reinterpret_cast<const char *>(m.data), m.size);
  size_t at = text.find("\"version\": 1");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 12, "\"version\": 7");
  lcc::TrainBinWriter w;
  for (const lcc::TrainBinSection &s : bin.sections()) {
    lcc::TrainBinBytes b = bin.bytes(s);
    if (s.name == "manifest")
      ASSERT_TRUE(bool(w.addSection(s.name, s.target, s.rank,
                                    reinterpret_cast<const uint8_t *>(text.data()), text.size())));
    else
      ASSERT_TRUE(bool(w.addSection(s.name, s.target, s.rank, b.data, b.size)));
  }
  lcc::test::TempDir tmp("lcc-aot-test");
  std::string path = tmp.file("v7.bin");
  ASSERT_TRUE(bool(w.write(path)));
  lcc::Program program;
  lcc::Status st = lcc::Program::load(path, program);
  ASSERT_FALSE(st);
  EXPECT_NE(
      st.message().find("manifest version 7, this lcc-run reads version 1; recompile the model "
                        "with this lcc"),
      std::string::npos)
      << st.message();
}

TEST(AotTrain, CorruptOrForeignFilesGiveClearErrors) {
  lcc::Program program;
  lcc::Status st = lcc::Program::load(kCorpus, program);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find(kCorpus), std::string::npos) << st.message();
  // A flipped byte in the code section is caught by its checksum.
  std::string bytes = readFile(kTrainBin);
  bytes[bytes.size() - 100] ^= 0x40;
  lcc::test::TempDir tmp("lcc-aot-test");
  std::string path = tmp.file("bad.bin");
  std::ofstream(path, std::ios::binary) << bytes;
  st = lcc::Program::load(path, program);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("checksum mismatch"), std::string::npos) << st.message();
}

} // namespace
