//===- GradCheck.h - fp64 finite-difference gradient checks -----*- C++ -*-===//
//
// Checks the gradients built by `lcc-autodiff` (the VJPs of the ops) against
// finite differences, everything evaluated in fp64 through CpuJit.
//
// Usage (one op, the common case):
//
//   EXPECT_TRUE(checkGradients("%x: tensor<3x4xf64>, %y: tensor<4xf64>",
//                              "%out = lcc.mul %x, %y : tensor<3x4xf64>, tensor<4xf64> -> tensor<3x4xf64>",
//                              "tensor<3x4xf64>"));
//
// The harness builds
//
//   func.func @f(<args>, %__w: <outType> {lcc.input = "__w"}) -> tensor<f64> {
//     <body>                                   // must define %out of type <outType>
//     %l = reduce_sum(%out * %__w)             // all axes; rank-0 out is used as is
//     return %l
//   }
//
// with a fixed random weight %__w (uniform in [-1, 1), so every output
// element matters with a different weight). Every float argument becomes a
// trainable parameter ({lcc.param = "<name without %>"}) unless the argument
// text already carries {lcc.frozen} (then it gets no gradient and is not
// checked) or {lcc.input = ...} (a plain input). Non-float arguments (ids,
// masks) are inputs. The harness then runs `lcc-autodiff{function=f}`,
// JIT-compiles @f and @f_grad once, evaluates the gradients with @f_grad and
// compares each checked entry with a finite difference of @f.
//
// Finite differences (fp64): by default the fourth-order central stencil
//   fd = (8 (f(x+h) - f(x-h)) - (f(x+2h) - f(x-2h))) / (12 h),   h = 1e-3,
// whose truncation error is O(h^4) (~1e-12 for smooth ops) and whose
// rounding error is ~1e-16 |f| / h, so errors well below 1e-6 are resolvable.
// `points = 2` selects the plain central difference (f(x+h) - f(x-h)) / 2h.
// Inputs must be at least 2h away from kinks (relu at 0, ties of max/min):
// use `minAbs`, or pass explicit `inputs`.
//
// Error metric (stated once, used everywhere):
//   err_i = |ad_i - fd_i| / max(|ad_i|, |fd_i|, floor)        (floor = 1e-3)
// i.e. the relative error for gradient entries above `floor` and the
// absolute error scaled by 1/floor below it (tiny entries are dominated by
// FD rounding, a relative error there means nothing). The check passes when
// max_i err_i <= tol (1e-6) over every checked entry of every parameter.
// At most `maxEntries` entries per parameter are checked (a fixed random
// sample when the parameter is larger; all of them otherwise).
//
// Also checked: @f_grad returns (loss, one gradient per trainable parameter
// in argument order), each gradient has its parameter's type and carries
// {lcc.grad_of = "<name>"}, and the returned loss equals @f's.
//
// API stability: the other grad tests (test/unit/grad/Nn*Test.cpp) use this
// header; fields are only ever added to the option/report structs.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_TEST_UNIT_GRAD_GRADCHECK_H
#define LCC_TEST_UNIT_GRAD_GRADCHECK_H

#include "runtime/support/HostTensor.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace lcc::gradcheck {

struct GradCheckOptions {
  /// Finite-difference step (absolute) and stencil: 4 (O(h^4), default) or 2.
  double h = 1e-3;
  int points = 4;
  /// Pass threshold on max err_i, and the floor of the error denominator.
  double tol = 1e-6;
  double floor = 1e-3;
  /// Entries checked per parameter (a seeded random sample when larger).
  int maxEntries = 200;
  /// Seeds the inputs, the loss weights and the entry sample.
  uint64_t seed = 1;
  /// Random float inputs: uniform in [lo, hi); with minAbs > 0, values with
  /// |x| < minAbs are redrawn (keeps relu & co. away from their kink).
  double lo = -2.0, hi = 2.0, minAbs = 0.0;
  /// Per-argument range overrides, by argument name without '%'.
  std::map<std::string, std::pair<double, double>> ranges;
  /// Random integer inputs (ids): uniform in [intLo, intHi).
  int64_t intLo = 0, intHi = 4;
  /// Explicit values by argument name without '%' (any element type; they
  /// must match the argument type). Overrides the generators.
  std::map<std::string, HostTensor> inputs;
  /// Called on the module after lcc-autodiff and before compilation; lets the
  /// harness tests plant a wrong gradient to prove the check can fail.
  std::function<void(mlir::ModuleOp)> afterAutodiff;
  /// Attention (and its gradient) through the runtime's fused kernels
  /// (lcc --attention=fused) instead of its decomposition.
  bool fusedAttention = false;
};

/// Per-parameter outcome (parameters in argument order).
struct ParamReport {
  std::string name;
  int64_t checked = 0;       // entries compared
  double maxErr = 0.0;       // max err_i (see the file comment)
  int64_t worstIndex = -1;   // linear index of the worst entry
  double worstAd = 0.0, worstFd = 0.0;
};

struct GradCheckReport {
  bool ok = false;
  std::string error;         // why the check could not run or failed (empty when ok)
  std::vector<ParamReport> params;
  double maxErr = 0.0;       // over all parameters
};

/// Checks the VJPs of the ops in `body` (see the file comment). `args` is an
/// MLIR argument list such as "%x: tensor<3x4xf64>, %ids: tensor<3xi64>",
/// argument attributes allowed ("%w: tensor<4xf64> {lcc.frozen}").
GradCheckReport runGradCheck(const std::string &args, const std::string &body,
                             const std::string &outType, const GradCheckOptions &options = {});

/// gtest wrapper of runGradCheck: success carries "max err <e>", failure the
/// per-parameter errors, the worst entries and the module text.
::testing::AssertionResult checkGradients(const std::string &args, const std::string &body,
                                          const std::string &outType,
                                          const GradCheckOptions &options = {});

/// Lower level: `moduleSource` already has a function `function` with
/// {lcc.param}-annotated arguments returning a rank-0 f64 loss (a whole
/// model in f64, say). Arguments without an entry in options.inputs are
/// generated as above. Used by runGradCheck and by whole-model checks.
GradCheckReport runModuleGradCheck(const std::string &moduleSource, const std::string &function,
                                   const GradCheckOptions &options = {});

/// An f64 tensor of distinct values offset + spacing * (k - n/2) (k = 0..n-1,
/// integer n/2: tensors of any size share the grid offset + spacing * Z) in
/// a seeded random order: inputs for max/min-like ops whose
/// selected element must not change within the FD stencil.
HostTensor separatedValues(const std::vector<int64_t> &shape, uint64_t seed, double offset = 0.0,
                           double spacing = 0.1);

/// Runs lcc-autodiff{function=<function>} on `moduleSource` and calls
/// @<function>_grad with `args` (no finite differences): for exact checks at
/// points where FD is meaningless (ties of max/min, kinks). Empty with
/// `*error` set on any failure.
std::vector<HostTensor> runGradFunction(const std::string &moduleSource,
                                        const std::string &function,
                                        const std::vector<HostTensor> &args, std::string *error);

/// Runs only lcc-autodiff on `moduleSource`; returns the printed module, or
/// "" with the diagnostics in `*diagnostics` when the pass fails.
std::string runAutodiff(const std::string &moduleSource, const std::string &function,
                        std::string *diagnostics);

/// Formats a report as a gtest result (shared by the wrappers).
::testing::AssertionResult toAssertion(const GradCheckReport &report);

} // namespace lcc::gradcheck

#endif // LCC_TEST_UNIT_GRAD_GRADCHECK_H
