//===- DslTestUtil.h - helpers shared by the DSL frontend tests -*- C++ -*-===//
#ifndef LCC_TEST_UNIT_DSL_DSLTESTUTIL_H
#define LCC_TEST_UNIT_DSL_DSLTESTUTIL_H

#include "dialects/lcc/LccDialect.h"
#include "frontends/dsl/Importer.h"
#include "mlir/IR/MLIRContext.h"
#include <fstream>
#include <sstream>
#include <string>

namespace lcc::dsl::test {

inline std::string readExample(const std::string &name) {
  std::ifstream in(std::string(LCC_SOURCE_DIR) + "/examples/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The diagnostic of a source that must fail to import, or "<imported>".
inline std::string importError(const std::string &source, const ImportOptions &options = {}) {
  mlir::MLIRContext ctx;
  ctx.loadDialect<lcc::LccDialect>();
  auto module = importDsl(source, "t.lcc", ctx, options);
  if (module)
    return "<imported>";
  return llvm::toString(module.takeError());
}

} // namespace lcc::dsl::test

#endif
