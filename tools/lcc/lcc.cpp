//===- lcc.cpp - the lcc compiler driver ----------------------------------===//
//
//   lcc model.lcc [--emit=mlir] [--compile-to=input|linalg|llvm] [-o OUT]
//   lcc model.lcc --run-forward [--seed=N]
//
// Every user error is one line "lcc: error: ..." or "file:line:col: error: ..."
// and exit code 2; internal failures are bugs and exit 3.
//
//===----------------------------------------------------------------------===//
#include "compiler/cpu/JitExecutor.h"
#include "dialects/lcc/LccDialect.h"
#include "dialects/lcc/LccOps.h"
#include "frontends/dsl/Importer.h"
#include "passes/Pipelines.h"
#include "runtime/HostTensor.h"

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
#include "llvm/Support/Format.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <random>

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory lccCat("lcc options");
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.lcc>"), cl::cat(lccCat));
static cl::opt<std::string> outputFile("o", cl::desc("Output file (default: stdout)"),
                                       cl::value_desc("file"), cl::init("-"), cl::cat(lccCat));
static cl::opt<std::string> emit("emit", cl::desc("What to write: none or mlir"),
                                 cl::init("none"), cl::cat(lccCat));
static cl::opt<std::string> compileTo("compile-to",
                                      cl::desc("Stop after phase: input, linalg or llvm"),
                                      cl::init("input"), cl::cat(lccCat));
static cl::opt<bool> runForward("run-forward",
                                cl::desc("JIT-run @init and @forward on a seeded random batch "
                                         "and print the loss"),
                                cl::cat(lccCat));
static cl::opt<uint64_t> seed("seed", cl::desc("Seed for parameter init and the random batch"),
                              cl::init(1337), cl::cat(lccCat));
static cl::list<std::string> overrides("set",
                                       cl::desc("Override config constants: --set batch=8,seq=64"),
                                       cl::CommaSeparated, cl::cat(lccCat));
static cl::opt<bool> quiet("quiet", cl::desc("Do not print the parameter report"),
                           cl::cat(lccCat));

namespace {
/// A user-facing failure: the message is printed as is, exit code 2.
struct UserError {
  std::string message;
};
} // namespace

static int fail(const std::string &message) {
  llvm::errs() << message << "\n";
  return 2;
}

static std::string withCommas(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

/// One line per parameter and the total, from @forward's `lcc.param` arguments.
static void printParameterReport(func::FuncOp forward, llvm::raw_ostream &os) {
  int64_t total = 0;
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
    os << llvm::left_justify(shape, 16) << " " << llvm::right_justify(withCommas(type.getNumElements()), 13) << "\n";
    total += type.getNumElements();
  }
  os << "  total: " << withCommas(total) << " parameters\n";
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

static int runForwardPass(ModuleOp module, func::FuncOp forward) {
  int64_t vocab = 0;
  if (auto config = module->getAttrOfType<DictionaryAttr>("lcc.config"))
    if (auto v = config.getAs<IntegerAttr>("vocab"))
      vocab = v.getInt();
  if (vocab <= 0)
    return fail("lcc: error: --run-forward needs a positive `vocab` config constant, to draw "
                "random token ids");
  auto jit = lcc::CpuJit::compile(module);
  if (!jit) {
    llvm::errs() << "lcc: internal error: " << llvm::toString(jit.takeError()) << "\n";
    return 3;
  }
  auto params = (*jit)->call("init", {});
  if (!params) {
    llvm::errs() << "lcc: internal error: " << llvm::toString(params.takeError()) << "\n";
    return 3;
  }
  std::vector<lcc::HostTensor> args = std::move(*params);
  for (auto &t : randomBatch(forward, vocab, seed + 1))
    args.push_back(std::move(t));
  auto results = (*jit)->call("forward", args);
  if (!results) {
    llvm::errs() << "lcc: internal error: " << llvm::toString(results.takeError()) << "\n";
    return 3;
  }
  double loss = (*results)[0].getDouble(0);
  llvm::outs() << llvm::format("loss: %.6f  (uniform predictor: ln(%lld) = %.6f)\n", loss,
                               (long long)vocab, std::log(double(vocab)));
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  cl::HideUnrelatedOptions({&lccCat, &cl::getGeneralCategory()});
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

  std::optional<lcc::Phase> phase = llvm::StringSwitch<std::optional<lcc::Phase>>(compileTo)
                                        .Case("input", lcc::Phase::Input)
                                        .Case("linalg", lcc::Phase::Linalg)
                                        .Case("llvm", lcc::Phase::LLVM)
                                        .Default(std::nullopt);
  if (!phase)
    return fail("lcc: error: unknown phase '" + compileTo +
                "' for --compile-to; expected input, linalg or llvm");
  if (emit != "none" && emit != "mlir")
    return fail("lcc: error: unknown --emit=" + emit + "; expected none or mlir");

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
  if (path.ends_with(".onnx"))
    return fail("lcc: error: " + inputFile +
                ": ONNX input is not supported yet (the ONNX frontend is a later issue)");
  auto buffer = llvm::MemoryBuffer::getFile(inputFile);
  if (!buffer)
    return fail("lcc: error: cannot read '" + inputFile + "': " + buffer.getError().message());

  DialectRegistry registry;
  registry.insert<lcc::LccDialect>();
  registerAllDialects(registry);
  registerAllExtensions(registry);
  MLIRContext context(registry);
  context.loadDialect<lcc::LccDialect, func::FuncDialect>();

  // Verifier and pass diagnostics become single "file:line:col: error: ..." lines.
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    if (diag.getSeverity() != DiagnosticSeverity::Error)
      return success();
    std::string where;
    if (auto loc = llvm::dyn_cast<FileLineColLoc>(diag.getLocation()))
      where = (loc.getFilename().str() + ":" + std::to_string(loc.getLine()) + ":" +
               std::to_string(loc.getColumn()) + ": ");
    else
      where = "lcc: ";
    if (diagnostics.empty())
      diagnostics = where + "error: " + diag.str();
    return success();
  });

  auto module = lcc::dsl::importDsl((*buffer)->getBuffer(), inputFile, context, options);
  if (!module)
    return fail(llvm::toString(module.takeError()));
  if (failed(verify(**module)))
    return fail(diagnostics.empty() ? "lcc: error: the imported model does not verify"
                                    : diagnostics);

  auto forward = (**module).lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return fail("lcc: error: " + inputFile + " defines no forward function");
  if (!quiet)
    printParameterReport(forward, llvm::errs());

  if (runForward)
    return runForwardPass(**module, forward);

  PassManager pm(&context);
  if (failed(applyPassManagerCLOptions(pm)))
    return fail("lcc: error: bad pass manager options");
  lcc::buildPipelineUpTo(pm, *phase);
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
