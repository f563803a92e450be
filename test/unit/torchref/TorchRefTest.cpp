//===- TorchRefTest.cpp - lcc's gradients against PyTorch's ---------------===//
//
// test/fixtures/torch holds a tiny GPT written twice, as gpt-ref.lcc and as
// the PyTorch module of make_reference.py, plus fixed weights, one batch and
// what PyTorch computed from them (the loss and every parameter gradient, in
// fp32 and fp64). Here the DSL file is imported exactly as users import
// models, differentiated by lcc-autodiff, run by CpuJit on the same weights
// and batch, and compared with PyTorch.
//
// Metric (per tensor, the loss being a 1-element tensor):
//   rel = max_i |lcc_i - torch_i| / max_i |torch_i|
// i.e. the error of the worst entry relative to the tensor's scale. A
// per-element relative error would be meaningless for entries that are
// cancellation noise (an fp32 gradient entry of 1e-9 next to entries of 1e-2
// has no correct digits in either implementation). Thresholds: fp32 1e-5
// (issue 3), fp64 1e-12 (both sides round at 1e-16; the gap is summation
// order, amplified through 2 layers).
//
// fp64: the DSL produces f32, so the module is retyped (every f32 tensor type
// becomes f64, as test/unit/grad does) and run on the fp32 fixture weights
// widened to f64 — the inputs PyTorch's fp64 run started from.
//
//===----------------------------------------------------------------------===//
#include "TorchRefCommon.h"

#include "compiler/cpu/JitExecutor.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>

using namespace lcc;
using namespace lcc::torchref;

