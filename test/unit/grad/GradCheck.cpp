//===- GradCheck.cpp - fp64 finite-difference gradient checks -------------===//
#include "GradCheck.h"

#include "compiler/cpu/JitExecutor.h"
#include "dialects/lcc/LccDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <regex>
#include <sstream>

using namespace mlir;

namespace lcc::gradcheck {

namespace {

MLIRContext &context() {
  static MLIRContext *ctx = [] {
    auto *c = new MLIRContext();
    // Tiny modules: threads only cost time on the shared build machine.
    c->disableMultithreading();
    DialectRegistry registry;
    registry.insert<LccDialect>();
    // Tests may put upstream ops on the differentiated path (to see them rejected).
    registerAllDialects(registry);
    c->appendDialectRegistry(registry);
    return c;
  }();
  return *ctx;
}

/// Collects diagnostics as text while alive (they become the report's error).
struct DiagCapture {
  std::string text;
  llvm::raw_string_ostream os{text};
  ScopedDiagnosticHandler handler;
  explicit DiagCapture(MLIRContext &ctx)
      : handler(&ctx, [this](Diagnostic &d) {
          os << d.getLocation() << ": " << d.str() << "\n";
          return success();
        }) {}
};

std::optional<ElementType> hostElementType(Type t) {
  Type e = getElementTypeOrSelf(t);
  if (e.isF64())
    return ElementType::F64;
  if (e.isF32())
    return ElementType::F32;
  if (e.isInteger(1))
    return ElementType::I1;
  if (e.isInteger(32))
    return ElementType::I32;
  if (e.isInteger(64))
    return ElementType::I64;
  return std::nullopt;
}

std::string argName(func::FuncOp fn, unsigned i) {
  for (const char *key : {"lcc.param", "lcc.input"})
    if (auto s = fn.getArgAttrOfType<StringAttr>(i, key))
      return s.str();
  return "arg" + std::to_string(i);
}

std::string moduleText(ModuleOp m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os);
  return s;
}

/// Generates (or takes from options.inputs) one value per argument of `fn`.
std::optional<std::vector<HostTensor>> makeInputs(func::FuncOp fn, const GradCheckOptions &o,
                                                  std::string &error) {
  std::mt19937_64 rng(o.seed);
  std::vector<HostTensor> values;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    std::string name = argName(fn, i);
    auto type = llvm::dyn_cast<RankedTensorType>(fn.getArgument(i).getType());
    auto elem = type ? hostElementType(type) : std::nullopt;
    if (!type || !elem || !type.hasStaticShape()) {
      error = "argument '" + name + "' has no host tensor equivalent";
      return std::nullopt;
    }
    std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
    if (auto it = o.inputs.find(name); it != o.inputs.end()) {
      if (it->second.elementType() != *elem || it->second.shape() != shape) {
        error = "explicit input '" + name + "' is " + it->second.typeString() + ", expected " +
                HostTensor(*elem, shape).typeString();
        return std::nullopt;
      }
      values.push_back(it->second);
      continue;
    }
    if (isFloatType(*elem)) {
      double lo = o.lo, hi = o.hi;
      if (auto r = o.ranges.find(name); r != o.ranges.end())
        std::tie(lo, hi) = r->second;
      if (name == "__w")
        lo = -1.0, hi = 1.0; // the loss weights, see the header
      std::uniform_real_distribution<double> dist(lo, hi);
      values.push_back(HostTensor::generate(*elem, shape, [&](int64_t) {
        double v = dist(rng);
        for (int tries = 0; name != "__w" && std::fabs(v) < o.minAbs && tries < 1000; ++tries)
          v = dist(rng);
        return v;
      }));
    } else {
      int64_t lo = *elem == ElementType::I1 ? 0 : o.intLo;
      int64_t hi = *elem == ElementType::I1 ? 2 : o.intHi;
      std::uniform_int_distribution<int64_t> dist(lo, hi - 1);
      values.push_back(
          HostTensor::generate(*elem, shape, [&](int64_t) { return double(dist(rng)); }));
    }
  }
  return values;
}

