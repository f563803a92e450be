//===- EmulateGpuKernels.cpp - CUDA kernels as host functions -------------===//
//
// See Passes.td (lcc-emulate-gpu-kernels). The CUDA target's kernels, run on
// the CPU: no machine lcc is developed on has a GPU, so this is how the
// generated kernels (thread mappings, multi-tensor dispatch, lanes, warp
// reductions) are checked numerically at all. Each gpu.func keeps its body;
// what only a GPU has becomes a call of the runtime's emulator
// (runtime/cuda/EmulatedGpu.cpp), which runs a block's threads as host
// threads:
//
//   gpu.thread_id x, gpu.block_id x      lcc_emu_thread_id(), lcc_emu_block_id()
//   gpu.block_dim x, gpu.grid_dim x      lcc_emu_block_dim(), lcc_emu_grid_dim()
//   (dimensions y and z)                 0 and 1 (lcc's kernels are 1-D)
//   gpu.barrier                          lcc_emu_barrier()
//   gpu.shuffle xor (f32)                lcc_emu_shuffle_xor(value, offset)
//
// A block's workgroup memory becomes a mutable global per kernel: the
// emulator runs one block at a time.
//
//===----------------------------------------------------------------------===//
#include "passes/gpu/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace lcc {
#define GEN_PASS_DEF_LCCEMULATEGPUKERNELSPASS
#include "passes/gpu/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {

func::FuncOp declare(ModuleOp module, StringRef name, TypeRange args, TypeRange results) {
  if (auto f = module.lookupSymbol<func::FuncOp>(name))
    return f;
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  auto f = func::FuncOp::create(b, module.getLoc(), name, b.getFunctionType(args, results));
  f.setPrivate();
  return f;
}

/// The id-like op's value: a call for dimension x, `other` for y and z.
template <typename Op>
LogicalResult replaceId(Op op, ModuleOp module, StringRef callee, int64_t other) {
  OpBuilder b(op);
  Value v;
  if (op.getDimension() == gpu::Dimension::x) {
    func::FuncOp f = declare(module, callee, {}, {b.getIndexType()});
    v = func::CallOp::create(b, op.getLoc(), f, ValueRange{}).getResult(0);
  } else {
    v = arith::ConstantIndexOp::create(b, op.getLoc(), other);
  }
  op.replaceAllUsesWith(v);
  op.erase();
  return success();
}

