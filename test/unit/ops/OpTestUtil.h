//===- OpTestUtil.h - helpers for the numerical op tests --------*- C++ -*-===//
//
// Each test writes a tiny func.func in MLIR text, runs it through CpuJit and
// compares with ref::* (Reference.h).
//
// Float comparison (stated once, used everywhere):
//   normalized error = max_i |got_i - ref_i| / max(max_i |ref_i|, 1e-30)
// over the finite reference elements; it must be <= tol (f32: 1e-5,
// f64: 1e-12). Infinite reference elements must match exactly, NaN must be
// NaN. Integer and boolean results must match exactly.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_TEST_UNIT_OPS_OPTESTUTIL_H
#define LCC_TEST_UNIT_OPS_OPTESTUTIL_H

#include "Reference.h"
#include "compiler/cpu/JitExecutor.h"
#include "runtime/support/HostTensor.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include "gtest/gtest.h"

#include <random>
#include <string>
#include <vector>

namespace lcc::test {

constexpr double kTolF32 = 1e-5;
constexpr double kTolF64 = 1e-12;
inline double tolFor(ElementType t) { return t == ElementType::F64 ? kTolF64 : kTolF32; }

/// "tensor<2x3xf32>".
std::string tensorType(ElementType type, const std::vector<int64_t> &shape);

/// An MLIR dense i64 array attribute, e.g. "array<i64: 1, 0>".
inline std::string i64Array(const std::vector<int64_t> &v) {
  std::string s = "array<i64";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : ": ") + std::to_string(v[i]);
  return s + ">";
}

/// `func.func @main(%a0: argTypes[0], ...) -> resultTypes` whose body (which
/// may use %a0, %a1, ...) ends with `return <returned> : <resultTypes>`.
std::string makeFunc(const std::vector<std::string> &argTypes,
                     const std::vector<std::string> &resultTypes, const std::string &body,
                     const std::string &returned);

/// Parses `source` in the shared test context; null (with a test failure) on error.
mlir::OwningOpRef<mlir::ModuleOp> parse(const std::string &source);

/// Parses and JIT-compiles `source`; null (with a test failure) on error.
std::unique_ptr<CpuJit> compile(const std::string &source);

/// Parses and JIT-compiles `source`, then calls `function`. On any failure
/// the test gets a failure carrying the error text and the result is empty.
std::vector<HostTensor> run(const std::string &source, const std::vector<HostTensor> &args,
                            const std::string &function = "main");

/// Uniform random floats (or integers, for integer types) in [lo, hi).
HostTensor randomTensor(ElementType type, const std::vector<int64_t> &shape, std::mt19937 &rng,
                        double lo = -2.0, double hi = 2.0);
HostTensor randomInts(ElementType type, const std::vector<int64_t> &shape, std::mt19937 &rng,
                      int64_t lo, int64_t hi);

ref::Tensor toRef(const HostTensor &t);

/// See the file comment. `tol` <= 0 means exact comparison.
::testing::AssertionResult closeTo(const HostTensor &got, const ref::Tensor &want, double tol);

/// Runs a one-result function and compares it with `want` at `tol`.
::testing::AssertionResult runAndCompare(const std::string &source,
                                         const std::vector<HostTensor> &args,
                                         const ref::Tensor &want, double tol);

} // namespace lcc::test

#endif
