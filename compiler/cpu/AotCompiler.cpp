//===- AotCompiler.cpp - ahead-of-time CPU code for train.bin -------------===//
//
// module (lcc, train-step phase) -> AOT pipeline -> LLVM dialect -> LLVM IR
// -> packed entry wrappers -> -O3 for the target CPU -> ELF object -> ld.lld
// -shared -> bytes. A shared object (rather than a raw object the runtime
// would have to relocate itself) keeps the runtime's loader to dlopen.
//
//===----------------------------------------------------------------------===//
#include "compiler/cpu/AotCompiler.h"
#include "runtime/support/Entries.h"
#include "compiler/cpu/LlvmSetup.h"
#include "compiler/cpu/ParallelCodegen.h"
#include "passes/Pipelines.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <chrono>
#include <map>

using namespace mlir;

namespace lcc {

static llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "lcc: " + message);
}

std::string aotTargetName(const AotOptions &options) {
  llvm::Triple triple(llvm::sys::getProcessTriple());
  std::string cpu = options.cpu;
  // "x86-64-v3" -> "cpu-x86_64-v3"; a named CPU keeps its name.
  if (llvm::StringRef(cpu).starts_with("x86-64"))
    cpu = cpu.substr(6);
  else
    cpu = "-" + cpu;
  return "cpu-" + triple.getArchName().str() + cpu;
}

/// `void lcc_F(void **args)`: calls F with the memref descriptors of
/// args[0..n): each buffer is a dense row-major array of a static shape, so its
/// descriptor (allocated, aligned, offset 0, sizes, row-major strides) is
/// built here and the runtime needs no knowledge of MLIR's memref ABI. With
/// `bufferTable` (lcc-loop-layer-calls, lcc.buffer_table) F takes `args`
/// alone and builds the descriptors it needs itself.
static llvm::Error addPackedWrapper(llvm::Module &m, llvm::StringRef name,
                                    const std::vector<std::vector<int64_t>> &shapes,
                                    bool bufferTable) {
  llvm::Function *f = m.getFunction(name);
  if (!f)
    return error("@" + name + " is missing after lowering");
  size_t fields = 0;
  for (const auto &shape : shapes)
    fields += 3 + 2 * shape.size();
  size_t expected = bufferTable ? 1 : fields;
  if (f->arg_size() != expected)
    return error("@" + name + " takes " + llvm::Twine(f->arg_size()) +
                 " values after lowering, expected " + llvm::Twine(expected) +
                 (bufferTable ? " (the buffer table)" : " memref descriptor fields"));
  llvm::LLVMContext &ctx = m.getContext();
  auto *ptr = llvm::PointerType::getUnqual(ctx);
  auto *i64 = llvm::Type::getInt64Ty(ctx);
  auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr}, false);
  auto *wrapper = llvm::Function::Create(type, llvm::Function::ExternalLinkage,
                                         "lcc_" + name.str(), m);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", wrapper));
  llvm::SmallVector<llvm::Value *> args;
  // F takes the array itself and reads each buffer's address there.
  if (bufferTable)
    args.push_back(wrapper->getArg(0));
  else
    for (auto [i, shape] : llvm::enumerate(shapes)) {
      llvm::Value *slot = b.CreateConstInBoundsGEP1_64(ptr, wrapper->getArg(0), i);
      llvm::Value *buffer = b.CreateLoad(ptr, slot);
      args.append({buffer, buffer, llvm::ConstantInt::get(i64, 0)});
      for (int64_t d : shape)
        args.push_back(llvm::ConstantInt::get(i64, d));
      int64_t stride = 1;
      llvm::SmallVector<llvm::Value *> strides(shape.size());
      for (size_t d = shape.size(); d-- > 0;) {
        strides[d] = llvm::ConstantInt::get(i64, stride);
        stride *= shape[d];
      }
      args.append(strides.begin(), strides.end());
    }
  for (auto [i, a] : llvm::enumerate(args))
    if (a->getType() != f->getArg(i)->getType())
      return error("@" + name + " argument " + llvm::Twine(i) +
                   " after lowering is not the expected memref descriptor field");
  b.CreateCall(f, args);
  b.CreateRetVoid();
  // Only the wrappers are the shared object's interface.
  f->setLinkage(llvm::GlobalValue::InternalLinkage);
  return llvm::Error::success();
}

