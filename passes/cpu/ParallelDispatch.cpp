//===- ParallelDispatch.cpp - splittable kernels run on the thread pool ---===//
//
// See Passes.td (lcc-parallel-dispatch) for what and why. This runs on the
// LLVM dialect because only there can a call's arguments (memref
// descriptors expanded to pointers and integers) be stored to memory and
// loaded back in another function generically.
//
//===----------------------------------------------------------------------===//
#include "passes/cpu/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Matchers.h"

namespace lcc {
#define GEN_PASS_DEF_LCCPARALLELDISPATCHPASS
#include "passes/cpu/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {

bool isStorable(Type t) {
  return llvm::isa<LLVM::LLVMPointerType, IntegerType, FloatType>(t);
}

bool constantEquals(Value v, int64_t expected) {
  APInt value;
  return matchPattern(v, m_ConstantInt(&value)) && value.getSExtValue() == expected;
}

struct LccParallelDispatchPass
    : lcc::impl::LccParallelDispatchPassBase<LccParallelDispatchPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto i64 = IntegerType::get(ctx, 64);
    auto voidType = LLVM::LLVMVoidType::get(ctx);

    // One table: ModuleOp::lookupSymbol scans the module, per call.
    SymbolTable symbols(module);
    SmallVector<std::pair<LLVM::CallOp, LLVM::LLVMFuncOp>> calls;
    module.walk([&](LLVM::CallOp call) {
      auto callee = call.getCallee();
      if (!callee)
        return;
      auto kernel = symbols.lookup<LLVM::LLVMFuncOp>(*callee);
      if (kernel && kernel->hasAttr("lcc.parallel"))
        calls.emplace_back(call, kernel);
    });
    if (calls.empty())
      return;

    OpBuilder top = OpBuilder::atBlockEnd(module.getBody());
    auto runtime = module.lookupSymbol<LLVM::LLVMFuncOp>("lcc_parallel_for");
    if (!runtime)
      runtime = LLVM::LLVMFuncOp::create(top, module.getLoc(), "lcc_parallel_for",
                                         LLVM::LLVMFunctionType::get(voidType, {ptr, ptr, i64}));

    // An argument that is the same constant in every call of a kernel is
    // rebuilt in the kernel's task; every other argument is stored by the
    // caller and loaded by the task. So each kernel has one task: init's
    // fills (which differ only in their seeds) do not each get a task of
    // their own, which made the code grow with depth.
    // Per kernel and argument: the constant all its calls pass, or null.
    llvm::DenseMap<Operation *, SmallVector<Attribute>> shared;
    auto constantOf = [](Value v) -> Attribute {
      auto c = v.getDefiningOp<LLVM::ConstantOp>();
      return c ? c.getValue() : Attribute();
    };
    for (auto [call, kernel] : calls) {
      auto operands = call.getArgOperands();
      auto [it, first] = shared.try_emplace(kernel);
      if (first)
        llvm::append_range(it->second, llvm::map_range(operands, constantOf));
      for (auto [common, v] : llvm::zip_equal(it->second, operands))
        if (common != constantOf(v))
          common = Attribute();
    }

    // One argument array per calling function, as big as its largest call
    // needs: the calls run one after another, so they can share it.
    llvm::DenseMap<Operation *, unsigned> slotsNeeded;
    for (auto [call, kernel] : calls) {
      unsigned stored = unsigned(llvm::count(shared[kernel], Attribute()));
      unsigned &need = slotsNeeded[call->getParentOfType<LLVM::LLVMFuncOp>()];
      need = std::max(need, std::max(stored, 1u));
    }
    llvm::DenseMap<Operation *, Value> arrays;
    for (auto [fn, slots] : slotsNeeded) {
      auto f = llvm::cast<LLVM::LLVMFuncOp>(fn);
      OpBuilder b = OpBuilder::atBlockBegin(&f.getBody().front());
      Value count = LLVM::ConstantOp::create(b, f.getLoc(), i64, b.getI64IntegerAttr(slots));
      arrays[fn] = LLVM::AllocaOp::create(b, f.getLoc(), ptr, i64, count, /*alignment=*/8);
    }

    llvm::DenseMap<Operation *, LLVM::LLVMFuncOp> tasks;
    for (auto [call, kernel] : calls) {
      int64_t range = kernel->getAttrOfType<IntegerAttr>("lcc.parallel").getInt();
      auto operands = llvm::to_vector(call.getArgOperands());
      if (operands.size() < 2 || !constantEquals(operands[operands.size() - 2], 0) ||
          !constantEquals(operands.back(), range)) {
        call.emitError() << "lcc-parallel-dispatch: call to @" << kernel.getName()
                         << " must pass the loop bounds 0 and " << range << " as constants";
        return signalPassFailure();
      }
      operands.resize(operands.size() - 2);
      ArrayRef<Attribute> common = shared[kernel];
      auto isShared = [&](size_t i) { return static_cast<bool>(common[i]); };
      for (auto [i, v] : llvm::enumerate(operands))
        if (!isShared(i) && !isStorable(v.getType())) {
          call.emitError() << "lcc-parallel-dispatch: cannot pass a " << v.getType()
                           << " argument to a task";
          return signalPassFailure();
        }

      // The kernel's task, made at its first call: load the stored
      // arguments, rebuild the shared constants.
      LLVM::LLVMFuncOp &task = tasks[kernel];
      if (!task) {
        task = LLVM::LLVMFuncOp::create(top, call.getLoc(), (kernel.getName() + "_task").str(),
                                        LLVM::LLVMFunctionType::get(voidType, {ptr, i64, i64}),
                                        LLVM::Linkage::Internal);
        Block *entry = task.addEntryBlock(top);
        OpBuilder tb = OpBuilder::atBlockBegin(entry);
        SmallVector<Value> taskArgs;
        unsigned slot = 0;
        for (auto [i, v] : llvm::enumerate(operands)) {
          if (isShared(i)) {
            taskArgs.push_back(tb.clone(*v.getDefiningOp())->getResult(0));
            continue;
          }
          Value at = LLVM::GEPOp::create(tb, call.getLoc(), ptr, i64, entry->getArgument(0),
                                         ArrayRef<LLVM::GEPArg>{int32_t(slot++)});
          taskArgs.push_back(LLVM::LoadOp::create(tb, call.getLoc(), v.getType(), at));
        }
        taskArgs.push_back(entry->getArgument(1));
        taskArgs.push_back(entry->getArgument(2));
        LLVM::CallOp::create(tb, call.getLoc(), kernel, taskArgs);
        LLVM::ReturnOp::create(tb, call.getLoc(), ValueRange{});
      }

      // The call site: store, then hand the task to the pool.
      OpBuilder b(call);
      Value array = arrays[call->getParentOfType<LLVM::LLVMFuncOp>()];
      unsigned slot = 0;
      for (auto [i, v] : llvm::enumerate(operands)) {
        if (isShared(i))
          continue;
        Value at = LLVM::GEPOp::create(b, call.getLoc(), ptr, i64, array,
                                       ArrayRef<LLVM::GEPArg>{int32_t(slot++)});
        LLVM::StoreOp::create(b, call.getLoc(), v, at);
      }
      Value fn = LLVM::AddressOfOp::create(b, call.getLoc(), ptr, task.getName());
      Value n = LLVM::ConstantOp::create(b, call.getLoc(), i64, b.getI64IntegerAttr(range));
      LLVM::CallOp::create(b, call.getLoc(), runtime, ValueRange{fn, array, n});
      call.erase();
    }
  }
};

} // namespace
