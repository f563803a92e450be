//===- LccDialect.cpp - the lcc dialect -----------------------------------===//
#include "dialects/lcc/LccDialect.h"
#include "dialects/lcc/LccOps.h"

using namespace mlir;
using namespace lcc;

#include "dialects/lcc/LccDialect.cpp.inc"

void LccDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/lcc/LccOps.cpp.inc"
      >();
}

Operation *LccDialect::materializeConstant(OpBuilder &builder, Attribute value, Type type,
                                           Location loc) {
  auto elements = llvm::dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}