/// `kernel`'s body as a public host function of the same name; false (with
/// an error) on what the emulator cannot run.
LogicalResult emulate(gpu::GPUFuncOp kernel, ModuleOp module, bool &synchronizes) {
  MLIRContext *ctx = module.getContext();
  std::string name = kernel.getName().str();
  if (kernel.getNumPrivateAttributions() != 0)
    return kernel.emitError() << "lcc-emulate-gpu-kernels: kernel @" << name
                              << " has private memory attributions, which the emulator does "
                                 "not provide";
  OpBuilder top = OpBuilder::atBlockEnd(module.getBody());
  auto host = func::FuncOp::create(top, kernel.getLoc(), name, kernel.getFunctionType());
  host->setAttr("lcc.emulated_kernel", UnitAttr::get(ctx));
  SmallVector<Attribute> argTypes;
  for (Type t : kernel.getArgumentTypes())
    argTypes.push_back(TypeAttr::get(t));
  host->setAttr("lcc.kernel_args", ArrayAttr::get(ctx, argTypes));
  host.getBody().takeBody(kernel.getBody());
  Block &entry = host.getBody().front();

  // Workgroup memory: one mutable global per attribution.
  unsigned args = kernel.getNumArguments();
  OpBuilder at = OpBuilder::atBlockBegin(&entry);
  for (unsigned i = 0, n = kernel.getNumWorkgroupAttributions(); i < n; ++i) {
    BlockArgument shared = entry.getArgument(args);
    auto type = llvm::cast<MemRefType>(shared.getType());
    auto plain = MemRefType::get(type.getShape(), type.getElementType());
    std::string global = name + "_workgroup" + std::to_string(i);
    OpBuilder gb = OpBuilder::atBlockBegin(module.getBody());
    memref::GlobalOp::create(gb, kernel.getLoc(), global, gb.getStringAttr("private"), plain,
                             Attribute(), /*constant=*/false, IntegerAttr());
    Value g = memref::GetGlobalOp::create(at, kernel.getLoc(), plain, global);
    // Loads and stores take the memref's type from their operand, so the
    // address space simply goes.
    shared.replaceAllUsesWith(g);
    entry.eraseArgument(args);
  }

  synchronizes = false;
  WalkResult walk = host.walk([&](Operation *op) -> WalkResult {
    if (op->getDialect() == nullptr || op->getDialect()->getNamespace() != "gpu")
      return WalkResult::advance();
    OpBuilder b(op);
    Location loc = op->getLoc();
    if (auto id = llvm::dyn_cast<gpu::ThreadIdOp>(op))
      return WalkResult(replaceId(id, module, "lcc_emu_thread_id", 0));
    if (auto id = llvm::dyn_cast<gpu::BlockIdOp>(op))
      return WalkResult(replaceId(id, module, "lcc_emu_block_id", 0));
    if (auto dim = llvm::dyn_cast<gpu::BlockDimOp>(op))
      return WalkResult(replaceId(dim, module, "lcc_emu_block_dim", 1));
    if (auto dim = llvm::dyn_cast<gpu::GridDimOp>(op))
      return WalkResult(replaceId(dim, module, "lcc_emu_grid_dim", 1));
    if (llvm::isa<gpu::BarrierOp>(op)) {
      func::CallOp::create(b, loc, declare(module, "lcc_emu_barrier", {}, {}), ValueRange{});
      op->erase();
      synchronizes = true;
      return WalkResult::advance();
    }
    if (auto shuffle = llvm::dyn_cast<gpu::ShuffleOp>(op)) {
      if (shuffle.getMode() != gpu::ShuffleMode::XOR || !shuffle.getValue().getType().isF32())
        return op->emitError() << "lcc-emulate-gpu-kernels: only f32 xor shuffles are emulated";
      Type f32 = b.getF32Type(), i32 = b.getI32Type();
      func::FuncOp f = declare(module, "lcc_emu_shuffle_xor", {f32, i32}, {f32});
      Value v = func::CallOp::create(b, loc, f, ValueRange{shuffle.getValue(), shuffle.getOffset()})
                    .getResult(0);
      // Every lane of the full warp takes part (width 32): always valid.
      Value valid = arith::ConstantIntOp::create(b, loc, 1, 1);
      shuffle.getShuffleResult().replaceAllUsesWith(v);
      shuffle.getValid().replaceAllUsesWith(valid);
      op->erase();
      synchronizes = true;
      return WalkResult::advance();
    }
    if (llvm::isa<gpu::ReturnOp>(op)) {
      func::ReturnOp::create(b, loc);
      op->erase();
      return WalkResult::advance();
    }
    return op->emitError() << "lcc-emulate-gpu-kernels: '" << op->getName()
                           << "' is not emulated";
  });
  return failure(walk.wasInterrupted());
}

struct LccEmulateGpuKernelsPass
    : lcc::impl::LccEmulateGpuKernelsPassBase<LccEmulateGpuKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto device = module.lookupSymbol<gpu::GPUModuleOp>("lcc_kernels");
    if (!device)
      return; // no kernels (nothing was outlined)
    SmallVector<gpu::GPUFuncOp> kernels(device.getOps<gpu::GPUFuncOp>());
    // Which kernels synchronize (barriers, shuffles): the emulator runs
    // their threads concurrently, the others' one after another.
    SmallVector<Attribute> synchronizing;
    for (gpu::GPUFuncOp kernel : kernels) {
      bool sync = false;
      if (failed(emulate(kernel, module, sync)))
        return signalPassFailure();
      if (sync)
        synchronizing.push_back(StringAttr::get(&getContext(), kernel.getName()));
    }
    // Constant globals the kernels read were copied into the device module;
    // the host module has the originals.
    device.erase();
    module->removeAttr(gpu::GPUDialect::getContainerModuleAttrName());
    module->setAttr("lcc.gpu_synchronizing", ArrayAttr::get(&getContext(), synchronizing));
  }
};

} // namespace
