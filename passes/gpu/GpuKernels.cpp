//===- GpuKernels.cpp - outlined kernels become CUDA kernels and launches --===//
//
// See Passes.td (lcc-gpu-kernels) for what and why. Each kernel function
// that lcc-outline-kernels{gpu} made (one linalg op, or an scf.for holding
// linalg ops) becomes a gpu.func in `gpu.module @lcc_kernels`, with one of
// four thread mappings (GpuKernelBodies.cpp builds the bodies); each call
// becomes a call of the runtime's `lcc_cuda_launch`.
//
//===----------------------------------------------------------------------===//
#include "passes/gpu/GpuKernelBodies.h"
#include "passes/gpu/GpuMultiTensor.h"
#include "passes/gpu/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <map>
#include <string>

namespace lcc {
#define GEN_PASS_DEF_LCCGPUKERNELSPASS
#include "passes/gpu/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kLaunch = "lcc_cuda_launch";

/// Whether `type` is a memref whose offset is only known at run time (a
/// ZeRO rank's piece of a buffer sits at a multiple of lcc_group_rank).
bool hasDynamicOffset(Type type) {
  auto memref = llvm::dyn_cast<MemRefType>(type);
  int64_t offset;
  SmallVector<int64_t> strides;
  return memref && succeeded(memref.getStridesAndOffset(strides, offset)) &&
         ShapedType::isDynamic(offset);
}

/// Kernel arguments travel as bare device pointers (8 bytes each, the
/// runtime's launch ABI), so a memref's shape and strides must be known
/// statically. A static offset the kernel applies itself; a dynamic one the
/// host adds to the pointer (emitLaunch), and the kernel sees offset 0.
LogicalResult checkArguments(func::FuncOp kernel) {
  for (auto [i, type] : llvm::enumerate(kernel.getArgumentTypes())) {
    auto memref = llvm::dyn_cast<MemRefType>(type);
    if (!memref)
      return kernel.emitError() << "lcc-gpu-kernels: argument " << i << " of kernel @"
                                << kernel.getSymName() << " is " << type
                                << ", not a memref; CUDA kernels take device buffers only";
    int64_t offset;
    SmallVector<int64_t> strides;
    if (!memref.hasStaticShape() || failed(memref.getStridesAndOffset(strides, offset)) ||
        llvm::any_of(strides, ShapedType::isDynamic))
      return kernel.emitError() << "lcc-gpu-kernels: argument " << i << " of kernel @"
                                << kernel.getSymName() << " has type " << type
                                << "; CUDA kernels need static shapes and strides "
                                   "(they receive bare pointers)";
  }
  if (kernel.getNumResults() != 0)
    return kernel.emitError() << "lcc-gpu-kernels: kernel @" << kernel.getSymName()
                              << " returns values; kernels write their outputs in place";
  return success();
}

/// The kernel's side of a dynamic offset: the argument gets offset 0 (the
/// pointer the host passes already points at the first element), and a
/// memref.cast gives the body the type it was written for.
void zeroDynamicOffsets(func::FuncOp kernel) {
  Block &entry = kernel.getBody().front();
  OpBuilder b = OpBuilder::atBlockBegin(&entry);
  SmallVector<Type> inputs(kernel.getArgumentTypes());
  for (BlockArgument arg : entry.getArguments()) {
    if (!hasDynamicOffset(arg.getType()))
      continue;
    auto type = llvm::cast<MemRefType>(arg.getType());
    int64_t offset;
    SmallVector<int64_t> strides;
    (void)type.getStridesAndOffset(strides, offset);
    auto fixed = MemRefType::get(type.getShape(), type.getElementType(),
                                 StridedLayoutAttr::get(kernel.getContext(), 0, strides),
                                 type.getMemorySpace());
    arg.setType(fixed);
    auto cast = memref::CastOp::create(b, kernel.getLoc(), type, arg);
    arg.replaceAllUsesExcept(cast, cast);
    inputs[arg.getArgNumber()] = fixed;
  }
  kernel.setFunctionType(FunctionType::get(kernel.getContext(), inputs, kernel.getResultTypes()));
}

/// Copies inside a kernel: a copy of a subview onto an identical subview of
/// the same buffer (what bufferization leaves after an in-place row update)
/// is dropped; any other becomes a linalg.copy, which the thread mappings
/// lower (a memref.copy would be a call of the host's memrefCopy).
void rewriteCopies(func::FuncOp kernel) {
  kernel.walk([&](memref::CopyOp copy) {
    auto from = copy.getSource().getDefiningOp<memref::SubViewOp>();
    auto to = copy.getTarget().getDefiningOp<memref::SubViewOp>();
    if (copy.getSource() == copy.getTarget() || (from && to && from.getSource() == to.getSource() &&
                                                 from.getMixedOffsets() == to.getMixedOffsets() &&
                                                 from.getMixedSizes() == to.getMixedSizes() &&
                                                 from.getMixedStrides() == to.getMixedStrides())) {
      copy.erase();
      return;
    }
    OpBuilder b(copy);
    linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(), copy.getTarget());
    copy.erase();
  });
}

