//===- Passes.h - all lcc passes --------------------------------*- C++ -*-===//
//
// lcc's passes by phase, each folder with its own Passes.td (what each pass
// does, its options, an example): pipeline (stages) -> train -> shard ->
// tensor -> buffer -> kernels -> cpu | gpu. passes/Pipelines.cpp is the
// only place that orders them.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_PASSES_H
#define LCC_PASSES_PASSES_H

#include "passes/buffer/Passes.h"
#include "passes/cpu/Passes.h"
#include "passes/gpu/Passes.h"
#include "passes/kernels/Passes.h"
#include "passes/pipeline/Passes.h"
#include "passes/shard/Passes.h"
#include "passes/tensor/Passes.h"
#include "passes/train/Passes.h"

namespace lcc {
/// Registers every lcc pass (lcc-opt).
inline void registerLccPasses() {
  registerLccTrainPasses();
  registerLccShardPasses();
  registerLccTensorPasses();
  registerLccBufferPasses();
  registerLccKernelsPasses();
  registerLccCpuPasses();
  registerLccGpuPasses();
  registerLccPipelinePasses();
}
} // namespace lcc

#endif
