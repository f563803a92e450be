//===- TrainStepTest.cpp - @train_step against a C++ optimizer reference --===//
//
// The reference below (AdamW, SGD, clip_grad_norm_, nanoGPT's get_lr) is
// written from the PyTorch/nanoGPT formulas in double, independently of the
// pass. Each step it is fed lcc's own loss and gradients (@forward_grad via
// CpuJit) at the compiled step's current parameters and state, so what is
// compared is exactly the optimizer/clipping/schedule/accumulation code the
// pass generated, over 10 consecutive steps.
//
// Error metric: err = |got - ref| / max(|ref|, 1e-3 * max|ref over the
// tensor|, 1e-300): relative, except for entries a thousand times smaller
// than the tensor's largest (zero gradients of unused rows), which are
// compared at that scale. For the first moment / momentum buffer (a sum
// whose terms can cancel) the denominator also includes the magnitude of the
// summed terms, the scale f32 rounding of that sum is relative to.
//
//===----------------------------------------------------------------------===//
#include "compiler/cpu/JitExecutor.h"
#include "dialects/lcc/LccDialect.h"
#include "frontends/dsl/Importer.h"
#include "passes/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

using namespace mlir;
using lcc::HostTensor;

namespace {

MLIRContext &context() {
  static MLIRContext *ctx = [] {
    auto *c = new MLIRContext();
    c->disableMultithreading();
    DialectRegistry registry;
    registry.insert<lcc::LccDialect>();
    registerAllDialects(registry);
    c->appendDialectRegistry(registry);
    c->loadDialect<lcc::LccDialect, func::FuncDialect>();
    return c;
  }();
  return *ctx;
}

//===--- reference optimizer (double) -------------------------------------===//

/// nanoGPT's get_lr(it) with it = step - 1 (step is 1-based).
double refLr(const lcc::TrainStepOptions &o, int64_t step) {
  double it = double(step - 1), lr = o.lr;
  double minLr = o.minLr >= 0 ? o.minLr : 0.1 * lr;
  if (it < double(o.warmup))
    return lr * (it + 1) / double(o.warmup + 1);
  if (o.schedule == "constant")
    return lr;
  if (it > double(o.decaySteps))
    return minLr;
  double ratio = (it - double(o.warmup)) / double(o.decaySteps - o.warmup);
  return minLr + 0.5 * (1.0 + std::cos(M_PI * ratio)) * (lr - minLr);
}

struct RefParam {
  std::vector<double> p, g;
  bool decay;
};

/// One optimizer step on `params` (gradients already averaged over
/// micro-batches) with state `s0` (m or momentum buffer) and `s1` (v);
/// returns the pre-clip norm. The clip coefficient is computed from
/// `clipNorm`: the caller passes the compiled step's norm (itself checked
/// against the returned exact one), so that the f32 rounding of a 10^5-term
/// reduction (~1e-6 relative) is not counted again as an optimizer error.
/// `mag0` receives, per element of s0, the magnitude of the terms summed
/// into it (b1 |m| + (1 - b1) |g|, or mu |b| + |g|): a cancelling sum cannot be
/// rounded more accurately than that, so it scales the error of s0.
double refStep(const lcc::TrainStepOptions &o, int64_t step, std::vector<RefParam> &params,
               std::vector<std::vector<double>> &s0, std::vector<std::vector<double>> &s1,
               std::vector<std::vector<double>> &mag0, double clipNorm) {
  mag0 = s0;
  double sq = 0;
  for (auto &rp : params)
    for (double g : rp.g)
      sq += g * g;
  double norm = std::sqrt(sq);
  // torch.nn.utils.clip_grad_norm_: always multiplies by the clamped coefficient.
  if (o.clip > 0) {
    double coef = std::min(1.0, o.clip / (clipNorm + 1e-6));
    for (auto &rp : params)
      for (double &g : rp.g)
        g *= coef;
  }
  double lr = refLr(o, step);
  bool adamw = o.optimizer == "adamw";
  double wd = o.weightDecay >= 0 ? o.weightDecay : (adamw ? 0.1 : 0.0);
  for (size_t n = 0; n < params.size(); ++n) {
    auto &rp = params[n];
    double pwd = rp.decay ? wd : 0.0;
    for (size_t i = 0; i < rp.p.size(); ++i) {
      double g = rp.g[i], &p = rp.p[i];
      if (adamw) {
        double &m = s0[n][i], &v = s1[n][i];
        mag0[n][i] = o.beta1 * std::fabs(m) + (1 - o.beta1) * std::fabs(g);
        p *= 1 - lr * pwd;
        m = o.beta1 * m + (1 - o.beta1) * g;
        v = o.beta2 * v + (1 - o.beta2) * g * g;
        double mHat = m / (1 - std::pow(o.beta1, double(step)));
        double vHat = v / (1 - std::pow(o.beta2, double(step)));
        p -= lr * mHat / (std::sqrt(vHat) + o.eps);
      } else {
        g += pwd * p;
        if (o.momentum != 0) {
          double &b = s0[n][i];
          mag0[n][i] = o.momentum * std::fabs(b) + std::fabs(g);
          b = step == 1 ? g : o.momentum * b + g;
          g = o.nesterov ? g + o.momentum * b : b;
        }
        p -= lr * g;
      }
    }
  }
  return norm;
}

//===--- harness ----------------------------------------------------------===//

double maxErr(const std::vector<double> &got, const std::vector<double> &ref,
              const std::vector<double> *mag = nullptr) {
  double scale = 0;
  for (double r : ref)
    scale = std::max(scale, std::fabs(r));
  double err = 0;
  for (size_t i = 0; i < ref.size(); ++i)
    err = std::max(err, std::fabs(got[i] - ref[i]) /
                            std::max({std::fabs(ref[i]), mag ? (*mag)[i] : 0.0, 1e-3 * scale,
                                      1e-300}));
  return err;
}

std::vector<HostTensor> call(lcc::CpuJit &jit, llvm::StringRef fn,
                             const std::vector<HostTensor> &args) {
  auto r = jit.call(fn, args);
  if (!r) {
    ADD_FAILURE() << llvm::toString(r.takeError());
    return {};
  }
  return std::move(*r);
}

/// Runs autodiff + build-train-step; returns the error text ("" on success).
std::string buildTrainStep(ModuleOp module, const lcc::TrainStepOptions &o) {
  std::string errors;
  llvm::raw_string_ostream os(errors);
  ScopedDiagnosticHandler handler(&context(), [&](Diagnostic &d) {
    os << d.str() << "\n";
    return success();
  });
  PassManager pm(&context());
  lcc::buildTrainStepPipeline(pm, o);
  if (failed(pm.run(module)) && errors.empty())
    errors = "pass failed";
  return errors;
}

struct StepRun {
  double maxParamErr = 0, maxStateErr = 0, maxScalarErr = 0;
  std::vector<double> norms, lrs, losses;
};

/// `steps` compiled steps from `params`, each checked against the reference
/// fed with @forward_grad at the same point. `batch(step, k)` gives the
/// inputs of micro-batch k (shapes of @forward).
StepRun runSteps(ModuleOp module, const lcc::TrainStepOptions &o, std::vector<HostTensor> params,
             const std::function<std::vector<HostTensor>(int64_t, int64_t)> &batch,
             int steps) {
  StepRun run;
  std::string err = buildTrainStep(module, o);
  EXPECT_EQ(err, "");
  if (!err.empty())
    return run;
  auto fwd = module.lookupSymbol<func::FuncOp>("forward");
  std::vector<bool> frozen, decay;
  for (unsigned i = 0; i < fwd.getNumArguments(); ++i) {
    if (!fwd.getArgAttr(i, "lcc.param"))
      continue;
    frozen.push_back(bool(fwd.getArgAttr(i, "lcc.frozen")));
    int64_t rank = llvm::cast<RankedTensorType>(fwd.getArgument(i).getType()).getRank();
    decay.push_back((rank >= 2 && !fwd.getArgAttr(i, "lcc.no_decay")) ||
                    fwd.getArgAttr(i, "lcc.decay"));
  }
  auto jit = lcc::CpuJit::compile(module);
  if (!jit) {
    ADD_FAILURE() << llvm::toString(jit.takeError());
    return run;
  }
  bool adamw = o.optimizer == "adamw";
  size_t nState = adamw ? 2 : (o.momentum != 0 ? 1 : 0);
  std::vector<HostTensor> state;
  for (size_t s = 0; s < nState; ++s)
    for (size_t i = 0; i < params.size(); ++i)
      if (!frozen[i])
        state.push_back(HostTensor::zeros(params[i].elementType(), params[i].shape()));
  for (int64_t step = 1; step <= steps; ++step) {
    // Reference: loss and gradients of each micro-batch, averaged.
    std::vector<RefParam> ref;
    for (size_t i = 0; i < params.size(); ++i)
      if (!frozen[i])
        ref.push_back({params[i].toDoubles(),
                       std::vector<double>(size_t(params[i].numElements()), 0.0), decay[i]});
    double refLoss = 0;
    std::vector<std::vector<HostTensor>> micro;
    for (int64_t k = 0; k < o.accum; ++k) {
      micro.push_back(batch(step, k));
      std::vector<HostTensor> args = params;
      for (auto &t : micro.back())
        args.push_back(t);
      auto lg = call(**jit, "forward_grad", args);
      if (lg.size() != ref.size() + 1)
        return run;
      refLoss += lg[0].getDouble(0) / double(o.accum);
      for (size_t n = 0; n < ref.size(); ++n)
        for (int64_t e = 0; e < lg[n + 1].numElements(); ++e)
          ref[n].g[size_t(e)] += lg[n + 1].getDouble(e) / double(o.accum);
    }
    std::vector<std::vector<double>> s0, s1, mag0;
    for (size_t n = 0; n < ref.size(); ++n) {
      if (nState > 0)
        s0.push_back(state[n].toDoubles());
      if (nState > 1)
        s1.push_back(state[ref.size() + n].toDoubles());
    }
    // Compiled step.
    std::vector<HostTensor> args = params;
    for (auto &t : state)
      args.push_back(t);
    args.push_back(HostTensor::scalar<int64_t>(step));
    for (size_t in = 0; in < micro[0].size(); ++in) {
      if (o.accum == 1) {
        args.push_back(micro[0][in]);
        continue;
      }
      std::vector<int64_t> shape{o.accum};
      for (int64_t d : micro[0][in].shape())
        shape.push_back(d);
      auto stacked = HostTensor::zeros(micro[0][in].elementType(), shape);
      int64_t n = micro[0][in].numElements();
      for (int64_t k = 0; k < o.accum; ++k)
        for (int64_t e = 0; e < n; ++e)
          stacked.setDouble(k * n + e, micro[size_t(k)][in].getDouble(e));
      args.push_back(std::move(stacked));
    }
    auto out = call(**jit, "train_step", args);
    if (out.size() != ref.size() * (1 + nState) + 3) {
      ADD_FAILURE() << "train_step returned " << out.size() << " values";
      return run;
    }
    double compiledNorm = out[out.size() - 2].getDouble(0);
    double refNorm = refStep(o, step, ref, s0, s1, mag0, compiledNorm);
    size_t r = 0;
    for (size_t i = 0, n = 0; i < params.size(); ++i) {
      if (frozen[i])
        continue;
      run.maxParamErr = std::max(run.maxParamErr, maxErr(out[r].toDoubles(), ref[n++].p));
      params[i] = out[r++];
    }
    for (size_t s = 0; s < nState; ++s)
      for (size_t n = 0; n < ref.size(); ++n) {
        run.maxStateErr = std::max(run.maxStateErr, maxErr(out[r].toDoubles(), (s ? s1 : s0)[n],
                                                           s ? nullptr : &mag0[n]));
        state[s * ref.size() + n] = out[r++];
      }
    double loss = out[r].getDouble(0), norm = out[r + 1].getDouble(0),
           lr = out[r + 2].getDouble(0);
    run.maxScalarErr = std::max({run.maxScalarErr, maxErr({loss}, {refLoss}),
                                 maxErr({norm}, {refNorm}), maxErr({lr}, {refLr(o, step)})});
    run.losses.push_back(loss);
    run.norms.push_back(norm);
    run.lrs.push_back(lr);
  }
  return run;
}

//===--- a linear classifier ----------------------------------------------===//

/// logits = x @ w + b + s (s frozen), cross-entropy against y; `attrsW` and
/// `attrsB` are extra parameter attributes.
std::string linearModel(const std::string &t, int64_t n, const std::string &attrsW = "",
                        const std::string &attrsB = "") {
  std::string N = std::to_string(n);
  std::string text = R"(
func.func @forward(%w: tensor<4x3xT> {lcc.param = "w"AW}, %b: tensor<3xT> {lcc.param = "b"AB},
                   %s: tensor<3xT> {lcc.param = "s", lcc.frozen},
                   %x: tensor<Nx4xT> {lcc.input = "x"}, %y: tensor<Nxi32> {lcc.input = "y"}) -> tensor<T> {
  %h = lcc.matmul %x, %w : tensor<Nx4xT>, tensor<4x3xT> -> tensor<Nx3xT>
  %z = lcc.add %h, %b : tensor<Nx3xT>, tensor<3xT> -> tensor<Nx3xT>
  %z2 = lcc.add %z, %s : tensor<Nx3xT>, tensor<3xT> -> tensor<Nx3xT>
  %l = lcc.cross_entropy %z2, %y : tensor<Nx3xT>, tensor<Nxi32> -> tensor<T>
  return %l : tensor<T>
})";
  text = std::regex_replace(text, std::regex("AW"), attrsW);
  text = std::regex_replace(text, std::regex("AB"), attrsB);
  text = std::regex_replace(text, std::regex("Nx"), N + "x");
  return std::regex_replace(text, std::regex("T>"), t + ">");
}