/// `func.func private @lcc_cuda_launch(id, grid, block, argv, argc)`, all i64.
func::FuncOp declareLaunch(ModuleOp module) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(kLaunch))
    return existing;
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  SmallVector<Type> args(5, b.getI64Type());
  auto f = func::FuncOp::create(b, module.getLoc(), kLaunch, b.getFunctionType(args, {}));
  f.setPrivate();
  return f;
}

/// A launch before `launch.anchor`: the operands' aligned pointers go into
/// `argv` (one stack array per host function, reused by every launch: the
/// driver copies the parameters when it launches or captures), then
/// `lcc_cuda_launch(id, grid, block, argv, argc)`.
void emitLaunch(const lcc::GpuLaunch &launch, int64_t id, Value argv, func::FuncOp callee) {
  OpBuilder b(launch.anchor);
  Location loc = launch.anchor->getLoc();
  auto i64 = [&](int64_t v) -> Value { return arith::ConstantIntOp::create(b, loc, v, 64); };
  for (auto [i, arg] : llvm::enumerate(launch.operands)) {
    Value ptr = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, arg);
    if (hasDynamicOffset(arg.getType())) { // the kernel sees offset 0 (zeroDynamicOffsets)
      auto type = llvm::cast<MemRefType>(arg.getType());
      Value offset = memref::ExtractStridedMetadataOp::create(b, loc, arg).getOffset();
      Value bytes = arith::MulIOp::create(
          b, loc, offset,
          arith::ConstantIndexOp::create(b, loc, int64_t(type.getElementTypeBitWidth() / 8)));
      ptr = arith::AddIOp::create(b, loc, ptr, bytes);
    }
    Value word = arith::IndexCastOp::create(b, loc, b.getI64Type(), ptr);
    Value slot = arith::ConstantIndexOp::create(b, loc, int64_t(i));
    memref::StoreOp::create(b, loc, word, argv, slot);
  }
  Value argvPtr = arith::IndexCastOp::create(
      b, loc, b.getI64Type(), memref::ExtractAlignedPointerAsIndexOp::create(b, loc, argv));
  func::CallOp::create(b, loc, callee,
                       ValueRange{i64(id), i64(launch.shape.grid), i64(launch.shape.block),
                                  argvPtr, i64(int64_t(launch.operands.size()))});
}