/// Runs ld.lld on an object in a fresh temporary directory; returns the .so.
static llvm::Expected<std::vector<uint8_t>>
linkShared(const std::vector<llvm::SmallVector<char, 0>> &objects) {
  llvm::SmallString<128> dir;
  if (auto ec = llvm::sys::fs::createUniqueDirectory("lcc-aot", dir))
    return error("cannot create a temporary directory: " + ec.message());
  std::vector<std::string> objs;
  std::string so = (dir + "/step.so").str(), log = (dir + "/ld.log").str();
  llvm::scope_exit cleanup([&] {
    for (const std::string &obj : objs)
      llvm::sys::fs::remove(obj);
    llvm::sys::fs::remove(so);
    llvm::sys::fs::remove(log);
    llvm::sys::fs::remove(dir);
  });
  for (const auto &object : objects) {
    objs.push_back((dir + "/part" + llvm::Twine(objs.size()) + ".o").str());
    std::error_code ec;
    llvm::raw_fd_ostream os(objs.back(), ec);
    if (ec)
      return error("cannot write " + objs.back() + ": " + ec.message());
    os << llvm::StringRef(object.data(), object.size());
  }
  std::string lld = LCC_LLD_PATH;
  if (!llvm::sys::fs::can_execute(lld)) {
    auto found = llvm::sys::findProgramByName("ld.lld");
    if (!found)
      return error("ld.lld not found (looked at " + lld +
                   " and on PATH); install lld to compile train.bin files");
    lld = *found;
  }
  // Undefined symbols (libm, malloc, memrefCopy) stay undefined: dlopen binds
  // them to the runtime process, which provides them. -Bsymbolic: the code's
  // calls of its own functions bind to them, not to a same-named function of
  // another train.bin loaded earlier in the process (every train.bin defines
  // train_step, its kernels, ...).
  llvm::SmallVector<llvm::StringRef> argv = {lld,  "-shared", "-Bsymbolic", "--hash-style=gnu",
                                             "-O1", "-o",      so};
  argv.append(objs.begin(), objs.end());
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(log),
                                                llvm::StringRef(log)};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(lld, argv, std::nullopt, redirects, 0, 0, &message);
  if (rc != 0) {
    auto out = llvm::MemoryBuffer::getFile(log);
    return error("linking the shared object failed (" + lld + "): " +
                 (out ? (*out)->getBuffer().trim().str() : message));
  }
  auto bytes = llvm::MemoryBuffer::getFile(so);
  if (!bytes)
    return error("cannot read " + so + ": " + bytes.getError().message());
  llvm::StringRef b = (*bytes)->getBuffer();
  return std::vector<uint8_t>(b.bytes_begin(), b.bytes_end());
}

/// The number of an "sm_NN[a]" architecture, or 0.
static unsigned smNumber(const std::string &arch) {
  unsigned sm = 0;
  llvm::StringRef rest = arch;
  if (!rest.consume_front("sm_") || rest.take_while(llvm::isDigit).getAsInteger(10, sm))
    return 0;
  rest = rest.drop_while(llvm::isDigit);
  return rest.empty() || rest == "a" ? sm : 0;
}

std::string aotTargetError(const std::string &target, const std::string &arch) {
  if (target != "cpu" && target != "cuda")
    return "unknown --target=" + target + "; expected cpu or cuda";
  if (target == "cuda" && arch != "emulated" && smNumber(arch) < 70)
    return "unknown CUDA architecture --arch=" + arch +
           "; expected sm_70 or newer (sm_90 for H100/H200, sm_80 for A100), or emulated";
  return "";
}

/// The NVPTX features and libdevice for a GPU architecture (checked by
/// aotTargetError).
static llvm::Expected<CudaTargetOptions> cudaTargetFor(const std::string &arch) {
  CudaTargetOptions target;
  target.chip = arch;
  if (arch == "emulated") // kernels for the runtime's CPU emulator: no NVPTX, no libdevice
    return target;
  unsigned sm = smNumber(arch);
  // The oldest PTX ISA each generation needs (PTX 8.0: sm_90; 8.6: sm_100).
  target.features = sm >= 120 ? "+ptx87" : sm >= 100 ? "+ptx86" : "+ptx80";
  target.libdevice = findLibdevice();
  if (target.libdevice.empty())
    return error("libdevice.10.bc not found (looked in $CUDA_HOME, $CUDA_PATH and "
                 "/usr/local/cuda under nvvm/libdevice); --target=cuda needs the CUDA toolkit");
  return target;
}