lcc::ElementType elem(const std::string &t) {
  return t == "f64" ? lcc::ElementType::F64 : lcc::ElementType::F32;
}

std::vector<HostTensor> linearParams(const std::string &t) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  auto r = [&](int64_t) { return u(rng); };
  return {HostTensor::generate(elem(t), {4, 3}, r), HostTensor::generate(elem(t), {3}, r),
          HostTensor::generate(elem(t), {3}, r)};
}

/// Rows [k*n, (k+1)*n) of a fixed 1024-row dataset drawn for `step`.
std::vector<HostTensor> linearBatch(const std::string &t, int64_t n, int64_t step, int64_t k) {
  std::mt19937_64 rng(1000 + uint64_t(step));
  std::uniform_real_distribution<double> u(-2, 2);
  std::uniform_int_distribution<int32_t> cls(0, 2);
  std::vector<double> x(1024 * 4);
  std::vector<int32_t> y(1024);
  for (auto &v : x)
    v = u(rng);
  for (auto &v : y)
    v = cls(rng);
  auto xs = HostTensor::generate(elem(t), {n, 4}, [&](int64_t i) { return x[size_t(k * n * 4 + i)]; });
  std::vector<int32_t> ys(y.begin() + k * n, y.begin() + (k + 1) * n);
  return {xs, HostTensor::fromVector<int32_t>({n}, ys)};
}

