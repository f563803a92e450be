//===- JitExecutor.cpp - run lcc modules on the host CPU ------------------===//
//
// Calling convention: every public function gets `llvm.emit_c_interface`, so
// `_mlir_ciface_<name>` takes pointers to memref descriptors
//   { allocated ptr, aligned ptr, offset, sizes[rank], strides[rank] }
// and, when there are results, a leading pointer to where the result
// descriptors are written (one descriptor, or a struct of them). All fields
// are 8 bytes, so a struct of descriptors is just descriptors back to back,
// and one buffer of int64 words serves both cases.
//
// Ownership: buffer-deallocation-pipeline hands returned buffers to the
// caller, so results are freed here after copying -- except buffers that are
// not heap allocations of the callee (a global constant, or an argument the
// function returned without cloning), which are detected and left alone.
//
//===----------------------------------------------------------------------===//
#include "compiler/cpu/JitExecutor.h"
#include "runtime/dist/Collectives.h"
#include "compiler/cpu/LlvmSetup.h"
#include "runtime/cpu/CpuKernels.h"

#include "dialects/lcc/LccDialect.h"
#include "passes/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <mutex>

using namespace mlir;

namespace lcc {

namespace {

/// memref.get_global lowers to a descriptor whose allocated pointer is this
/// marker (see MemRefToLLVM): such a buffer is not the caller's to free.
constexpr uintptr_t kGlobalMarker = 0xdeadbeef;

TensorSignature describeType(Type type) {
  TensorSignature sig;
  llvm::raw_string_ostream os(sig.spelling);
  type.print(os);
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !(isa<RankedTensorType>(type) || isa<MemRefType>(type)) ||
      !shaped.hasStaticShape())
    return sig;
  if (auto memref = dyn_cast<MemRefType>(type); memref && !memref.getLayout().isIdentity())
    return sig;
  Type elem = shaped.getElementType();
  if (elem.isF32())
    sig.element = ElementType::F32;
  else if (elem.isF64())
    sig.element = ElementType::F64;
  else if (elem.isSignlessInteger(32))
    sig.element = ElementType::I32;
  else if (elem.isSignlessInteger(64))
    sig.element = ElementType::I64;
  else if (elem.isSignlessInteger(1))
    sig.element = ElementType::I1;
  sig.shape.assign(shaped.getShape().begin(), shaped.getShape().end());
  return sig;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s + "]";
}

/// An argument buffer owned by one call: the JIT code may write into its
/// arguments (bufferization treats them as writable), so callers' tensors
/// are never handed over directly.
struct ScratchBuffer {
  void *ptr = nullptr;
  size_t bytes = 0;
  explicit ScratchBuffer(size_t n) : bytes(n) {
    // 64-byte alignment so vectorized code never meets a misaligned base.
    ptr = std::aligned_alloc(64, (std::max<size_t>(n, 1) + 63) / 64 * 64);
  }
  ~ScratchBuffer() { std::free(ptr); }
  ScratchBuffer(const ScratchBuffer &) = delete;
  ScratchBuffer &operator=(const ScratchBuffer &) = delete;
};

size_t descriptorWords(size_t rank) { return 3 + 2 * rank; }

/// Copies a (possibly strided) result buffer into a dense row-major tensor.
void copyOut(const int64_t *desc, HostTensor &out) {
  const auto *aligned = reinterpret_cast<const uint8_t *>(static_cast<uintptr_t>(desc[1]));
  int64_t offset = desc[2];
  size_t rank = out.shape().size();
  const int64_t *strides = desc + 3 + rank;
  size_t elemSize = elementSize(out.elementType());
  auto *dst = static_cast<uint8_t *>(out.rawData());
  int64_t n = out.numElements();
  if (n == 0)
    return;
  bool contiguous = true;
  int64_t expected = 1;
  for (size_t d = rank; d-- > 0;) {
    if (out.shape()[d] != 1 && strides[d] != expected)
      contiguous = false;
    expected *= out.shape()[d];
  }
  if (contiguous) {
    std::memcpy(dst, aligned + offset * elemSize, static_cast<size_t>(n) * elemSize);
    return;
  }
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t linear = offset;
    for (size_t d = 0; d < rank; ++d)
      linear += index[d] * strides[d];
    std::memcpy(dst + static_cast<size_t>(i) * elemSize, aligned + linear * elemSize, elemSize);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < out.shape()[d])
        break;
      index[d] = 0;
    }
  }
}

} // namespace