/// The checks of the whole harness, on a parsed module (modified in place).
GradCheckReport checkModule(ModuleOp module, const std::string &function,
                            const GradCheckOptions &o) {
  GradCheckReport report;
  auto fail = [&](std::string why) {
    report.ok = false;
    report.error = std::move(why) + "\n--- module ---\n" + moduleText(module);
    return report;
  };
  auto fn = module.lookupSymbol<func::FuncOp>(function);
  if (!fn)
    return fail("no function @" + function);

  std::vector<unsigned> trainable;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (fn.getArgAttr(i, "lcc.param") && !fn.getArgAttr(i, "lcc.frozen"))
      trainable.push_back(i);

  std::string error;
  auto inputs = makeInputs(fn, o, error);
  if (!inputs)
    return fail(error);

  {
    DiagCapture diags(context());
    PassManager pm(&context());
    LccAutodiffPassOptions passOptions;
    passOptions.function = function;
    pm.addPass(createLccAutodiffPass(passOptions));
    if (failed(pm.run(module)))
      return fail("lcc-autodiff failed:\n" + diags.text);
  }
  if (o.afterAutodiff)
    o.afterAutodiff(module);

  // The contract of @F_grad (passes/train/Autodiff.cpp).
  std::string gradName = function + "_grad";
  auto gradFn = module.lookupSymbol<func::FuncOp>(gradName);
  if (!gradFn)
    return fail("lcc-autodiff built no @" + gradName);
  if (gradFn.getNumResults() != trainable.size() + 1)
    return fail("@" + gradName + " has " + std::to_string(gradFn.getNumResults()) +
                " results; expected the loss and " + std::to_string(trainable.size()) +
                " gradients");
  for (size_t k = 0; k < trainable.size(); ++k) {
    unsigned arg = trainable[k];
    auto of = gradFn.getResultAttrOfType<StringAttr>(k + 1, "lcc.grad_of");
    if (!of || of.str() != argName(fn, arg))
      return fail("result " + std::to_string(k + 1) + " of @" + gradName +
                  " lacks {lcc.grad_of = \"" + argName(fn, arg) + "\"}");
    if (gradFn.getResultTypes()[k + 1] != fn.getArgument(arg).getType())
      return fail("gradient of '" + argName(fn, arg) + "' has the wrong type");
  }

  std::unique_ptr<CpuJit> jit;
  {
    DiagCapture diags(context());
    auto compiled = CpuJit::compile(module, o.fusedAttention ? AttentionMode::Fused
                                                             : AttentionMode::Decomposed);
    if (!compiled)
      return fail("JIT compilation failed: " + llvm::toString(compiled.takeError()) + "\n" +
                  diags.text);
    jit = std::move(*compiled);
  }
  auto evalLoss = [&](const std::vector<HostTensor> &args, double &loss) -> bool {
    auto r = jit->call(function, args);
    if (!r) {
      error = llvm::toString(r.takeError());
      return false;
    }
    loss = (*r)[0].getDouble(0);
    return true;
  };

  auto gradResults = jit->call(gradName, *inputs);
  if (!gradResults)
    return fail("calling @" + gradName + ": " + llvm::toString(gradResults.takeError()));
  double loss = 0;
  if (!evalLoss(*inputs, loss))
    return fail("calling @" + function + ": " + error);
  double gradLoss = (*gradResults)[0].getDouble(0);
  if (!(std::fabs(gradLoss - loss) <= 1e-12 * std::max(1.0, std::fabs(loss))))
    return fail("@" + gradName + " returns loss " + std::to_string(gradLoss) + " but @" +
                function + " returns " + std::to_string(loss));

  std::mt19937_64 sampler(o.seed ^ 0x9e3779b97f4a7c15ull);
  report.ok = true;
  for (size_t k = 0; k < trainable.size(); ++k) {
    unsigned arg = trainable[k];
    const HostTensor &ad = (*gradResults)[k + 1];
    ParamReport pr;
    pr.name = argName(fn, arg);
    int64_t n = (*inputs)[arg].numElements();
    std::vector<int64_t> entries(static_cast<size_t>(n));
    std::iota(entries.begin(), entries.end(), 0);
    if (n > o.maxEntries) {
      std::shuffle(entries.begin(), entries.end(), sampler);
      entries.resize(static_cast<size_t>(o.maxEntries));
      std::sort(entries.begin(), entries.end());
    }
    std::vector<HostTensor> args = *inputs;
    for (int64_t idx : entries) {
      double x = (*inputs)[arg].getDouble(idx);
      auto at = [&](double delta, double &out) {
        args[arg].setDouble(idx, x + delta);
        return evalLoss(args, out);
      };
      double fp, fm, fd;
      if (!at(o.h, fp) || !at(-o.h, fm))
        return fail("calling @" + function + ": " + error);
      if (o.points == 2) {
        fd = (fp - fm) / (2 * o.h);
      } else {
        double fp2, fm2;
        if (!at(2 * o.h, fp2) || !at(-2 * o.h, fm2))
          return fail("calling @" + function + ": " + error);
        fd = (8 * (fp - fm) - (fp2 - fm2)) / (12 * o.h);
      }
      args[arg].setDouble(idx, x);
      double a = ad.getDouble(idx);
      double err = std::fabs(a - fd) / std::max({std::fabs(a), std::fabs(fd), o.floor});
      if (std::isnan(err))
        err = INFINITY;
      ++pr.checked;
      if (err > pr.maxErr || pr.worstIndex < 0) {
        pr.maxErr = err;
        pr.worstIndex = idx;
        pr.worstAd = a;
        pr.worstFd = fd;
      }
    }
    report.maxErr = std::max(report.maxErr, pr.maxErr);
    if (!(pr.maxErr <= o.tol))
      report.ok = false;
    report.params.push_back(pr);
  }
  if (!report.ok)
    report.error = "gradient mismatch\n--- module ---\n" + moduleText(module);
  return report;
}

} // namespace