StepRun linearRun(const std::string &t, const lcc::TrainStepOptions &o, int steps = 10,
              const std::string &aw = "", const std::string &ab = "") {
  auto module = parseSourceString<ModuleOp>(linearModel(t, 8, aw, ab), &context());
  EXPECT_TRUE(module);
  if (!module)
    return {};
  return runSteps(*module, o, linearParams(t),
                  [&](int64_t s, int64_t k) { return linearBatch(t, 8, s, k); }, steps);
}

lcc::TrainStepOptions adamw(double lr = 1e-2) {
  lcc::TrainStepOptions o;
  o.lr = lr;
  return o;
}

void expectRun(const StepRun &run, double tol, const char *what) {
  EXPECT_LE(run.maxParamErr, tol) << what;
  EXPECT_LE(run.maxStateErr, tol) << what;
  EXPECT_LE(run.maxScalarErr, tol) << what;
  std::printf("[train] %s: max rel err params %.3g state %.3g loss/norm/lr %.3g\n", what,
              run.maxParamErr, run.maxStateErr, run.maxScalarErr);
}

TEST(TrainStep, AdamWClipInactive) {
  for (const char *t : {"f32", "f64"}) {
    auto o = adamw();
    o.clip = 100.0;
    StepRun run = linearRun(t, o);
    ASSERT_EQ(run.norms.size(), 10u);
    EXPECT_LT(run.norms[0], o.clip) << "the clip must not be active here";
    expectRun(run, std::string(t) == "f64" ? 1e-12 : 1e-5, t);
  }
}