CpuJit::CpuJit() = default;
CpuJit::~CpuJit() = default;

llvm::Expected<std::unique_ptr<CpuJit>> CpuJit::compile(ModuleOp module, AttentionMode attention) {
  initializeNativeTargetOnce();
  MLIRContext *ctx = module.getContext();
  prepareLoweringContext(ctx);

  std::unique_ptr<CpuJit> jit(new CpuJit());
  for (auto func : module.getOps<func::FuncOp>()) {
    if (!func.isPublic() || func.isExternal())
      continue;
    FunctionSignature sig;
    for (Type t : func.getArgumentTypes())
      sig.inputs.push_back(describeType(t));
    for (Type t : func.getResultTypes())
      sig.results.push_back(describeType(t));
    jit->functions[func.getSymName()] = std::move(sig);
  }

  OwningOpRef<ModuleOp> clone(cast<ModuleOp>(module->clone()));
  for (auto func : clone->getOps<func::FuncOp>())
    if (func.isPublic() && !func.isExternal())
      func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(), UnitAttr::get(ctx));

  // Everything reported while lowering and translating goes into the error.
  std::string diagnostics;
  llvm::raw_string_ostream diagOs(diagnostics);
  ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &diag) {
    diagOs << diag.getLocation() << ": " << diag.str() << "\n";
    for (Diagnostic &note : diag.getNotes())
      diagOs << "  note: " << note.getLocation() << ": " << note.str() << "\n";
    return success();
  });

  PassManager pm(ctx, ModuleOp::getOperationName());
  buildLowerToLinalgPipeline(pm, attentionMinScores(attention, /*cuda=*/false));
  buildLinalgToLLVMPipeline(pm);
  if (failed(pm.run(*clone)))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "lcc: lowering to the LLVM dialect failed:\n" + diagnostics);

  // A function_ref: the transformer must outlive create() (TOOLCHAIN.md pitfall 4).
  auto transformer = makeOptimizingTransformer(/*optLevel=*/2, /*sizeLevel=*/0,
                                               /*targetMachine=*/nullptr);
  ExecutionEngineOptions options;
  options.transformer = transformer;
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Default;
  options.enableGDBNotificationListener = false;
  options.enablePerfNotificationListener = false;
  // Lowered code may call MLIR's C runner helpers (memref.copy between
  // non-contiguous views becomes a call to `memrefCopy`).
  llvm::SmallVector<llvm::StringRef, 1> sharedLibs;
#ifdef LCC_MLIR_C_RUNNER_UTILS
  if (llvm::sys::fs::exists(LCC_MLIR_C_RUNNER_UTILS))
    sharedLibs.push_back(LCC_MLIR_C_RUNNER_UTILS);
#endif
  options.sharedLibPaths = sharedLibs;
  auto engine = ExecutionEngine::create(*clone, options);
  if (!engine) {
    std::string msg = llvm::toString(engine.takeError());
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "lcc: JIT compilation failed: " + msg + "\n" + diagnostics);
  }
  // The kernels lowered code calls (lcc-gemm-to-library), bound explicitly so
  // the JIT does not depend on what the executable happens to export.
  (*engine)->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap map;
    // Collectives too: JIT-run code is one process, where every group has
    // one rank (the runtime copies).
    for (const RuntimeSymbol *table : {cpuKernelSymbols(), dist::collectiveSymbols()})
      for (const RuntimeSymbol *s = table; s->name; ++s)
        map[interner(s->name)] = {llvm::orc::ExecutorAddr::fromPtr(s->address),
                                  llvm::JITSymbolFlags::Exported};
    return map;
  });
  jit->engine = std::move(*engine);
  jit->engine->initialize();
  return jit;
}

const FunctionSignature *CpuJit::signature(llvm::StringRef function) const {
  auto it = functions.find(function);
  return it == functions.end() ? nullptr : &it->second;
}

