//===- OutlineKernels.cpp - loop nests become kernel functions ------------===//
//
// See Passes.td (lcc-outline-kernels) for what and why. The outlined body is
// a clone of the op; its operands and the values its regions capture become
// kernel arguments in first-use order, constants are rematerialized inside.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SetVector.h"

namespace lcc {
#define GEN_PASS_DEF_LCCOUTLINEKERNELSPASS
#include "passes/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {

/// Values defined outside `op` that it or its regions use.
llvm::SetVector<Value> capturedValues(Operation *op) {
  auto inside = [&](Value v) {
    if (Operation *def = v.getDefiningOp())
      return op->isAncestor(def);
    return op->isAncestor(v.getParentRegion()->getParentOp());
  };
  llvm::SetVector<Value> out;
  op->walk<WalkOrder::PreOrder>([&](Operation *inner) { // operands first, then captures
    for (Value v : inner->getOperands())
      if (!inside(v))
        out.insert(v);
  });
  return out;
}

bool isCloneableConstant(Value v) {
  Operation *def = v.getDefiningOp();
  return def && def->hasTrait<OpTrait::ConstantLike>() && def->getNumOperands() == 0 &&
         def->getNumRegions() == 0;
}

LogicalResult outline(Operation *op, func::FuncOp parent, unsigned index,
                      OpBuilder &moduleBuilder) {
  llvm::SetVector<Value> captured = capturedValues(op);
  SmallVector<Value> args;
  for (Value v : captured)
    if (!isCloneableConstant(v))
      args.push_back(v);
  SmallVector<Type> argTypes;
  for (Value v : args)
    argTypes.push_back(v.getType());
  auto type = FunctionType::get(op->getContext(), argTypes, op->getResultTypes());
  std::string name = (parent.getSymName() + "_k" + llvm::Twine(index)).str();
  if (SymbolTable::lookupNearestSymbolFrom(parent, moduleBuilder.getStringAttr(name)))
    return op->emitError() << "lcc-outline-kernels: cannot outline into @" << name
                           << ", a symbol of that name exists";
  auto kernel = func::FuncOp::create(moduleBuilder, op->getLoc(), name, type);
  kernel.setPrivate();
  kernel->setAttr("lcc.kernel", moduleBuilder.getUnitAttr());
  // Inlined back, the kernels would rebuild the one huge function this pass
  // exists to avoid (LLVM inlines a private function with one call site).
  kernel->setAttr("passthrough", moduleBuilder.getStrArrayAttr({"noinline"}));

  Block *entry = kernel.addEntryBlock();
  OpBuilder b = OpBuilder::atBlockBegin(entry);
  IRMapping map;
  for (auto [v, arg] : llvm::zip(args, entry->getArguments()))
    map.map(v, arg);
  for (Value v : captured)
    if (isCloneableConstant(v))
      map.map(v, b.clone(*v.getDefiningOp())->getResult(0));
  Operation *body = b.clone(*op, map);
  func::ReturnOp::create(b, op->getLoc(), body->getResults());

  OpBuilder at(op);
  auto call = func::CallOp::create(at, op->getLoc(), kernel, args);
  op->replaceAllUsesWith(call.getResults());
  op->erase();
  return success();
}

struct LccOutlineKernelsPass : lcc::impl::LccOutlineKernelsPassBase<LccOutlineKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    OpBuilder moduleBuilder = OpBuilder::atBlockEnd(module.getBody());
    SmallVector<func::FuncOp> functions;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn.isPublic() && !fn.isExternal())
        functions.push_back(fn);
    for (func::FuncOp fn : functions) {
      SmallVector<Operation *> nests;
      for (Operation &op : fn.getBody().getOps())
        if (op.getNumRegions() > 0)
          nests.push_back(&op);
      unsigned index = 0;
      for (Operation *op : nests)
        if (failed(outline(op, fn, index++, moduleBuilder)))
          return signalPassFailure();
    }
  }
};

} // namespace
