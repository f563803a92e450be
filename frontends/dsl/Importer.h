//===- Importer.h - the Transformer DSL frontend's entry point -*- C++ -*-===//
//
// Source text in, model module (docs/architecture.md) out. The language is
// described in docs/dsl.md.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_FRONTENDS_DSL_IMPORTER_H
#define LCC_FRONTENDS_DSL_IMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <map>
#include <string>

namespace lcc::dsl {

struct ImportOptions {
  uint64_t seed = 1337;                     // global init seed
  std::map<std::string, int64_t> overrides; // config constants to override, e.g. {"batch", 8}
};

/// Parses, shape-checks and imports. On error returns an llvm::StringError whose
/// message is the full one-line diagnostic "FILE:LINE:COL: error: WHAT, WHY"
/// (no trailing newline).
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>> importDsl(llvm::StringRef source,
                                                            llvm::StringRef filename,
                                                            mlir::MLIRContext &context,
                                                            const ImportOptions &options);

/// The init seed of one parameter: FNV-1a (64-bit) over the 8 little-endian
/// bytes of `globalSeed` followed by the bytes of `paramName`, with the top bit
/// cleared so it prints as a non-negative i64. Depends on nothing else, so
/// adding a parameter never changes the others' initial values.
int64_t paramSeed(uint64_t globalSeed, llvm::StringRef paramName);

} // namespace lcc::dsl

#endif
