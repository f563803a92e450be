//===- OpTestUtil.cpp - helpers for the numerical op tests ----------------===//
#include "OpTestUtil.h"

#include "compiler/cpu/JitExecutor.h"
#include "dialects/lcc/LccDialect.h"

#include "mlir/InitAllDialects.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace lcc::test {

namespace {
mlir::MLIRContext &context() {
  static mlir::MLIRContext *ctx = [] {
    auto *c = new mlir::MLIRContext();
    // The build machine is shared; compiling tiny modules gains nothing from threads.
    c->disableMultithreading();
    // Executor tests write linalg/tensor/arith directly.
    mlir::DialectRegistry registry;
    registry.insert<LccDialect>();
    mlir::registerAllDialects(registry);
    c->appendDialectRegistry(registry);
    return c;
  }();
  return *ctx;
}
} // namespace

std::string tensorType(ElementType type, const std::vector<int64_t> &shape) {
  return HostTensor(type, shape).typeString();
}

std::string makeFunc(const std::vector<std::string> &argTypes,
                     const std::vector<std::string> &resultTypes, const std::string &body,
                     const std::string &returned) {
  std::ostringstream os;
  os << "func.func @main(";
  for (size_t i = 0; i < argTypes.size(); ++i)
    os << (i ? ", " : "") << "%a" << i << ": " << argTypes[i];
  os << ") -> (";
  for (size_t i = 0; i < resultTypes.size(); ++i)
    os << (i ? ", " : "") << resultTypes[i];
  os << ") {\n" << body << "\n  return " << returned << " : ";
  for (size_t i = 0; i < resultTypes.size(); ++i)
    os << (i ? ", " : "") << resultTypes[i];
  os << "\n}\n";
  return os.str();
}

mlir::OwningOpRef<mlir::ModuleOp> parse(const std::string &source) {
  mlir::MLIRContext &ctx = context();
  std::string diagnostics;
  llvm::raw_string_ostream diagOs(diagnostics);
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
    diagOs << d.str() << "\n";
    return mlir::success();
  });
  auto module = mlir::parseSourceString<mlir::ModuleOp>(source, &ctx);
  if (!module)
    ADD_FAILURE() << "test module does not parse:\n" << diagnostics << "\n" << source;
  return module;
}

std::unique_ptr<CpuJit> compile(const std::string &source) {
  auto module = parse(source);
  if (!module)
    return nullptr;
  auto jit = CpuJit::compile(*module);
  if (!jit) {
    ADD_FAILURE() << llvm::toString(jit.takeError()) << "\n" << source;
    return nullptr;
  }
  return std::move(*jit);
}

std::vector<HostTensor> run(const std::string &source, const std::vector<HostTensor> &args,
                            const std::string &function) {
  std::unique_ptr<CpuJit> jit = compile(source);
  if (!jit)
    return {};
  auto results = jit->call(function, args);
  if (!results) {
    ADD_FAILURE() << llvm::toString(results.takeError()) << "\n" << source;
    return {};
  }
  return std::move(*results);
}

HostTensor randomTensor(ElementType type, const std::vector<int64_t> &shape, std::mt19937 &rng,
                        double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  return HostTensor::generate(type, shape, [&](int64_t) { return dist(rng); });
}

HostTensor randomInts(ElementType type, const std::vector<int64_t> &shape, std::mt19937 &rng,
                      int64_t lo, int64_t hi) {
  std::uniform_int_distribution<int64_t> dist(lo, hi - 1);
  return HostTensor::generate(type, shape, [&](int64_t) { return double(dist(rng)); });
}

ref::Tensor toRef(const HostTensor &t) { return ref::Tensor(t.shape(), t.toDoubles()); }

static std::string shapeStr(const std::vector<int64_t> &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

::testing::AssertionResult closeTo(const HostTensor &got, const ref::Tensor &want, double tol) {
  if (got.shape() != want.shape)
    return ::testing::AssertionFailure()
           << "shape " << shapeStr(got.shape()) << " != expected " << shapeStr(want.shape);
  bool exact = tol <= 0.0 || !isFloatType(got.elementType());
  double scale = 0.0;
  for (double v : want.data)
    if (std::isfinite(v))
      scale = std::max(scale, std::fabs(v));
  scale = std::max(scale, 1e-30);
  double worst = 0.0;
  int64_t worstAt = -1, mismatches = 0;
  std::ostringstream first;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double g = got.getDouble(i), w = want.data[static_cast<size_t>(i)];
    bool bad;
    if (std::isnan(w))
      bad = !std::isnan(g);
    else if (!std::isfinite(w) || exact)
      bad = g != w;
    else {
      double err = std::fabs(g - w) / scale;
      bad = !(err <= tol); // NaN in `got` counts as bad
      if (err > worst || std::isnan(err)) {
        worst = std::isnan(err) ? INFINITY : err;
        worstAt = i;
      }
    }
    if (bad && mismatches++ < 5)
      first << "  [" << i << "] got " << g << ", expected " << w << "\n";
  }
  if (mismatches == 0) {
    // LCC_OPS_TEST_VERBOSE=1 prints the margin of every passing comparison,
    // for choosing tolerances.
    if (std::getenv("LCC_OPS_TEST_VERBOSE"))
      if (const auto *info = ::testing::UnitTest::GetInstance()->current_test_info())
        std::fprintf(stderr, "[margin] %s.%s %s %.3g\n", info->test_suite_name(), info->name(),
                     exact ? "exact" : "normalized-error", worst);
    return ::testing::AssertionSuccess() << "normalized error " << worst;
  }
  auto failure = ::testing::AssertionFailure();
  failure << mismatches << " of " << want.numel() << " elements differ ("
          << (exact ? std::string("exact comparison")
                    : "tolerance " + std::to_string(tol) + ", worst normalized error " +
                          std::to_string(worst) + " at " + std::to_string(worstAt))
          << "), first:\n"
          << first.str();
  return failure;
}

::testing::AssertionResult runAndCompare(const std::string &source,
                                         const std::vector<HostTensor> &args,
                                         const ref::Tensor &want, double tol) {
  std::vector<HostTensor> results = run(source, args);
  if (results.size() != 1)
    return ::testing::AssertionFailure() << "no result (see the failure above)\n" << source;
  auto r = closeTo(results[0], want, tol);
  if (!r)
    r << "\n" << source;
  return r;
}

} // namespace lcc::test
