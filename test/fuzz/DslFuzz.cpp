//===- DslFuzz.cpp - libFuzzer target for the Transformer DSL -------------===//
//
// Any bytes, as the source text of a .lcc file -> lcc::dsl::importDsl (what
// the `lcc` driver runs on a .lcc input: lexer, parser, shape checker,
// importer into the lcc dialect). Must hold: either a one-line error comes
// back, or a module that mlir::verify accepts; never a crash, a sanitizer
// report, a hang or an unbounded allocation. An "internal error in the DSL
// importer" (Sema accepted what the op verifiers reject) is a finding too:
// Sema promises to reject everything the verifiers would.
// test/fuzz/CMakeLists.txt runs it from examples/*.lcc and the lit inputs.
//
//===----------------------------------------------------------------------===//
#include "frontends/dsl/Importer.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static mlir::MLIRContext *context = [] {
    auto *c = new mlir::MLIRContext();
    c->disableMultithreading();
    return c;
  }();
  // The driver reads a .lcc file null-terminated (MemoryBuffer); so does this.
  std::string source(reinterpret_cast<const char *>(data), size);
  lcc::dsl::ImportOptions options;
  auto module = lcc::dsl::importDsl(source, "fuzz.lcc", *context, options);
  if (!module) {
    std::string message = llvm::toString(module.takeError());
    // The importer's own words, at the start: the source's text is echoed
    // in other errors ("unexpected string \"internal error\"" is not one).
    if (message.rfind("fuzz.lcc:1:1: error: internal error in the DSL importer", 0) == 0) {
      llvm::errs() << "DslFuzz: Sema accepted a model the verifiers reject:\n" << message << "\n";
      std::abort();
    }
    return 0;
  }
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(context, [&](mlir::Diagnostic &d) {
    diagnostics += d.str() + "\n";
    return mlir::success();
  });
  if (mlir::failed(mlir::verify(**module))) {
    llvm::errs() << "DslFuzz: importDsl returned a module that does not verify:\n" << diagnostics;
    std::abort();
  }
  return 0;
}
