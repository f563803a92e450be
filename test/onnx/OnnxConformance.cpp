//===- OnnxConformance.cpp - the ONNX backend node tests through lcc ------===//
//
// lcc-onnx-conformance DIR [--filter SUBSTRING] [--verbose] [--list-failures]
//                           [--expect-passing FILE]
//
// For every DIR/test_*/ (model.onnx + test_data_set_0/{input,output}_N.pb, as
// Debian's libonnx-testdata ships them): import the graph, compile it with
// the CPU JIT, run it on the inputs and compare with the expected outputs the
// way ONNX's own runner does (same dtype and shape; |out - ref| <= atol +
// rtol * |ref| with rtol 1e-3, atol 1e-7; NaN equals NaN).
//
// Inputs that an op needs at compile time (shapes, axes: lcc shapes are
// static) are given to the importer as constants, the way onnx-mlir's
// CONSTANT_INPUT mode runs these tests; everything else is a run-time input.
//
// A test is "unsupported" when the importer reports UnsupportedOnnxError (an
// op, type or attribute lcc does not import), "failed" on any other error or
// a mismatch. Prints the counts; exits 1 when any test failed.
//
//===----------------------------------------------------------------------===//
#include "compiler/cpu/JitExecutor.h"
#include "frontends/onnx/OnnxImporter.h"
#include "frontends/onnx/OnnxModel.h"

#include "lcc_onnx.pb.h"

#include "dialects/lcc/LccDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace lcc;
using namespace lcc::onnx_import;

namespace {

enum class Outcome { Passed, Failed, Unsupported };

struct Result {
  Outcome outcome;
  std::string detail;
};

std::string compare(const HostTensor &got, const HostTensor &want, size_t index) {
  std::string which = "output " + std::to_string(index);
  if (got.elementType() != want.elementType())
    return which + ": element type " + elementTypeName(got.elementType()) + ", expected " +
           elementTypeName(want.elementType());
  if (got.shape() != want.shape())
    return which + ": shape differs from the expected one";
  for (int64_t i = 0; i < want.numElements(); ++i) {
    double g = got.getDouble(i), w = want.getDouble(i);
    if (std::isnan(g) && std::isnan(w))
      continue;
    if (got.elementType() == ElementType::I64 &&
        got.data<int64_t>()[i] == want.data<int64_t>()[i])
      continue;
    if (!(std::fabs(g - w) <= 1e-7 + 1e-3 * std::fabs(w)) && g != w)
      return which + ": element " + std::to_string(i) + " is " + std::to_string(g) +
             ", expected " + std::to_string(w);
  }
  return "";
}

Result runTest(const std::string &dir) {
  auto fail = [](std::string why) { return Result{Outcome::Failed, std::move(why)}; };
  auto model = loadOnnxModel(dir + "/model.onnx");
  if (!model) {
    std::string message = llvm::toString(model.takeError());
    // Opsets outside what lcc imports are unsupported, not failures.
    bool opset = message.find("opset") != std::string::npos;
    return {opset ? Outcome::Unsupported : Outcome::Failed, message};
  }
  const onnx::GraphProto &g = model->proto->graph();
  std::string data = dir + "/test_data_set_0";

  // Graph inputs in order, with the values of the test.
  std::map<std::string, HostTensor> given;
  std::vector<std::string> inputNames;
  for (int i = 0; i < g.input_size(); ++i) {
    if (!g.input(i).type().has_tensor_type())
      return {Outcome::Unsupported, "input " + g.input(i).name() + " is not a tensor"};
    auto t = loadTensorFile(data + "/input_" + std::to_string(i) + ".pb");
    if (!t)
      return {Outcome::Unsupported, llvm::toString(t.takeError())};
    given[g.input(i).name()] = std::move(*t);
    inputNames.push_back(g.input(i).name());
  }
  std::vector<HostTensor> expected;
  for (int i = 0; i < g.output_size(); ++i) {
    if (!g.output(i).type().has_tensor_type())
      return {Outcome::Unsupported, "output " + g.output(i).name() + " is not a tensor"};
    auto t = loadTensorFile(data + "/output_" + std::to_string(i) + ".pb");
    if (!t)
      return {Outcome::Unsupported, llvm::toString(t.takeError())};
    expected.push_back(std::move(*t));
  }

  ImportOptions options;
  options.functionName = "graph";
  for (const onnx::NodeProto &node : g.node())
    for (int i = 0; i < node.input_size(); ++i)
      if (given.count(node.input(i)) &&
          isConstantOperand(node.op_type(), model->opset, unsigned(i)))
        options.constantInputs[node.input(i)] = given[node.input(i)];

  mlir::MLIRContext context;
  context.disableMultithreading(); // one JIT per test; threads cost more than they give
  auto imported = importOnnx(*model, context, options);
  if (!imported) {
    bool unsupported = imported.errorIsA<UnsupportedOnnxError>();
    std::string message = llvm::toString(imported.takeError());
    return {unsupported ? Outcome::Unsupported : Outcome::Failed, message};
  }
  mlir::ModuleOp module = *imported->module;
  auto fn = module.lookupSymbol<mlir::func::FuncOp>("graph");
  std::vector<HostTensor> args;
  for (unsigned a = 0; a < fn.getNumArguments(); ++a) {
    auto name = fn.getArgAttrOfType<mlir::StringAttr>(a, "lcc.input");
    if (!name)
      return fail("argument " + std::to_string(a) + " is not a graph input");
    args.push_back(given[name.str()]);
  }
  auto jit = CpuJit::compile(module);
  if (!jit)
    return fail("compiling: " + llvm::toString(jit.takeError()));
  auto results = (*jit)->call("graph", args);
  if (!results)
    return fail("running: " + llvm::toString(results.takeError()));
  if (results->size() != expected.size())
    return fail("output count differs");
  for (size_t i = 0; i < expected.size(); ++i)
    if (std::string m = compare((*results)[i], expected[i], i); !m.empty())
      return fail(m);
  return {Outcome::Passed, ""};
}

} // namespace

