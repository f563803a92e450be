//===- ParallelCodegen.cpp - optimize and emit objects in parallel --------===//
#include "compiler/cpu/ParallelCodegen.h"
#include "runtime/Parallel.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/Utils/SplitModule.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>

namespace lcc {

llvm::Expected<EmittedObjects>
optimizeAndEmitObjects(std::unique_ptr<llvm::Module> module,
                       const std::function<std::unique_ptr<llvm::TargetMachine>()> &makeMachine,
                       const ParallelCodegenOptions &options) {
  // Partitions travel as bitcode: an LLVMContext is not thread-safe, so each
  // thread reads its partition into a context of its own. Local symbols are
  // made hidden globals so that calls across partitions link; balancing by
  // size keeps the biggest functions (the step functions) apart.
  std::vector<llvm::SmallVector<char, 0>> bitcode;
  llvm::SplitModule(
      *module, std::max(1u, options.partitions),
      [&](std::unique_ptr<llvm::Module> part) {
        llvm::SmallVector<char, 0> bytes;
        llvm::raw_svector_ostream os(bytes);
        llvm::WriteBitcodeToFile(*part, os);
        bitcode.push_back(std::move(bytes));
      },
      /*PreserveLocals=*/false, /*RoundRobin=*/true);
  module.reset();
  if (bitcode.empty())
    return EmittedObjects();

  EmittedObjects result;
  std::vector<llvm::SmallVector<char, 0>> &objects = result.objects;
  objects.resize(bitcode.size());
  std::vector<std::string> errors(bitcode.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < bitcode.size();) {
      llvm::LLVMContext context;
      llvm::MemoryBufferRef buffer(llvm::StringRef(bitcode[i].data(), bitcode[i].size()),
                                   "partition");
      auto part = llvm::parseBitcodeFile(buffer, context);
      if (!part) {
        errors[i] = "reading partition " + std::to_string(i) + ": " +
                    llvm::toString(part.takeError());
        continue;
      }
      std::unique_ptr<llvm::TargetMachine> machine = makeMachine();
      if (!machine) {
        errors[i] = "cannot create a target machine";
        continue;
      }
      (*part)->setDataLayout(machine->createDataLayout());
      auto optimize = mlir::makeOptimizingTransformer(options.optLevel, 0, machine.get());
      if (llvm::Error err = optimize(part->get())) {
        errors[i] = "LLVM optimization failed: " + llvm::toString(std::move(err));
        continue;
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
  threads = std::clamp<unsigned>(threads, 1, unsigned(bitcode.size()));
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