struct LccGpuKernelsPass : lcc::impl::LccGpuKernelsPassBase<LccGpuKernelsPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = module.getContext();
    if (lanes < 1 || lanes > 8 || (lanes & (lanes - 1))) {
      module.emitError() << "lcc-gpu-kernels: lanes must be 1, 2, 4 or 8, got " << int64_t(lanes);
      return signalPassFailure();
    }
    if (blockSize < 32 || blockSize > 1024 || blockSize % 32 != 0) {
      module.emitError() << "lcc-gpu-kernels: block-size must be a multiple of 32 in [32, "
                            "1024], got "
                         << int64_t(blockSize);
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> kernels;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn->hasAttr("lcc.kernel") && !fn.isExternal())
        kernels.push_back(fn);
    for (func::FuncOp kernel : kernels) {
      if (failed(checkArguments(kernel)))
        return signalPassFailure();
      zeroDynamicOffsets(kernel);
    }

    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), UnitAttr::get(ctx));
    OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
    auto gpuModule = gpu::GPUModuleOp::create(mb, module.getLoc(), "lcc_kernels");
    OpBuilder gb = OpBuilder::atBlockBegin(gpuModule.getBody());
    SymbolTable symbols(module);

    // What every launch site guarantees about each kernel argument's pointer:
    // device allocations are 256-byte aligned; views of the arena sit at
    // lcc-plan-memory's multiples of 64 bytes, subviews at their static
    // offset (which the kernel adds to the bare pointer; a run-time offset
    // the host adds, so nothing is known).
    lcc::HostBuffers located(module);
    llvm::DenseMap<Operation *, SmallVector<int64_t>> alignment;
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (fn.isExternal() || fn->hasAttr("lcc.kernel"))
        continue;
      fn.walk([&](func::CallOp call) {
        auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
        if (!callee || !callee->hasAttr("lcc.kernel"))
          return;
        auto [it, first] = alignment.try_emplace(callee, SmallVector<int64_t>(
                                                             call.getNumOperands(), INT64_MAX));
        for (auto [i, arg] : llvm::enumerate(call.getOperands()))
          it->second[i] = std::min(
              it->second[i], hasDynamicOffset(arg.getType()) ? int64_t(1) : located.alignment(arg));
      });
    }

    // Kernel function -> its gpu.func, launch shape and written arguments.
    llvm::DenseMap<Operation *, lcc::GpuKernelInfo> built;
    for (func::FuncOp kernel : kernels) {
      // Constant globals the kernel reads live in the device module.
      WalkResult copied = kernel.walk([&](memref::GetGlobalOp get) {
        if (gpuModule.lookupSymbol(get.getName()))
          return WalkResult::advance();
        auto global = symbols.lookup<memref::GlobalOp>(get.getName());
        if (!global || !global.getConstant()) {
          get.emitError() << "lcc-gpu-kernels: kernel @" << kernel.getSymName() << " reads @"
                          << get.getName()
                          << ", which is not a constant global; only constants are copied "
                             "to the device";
          return WalkResult::interrupt();
        }
        OpBuilder at = OpBuilder::atBlockBegin(gpuModule.getBody());
        at.clone(*global);
        return WalkResult::advance();
      });
      if (copied.wasInterrupted())
        return signalPassFailure();
      rewriteCopies(kernel);
      auto known = alignment.find(kernel);
      FailureOr<lcc::GpuLaunchShape> shape = lcc::buildGpuKernel(
          gb, kernel, blockSize, minBlockReduction,
          known == alignment.end() ? ArrayRef<int64_t>() : ArrayRef<int64_t>(known->second),
          lanes);
      if (failed(shape))
        return signalPassFailure();
      lcc::GpuKernelInfo &info = built[kernel];
      info.func = gpuModule.lookupSymbol<gpu::GPUFuncOp>(kernel.getSymName());
      info.shape = *shape;
      info.writes = lcc::writtenArguments(kernel);
      if (shape->mapping == lcc::GpuMapping::Threads)
        lcc::alignedArguments(kernel, info.ranges, info.aligned);
    }

    // Each host function's launches (independent neighbours fused).
    std::vector<std::pair<func::FuncOp, SmallVector<lcc::GpuLaunch>>> plans;
    int64_t fused = 0;
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (fn.isExternal() || fn->hasAttr("lcc.kernel"))
        continue;
      auto info = [&](func::CallOp call) -> const lcc::GpuKernelInfo * {
        auto it = built.find(symbols.lookup(call.getCallee()));
        return it == built.end() ? nullptr : &it->second;
      };
      SmallVector<lcc::GpuLaunch> launches =
          lcc::planLaunches(fn, info, located, gb, maxFusedArgs, fused);
      if (!launches.empty())
        plans.emplace_back(fn, std::move(launches));
    }

    // Ids in the device module's order (the runtime loads the functions by
    // the names in `lcc.gpu_kernels`); a kernel only run inside fused ones
    // is dropped.
    llvm::DenseSet<Operation *> launched;
    for (auto &[fn, launches] : plans)
      for (const lcc::GpuLaunch &l : launches)
        launched.insert(l.func);
    llvm::DenseMap<Operation *, int64_t> ids;
    SmallVector<Attribute> names;
    std::map<std::string, int64_t> mappings;
    for (auto f : llvm::make_early_inc_range(gpuModule.getOps<gpu::GPUFuncOp>())) {
      if (!launched.contains(f)) {
        f.erase();
        continue;
      }
      ids[f] = int64_t(names.size());
      names.push_back(StringAttr::get(ctx, f.getName()));
      ++mappings[f->getAttrOfType<StringAttr>("lcc.mapping").str()];
    }
    module->setAttr("lcc.gpu_kernels", ArrayAttr::get(ctx, names));
    // How many kernels got each mapping, for lcc --report (the gpu.module
    // itself becomes a binary).
    SmallVector<NamedAttribute> counts;
    for (auto &[mapping, n] : mappings)
      counts.emplace_back(StringAttr::get(ctx, mapping),
                          IntegerAttr::get(IntegerType::get(ctx, 64), n));
    module->setAttr("lcc.gpu_mappings", DictionaryAttr::get(ctx, counts));

    // Calls become launches.
    func::FuncOp launch = declareLaunch(module);
    for (auto &[fn, launches] : plans) {
      int64_t maxArgs = 1;
      for (const lcc::GpuLaunch &l : launches)
        maxArgs = std::max<int64_t>(maxArgs, int64_t(l.operands.size()));
      OpBuilder at = OpBuilder::atBlockBegin(&fn.getBody().front());
      Value argv =
          memref::AllocaOp::create(at, fn.getLoc(), MemRefType::get({maxArgs}, at.getI64Type()));
      for (const lcc::GpuLaunch &l : launches)
        emitLaunch(l, ids.at(l.func), argv, launch);
      // Every kernel call is replaced (anchors are kernel calls too).
      SmallVector<func::CallOp> calls;
      fn.walk([&](func::CallOp call) {
        if (built.count(symbols.lookup(call.getCallee())))
          calls.push_back(call);
      });
      for (func::CallOp call : calls)
        call.erase();
    }
    for (func::FuncOp kernel : kernels)
      kernel.erase();
  }
};

} // namespace