int main(int argc, char **argv) {
  std::string root, filter, expectFile;
  bool verbose = false, listFailures = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--filter" && i + 1 < argc)
      filter = argv[++i];
    else if (a == "--verbose")
      verbose = true;
    else if (a == "--list-failures")
      listFailures = true;
    else if (a == "--expect-passing" && i + 1 < argc)
      expectFile = argv[++i];
    else
      root = a;
  }
  if (root.empty()) {
    llvm::errs() << "usage: lcc-onnx-conformance DIR [--filter S] [--verbose] [--list-failures] "
                    "[--expect-passing FILE]\n";
    return 2;
  }
  std::vector<std::string> tests;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(root, ec), end; it != end && !ec; it.increment(ec)) {
    std::string name = llvm::sys::path::filename(it->path()).str();
    if (llvm::StringRef(name).starts_with("test_") && name.find(filter) != std::string::npos)
      tests.push_back(it->path());
  }
  if (ec || tests.empty()) {
    llvm::errs() << "lcc-onnx-conformance: no tests under " << root
                 << (ec ? ": " + ec.message() : std::string()) << "\n";
    return 2;
  }
  std::sort(tests.begin(), tests.end());
  int passed = 0, failed = 0, unsupported = 0;
  std::vector<std::string> failures;
  std::map<std::string, std::string> notPassing; // name -> why (for --expect-passing)
  for (const std::string &dir : tests) {
    Result r = runTest(dir);
    std::string name = llvm::sys::path::filename(dir).str();
    const char *tag = r.outcome == Outcome::Passed ? "PASS"
                      : r.outcome == Outcome::Failed ? "FAIL"
                                                     : "UNSUPPORTED";
    if (verbose || r.outcome == Outcome::Failed)
      llvm::outs() << tag << " " << name << (r.detail.empty() ? "" : ": " + r.detail) << "\n";
    (r.outcome == Outcome::Passed ? passed : r.outcome == Outcome::Failed ? failed : unsupported)++;
    if (r.outcome == Outcome::Failed)
      failures.push_back(name);
    if (r.outcome != Outcome::Passed)
      notPassing[name] = std::string(tag) + (r.detail.empty() ? "" : ": " + r.detail);
  }
  llvm::outs() << "ONNX node tests: " << passed << " passed, " << failed << " failed, "
               << unsupported << " unsupported, " << tests.size() << " total\n";
  if (listFailures)
    for (const std::string &f : failures)
      llvm::outs() << "  failed: " << f << "\n";
  // A test that passed before and is now unsupported is a regression too,
  // though not a failure: the list of tests known to pass catches it.
  int regressed = 0;
  if (!expectFile.empty()) {
    auto list = llvm::MemoryBuffer::getFile(expectFile);
    if (!list) {
      llvm::errs() << "lcc-onnx-conformance: cannot read " << expectFile << "\n";
      return 2;
    }
    llvm::SmallVector<llvm::StringRef> names;
    (*list)->getBuffer().split(names, '\n', -1, /*KeepEmpty=*/false);
    std::set<std::string> run;
    for (const std::string &dir : tests)
      run.insert(llvm::sys::path::filename(dir).str());
    for (llvm::StringRef name : names) {
      if (!run.count(name.str()))
        continue; // outside --filter
      if (auto it = notPassing.find(name.str()); it != notPassing.end()) {
        llvm::outs() << "REGRESSED " << name << " (listed in " << expectFile
                     << " as passing): " << it->second << "\n";
        ++regressed;
      }
    }
  }
  return failed || regressed ? 1 : 0;
}
