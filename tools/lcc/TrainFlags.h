//===- TrainFlags.h - lcc's training and distribution flags -----*- C++ -*-===//
#ifndef LCC_TOOLS_LCC_TRAINFLAGS_H
#define LCC_TOOLS_LCC_TRAINFLAGS_H

#include "compiler/package/Package.h"
#include "compiler/package/Planner.h"
#include "passes/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/Support/CommandLine.h"

#include <string>
#include <vector>

namespace lcc::driver {

/// The --help sections of these flags.
extern llvm::cl::OptionCategory trainCat, distCat;

// The flags the driver itself reads (the rest only reach trainStepOptions).
extern llvm::cl::opt<bool> train;
extern llvm::cl::opt<int64_t> accumFlag;
extern llvm::cl::opt<int64_t> trainSteps;
extern llvm::cl::opt<std::string> shardFlag;
extern llvm::cl::opt<int64_t> tpFlag;
extern llvm::cl::opt<int64_t> ppFlag;
extern llvm::cl::opt<std::string> precisionFlag;
extern llvm::cl::opt<std::string> attentionFlag;
extern llvm::cl::opt<std::string> recomputeFlag;
extern llvm::cl::opt<int64_t> overlapFlag;
extern llvm::cl::opt<bool> inlineLayersFlag;

extern llvm::cl::opt<std::string> clusterFlag;
extern llvm::cl::opt<int64_t> globalBatchFlag;
extern llvm::cl::opt<int64_t> planRowsFlag;
/// --shard=auto (set by checkTrainFlags): the planner picks the distribution.
extern bool autoShard;

/// --frozen, --no-decay, --decay-only (ParamFlags.cpp): marks @forward's
/// parameter arguments; an error message, or empty.
std::string applyParameterFlags(mlir::func::FuncOp forward);

/// The manifest's Hugging Face mapping into `out` when the module names an
/// architecture, or an ONNX model --hf-config describes (HfMapping.cpp); an
/// error message, or empty.
std::string mapToHuggingFace(mlir::ModuleOp module, mlir::func::FuncOp forward, bool isOnnx,
                             json::Value &out);

/// --lora into `o`'s lora fields (ParamFlags.cpp); an error message, or empty.
std::string parseLora(TrainStepOptions &o);

/// --seed (lcc.cpp sets it once the flags are parsed): the parameters'
/// initial values, LoRA's A among them.
extern uint64_t initSeed;

/// --mem in bytes (0: none), set by checkTrainFlags.
extern int64_t memBudget;

/// The world sizes to compile for (--world), set by checkTrainFlags.
extern std::vector<int64_t> worlds;

/// The modes the flags name, set by checkTrainFlags (their one parse).
struct Modes {
  ShardMode shard = ShardMode::None;
  Precision precision = Precision::FP32;
  AttentionMode attention = AttentionMode::Auto;
  RecomputeMode recompute = RecomputeMode::None;
};
extern Modes modes;

/// Validates the training flags (they are user input: the driver exits 2) and
/// parses --world; the error message without "lcc: error: ", or empty.
/// `onePhase`: the output is one printed step (--compile-to, --emit=mlir).
std::string checkTrainFlags(bool onePhase);

/// lcc-build-train-step's options and the distribution, from the flags.
TrainStepOptions trainStepOptions();

/// --recompute=auto for the step `t` of `module` (one world and stage,
/// `where` names it in messages, or empty): the cheapest recomputation
/// whose compiled plan fits --mem (compiler/package/RecomputeChoice.h),
/// each candidate built by `compile` on a copy of `module`. Sets
/// t.recompute and t.recomputeLayers, `chosen` to the package compiled for
/// them (so it is not compiled again), and prints the choice; the error
/// message (without "lcc: error: ") when none fits, else empty.
std::string chooseRecompute(
    mlir::ModuleOp module, TrainStepOptions &t, const std::string &where,
    llvm::function_ref<llvm::Expected<Package>(mlir::ModuleOp, const TrainStepOptions &)> compile,
    std::optional<Package> &chosen);

/// --shard=auto: the choices the flags fix (--tp, --pp, --recompute,
/// --sequence-parallel, --pp-schedule), the world and --mem.
planner::Problem plannerChoices();
/// Sets the flags to `plan`'s choices and checks them again; an error
/// message or empty.
std::string applyPlan(const planner::Plan &plan);

/// The integer config constant `name` of a model (module attribute
/// lcc.config), or 0 when it has none.
int64_t configConstant(mlir::ModuleOp module, llvm::StringRef name);

/// The model imported with config overrides (the DSL).
using ImportAt = llvm::function_ref<llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>(
    const std::map<std::string, int64_t> &)>;

/// @prefill and @decode_step for lcc-run --generate (Generation.cpp), made
/// from the model `importAt` gives at batch 1 (with `overrides` otherwise)
/// and added to `module`, unless the model or mode cannot have them (an
/// error if --context asked for them). The error message, or empty.
std::string addGenerationEntries(mlir::ModuleOp module, bool isOnnx, const ImportAt &importAt,
                                 std::map<std::string, int64_t> overrides);

/// --shard=auto: plans the model `import` makes (with config overrides:
/// `layers` for the probes, `batch` for the micro-batch), prints the ranked
/// table and the planning time, applies the best plan to the flags and its
/// micro-batch to `overrides`; with `verify` (-o), the plan chosen is the
/// best whose compiled memory plan fits. The error message (without "lcc: error: ")
/// or empty.
std::string planShardAuto(AotOptions aot, std::map<std::string, int64_t> &overrides, bool verify,
                          ImportAt import);

} // namespace lcc::driver

#endif // LCC_TOOLS_LCC_TRAINFLAGS_H