llvm::Error buildAotPipeline(OpPassManager &pm, const AotOptions &options) {
  if (std::string e = aotTargetError(options.target, options.cudaArch); !e.empty())
    return error(e);
  addExportedOnly(pm, options.functions);
  if (options.target == "cuda") {
    auto target = cudaTargetFor(options.cudaArch);
    if (!target)
      return target.takeError();
    buildAotCudaPipeline(pm, *target, std::nullopt, options.overlap, options.attention,
                         options.outlineLayers);
  } else if (options.planOnly) {
    buildAotMemoryPlanPipeline(pm, options.overlap, options.attention, options.outlineLayers);
  } else {
    buildAotCpuPipeline(pm, std::nullopt, options.overlap, options.attention,
                        options.outlineLayers);
  }
  return llvm::Error::success();
}

llvm::Expected<CpuCode> compileCpuSharedObject(ModuleOp module, const AotOptions &given) {
  // The text-generation entries the module has (@prefill_<L> among them)
  // are exported with the listed functions.
  AotOptions options = given;
  for (auto fn : module.getOps<func::FuncOp>())
    if (isGenerationEntry(fn.getSymName().str()) &&
        !llvm::is_contained(options.functions, fn.getSymName().str()))
      options.functions.push_back(fn.getSymName().str());
  initializeNativeTargetOnce();
  MLIRContext *ctx = module.getContext();
  prepareLoweringContext(ctx);

  OwningOpRef<ModuleOp> clone(cast<ModuleOp>(module->clone()));
  std::vector<std::string> exported;
  // Buffer shapes of each exported function: its arguments, then its results
  // (which lcc-out-params turns into trailing out-params).
  std::map<std::string, std::vector<std::vector<int64_t>>> shapes;
  for (auto fn : clone->getOps<func::FuncOp>()) {
    if (!llvm::is_contained(options.functions, fn.getSymName().str()) || fn.isExternal())
      continue; // dropped by the pipeline (addExportedOnly)
    exported.push_back(fn.getSymName().str());
    auto &list = shapes[exported.back()];
    for (Type t : llvm::concat<const Type>(fn.getArgumentTypes(), fn.getResultTypes())) {
      auto tensor = llvm::dyn_cast<RankedTensorType>(t);
      if (!tensor || !tensor.hasStaticShape())
        return error("@" + fn.getSymName() + " has a non-static-tensor argument or result");
      list.emplace_back(tensor.getShape().begin(), tensor.getShape().end());
    }
  }
  if (exported.empty())
    return error("the module has none of the functions to compile");

  std::string diagnostics;
  llvm::raw_string_ostream diagOs(diagnostics);
  ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &diag) {
    diagOs << diag.getLocation() << ": " << diag.str() << "\n";
    return success();
  });
  CpuCode code;
  auto phaseStart = std::chrono::steady_clock::now();
  auto endPhase = [&](const std::string &name) {
    auto now = std::chrono::steady_clock::now();
    code.phaseSeconds.emplace_back(name, std::chrono::duration<double>(now - phaseStart).count());
    phaseStart = now;
  };
  bool cuda = options.target == "cuda";
  {
    PassManager pm(ctx, ModuleOp::getOperationName());
    if (options.passTiming)
      pm.enableTiming(); // the report prints when pm goes out of scope
    if (llvm::Error e = buildAotPipeline(pm, options))
      return std::move(e);
    if (failed(pm.run(*clone)))
      return error(llvm::Twine("lowering for the ") + (cuda ? "CUDA target" : "CPU") +
                   " failed:\n" + diagnostics);
  }
  endPhase(cuda ? "MLIR lowering (linalg, fusion, bufferization, memory plan, GPU kernels, PTX, "
                  "LLVM dialect)"
                : "MLIR lowering (linalg, fusion, bufferization, memory plan, kernels, LLVM "
                  "dialect)");
  if (options.planOnly && !cuda) {
    for (auto fn : clone->getOps<func::FuncOp>())
      if (auto bytes = fn->getAttrOfType<IntegerAttr>("lcc.arena_bytes");
          bytes && shapes.count(fn.getSymName().str()))
        code.arenaBytes[fn.getSymName().str()] = bytes.getInt();
    return code;
  }
  if (cuda && options.cudaArch == "emulated") {
    // The kernels are in the host code: only their names and mappings.
    code.cuda.arch = "emulated";
    if (auto names = (*clone)->getAttrOfType<ArrayAttr>("lcc.gpu_kernels"))
      for (Attribute a : names)
        code.cuda.names.push_back(cast<StringAttr>(a).str());
    if (auto mappings = (*clone)->getAttrOfType<DictionaryAttr>("lcc.gpu_mappings"))
      for (NamedAttribute m : mappings)
        code.cuda.mappings.emplace_back(m.getName().str(),
                                        cast<IntegerAttr>(m.getValue()).getInt());
  } else if (cuda) {
    auto kernels = extractCudaKernels(*clone, options.cudaArch);
    if (!kernels)
      return kernels.takeError();
    code.cuda = std::move(*kernels);
    endPhase("ptxas (" + std::to_string(code.cuda.names.size()) + " kernels for " +
             options.cudaArch + ")");
  }

  // The arena each function got from lcc-plan-memory is its last buffer.
  if (auto fusion = (*clone)->getAttrOfType<DictionaryAttr>("lcc.fusion")) {
    if (auto n = fusion.getAs<IntegerAttr>("kernels_before"))
      code.report["linalg_ops_before_fusion"] = n.getInt();
    if (auto n = fusion.getAs<IntegerAttr>("kernels_after"))
      code.report["linalg_ops_after_fusion"] = n.getInt();
  }
  if (auto layers = (*clone)->getAttrOfType<DictionaryAttr>("lcc.layers")) {
    code.report["layer_functions"] = layers.getAs<IntegerAttr>("functions").getInt();
    code.report["layer_calls"] = layers.getAs<IntegerAttr>("calls").getInt();
  }
  // What lcc-recompute made again, per layer instance: [ops, FLOPs, bytes].
  if (auto recompute = (*clone)->getAttrOfType<DictionaryAttr>("lcc.recompute"))
    if (auto layers = recompute.getAs<DictionaryAttr>("layers"))
      for (NamedAttribute layer : layers) {
        ArrayRef<int64_t> v = cast<DenseI64ArrayAttr>(layer.getValue()).asArrayRef();
        std::string key = "recompute:" + layer.getName().str() + ":";
        code.report[key + "ops"] = v[0];
        code.report[key + "flops"] = v[1];
        code.report[key + "bytes"] = v[2];
      }
  if (auto n = (*clone)->getAttrOfType<IntegerAttr>("lcc.split_reductions"))
    code.report["split_reductions"] = n.getInt();
  // Layer functions (lcc-outline-layers): their GEMMs are counted once per
  // call of them (per run of the step); they are host code like the
  // exported functions (calls of kernels and address arithmetic).
  llvm::StringMap<int64_t> layerCalls;
  llvm::StringSet<> countCalls;
  std::vector<std::string> hostCode = exported;
  for (auto fn : clone->getOps<LLVM::LLVMFuncOp>())
    if (fn->hasAttr(kLayerAttr)) {
      hostCode.push_back(fn.getName().str());
      // Calls made loops (lcc-loop-layer-calls) were counted before.
      auto runs = fn->getAttrOfType<IntegerAttr>(kLayerRunsAttr);
      layerCalls[fn.getName()] = runs ? runs.getInt() : 0;
      if (!runs)
        countCalls.insert(fn.getName());
    }
  clone->walk([&](LLVM::CallOp call) {
    if (auto callee = call.getCallee(); callee && countCalls.contains(*callee))
      ++layerCalls[*callee];
  });
  int64_t kernels = 0, gemms = 0, overwrites = 0;
  clone->walk([&](Operation *op) {
    if (auto fn = llvm::dyn_cast<LLVM::LLVMFuncOp>(op))
      kernels += fn->hasAttr("lcc.kernel");
    auto call = llvm::dyn_cast<LLVM::CallOp>(op);
    if (!call || !call.getCallee() ||
        !llvm::is_contained({"lcc_sgemm", "lcc_dgemm", "lcc_bf16gemm", "lcc_hgemm",
                             "lcc_cuda_sgemm", "lcc_cuda_dgemm", "lcc_cuda_bf16gemm",
                             "lcc_cuda_hgemm"},
                            *call.getCallee()))
      return;
    auto parent = call->getParentOfType<LLVM::LLVMFuncOp>();
    auto layer = layerCalls.find(parent.getName());
    int64_t times = layer == layerCalls.end() ? 1 : layer->second;
    gemms += times;
    // beta 0 (the last argument): C's zero fill was dropped (lcc-gemm-to-library).
    APInt beta;
    if (!call.getArgOperands().empty() &&
        matchPattern(call.getArgOperands().back(), m_ConstantInt(&beta)) && beta.isZero())
      overwrites += times;
  });
  code.report["gemm_overwrites"] = overwrites;
  if (cuda) {
    kernels = int64_t(code.cuda.names.size());
    for (auto &[mapping, n] : code.cuda.mappings)
      code.report["gpu_kernels_" + mapping] = n;
  }
  code.report["kernels"] = kernels;
  code.report["gemm_calls"] = gemms;
  llvm::StringSet<> bufferTables;
  for (auto fn : clone->getOps<LLVM::LLVMFuncOp>()) {
    if (fn->hasAttr(kBufferTableAttr))
      bufferTables.insert(fn.getName());
    auto bytes = fn->getAttrOfType<IntegerAttr>("lcc.arena_bytes");
    if (!bytes || !shapes.count(fn.getName().str()))
      continue;
    code.arenaBytes[fn.getName().str()] = bytes.getInt();
    if (bytes.getInt() > 0)
      shapes[fn.getName().str()].push_back({bytes.getInt()});
  }
  if (options.planOnly)
    return code;

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> m = translateModuleToLLVMIR(*clone, llvmContext, "lcc");
  if (!m)
    return error("translation to LLVM IR failed:\n" + diagnostics);
  for (const std::string &name : exported)
    if (llvm::Error err = addPackedWrapper(*m, name, shapes[name], bufferTables.contains(name)))
      return std::move(err);
  // Kernels stay functions: inlining them back would rebuild the one huge
  // function that lcc-outline-kernels exists to avoid.
  for (llvm::Function &f : *m)
    if (!f.isDeclaration() && !llvm::StringRef(f.getName()).starts_with("lcc_") &&
        !llvm::is_contained(exported, f.getName().str()))
    {
      f.addFnAttr(llvm::Attribute::NoInline);
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
    }
  // The exported functions are one long block of calls (kernels, GEMMs) and
  // address arithmetic: nothing to optimize, but instruction selection,
  // scheduling and register allocation are superlinear in a block that size.
  // They get partitions of their own and the fast code generator
  // (ParallelCodegenOptions::fastFunctions); optnone keeps the IR optimizer
  // of any pipeline that does see them away too.
  for (const std::string &name : hostCode)
    if (llvm::Function *f = m->getFunction(name)) {
      f->addFnAttr(llvm::Attribute::OptimizeNone);
      f->addFnAttr(llvm::Attribute::NoInline);
    }

  llvm::Triple triple(llvm::sys::getProcessTriple());
  std::string lookupError;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, lookupError);
  if (!target)
    return error("no LLVM target for " + triple.str() + ": " + lookupError);
  auto makeMachine = [&](bool fast) {
    return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
        triple, options.cpu, "", llvm::TargetOptions(), llvm::Reloc::PIC_, std::nullopt,
        fast                    ? llvm::CodeGenOptLevel::None
        : options.optLevel >= 3 ? llvm::CodeGenOptLevel::Aggressive
                                : llvm::CodeGenOptLevel::Default));
  };
  std::unique_ptr<llvm::TargetMachine> machine = makeMachine(false);
  if (!machine)
    return error("cannot create an LLVM target machine for CPU '" + options.cpu + "'");
  m->setTargetTriple(triple);
  m->setDataLayout(machine->createDataLayout());
  endPhase("translation to LLVM IR");

  ParallelCodegenOptions codegen;
  codegen.optLevel = options.optLevel;
  codegen.threads = options.threads;
  for (const std::string &name : exported) // and their entry wrappers, as long
    codegen.fastFunctions.push_back("lcc_" + name);
  for (const std::string &name : hostCode)
    codegen.fastFunctions.push_back(name);
  auto objects = optimizeAndEmitObjects(std::move(m), makeMachine, codegen);
  if (!objects)
    return objects.takeError();
  endPhase("LLVM optimization and machine code (" + std::to_string(codegen.partitions) +
           " partitions on " + std::to_string(objects->threads) + " thread" +
           (objects->threads == 1 ? ")" : "s)"));
  auto so = linkShared(objects->objects);
  if (!so)
    return so.takeError();
  endPhase("link (ld.lld)");
  code.sharedObject = std::move(*so);
  return code;
}

} // namespace lcc
