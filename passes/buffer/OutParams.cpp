//===- OutParams.cpp - results become caller-owned out-params ---------------===//
//
// The runtime of a train.bin owns all memory (parameters, optimizer state,
// outputs; later one planned arena), so compiled functions must not hand back
// buffers they allocated. Rewriting the ABI on tensors, before bufferization,
// lets one-shot bufferization place each result's final computation directly
// in the caller's buffer; the upstream buffer-results-to-out-params works after
// bufferization and can only copy (and crashed on our modules in 22.1).
//
//===----------------------------------------------------------------------===//
#include "passes/buffer/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace lcc {
#define GEN_PASS_DEF_LCCOUTPARAMSPASS
#include "passes/buffer/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {

/// `fn`'s return, once every result is a statically shaped ranked tensor
/// (what an out-param can hold); `kind` names the function in errors.
FailureOr<func::ReturnOp> outParamReturn(func::FuncOp fn, StringRef kind) {
  auto ret = llvm::dyn_cast<func::ReturnOp>(fn.getBody().front().getTerminator());
  if (!ret || !fn.getBody().hasOneBlock())
    return fn.emitError() << "lcc-out-params: " << kind << "@" << fn.getSymName()
                          << " must be one block ending in func.return";
  for (auto [i, t] : llvm::enumerate(fn.getResultTypes())) {
    auto tensor = llvm::dyn_cast<RankedTensorType>(t);
    if (!tensor || !tensor.hasStaticShape())
      return fn.emitError() << "lcc-out-params: result #" << i << " of " << kind << "@"
                            << fn.getSymName() << " has type " << t
                            << "; out-params need statically shaped ranked tensors";
  }
  return ret;
}

/// Appends one out-param per type to `fn`, `{lcc.result = i}` plus
/// `attrs[i]` (may be null). All at once: one argument at a time rebuilds the
/// signature each time (quadratic in a deep step's thousands of results).
LogicalResult appendOutParams(func::FuncOp fn, TypeRange types, ArrayRef<DictionaryAttr> attrs) {
  Builder b(fn.getContext());
  SmallVector<DictionaryAttr> argAttrs;
  for (auto [i, extra] : llvm::enumerate(attrs)) {
    SmallVector<NamedAttribute> list;
    if (extra)
      llvm::append_range(list, extra.getValue());
    list.push_back(b.getNamedAttr("lcc.result", b.getI64IntegerAttr(int64_t(i))));
    argAttrs.push_back(b.getDictionaryAttr(list));
  }
  SmallVector<unsigned> at(types.size(), fn.getNumArguments());
  SmallVector<Location> locs(types.size(), fn.getLoc());
  if (failed(fn.insertArguments(at, SmallVector<Type>(types), argAttrs, locs)))
    return fn.emitError() << "lcc-out-params: cannot add the out-params";
  return success();
}

LogicalResult rewriteFunction(func::FuncOp fn) {
  FailureOr<func::ReturnOp> found = outParamReturn(fn, "");
  if (failed(found))
    return failure();
  func::ReturnOp ret = *found;
  SmallVector<MemRefType> outTypes;
  for (Type t : fn.getResultTypes()) {
    auto tensor = llvm::cast<RankedTensorType>(t);
    outTypes.push_back(MemRefType::get(tensor.getShape(), tensor.getElementType()));
  }
  unsigned first = fn.getNumArguments();
  // Result attributes (lcc.param, lcc.output, ...) move to the out-params.
  SmallVector<DictionaryAttr> resultAttrs;
  for (unsigned i = 0; i < fn.getNumResults(); ++i)
    resultAttrs.push_back(fn.getResultAttrDict(i));

  OpBuilder b(ret);
  if (failed(appendOutParams(fn, SmallVector<Type>(outTypes.begin(), outTypes.end()),
                             resultAttrs)))
    return failure();
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    auto store = bufferization::MaterializeInDestinationOp::create(
        b, ret.getLoc(), TypeRange{}, value, fn.getArgument(first + i));
    // The caller's buffer aliases nothing the function reads (restrict) and
    // may be written (writable): what lets the producer write in place.
    store.setRestrict(true);
    store.setWritable(true);
  }
  func::ReturnOp::create(b, ret.getLoc());
  ret.erase();
  llvm::BitVector erase(fn.getNumResults(), true);
  if (failed(fn.eraseResults(erase)))
    return fn.emitError() << "lcc-out-params: cannot drop the results of @" << fn.getSymName();
  return success();
}

