//===- PruneKernelArgs.cpp - kernels lose the arguments they never read ---===//
//
// See Passes.td (lcc-prune-kernel-args) for what and why. This runs on the
// LLVM dialect: only after the memref conversion are a descriptor's fields
// separate arguments, and only after folding the kernel's body is it known
// which of them it reads (its shapes are static, so mostly the aligned
// pointers).
//
//===----------------------------------------------------------------------===//
#include "passes/cpu/Passes.h"

#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/BitVector.h"

namespace lcc {
#define GEN_PASS_DEF_LCCPRUNEKERNELARGSPASS
#include "passes/cpu/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {

/// Erases `roots`' defining ops that are now dead, and then theirs: what
/// only computed the dropped arguments.
void eraseDeadProducers(SmallVector<Value> roots) {
  SmallVector<Operation *> worklist;
  for (Value v : roots)
    if (Operation *op = v.getDefiningOp())
      worklist.push_back(op);
  llvm::SmallPtrSet<Operation *, 32> erased;
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    if (erased.contains(op) || !isOpTriviallyDead(op))
      continue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        worklist.push_back(def);
    erased.insert(op);
    op->erase();
  }
}

/// `v` itself if it was built by llvm.insertvalue and read back by
/// llvm.extractvalue (how the conversion passes a descriptor's fields): then
/// the descriptor need not be built.
Value fieldSource(Value v) {
  while (auto extract = v.getDefiningOp<LLVM::ExtractValueOp>()) {
    ArrayRef<int64_t> at = extract.getPosition();
    Value container = extract.getContainer(), found;
    while (auto insert = container.getDefiningOp<LLVM::InsertValueOp>()) {
      ArrayRef<int64_t> written = insert.getPosition();
      if (written == at) {
        found = insert.getValue();
        break;
      }
      size_t common = std::min(written.size(), at.size());
      if (written.take_front(common) == at.take_front(common))
        break; // writes part of the field, or the field is part of what it writes
      container = insert.getContainer();
    }
    if (!found)
      return v;
    v = found;
  }
  return v;
}

struct LccPruneKernelArgsPass : lcc::impl::LccPruneKernelArgsPassBase<LccPruneKernelArgsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();

    // Kernels first, then the layer functions that call them: once their
    // kernels read only pointers, so do they.
    llvm::MapVector<Operation *, SmallVector<LLVM::CallOp>> calls;
    for (StringRef kind : {StringRef("lcc.kernel"), StringRef(lcc::kLayerAttr)})
      for (auto fn : module.getOps<LLVM::LLVMFuncOp>())
        if (fn->hasAttr(kind) && !fn.isExternal())
          calls[fn];
    if (calls.empty())
      return;
    SymbolTable symbols(module);
    bool failedUse = false;
    module.walk([&](Operation *op) {
      if (auto call = llvm::dyn_cast<LLVM::CallOp>(op)) {
        if (auto callee = call.getCallee())
          if (auto it = calls.find(symbols.lookup(*callee)); it != calls.end())
            it->second.push_back(call);
        return;
      }
      if (auto address = llvm::dyn_cast<LLVM::AddressOfOp>(op))
        if (Operation *target = symbols.lookup(address.getGlobalName()); calls.count(target)) {
          address.emitError() << "lcc-prune-kernel-args: the address of "
                              << (target->hasAttr("lcc.kernel") ? "kernel @" : "layer function @")
                              << address.getGlobalName()
                              << " is taken, so its calls cannot be rewritten";
          failedUse = true;
        }
    });
    if (failedUse)
      return signalPassFailure();

    // Folding the kernel's body resolves descriptor fields through the
    // insertvalue/extractvalue chains the conversion builds; the fields it
    // never reads are left without uses.
    RewritePatternSet patterns(ctx);
    for (RegisteredOperationName name : ctx->getRegisteredOperations())
      if (name.getDialectNamespace() == LLVM::LLVMDialect::getDialectNamespace())
        name.getCanonicalizationPatterns(patterns, ctx);
    FrozenRewritePatternSet frozen(std::move(patterns));

    for (auto &[op, sites] : calls) {
      auto kernel = llvm::cast<LLVM::LLVMFuncOp>(op);
      // Not converging is harmless: what was folded is still correct.
      (void)applyPatternsGreedily(kernel.getBody(), frozen);
      Block &entry = kernel.getBody().front();
      unsigned n = entry.getNumArguments();
      // lcc-parallel-dispatch finds the loop bounds as the last two arguments.
      unsigned keepFrom = kernel->hasAttr("lcc.parallel") ? n - std::min(n, 2u) : n;
      llvm::BitVector dead(n);
      for (unsigned i = 0; i < keepFrom; ++i)
        dead[i] = entry.getArgument(i).use_empty();
      if (dead.any()) {
        // By hand: FunctionOpInterface::eraseArguments cannot rebuild the type
        // of an LLVM function returning void.
        LLVM::LLVMFunctionType type = kernel.getFunctionType();
        SmallVector<Type> inputs;
        SmallVector<Attribute> argAttrs;
        ArrayAttr oldAttrs = kernel.getArgAttrsAttr();
        for (unsigned i = 0; i < n; ++i)
          if (!dead[i]) {
            inputs.push_back(type.getParamType(i));
            if (oldAttrs)
              argAttrs.push_back(oldAttrs[i]);
          }
        kernel.setFunctionType(
            LLVM::LLVMFunctionType::get(type.getReturnType(), inputs, type.isVarArg()));
        if (oldAttrs)
          kernel.setArgAttrsAttr(ArrayAttr::get(ctx, argAttrs));
        entry.eraseArguments(dead);
      }
      // Each call's arguments are set once (erasing them one by one moves
      // the ones after each: quadratic in a layer call's hundreds).
      for (LLVM::CallOp call : sites) {
        SmallVector<Value> dropped, kept;
        for (auto [i, arg] : llvm::enumerate(call.getArgOperands())) {
          Value source = dead[i] ? Value() : fieldSource(arg);
          if (source != arg)
            dropped.push_back(arg);
          if (source)
            kept.push_back(source);
        }
        call.getCalleeOperandsMutable().assign(kept);
        eraseDeadProducers(std::move(dropped));
      }
    }
  }
};

} // namespace