TEST(TrainStep, AdamWClipActive) {
  for (const char *t : {"f32", "f64"}) {
    auto o = adamw();
    o.clip = 0.05;
    StepRun run = linearRun(t, o);
    ASSERT_EQ(run.norms.size(), 10u);
    for (double n : run.norms)
      EXPECT_GT(n, o.clip) << "the clip must be active at every step";
    expectRun(run, std::string(t) == "f64" ? 1e-12 : 1e-5, t);
  }
}

TEST(TrainStep, AdamWNoClipAndDecayOverrides) {
  // clip = 0 is off; w (rank 2) opts out of decay, b (rank 1) opts in.
  auto o = adamw();
  o.clip = 0;
  o.weightDecay = 0.5;
  StepRun run = linearRun("f64", o, 10, ", lcc.no_decay", ", lcc.decay");
  expectRun(run, 1e-12, "overrides");
}

TEST(TrainStep, DefaultNoDecayRuleMatters) {
  // The same run with the rank rule inverted by attributes must differ:
  // guards against a reference and a pass that both ignore the rule.
  auto o = adamw();
  o.weightDecay = 5.0;
  StepRun plain = linearRun("f64", o, 3);
  StepRun swapped = linearRun("f64", o, 3, ", lcc.no_decay", ", lcc.decay");
  ASSERT_EQ(plain.losses.size(), 3u);
  ASSERT_EQ(swapped.losses.size(), 3u);
  EXPECT_NE(plain.losses[2], swapped.losses[2]);
}