namespace {

/// A model compiled for one float type: the JIT, and what each argument of
/// @forward_grad is and which parameter each gradient result belongs to.
struct CompiledModel {
  std::unique_ptr<CpuJit> jit;
  std::vector<std::string> argParam; // parameter name, or "" for an input
  std::vector<std::string> argInput; // input name, or "" for a parameter
  std::vector<std::string> gradOf;   // results 1.. of @forward_grad
  std::string error;
};

CompiledModel compileModel(bool f64) {
  CompiledModel m;
  auto imported = importRefModel(f64);
  if (!imported) {
    m.error = llvm::toString(imported.takeError());
    return m;
  }
  mlir::OwningOpRef<mlir::ModuleOp> module = std::move(*imported);
  mlir::PassManager pm(&context());
  pm.addPass(createLccAutodiffPass());
  if (mlir::failed(pm.run(*module))) {
    m.error = "lcc-autodiff failed";
    return m;
  }
  auto grad = module->lookupSymbol<mlir::func::FuncOp>("forward_grad");
  if (!grad) {
    m.error = "lcc-autodiff built no @forward_grad";
    return m;
  }
  for (unsigned i = 0; i < grad.getNumArguments(); ++i) {
    auto p = grad.getArgAttrOfType<mlir::StringAttr>(i, "lcc.param");
    auto x = grad.getArgAttrOfType<mlir::StringAttr>(i, "lcc.input");
    m.argParam.push_back(p ? p.str() : "");
    m.argInput.push_back(x ? x.str() : "");
  }
  for (unsigned r = 1; r < grad.getNumResults(); ++r) {
    auto of = grad.getResultAttrOfType<mlir::StringAttr>(r, "lcc.grad_of");
    m.gradOf.push_back(of ? of.str() : "");
  }
  auto jit = CpuJit::compile(*module);
  if (!jit) {
    m.error = "JIT compilation failed: " + llvm::toString(jit.takeError());
    return m;
  }
  m.jit = std::move(*jit);
  return m;
}

/// Compiled once per float type for the whole test program, on first use.
/// Deliberately leaked: destroying a JIT during static destruction, after
/// LLVM's own globals may be gone, crashes at exit.
CompiledModel &model(bool f64) {
  if (f64) {
    static CompiledModel *m64 = new CompiledModel(compileModel(true));
    return *m64;
  }
  static CompiledModel *m32 = new CompiledModel(compileModel(false));
  return *m32;
}

/// The arguments of @forward_grad from the fixture files; `edit` may change
/// the weights first (to prove the comparison can fail).
std::vector<HostTensor> arguments(const CompiledModel &m, bool f64,
                                  const std::function<void(SafetensorsFile &)> &edit = {}) {
  SafetensorsFile weights = loadFixture("weights.safetensors");
  SafetensorsFile batch = loadFixture("batch.safetensors");
  if (edit)
    edit(weights);
  std::vector<HostTensor> args;
  for (size_t i = 0; i < m.argParam.size(); ++i) {
    if (!m.argParam[i].empty()) {
      auto it = weights.tensors.find(m.argParam[i]);
      if (it == weights.tensors.end()) {
        ADD_FAILURE() << "weights.safetensors lacks parameter '" << m.argParam[i] << "'";
        return {};
      }
      args.push_back(f64 ? widen(it->second) : it->second);
    } else {
      auto it = batch.tensors.find(m.argInput[i]);
      if (it == batch.tensors.end()) {
        ADD_FAILURE() << "batch.safetensors lacks input '" << m.argInput[i] << "'";
        return {};
      }
      args.push_back(it->second);
    }
  }
  return args;
}

struct Mismatch {
  double rel = 0.0;  // max |lcc - ref| / max |ref|
  int64_t worst = -1;
  double lcc = 0.0, ref = 0.0;
};

Mismatch compare(const HostTensor &got, const HostTensor &ref) {
  Mismatch r;
  double maxDiff = 0.0, maxRef = 0.0;
  if (ref.numElements() > 0) {
    r.worst = 0;
    r.lcc = got.getDouble(0);
    r.ref = ref.getDouble(0);
  }
  for (int64_t i = 0; i < ref.numElements(); ++i) {
    double d = std::fabs(got.getDouble(i) - ref.getDouble(i));
    if (!(d <= maxDiff)) { // also catches NaN
      maxDiff = d;
      r.worst = i;
      r.lcc = got.getDouble(i);
      r.ref = ref.getDouble(i);
    }
    maxRef = std::max(maxRef, std::fabs(ref.getDouble(i)));
  }
  r.rel = maxRef > 0 ? maxDiff / maxRef : maxDiff;
  if (std::isnan(maxDiff))
    r.rel = INFINITY;
  return r;
}

struct Outcome {
  std::string error;
  double worstRel = 0.0;
  std::string worstName;
  double lossRel = 0.0;
  size_t gradsChecked = 0;
};

/// Runs @forward_grad and compares the loss and every gradient with
/// reference.safetensors' `<tag>:loss` and `<tag>:grad:<name>`.
Outcome runAndCompare(bool f64, const std::function<void(SafetensorsFile &)> &edit = {},
                      bool verbose = true) {
  Outcome o;
  CompiledModel &m = model(f64);
  if (!m.jit) {
    o.error = m.error;
    return o;
  }
  std::string tag = f64 ? "f64" : "f32";
  SafetensorsFile ref = loadFixture("reference.safetensors");
  auto args = arguments(m, f64, edit);
  if (args.empty()) {
    o.error = "no arguments";
    return o;
  }
  auto results = m.jit->call("forward_grad", args);
  if (!results) {
    o.error = llvm::toString(results.takeError());
    return o;
  }
  auto check = [&](const std::string &what, const HostTensor &got, const std::string &key) {
    auto it = ref.tensors.find(key);
    if (it == ref.tensors.end()) {
      o.error += "reference.safetensors lacks '" + key + "'; ";
      return;
    }
    if (got.shape() != it->second.shape() || got.elementType() != it->second.elementType()) {
      o.error += what + ": lcc gives " + got.typeString() + ", PyTorch " +
                 it->second.typeString() + "; ";
      return;
    }
    Mismatch mm = compare(got, it->second);
    if (what == "loss")
      o.lossRel = mm.rel;
    if (mm.rel > o.worstRel || std::isinf(mm.rel)) {
      o.worstRel = mm.rel;
      o.worstName = what;
    }
    if (verbose)
      std::printf("[torchref %s] %-28s rel %.3g (worst entry %lld: lcc %.10g, torch %.10g)\n",
                tag.c_str(), what.c_str(), mm.rel, static_cast<long long>(mm.worst), mm.lcc,
                mm.ref);
  };
  check("loss", (*results)[0], tag + ":loss");
  for (size_t k = 0; k < m.gradOf.size(); ++k) {
    check(m.gradOf[k], (*results)[k + 1], tag + ":grad:" + m.gradOf[k]);
    ++o.gradsChecked;
  }
  // Every parameter PyTorch has a gradient for must have been compared.
  size_t refGrads = 0;
  for (const auto &entry : ref.tensors)
    refGrads += entry.first.rfind(tag + ":grad:", 0) == 0;
  if (refGrads != o.gradsChecked)
    o.error += "lcc computed " + std::to_string(o.gradsChecked) + " gradients, PyTorch " +
               std::to_string(refGrads) + "; ";
  std::fflush(stdout);
  return o;
}

TEST(TorchRef, Fp32LossAndEveryGradientMatchPyTorch) {
  Outcome o = runAndCompare(false);
  ASSERT_TRUE(o.error.empty()) << o.error;
  EXPECT_EQ(o.gradsChecked, 28u);
  EXPECT_LE(o.worstRel, 1e-5) << "worst tensor: " << o.worstName;
  std::printf("[torchref f32] worst rel %.3g (%s), loss rel %.3g\n", o.worstRel,
              o.worstName.c_str(), o.lossRel);
}

TEST(TorchRef, Fp64LossAndEveryGradientMatchPyTorch) {
  Outcome o = runAndCompare(true);
  ASSERT_TRUE(o.error.empty()) << o.error;
  EXPECT_EQ(o.gradsChecked, 28u);
  EXPECT_LE(o.worstRel, 1e-12) << "worst tensor: " << o.worstName;
  std::printf("[torchref f64] worst rel %.3g (%s), loss rel %.3g\n", o.worstRel,
              o.worstName.c_str(), o.lossRel);
}

// The comparison can fail: a change of 1e-3 in one entry of one bias (a
// perturbation far below what any bug in a VJP would cause) is detected.
TEST(TorchRef, DetectsAPerturbedWeight) {
  Outcome o = runAndCompare(false, [](SafetensorsFile &w) {
    HostTensor &b = w.tensors.at("h.1.mlp.c_fc.bias");
    b.setDouble(5, b.getDouble(5) + 1e-3);
  }, /*verbose=*/false);
  ASSERT_TRUE(o.error.empty()) << o.error;
  EXPECT_GT(o.worstRel, 1e-4) << "a perturbed weight went unnoticed";
}

} // namespace
