//===- RuntimeCalls.cpp - ops that bufferize into runtime calls -----------===//
#include "dialects/lcc/lowering/RuntimeCalls.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/IR/BuiltinOps.h"

using namespace mlir;

namespace lcc::lowering {

FailureOr<func::FuncOp> declareRuntime(Operation *op, StringRef name, unsigned args,
                                       unsigned results) {
  auto module = op->getParentOfType<ModuleOp>();
  Builder b(op->getContext());
  auto type = b.getFunctionType(SmallVector<Type>(args, b.getI64Type()),
                                SmallVector<Type>(results, b.getI64Type()));
  if (Operation *existing = module.lookupSymbol(name)) {
    auto f = llvm::dyn_cast<func::FuncOp>(existing);
    if (f && f.getFunctionType() == type)
      return f;
    return existing->emitError() << "@" << name
                                 << " is defined with another signature than the runtime's "
                                    "(runtime/dist/Collectives.h, runtime/cpu/Attention.h)";
  }
  // Before the first function with a body, in name order among the other
  // declarations, whatever order the ops that need them are lowered in
  // (one-shot bufferization's order of functions varies from run to run,
  // and so did the module lcc printed); what else leads the module (the
  // constants bufferization makes globals) goes to its very front.
  Block *body = module.getBody();
  auto before = llvm::find_if(*body, [&](Operation &o) {
    auto g = llvm::dyn_cast<func::FuncOp>(o);
    return g && (!g.isExternal() || g.getSymName() > name);
  });
  OpBuilder ob(body, before);
  auto f = func::FuncOp::create(ob, module.getLoc(), name, type);
  f.setPrivate();
  return f;
}

Value bufferAddress(OpBuilder &b, Location loc, Value buf) {
  auto type = llvm::cast<MemRefType>(buf.getType());
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buf);
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, buf);
  int64_t bytes = std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
  Value offset = arith::MulIOp::create(b, loc, meta.getOffset(),
                                       arith::ConstantIndexOp::create(b, loc, bytes));
  Value addr = arith::AddIOp::create(b, loc, base, offset);
  return arith::IndexCastOp::create(b, loc, b.getI64Type(), addr);
}

Value contiguousBuffer(OpBuilder &b, Location loc, Value buf) {
  auto type = llvm::cast<MemRefType>(buf.getType());
  if (memref::isStaticShapeAndContiguousRowMajor(type))
    return buf;
  Value tmp =
      memref::AllocOp::create(b, loc, MemRefType::get(type.getShape(), type.getElementType()));
  memref::CopyOp::create(b, loc, buf, tmp);
  return tmp;
}

Value i64Constant(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIntOp::create(b, loc, v, 64);
}

} // namespace lcc::lowering