llvm::Expected<std::vector<HostTensor>> CpuJit::call(llvm::StringRef function,
                                                     const std::vector<HostTensor> &args) {
  auto fail = [&](const llvm::Twine &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "lcc: calling @" + function + ": " + msg);
  };
  const FunctionSignature *sig = signature(function);
  if (!sig)
    return fail("no public function of that name in the module");
  if (args.size() != sig->inputs.size())
    return fail("expected " + llvm::Twine(sig->inputs.size()) + " arguments, got " +
                llvm::Twine(args.size()));
  for (size_t i = 0; i < args.size(); ++i) {
    const TensorSignature &want = sig->inputs[i];
    if (!want.element)
      return fail("argument #" + llvm::Twine(i) + " has type " + want.spelling +
                  ", which HostTensor cannot represent");
    if (*want.element != args[i].elementType() || want.shape != args[i].shape())
      return fail("argument #" + llvm::Twine(i) + " must be " + want.spelling + ", got " +
                  args[i].typeString());
  }
  for (size_t i = 0; i < sig->results.size(); ++i)
    if (!sig->results[i].element)
      return fail("result #" + llvm::Twine(i) + " has type " + sig->results[i].spelling +
                  ", which HostTensor cannot represent");

  // Argument descriptors over private copies of the inputs.
  std::vector<std::unique_ptr<ScratchBuffer>> scratch;
  std::vector<std::vector<int64_t>> argDescs;
  for (const HostTensor &arg : args) {
    scratch.push_back(std::make_unique<ScratchBuffer>(arg.byteSize()));
    if (!scratch.back()->ptr)
      return fail("out of memory copying arguments");
    if (arg.byteSize()) // an empty tensor's data may be null, which memcpy must not see
      std::memcpy(scratch.back()->ptr, arg.rawData(), arg.byteSize());
    size_t rank = arg.shape().size();
    std::vector<int64_t> desc(descriptorWords(rank), 0);
    desc[0] = desc[1] = static_cast<int64_t>(reinterpret_cast<uintptr_t>(scratch.back()->ptr));
    int64_t stride = 1;
    for (size_t d = rank; d-- > 0;) {
      desc[3 + d] = arg.shape()[d];
      desc[3 + rank + d] = stride;
      stride *= arg.shape()[d];
    }
    argDescs.push_back(std::move(desc));
  }

  std::vector<size_t> resultOffsets;
  size_t resultWords = 0;
  for (const TensorSignature &r : sig->results) {
    resultOffsets.push_back(resultWords);
    resultWords += descriptorWords(r.shape.size());
  }
  std::vector<int64_t> resultDescs(std::max<size_t>(resultWords, 1), 0);

  // Packed calling convention: each slot points at the value of one C argument,
  // and every C argument here is itself a pointer.
  std::vector<void *> cArgs;
  if (!sig->results.empty())
    cArgs.push_back(resultDescs.data());
  for (auto &desc : argDescs)
    cArgs.push_back(desc.data());
  llvm::SmallVector<void *> packed;
  for (void *&slot : cArgs)
    packed.push_back(&slot);

  if (llvm::Error err = engine->invokePacked(("_mlir_ciface_" + function).str(), packed))
    return fail(llvm::toString(std::move(err)));

  std::vector<HostTensor> results;
  std::string shapeError;
  for (size_t r = 0; r < sig->results.size(); ++r) {
    const TensorSignature &want = sig->results[r];
    const int64_t *desc = resultDescs.data() + resultOffsets[r];
    std::vector<int64_t> sizes(desc + 3, desc + 3 + want.shape.size());
    HostTensor out(*want.element, want.shape);
    if (sizes != want.shape)
      shapeError += " result #" + std::to_string(r) + " came back as " + shapeString(sizes) +
                    ", expected " + want.spelling + ";";
    else
      copyOut(desc, out);
    results.push_back(std::move(out));
  }

  // Free each distinct callee allocation once; several results may share one.
  auto insideArgument = [&](uintptr_t p) {
    for (auto &buf : scratch) {
      auto base = reinterpret_cast<uintptr_t>(buf->ptr);
      if (p >= base && p < base + std::max<size_t>(buf->bytes, 1))
        return true;
    }
    return false;
  };
  llvm::DenseSet<uintptr_t> freed;
  for (size_t r = 0; r < sig->results.size(); ++r) {
    const int64_t *desc = resultDescs.data() + resultOffsets[r];
    auto allocated = static_cast<uintptr_t>(desc[0]);
    auto aligned = static_cast<uintptr_t>(desc[1]);
    if (allocated == 0 || allocated == kGlobalMarker || insideArgument(allocated) ||
        insideArgument(aligned) || !freed.insert(allocated).second)
      continue;
    std::free(reinterpret_cast<void *>(allocated));
  }
  if (!shapeError.empty())
    return fail("unexpected result shape:" + shapeError);
  return results;
}

} // namespace lcc
