//===- Passes.h - lcc gpu passes --------------------------------*- C++ -*-===//
//
// Passes of the CUDA target; each is described in Passes.td beside this file.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_GPU_PASSES_H
#define LCC_PASSES_GPU_PASSES_H

#include "passes/PassBase.h"

namespace lcc {
#define GEN_PASS_DECL
#include "passes/gpu/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/gpu/Passes.h.inc"
} // namespace lcc

#endif
