//===- CudaBinary.cpp - the device code of a CUDA train.bin ---------------===//
#include "compiler/cuda/CudaBinary.h"
#include "passes/Pipelines.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace lcc {

static llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "lcc: " + message);
}

std::string findCudaTool(const std::string &name) {
  std::string path = findInCudaToolkit("bin/" + name);
  if (!path.empty() && llvm::sys::fs::can_execute(path))
    return path;
  if (auto found = llvm::sys::findProgramByName(name))
    return *found;
  return "";
}

llvm::Expected<std::vector<uint8_t>> assemblePtx(const std::string &ptx, const std::string &arch) {
  std::string ptxas = findCudaTool("ptxas");
  if (ptxas.empty())
    return error("ptxas not found (looked in $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin "
                 "and on PATH); --target=cuda needs the CUDA toolkit's ptxas to assemble the "
                 "kernels");
  llvm::SmallString<128> dir;
  if (auto ec = llvm::sys::fs::createUniqueDirectory("lcc-ptxas", dir))
    return error("cannot create a temporary directory: " + ec.message());
  std::string in = (dir + "/kernels.ptx").str(), out = (dir + "/kernels.cubin").str(),
              log = (dir + "/ptxas.log").str();
  llvm::scope_exit cleanup([&] {
    for (const std::string &f : {in, out, log})
      llvm::sys::fs::remove(f);
    llvm::sys::fs::remove(dir);
  });
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(in, ec);
    if (ec)
      return error("cannot write " + in + ": " + ec.message());
    os << ptx;
  }
  std::string archFlag = "-arch=" + arch;
  llvm::SmallVector<llvm::StringRef> argv = {ptxas, archFlag, "-O3", "-o", out, in};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(log),
                                                llvm::StringRef(log)};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(ptxas, argv, std::nullopt, redirects, 0, 0, &message);
  if (rc != 0) {
    auto text = llvm::MemoryBuffer::getFile(log);
    return error("ptxas rejected the kernels for " + arch + " (" + ptxas +
                 "): " + (text ? (*text)->getBuffer().trim().str() : message));
  }
  auto bytes = llvm::MemoryBuffer::getFile(out);
  if (!bytes)
    return error("cannot read " + out + ": " + bytes.getError().message());
  llvm::StringRef b = (*bytes)->getBuffer();
  return std::vector<uint8_t>(b.bytes_begin(), b.bytes_end());
}

llvm::Expected<CudaKernels> extractCudaKernels(ModuleOp module, const std::string &arch) {
  CudaKernels kernels;
  kernels.arch = arch;
  auto names = module->getAttrOfType<ArrayAttr>("lcc.gpu_kernels");
  if (!names)
    return error("the CUDA pipeline left no kernel list (lcc.gpu_kernels)");
  for (Attribute a : names)
    kernels.names.push_back(llvm::cast<StringAttr>(a).str());
  gpu::BinaryOp binary;
  for (auto b : module.getOps<gpu::BinaryOp>())
    binary = b;
  if (!binary || binary.getObjects().size() != 1)
    return error("the CUDA pipeline left no single gpu.binary with the kernels' PTX");
  auto object = llvm::cast<gpu::ObjectAttr>(binary.getObjects()[0]);
  if (object.getFormat() != gpu::CompilationTarget::Assembly)
    return error("the kernels' gpu.binary does not hold PTX");
  kernels.ptx = object.getObject().str();
  binary.erase();
  module->removeAttr("lcc.gpu_kernels");
  if (auto counts = module->getAttrOfType<DictionaryAttr>("lcc.gpu_mappings")) {
    for (NamedAttribute a : counts)
      if (auto n = llvm::dyn_cast<IntegerAttr>(a.getValue()))
        kernels.mappings.emplace_back(a.getName().str(), n.getInt());
    module->removeAttr("lcc.gpu_mappings");
  }
  auto cubin = assemblePtx(kernels.ptx, arch);
  if (!cubin)
    return cubin.takeError();
  kernels.cubin = std::move(*cubin);
  return kernels;
}

} // namespace lcc