TEST(TrainStep, SgdMomentumAndNesterov) {
  for (bool nesterov : {false, true})
    for (const char *t : {"f32", "f64"}) {
      lcc::TrainStepOptions o;
      o.optimizer = "sgd";
      o.lr = 0.1;
      o.weightDecay = 0.01;
      o.nesterov = nesterov;
      StepRun run = linearRun(t, o);
      expectRun(run, std::string(t) == "f64" ? 1e-12 : 1e-5,
                nesterov ? "sgd nesterov" : "sgd momentum");
    }
}

TEST(TrainStep, SgdPlain) {
  lcc::TrainStepOptions o;
  o.optimizer = "sgd";
  o.lr = 0.1;
  o.momentum = 0;
  expectRun(linearRun("f64", o), 1e-12, "sgd plain");
}

TEST(TrainStep, CosineScheduleWithWarmup) {
  auto o = adamw(1e-2);
  o.schedule = "cosine";
  o.warmup = 3;
  o.decaySteps = 8;
  StepRun run = linearRun("f64", o, 12);
  ASSERT_EQ(run.lrs.size(), 12u);
  expectRun(run, 1e-12, "cosine");
  // Hand-computed points: warmup (step 1: lr/4), the peak at it = warmup,
  // the middle of the cosine, and min_lr from it = decay-steps on.
  EXPECT_NEAR(run.lrs[0], 1e-2 * 1 / 4, 1e-14);
  EXPECT_NEAR(run.lrs[2], 1e-2 * 3 / 4, 1e-14);
  EXPECT_NEAR(run.lrs[3], 1e-2, 1e-14);
  double mid = 1e-3 + 0.5 * (1 + std::cos(M_PI * 0.4)) * (1e-2 - 1e-3); // it = 5
  EXPECT_NEAR(run.lrs[5], mid, 1e-14);
  EXPECT_NEAR(run.lrs[8], 1e-3, 1e-14);
  EXPECT_NEAR(run.lrs[11], 1e-3, 1e-14);
  // f32: the polynomial cosine is accurate to f32 rounding.
  StepRun f32 = linearRun("f32", o, 12);
  expectRun(f32, 1e-5, "cosine f32");
}