/// A layer function (lcc-outline-layers) in destination-passing style on
/// tensors: each result is stored into a new trailing tensor argument its
/// callers fill with a `tensor.empty`, so bufferization allocates what a
/// layer returns (the activations the backward keeps) in the caller, where
/// the memory plan sees its whole life, and the layer writes it in place.
/// The layer's own arguments are read-only (`bufferization.writable =
/// false`): a caller still reads them after the call (saved for the
/// backward), so writing one in place would cost the caller a copy.
LogicalResult rewriteLayer(func::FuncOp fn, ArrayRef<Operation *> uses) {
  FailureOr<func::ReturnOp> found = outParamReturn(fn, "layer ");
  if (failed(found))
    return failure();
  func::ReturnOp ret = *found;
  OpBuilder b(ret);
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (llvm::isa<TensorType>(fn.getArgument(i).getType()))
      fn.setArgAttr(i, "bufferization.writable", b.getBoolAttr(false));
  unsigned first = fn.getNumArguments();
  if (failed(appendOutParams(fn, SmallVector<Type>(fn.getResultTypes()),
                             SmallVector<DictionaryAttr>(fn.getNumResults()))))
    return failure();
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    auto store = bufferization::MaterializeInDestinationOp::create(
        b, ret.getLoc(), value.getType(), value, fn.getArgument(first + i));
    ret.setOperand(i, store.getResult());
  }
  for (Operation *user : uses) {
    auto call = llvm::dyn_cast<func::CallOp>(user);
    if (!call)
      return user->emitError() << "lcc-out-params: layer @" << fn.getSymName()
                               << " is used other than by a call";
    OpBuilder at(call);
    SmallVector<Value> operands(call.getOperands());
    for (Type t : call.getResultTypes()) {
      auto tensor = llvm::cast<RankedTensorType>(t);
      operands.push_back(tensor::EmptyOp::create(at, call.getLoc(), tensor.getShape(),
                                                 tensor.getElementType()));
    }
    call->setOperands(operands);
  }
  return success();
}

/// A layer call whose result the caller only stores into one of its own
/// out-params (the step's updated parameters, from the optimizer's layer
/// functions) writes it there itself: the call's out-param is that buffer
/// (a restrict, writable tensor of it), not a new one the caller would then
/// copy from.
void writeResultsInPlace(func::CallOp call) {
  OpBuilder at(call);
  unsigned first = call.getNumOperands() - call.getNumResults();
  for (auto [i, result] : llvm::enumerate(call.getResults())) {
    if (!result.hasOneUse())
      continue;
    auto store = llvm::dyn_cast<bufferization::MaterializeInDestinationOp>(*result.getUsers().begin());
    auto dest = store ? llvm::dyn_cast<BlockArgument>(store.getDest()) : BlockArgument();
    if (!dest || !llvm::isa<MemRefType>(dest.getType()) ||
        dest.getOwner() != &call->getParentOfType<func::FuncOp>().getBody().front())
      continue;
    Value empty = call.getOperand(first + i);
    auto tensor = bufferization::ToTensorOp::create(at, call.getLoc(), result.getType(), dest,
                                                    /*restrict=*/true, /*writable=*/true);
    call.setOperand(first + i, tensor);
    if (Operation *def = empty.getDefiningOp(); def && def->use_empty())
      def->erase();
  }
}

struct LccOutParamsPass : lcc::impl::LccOutParamsPassBase<LccOutParamsPass> {
  void runOnOperation() override {
    // Every function's users, in one walk (a walk per function was most of
    // this pass's time on a deep step).
    SymbolTable symbols(getOperation());
    llvm::DenseMap<Operation *, SmallVector<Operation *>> users;
    if (auto uses = SymbolTable::getSymbolUses(&getOperation().getBodyRegion()))
      for (const SymbolTable::SymbolUse &use : *uses)
        if (Operation *target = symbols.lookup(use.getSymbolRef().getRootReference()))
          users[target].push_back(use.getUser());
    SmallVector<Operation *> layerCalls;
    for (auto fn : llvm::make_early_inc_range(getOperation().getOps<func::FuncOp>())) {
      if (fn->hasAttr(lcc::kLayerAttr) && !fn.isExternal()) {
        if (failed(rewriteLayer(fn, users.lookup(fn))))
          return signalPassFailure();
        llvm::append_range(layerCalls, users.lookup(fn));
        continue;
      }
      if (!fn.isPublic() || fn.isExternal())
        continue;
      // A caller inside the module would need its call sites rewritten too;
      // lcc's model modules have no calls, so refuse rather than guess.
      if (!users.lookup(fn).empty()) {
        fn.emitError() << "lcc-out-params: @" << fn.getSymName()
                       << " is called inside the module; only entry points are supported";
        return signalPassFailure();
      }
      if (failed(rewriteFunction(fn)))
        return signalPassFailure();
    }
    // Once every function has its out-params (rewriteLayer checked these
    // are calls).
    for (Operation *call : layerCalls)
      writeResultsInPlace(llvm::cast<func::CallOp>(call));
  }
};

} // namespace