GradCheckReport runModuleGradCheck(const std::string &moduleSource, const std::string &function,
                                   const GradCheckOptions &options) {
  DiagCapture diags(context());
  auto module = parseSourceString<ModuleOp>(moduleSource, &context());
  if (!module) {
    GradCheckReport r;
    r.error = "module does not parse:\n" + diags.text + "\n" + moduleSource;
    return r;
  }
  return checkModule(*module, function, options);
}

GradCheckReport runGradCheck(const std::string &args, const std::string &body,
                             const std::string &outType, const GradCheckOptions &options) {
  // The names of the arguments, in order ("%x: ..." -> "x").
  std::vector<std::string> names;
  std::regex argRe("%([A-Za-z_][A-Za-z0-9_$.]*)\\s*:");
  for (std::sregex_iterator it(args.begin(), args.end(), argRe), end; it != end; ++it)
    names.push_back((*it)[1].str());

  // Element type and rank of %out from its type text ("tensor<3x4xf64>").
  size_t open = outType.find('<'), close = outType.rfind('>');
  std::string inner = open == std::string::npos || close == std::string::npos
                          ? ""
                          : outType.substr(open + 1, close - open - 1);
  size_t lastX = inner.rfind('x');
  std::string elem = lastX == std::string::npos ? inner : inner.substr(lastX + 1);
  int64_t rank = lastX == std::string::npos ? 0 : std::count(inner.begin(), inner.end(), 'x');
  std::string lossType = "tensor<" + elem + ">";

  std::ostringstream src;
  src << "func.func @f(" << args << (args.empty() ? "" : ", ") << "%__w: " << outType
      << " {lcc.input = \"__w\"}) -> " << lossType << " {\n  " << body << "\n";
  src << "  %__p = lcc.mul %out, %__w : " << outType << ", " << outType << " -> " << outType
      << "\n";
  if (rank == 0) {
    src << "  return %__p : " << lossType << "\n}\n";
  } else {
    src << "  %__l = lcc.reduce_sum %__p {axes = array<i64: ";
    for (int64_t d = 0; d < rank; ++d)
      src << (d ? ", " : "") << d;
    src << ">} : " << outType << " -> " << lossType << "\n  return %__l : " << lossType
        << "\n}\n";
  }

  DiagCapture diags(context());
  auto module = parseSourceString<ModuleOp>(src.str(), &context());
  GradCheckReport r;
  if (!module) {
    r.error = "test function does not parse:\n" + diags.text + "\n" + src.str();
    return r;
  }
  auto fn = module->lookupSymbol<func::FuncOp>("f");
  if (!fn || fn.getNumArguments() != names.size() + 1) {
    r.error = "could not name the arguments of:\n" + src.str();
    return r;
  }
  Builder b(&context());
  for (unsigned i = 0; i < names.size(); ++i) {
    if (fn.getArgAttr(i, "lcc.param") || fn.getArgAttr(i, "lcc.input"))
      continue;
    bool isFloat = llvm::isa<FloatType>(getElementTypeOrSelf(fn.getArgument(i).getType()));
    fn.setArgAttr(i, isFloat ? "lcc.param" : "lcc.input", b.getStringAttr(names[i]));
  }
  return checkModule(*module, "f", options);
}

