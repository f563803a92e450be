//===- EmulatedKernelTable.cpp - launch ids to emulated kernels -----------===//
//
// See Passes.td (lcc-emulated-kernel-table). After lcc-emulate-gpu-kernels
// and the lowering to the LLVM dialect, each emulated kernel is an llvm.func
// taking its memrefs as expanded descriptors. The emulator launches kernel
// `id` with the host code's argv of bare device pointers, as the GPU would,
// so this pass gives every kernel a wrapper `void (void **argv)` that builds
// the descriptors from the static layouts the kernel was compiled for (the
// offset too: on a GPU the kernel applies its static offset to the bare
// pointer) and exports, by launch id:
//
//   lcc_emu_kernels       [N x ptr]  the wrappers
//   lcc_emu_kernel_sync   [N x i8]   1: the kernel synchronizes its threads
//                                    (barriers, shuffles)
//   lcc_emu_kernel_count  i64        N
//
//===----------------------------------------------------------------------===//
#include "passes/gpu/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#include <set>
#include <string>

namespace lcc {
#define GEN_PASS_DEF_LCCEMULATEDKERNELTABLEPASS
#include "passes/gpu/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {

struct LccEmulatedKernelTablePass
    : lcc::impl::LccEmulatedKernelTablePassBase<LccEmulatedKernelTablePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto names = module->getAttrOfType<ArrayAttr>("lcc.gpu_kernels");
    if (!names)
      return;
    std::set<std::string> synchronizing;
    if (auto sync = module->getAttrOfType<ArrayAttr>("lcc.gpu_synchronizing"))
      for (Attribute a : sync)
        synchronizing.insert(llvm::cast<StringAttr>(a).str());
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto i64 = IntegerType::get(ctx, 64);
    auto voidTy = LLVM::LLVMVoidType::get(ctx);
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    SmallVector<std::string> wrappers;
    SmallVector<int8_t> sync;
    for (auto [id, a] : llvm::enumerate(names)) {
      StringRef name = llvm::cast<StringAttr>(a).getValue();
      auto kernel = module.lookupSymbol<LLVM::LLVMFuncOp>(name);
      auto types = kernel ? kernel->getAttrOfType<ArrayAttr>("lcc.kernel_args") : ArrayAttr();
      if (!types) {
        module.emitError() << "lcc-emulated-kernel-table: kernel @" << name
                           << " is not an emulated kernel lowered to LLVM";
        return signalPassFailure();
      }
      Location loc = kernel.getLoc();
      std::string wrapper = "lcc_emu_argv_" + std::to_string(id);
      auto fn = LLVM::LLVMFuncOp::create(b, loc, wrapper, LLVM::LLVMFunctionType::get(voidTy, {ptr}));
      fn.setLinkage(LLVM::Linkage::Internal);
      OpBuilder fb = OpBuilder::atBlockBegin(fn.addEntryBlock(b));
      Value argv = fn.getArgument(0);
      auto constant = [&](int64_t v) -> Value {
        return LLVM::ConstantOp::create(fb, loc, i64, fb.getI64IntegerAttr(v));
      };
      SmallVector<Value> operands;
      for (auto [i, t] : llvm::enumerate(types)) {
        auto memref = llvm::dyn_cast<MemRefType>(llvm::cast<TypeAttr>(t).getValue());
        int64_t offset;
        SmallVector<int64_t> strides;
        if (!memref || !memref.hasStaticShape() ||
            failed(memref.getStridesAndOffset(strides, offset)) ||
            ShapedType::isDynamic(offset) || llvm::any_of(strides, ShapedType::isDynamic)) {
          kernel.emitError() << "lcc-emulated-kernel-table: argument " << i << " of @" << name
                             << " has no static layout";
          return signalPassFailure();
        }
        Value slot = LLVM::GEPOp::create(fb, loc, ptr, ptr, argv,
                                         ArrayRef<LLVM::GEPArg>{int32_t(i)});
        Value p = LLVM::LoadOp::create(fb, loc, ptr, slot);
        operands.append({p, p, constant(offset)});
        for (int64_t size : memref.getShape())
          operands.push_back(constant(size));
        for (int64_t stride : strides)
          operands.push_back(constant(stride));
      }
      if (operands.size() != kernel.getNumArguments()) {
        kernel.emitError() << "lcc-emulated-kernel-table: @" << name << " takes "
                           << kernel.getNumArguments() << " values, its memrefs expand to "
                           << operands.size();
        return signalPassFailure();
      }
      LLVM::CallOp::create(fb, loc, kernel, operands);
      LLVM::ReturnOp::create(fb, loc, ValueRange{});
      wrappers.push_back(wrapper);
      sync.push_back(synchronizing.count(name.str()) ? 1 : 0);
    }

    Location loc = module.getLoc();
    int64_t n = int64_t(wrappers.size());
    auto tableType = LLVM::LLVMArrayType::get(ptr, uint64_t(n));
    auto table = LLVM::GlobalOp::create(b, loc, tableType, /*isConstant=*/true,
                                        LLVM::Linkage::External, "lcc_emu_kernels", Attribute());
    {
      OpBuilder ib = OpBuilder::atBlockBegin(b.createBlock(&table.getInitializerRegion()));
      Value array = LLVM::UndefOp::create(ib, loc, tableType);
      for (auto [i, w] : llvm::enumerate(wrappers)) {
        Value address = LLVM::AddressOfOp::create(ib, loc, ptr, w);
        array = LLVM::InsertValueOp::create(ib, loc, array, address, ArrayRef<int64_t>{int64_t(i)});
      }
      LLVM::ReturnOp::create(ib, loc, array);
    }
    b.setInsertionPointToEnd(module.getBody());
    auto i8 = IntegerType::get(ctx, 8);
    auto syncType = LLVM::LLVMArrayType::get(i8, uint64_t(n));
    LLVM::GlobalOp::create(
        b, loc, syncType, /*isConstant=*/true, LLVM::Linkage::External, "lcc_emu_kernel_sync",
        DenseElementsAttr::get(RankedTensorType::get({n}, i8), ArrayRef<int8_t>(sync)));
    LLVM::GlobalOp::create(b, loc, i64, /*isConstant=*/true, LLVM::Linkage::External,
                           "lcc_emu_kernel_count", b.getI64IntegerAttr(n));
  }
};

} // namespace
