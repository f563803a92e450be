//===- OutlineKernels.cpp - loop nests become kernel functions ------------===//
//
// See Passes.td (lcc-outline-kernels) for what and why. The outlined body is
// a clone of the op; its operands and the values its regions capture become
// kernel arguments in first-use order, constants are rematerialized inside.
//
//===----------------------------------------------------------------------===//
#include "passes/kernels/LoopNest.h"
#include "passes/kernels/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"

namespace lcc {
#define GEN_PASS_DEF_LCCOUTLINEKERNELSPASS
#include "passes/kernels/Passes.h.inc"
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

/// Constants are rematerialized in the kernel. For the GPU so are constant
/// globals (their host address means nothing on the device; lcc-gpu-kernels
/// copies the global into the device module). On the CPU, an integer
/// constant that no instruction can take as an immediate (x86's are 32-bit)
/// is an argument instead: it lives in a register either way, and kernels
/// that differ only in such values (the random initializers' seeds, one per
/// parameter) are then one kernel, compiled once.
bool isCloneableConstant(Value v, bool gpu) {
  Operation *def = v.getDefiningOp();
  if (gpu && llvm::isa_and_nonnull<memref::GetGlobalOp>(def))
    return true;
  if (!def || !def->hasTrait<OpTrait::ConstantLike>() || def->getNumOperands() != 0 ||
      def->getNumRegions() != 0)
    return false;
  APInt value;
  return gpu || !v.getType().isInteger(64) || !matchPattern(v, m_ConstantInt(&value)) ||
         value.isSignedIntN(32);
}

/// The loop dimension of a linalg op whose iterations can run on different
/// threads, or -1: a static parallel dimension that indexes every output (so
/// different iterations write different elements). The outermost one with at
/// least 8 iterations (contiguous chunks, few of them), else the largest.
int64_t splitDimension(linalg::LinalgOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t best = -1;
  for (int64_t d = 0; d < int64_t(ranges.size()); ++d) {
    if (ShapedType::isDynamic(ranges[d]) || ranges[d] < 2 || !lcc::ownsOutputs(op, unsigned(d)))
      continue;
    if (ranges[d] >= 8)
      return d;
    if (best < 0 || ranges[d] > ranges[best])
      best = d;
  }
  return best;
}

/// Scalar operations one execution of `op` performs: iterations times the
/// ops of its body (a rough cost, to decide whether splitting pays).
int64_t workOf(linalg::LinalgOp op) {
  int64_t iterations = 1;
  for (int64_t r : op.getStaticLoopRanges()) {
    if (ShapedType::isDynamic(r))
      return 0;
    iterations *= r;
  }
  int64_t body = 1;
  for (Block &b : op->getRegion(0))
    body += int64_t(b.getOperations().size());
  return iterations * body;
}

/// The kernel's text without its name: equal keys, interchangeable kernels.
std::string kernelKey(func::FuncOp kernel) {
  std::string name = kernel.getSymName().str(), key;
  kernel.setSymName("lcc_kernel");
  llvm::raw_string_ostream os(key);
  // Local scope: numbering values across the whole module for every kernel
  // printed would make this quadratic.
  kernel->print(os, OpPrintingFlags().printGenericOpForm().useLocalScope());
  kernel.setSymName(name);
  return key;
}

LogicalResult outline(Operation *op, func::FuncOp parent, unsigned index, OpBuilder &moduleBuilder,
                      int64_t minParallelWork, bool gpu, llvm::StringMap<func::FuncOp> &kernels,
                      SymbolTable &symbols) {
  llvm::SetVector<Value> captured = capturedValues(op);
  SmallVector<Value> args;
  for (Value v : captured)
    if (!isCloneableConstant(v, gpu))
      args.push_back(v);
  SmallVector<Type> argTypes;
  for (Value v : args)
    argTypes.push_back(v.getType());

  // Big enough kernels get the bounds of one parallel loop as two trailing
  // index arguments, so the caller (lcc-parallel-dispatch) can run parts of
  // it on different threads.
  auto linalgOp = llvm::dyn_cast<linalg::LinalgOp>(op);
  int64_t split = -1;
  if (!gpu && linalgOp && linalgOp.hasPureBufferSemantics() && minParallelWork > 0 &&
      workOf(linalgOp) >= minParallelWork)
    split = splitDimension(linalgOp);
  if (split >= 0)
    argTypes.append(2, moduleBuilder.getIndexType());

  auto type = FunctionType::get(op->getContext(), argTypes, op->getResultTypes());
  std::string name = (parent.getSymName() + "_k" + llvm::Twine(index)).str();
  // One symbol table for the whole pass: a lookup that scans the module per
  // kernel made this pass quadratic (37 s of GPT-2's compile).
  if (symbols.lookup(name))
    return op->emitError() << "lcc-outline-kernels: cannot outline into @" << name
                           << ", a symbol of that name exists";
  auto kernel = func::FuncOp::create(moduleBuilder, op->getLoc(), name, type);
  symbols.insert(kernel);
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
    if (isCloneableConstant(v, gpu))
      map.map(v, b.clone(*v.getDefiningOp())->getResult(0));
  Operation *body = b.clone(*op, map);
  func::ReturnOp::create(b, op->getLoc(), body->getResults());

  // Linalg kernels become loops here, in lcc's loop form (passes/kernels/LoopNest.h);
  // GPU kernels keep the linalg op for lcc-gpu-kernels to map onto threads.
  SmallVector<Value> callArgs(args);
  auto bodyOp = llvm::dyn_cast<linalg::LinalgOp>(body);
  if (bodyOp && !gpu) {
    FailureOr<SmallVector<scf::ForOp>> loops = lcc::lowerToLoopNest(b, bodyOp);
    if (failed(loops) && split >= 0)
      return op->emitError() << "lcc-outline-kernels: cannot lower the kernel to loops";
    if (split >= 0) {
      int64_t range = linalgOp.getStaticLoopRanges()[split];
      scf::ForOp loop = (*loops)[split];
      unsigned n = entry->getNumArguments();
      loop.setLowerBound(entry->getArgument(n - 2));
      loop.setUpperBound(entry->getArgument(n - 1));
      kernel->setAttr("lcc.parallel", moduleBuilder.getI64IntegerAttr(range));
      OpBuilder at(op);
      callArgs.push_back(arith::ConstantIndexOp::create(at, op->getLoc(), 0));
      callArgs.push_back(arith::ConstantIndexOp::create(at, op->getLoc(), range));
    }
  }

  // Layers repeat: a kernel equal to an earlier one (same body, same types)
  // is that one. LLVM then optimizes each distinct kernel once, which is most
  // of the compile time.
  auto [it, inserted] = kernels.try_emplace(kernelKey(kernel), kernel);
  if (!inserted) {
    symbols.erase(kernel);
    kernel = it->second;
  }

  OpBuilder at(op);
  auto call = func::CallOp::create(at, op->getLoc(), kernel, callArgs);
  op->replaceAllUsesWith(call.getResults());
  op->erase();
  return success();
}

struct LccOutlineKernelsPass : lcc::impl::LccOutlineKernelsPassBase<LccOutlineKernelsPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    OpBuilder moduleBuilder = OpBuilder::atBlockEnd(module.getBody());
    SmallVector<func::FuncOp> functions;
    for (auto fn : module.getOps<func::FuncOp>())
      if ((fn.isPublic() || fn->hasAttr(lcc::kLayerAttr)) && !fn.isExternal())
        functions.push_back(fn);
    llvm::StringMap<func::FuncOp> kernels;
    SymbolTable symbols(module);
    for (func::FuncOp fn : functions) {
      // A copy between strided views (concat, slices) is a loop nest too:
      // as a kernel it is compiled for its shapes and can run on threads,
      // where memref.copy would call the runtime's generic element loop.
      // On the GPU every copy is a kernel: the step's host code never
      // touches device memory.
      SmallVector<memref::CopyOp> copies;
      lcc::forEachStepBlock(fn.getBody(), [&](Block &block) {
        llvm::append_range(copies, block.getOps<memref::CopyOp>());
      });
      for (memref::CopyOp copy : copies) {
        auto from = llvm::dyn_cast<MemRefType>(copy.getSource().getType());
        auto to = llvm::dyn_cast<MemRefType>(copy.getTarget().getType());
        if (!from || !to || !from.hasStaticShape() ||
            (!gpu && memref::isStaticShapeAndContiguousRowMajor(from) &&
             memref::isStaticShapeAndContiguousRowMajor(to)))
          continue;
        OpBuilder b(copy);
        linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(), copy.getTarget());
        copy.erase();
      }
      // The step's loops over micro-batches stay; their bodies' nests are
      // kernels like the function's own.
      SmallVector<Operation *> nests;
      lcc::forEachStepBlock(fn.getBody(), [&](Block &block) {
        for (Operation &op : block)
          if (op.getNumRegions() > 0 && !lcc::isMicroBatchLoop(&op))
            nests.push_back(&op);
      });
      unsigned index = 0;
      for (Operation *op : nests)
        if (failed(outline(op, fn, index++, moduleBuilder, minParallelWork, gpu, kernels, symbols)))
          return signalPassFailure();
    }
  }
};

} // namespace
