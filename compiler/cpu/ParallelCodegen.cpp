//===- ParallelCodegen.cpp - optimize and emit objects in parallel --------===//
#include "compiler/cpu/ParallelCodegen.h"
#include "runtime/cpu/Parallel.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/SplitModule.h"
#include "llvm/Transforms/Utils/ValueMapper.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>

namespace lcc {

namespace {

/// A partition on its way to a thread: bitcode, since an LLVMContext is not
/// thread-safe and each thread reads its partition into a context of its own.
struct Partition {
  llvm::SmallVector<char, 0> bitcode;
  bool fast = false; // a fast function alone: no IR optimization, fast codegen
};

llvm::SmallVector<char, 0> toBitcode(const llvm::Module &m) {
  llvm::SmallVector<char, 0> bytes;
  llvm::raw_svector_ostream os(bytes);
  llvm::WriteBitcodeToFile(m, os);
  return bytes;
}

/// Local symbols become hidden globals, so that references across partitions
/// link (what SplitModule does for its own partitions; done first here so the
/// fast functions' partitions agree with them on names).
void externalizeLocals(llvm::Module &m) {
  unsigned unnamed = 0;
  auto externalize = [&](llvm::GlobalValue &gv) {
    if (!gv.hasLocalLinkage())
      return;
    if (!gv.hasName())
      gv.setName("lcc.unnamed." + llvm::Twine(unnamed++));
    gv.setLinkage(llvm::GlobalValue::ExternalLinkage);
    gv.setVisibility(llvm::GlobalValue::HiddenVisibility);
  };
  for (llvm::GlobalValue &gv : m.global_values())
    externalize(gv);
}

} // namespace

llvm::Expected<EmittedObjects>
optimizeAndEmitObjects(std::unique_ptr<llvm::Module> module, const MakeTargetMachine &makeMachine,
                       const ParallelCodegenOptions &options) {
  // The fast functions first, biggest first: they are the longest jobs, so
  // starting them first keeps the threads busy to the end.
  std::vector<Partition> partitions;
  std::vector<llvm::Function *> fast;
  for (const std::string &name : options.fastFunctions)
    if (llvm::Function *f = module->getFunction(name); f && !f->isDeclaration())
      fast.push_back(f);
  llvm::stable_sort(fast, [](llvm::Function *a, llvm::Function *b) {
    return a->getInstructionCount() > b->getInstructionCount();
  });
  if (!fast.empty()) {
    externalizeLocals(*module);
    for (llvm::Function *f : fast) {
      llvm::ValueToValueMapTy map;
      std::unique_ptr<llvm::Module> alone = llvm::CloneModule(
          *module, map, [&](const llvm::GlobalValue *gv) { return gv == f; });
      partitions.push_back({toBitcode(*alone), true});
    }
    for (llvm::Function *f : fast)
      f->deleteBody();
  }
  // Balancing by size keeps the biggest functions apart.
  llvm::SplitModule(
      *module, std::max(1u, options.partitions),
      [&](std::unique_ptr<llvm::Module> part) { partitions.push_back({toBitcode(*part), false}); },
      /*PreserveLocals=*/false, /*RoundRobin=*/true);
  module.reset();
  if (partitions.empty())
    return EmittedObjects();

  EmittedObjects result;
  std::vector<llvm::SmallVector<char, 0>> &objects = result.objects;
  objects.resize(partitions.size());
  std::vector<std::string> errors(partitions.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < partitions.size();) {
      llvm::LLVMContext context;
      const Partition &p = partitions[i];
      llvm::MemoryBufferRef buffer(llvm::StringRef(p.bitcode.data(), p.bitcode.size()),
                                   "partition");
      auto part = llvm::parseBitcodeFile(buffer, context);
      if (!part) {
        errors[i] = "reading partition " + std::to_string(i) + ": " +
                    llvm::toString(part.takeError());
        continue;
      }
      std::unique_ptr<llvm::TargetMachine> machine = makeMachine(p.fast);
      if (!machine) {
        errors[i] = "cannot create a target machine";
        continue;
      }
      (*part)->setDataLayout(machine->createDataLayout());
      if (!p.fast) {
        auto optimize = mlir::makeOptimizingTransformer(options.optLevel, 0, machine.get());
        if (llvm::Error err = optimize(part->get())) {
          errors[i] = "LLVM optimization failed: " + llvm::toString(std::move(err));
          continue;
        }
      }
      llvm::raw_svector_ostream os(objects[i]);
      llvm::legacy::PassManager codegen;
      if (machine->addPassesToEmitFile(codegen, os, nullptr, llvm::CodeGenFileType::ObjectFile)) {
        errors[i] = "the target cannot emit object files";
        continue;
      }
      codegen.run(**part);
    }
  };
  unsigned threads = options.threads ? options.threads : unsigned(lcc::defaultNumThreads());
  threads = std::clamp<unsigned>(threads, 1, unsigned(partitions.size()));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back(work);
  work();
  for (std::thread &t : pool)
    t.join();
  for (const std::string &e : errors)
    if (!e.empty())
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "lcc: " + e);
  result.threads = threads;
  return result;
}

} // namespace lcc