TEST(TrainStep, ConstantScheduleWarmup) {
  auto o = adamw(1e-2);
  o.warmup = 4;
  StepRun run = linearRun("f64", o, 7);
  ASSERT_EQ(run.lrs.size(), 7u);
  expectRun(run, 1e-12, "constant warmup");
  EXPECT_NEAR(run.lrs[0], 1e-2 / 5, 1e-15);
  EXPECT_NEAR(run.lrs[4], 1e-2, 1e-15);
  EXPECT_NEAR(run.lrs[6], 1e-2, 1e-15);
}

TEST(TrainStep, AccumulationAveragesMicroBatches) {
  auto o = adamw();
  o.accum = 2;
  expectRun(linearRun("f64", o), 1e-12, "accum 2 (reference: mean over micro-batches)");
}

/// K micro-batches of 16 / K rows (the micro-batch loop of
/// lcc-build-train-step) against one batch of their 16 rows: the mean loss
/// and gradients (cross-entropy means over rows) are the same.
void expectAccumulationEqualsConcatenatedBatch(int64_t k) {
  SCOPED_TRACE("accum " + std::to_string(k));
  auto o = adamw();
  o.accum = k;
  int64_t rows = 16 / k;
  auto small = parseSourceString<ModuleOp>(linearModel("f64", rows), &context());
  auto big = parseSourceString<ModuleOp>(linearModel("f64", 16), &context());
  ASSERT_TRUE(small && big);
  ASSERT_EQ(buildTrainStep(*small, o), "");
  lcc::TrainStepOptions one = o;
  one.accum = 1;
  ASSERT_EQ(buildTrainStep(*big, one), "");
  auto jitSmall = lcc::CpuJit::compile(*small);
  auto jitBig = lcc::CpuJit::compile(*big);
  ASSERT_TRUE(bool(jitSmall) && bool(jitBig));
  auto params = linearParams("f64");
  std::vector<HostTensor> zeros;
  for (int i = 0; i < 4; ++i)
    zeros.push_back(HostTensor::zeros(lcc::ElementType::F64, params[i % 2].shape()));
  auto whole = linearBatch("f64", 16, 1, 0);
  std::vector<HostTensor> a = params, b = params;
  for (auto &z : zeros)
    a.push_back(z), b.push_back(z);
  a.push_back(HostTensor::scalar<int64_t>(1));
  b.push_back(HostTensor::scalar<int64_t>(1));
  // [K, 16/K, 4] and [K, 16/K] are the row-major views of [16, 4] and [16].
  HostTensor x2 = whole[0], y2 = whole[1];
  std::vector<int64_t> xShape{rows, 4}, yShape{rows};
  if (k > 1) {
    xShape.insert(xShape.begin(), k);
    yShape.insert(yShape.begin(), k);
  }
  HostTensor xs = HostTensor::zeros(lcc::ElementType::F64, xShape);
  HostTensor ys = HostTensor::zeros(lcc::ElementType::I32, yShape);
  for (int64_t i = 0; i < 64; ++i)
    xs.setDouble(i, x2.getDouble(i));
  for (int64_t i = 0; i < 16; ++i)
    ys.setDouble(i, y2.getDouble(i));
  a.push_back(xs), a.push_back(ys);
  b.push_back(x2), b.push_back(y2);
  auto ra = call(**jitSmall, "train_step", a);
  auto rb = call(**jitBig, "train_step", b);
  ASSERT_EQ(ra.size(), rb.size());
  ASSERT_EQ(ra.size(), 2u * 3 + 3);
  double err = 0;
  for (size_t i = 0; i < ra.size(); ++i)
    err = std::max(err, maxErr(ra[i].toDoubles(), rb[i].toDoubles()));
  EXPECT_LE(err, 1e-12);
  std::printf("[train] accum %lld vs concatenated batch: max rel err %.3g\n", (long long)k, err);
}