HostTensor separatedValues(const std::vector<int64_t> &shape, uint64_t seed, double offset,
                           double spacing) {
  HostTensor t(ElementType::F64, shape);
  int64_t n = t.numElements();
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  for (int64_t i = 0; i < n; ++i)
    t.setDouble(i, offset + spacing * double(order[static_cast<size_t>(i)] - n / 2));
  return t;
}

std::vector<HostTensor> runGradFunction(const std::string &moduleSource,
                                        const std::string &function,
                                        const std::vector<HostTensor> &args, std::string *error) {
  DiagCapture diags(context());
  auto module = parseSourceString<ModuleOp>(moduleSource, &context());
  if (!module) {
    *error = "module does not parse:\n" + diags.text;
    return {};
  }
  PassManager pm(&context());
  LccAutodiffPassOptions passOptions;
  passOptions.function = function;
  pm.addPass(createLccAutodiffPass(passOptions));
  if (failed(pm.run(*module))) {
    *error = "lcc-autodiff failed:\n" + diags.text;
    return {};
  }
  auto jit = CpuJit::compile(*module);
  if (!jit) {
    *error = llvm::toString(jit.takeError()) + "\n" + diags.text;
    return {};
  }
  auto results = (*jit)->call(function + "_grad", args);
  if (!results) {
    *error = llvm::toString(results.takeError());
    return {};
  }
  return std::move(*results);
}

std::string runAutodiff(const std::string &moduleSource, const std::string &function,
                        std::string *diagnostics) {
  DiagCapture diags(context());
  auto module = parseSourceString<ModuleOp>(moduleSource, &context());
  if (!module) {
    *diagnostics = diags.text;
    return "";
  }
  PassManager pm(&context());
  LccAutodiffPassOptions passOptions;
  passOptions.function = function;
  pm.addPass(createLccAutodiffPass(passOptions));
  if (failed(pm.run(*module))) {
    *diagnostics = diags.text;
    return "";
  }
  return moduleText(*module);
}

::testing::AssertionResult toAssertion(const GradCheckReport &report) {
  std::ostringstream os;
  for (const ParamReport &p : report.params)
    os << "  " << p.name << ": " << p.checked << " entries, max err " << p.maxErr
       << " (entry " << p.worstIndex << ": ad " << p.worstAd << ", fd " << p.worstFd << ")\n";
  // LCC_GRAD_VERBOSE=1 prints the achieved error of every check (for the notes).
  if (std::getenv("LCC_GRAD_VERBOSE"))
    if (const auto *info = ::testing::UnitTest::GetInstance()->current_test_info())
      std::fprintf(stderr, "[gradcheck] %s.%s max err %.3g%s\n", info->test_suite_name(),
                   info->name(), report.maxErr, report.ok ? "" : " (FAILED)");
  if (report.ok)
    return ::testing::AssertionSuccess() << "max err " << report.maxErr << "\n" << os.str();
  return ::testing::AssertionFailure() << "gradient check failed (max err " << report.maxErr
                                       << ")\n"
                                       << os.str() << report.error;
}

::testing::AssertionResult checkGradients(const std::string &args, const std::string &body,
                                          const std::string &outType,
                                          const GradCheckOptions &options) {
  return toAssertion(runGradCheck(args, body, outType, options));
}

} // namespace lcc::gradcheck
