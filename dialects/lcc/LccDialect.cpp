//===- LccDialect.cpp - the lcc dialect -----------------------------------===//
#include "dialects/lcc/LccDialect.h"
#include "dialects/lcc/LccOps.h"

#include "mlir/Transforms/InliningUtils.h"

using namespace mlir;
using namespace lcc;

#include "dialects/lcc/LccDialect.cpp.inc"

namespace {
/// Every lcc op is a pure function of its operands (collectives included:
/// what they compute does not depend on where they are written), so a call
/// of a function of lcc ops (lcc-outline-layers' layers) may be inlined.
struct LccInlinerInterface : DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final { return true; }
  bool isLegalToInline(Region *, Region *, bool, IRMapping &) const final { return true; }
};
} // namespace

void LccDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/lcc/LccOps.cpp.inc"
      >();
  addInterfaces<LccInlinerInterface>();
}

Operation *LccDialect::materializeConstant(OpBuilder &builder, Attribute value, Type type,
                                           Location loc) {
  auto elements = llvm::dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}