TEST(TrainStep, AccumulationEqualsConcatenatedBatch) {
  for (int64_t k : {1, 2, 8})
    expectAccumulationEqualsConcatenatedBatch(k);
}

//===--- gpt-tiny -----------------------------------------------------------===//

OwningOpRef<ModuleOp> importGptTiny(bool f64) {
  std::ifstream in(std::string(LCC_SOURCE_DIR) + "/examples/gpt-tiny.lcc");
  std::stringstream source;
  source << in.rdbuf();
  lcc::dsl::ImportOptions options;
  options.overrides = {{"batch", 2}, {"seq", 8}};
  auto module = lcc::dsl::importDsl(source.str(), "gpt-tiny.lcc", context(), options);
  if (!module) {
    ADD_FAILURE() << llvm::toString(module.takeError());
    return {};
  }
  if (!f64)
    return std::move(*module);
  std::string text;
  llvm::raw_string_ostream os(text);
  (**module).print(os);
  text = std::regex_replace(text, std::regex("xf32>"), "xf64>");
  text = std::regex_replace(text, std::regex("tensor<f32>"), "tensor<f64>");
  return parseSourceString<ModuleOp>(text, &context());
}

void gptTiny(bool f64) {
  auto module = importGptTiny(f64);
  ASSERT_TRUE(module);
  auto fwd = module->lookupSymbol<func::FuncOp>("forward");
  // Parameters: GPT-2-like values (weights ~0.05, norm weights ~1).
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(-0.05, 0.05);
  std::vector<HostTensor> params;
  for (unsigned i = 0; i < fwd.getNumArguments(); ++i) {
    auto name = fwd.getArgAttrOfType<StringAttr>(i, "lcc.param");
    if (!name)
      continue;
    auto type = llvm::cast<RankedTensorType>(fwd.getArgument(i).getType());
    double base = type.getRank() == 1 && name.getValue().ends_with("weight") ? 1.0 : 0.0;
    params.push_back(HostTensor::generate(f64 ? lcc::ElementType::F64 : lcc::ElementType::F32,
                                          std::vector<int64_t>(type.getShape()),
                                          [&](int64_t) { return base + u(rng); }));
  }
  auto batch = [](int64_t step, int64_t) {
    std::mt19937_64 r{uint64_t(step)};
    std::uniform_int_distribution<int32_t> tok(0, 255);
    auto ids = [&](int64_t) { return double(tok(r)); };
    return std::vector<HostTensor>{HostTensor::generate(lcc::ElementType::I32, {2, 8}, ids),
                                   HostTensor::generate(lcc::ElementType::I32, {2, 8}, ids)};
  };
  auto o = adamw(1e-3);
  o.schedule = "cosine";
  o.warmup = 2;
  o.decaySteps = 8;
  StepRun run = runSteps(*module, o, params, batch, 10);
  ASSERT_EQ(run.losses.size(), 10u);
  expectRun(run, f64 ? 1e-12 : 1e-5, f64 ? "gpt-tiny f64" : "gpt-tiny f32");
}

TEST(TrainStep, GptTinyF64) { gptTiny(true); }
TEST(TrainStep, GptTinyF32) { gptTiny(false); }

//===--- diagnostics --------------------------------------------------------===//

TEST(TrainStep, Diagnostics) {
  auto module = parseSourceString<ModuleOp>(linearModel("f32", 8), &context());
  ASSERT_TRUE(module);
  auto o = adamw();
  o.schedule = "cosine";
  o.warmup = 10;
  o.decaySteps = 5;
  EXPECT_NE(buildTrainStep(*module, o).find("needs decay-steps (5) > warmup (10)"),
            std::string::npos);
  auto again = parseSourceString<ModuleOp>(linearModel("f32", 8), &context());
  o = adamw();
  o.optimizer = "lion";
  EXPECT_NE(buildTrainStep(*again, o).find("unknown optimizer 'lion'"), std::string::npos);
}

} // namespace
