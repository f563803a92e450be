//===- CudaBinary.h - the device code of a CUDA train.bin -------*- C++ -*-===//
//
// After the CUDA pipeline (passes/Pipelines.h: buildAotCudaPipeline) the
// module holds one `gpu.binary @lcc_kernels` with the kernels' PTX. This
// takes it out of the module (the host code is then compiled like the CPU
// target's) and assembles it with the toolkit's ptxas, so a train.bin carries
// both: cubin for the GPU it was compiled for, PTX for newer ones (the driver
// JIT-compiles it).
//
//===----------------------------------------------------------------------===//
#ifndef LCC_COMPILER_CUDA_CUDABINARY_H
#define LCC_COMPILER_CUDA_CUDABINARY_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lcc {

struct CudaKernels {
  std::string arch; // sm_90
  std::string ptx;
  std::vector<uint8_t> cubin;
  /// Kernel names by launch id (lcc_cuda_launch's first argument).
  std::vector<std::string> names;
  /// How many kernels got each thread mapping (lcc-gpu-kernels' lcc.mapping).
  std::vector<std::pair<std::string, int64_t>> mappings;
};

/// A CUDA toolkit program: $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin,
/// then PATH; "" when not found.
std::string findCudaTool(const std::string &name);

/// Moves the PTX out of `module` (erasing its gpu.binary) and assembles it
/// for `arch` with ptxas -O3.
llvm::Expected<CudaKernels> extractCudaKernels(mlir::ModuleOp module, const std::string &arch);

/// ptxas -arch=<arch> -O3 on `ptx`; the error carries ptxas's messages.
llvm::Expected<std::vector<uint8_t>> assemblePtx(const std::string &ptx, const std::string &arch);

} // namespace lcc

#endif
