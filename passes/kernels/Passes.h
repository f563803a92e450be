//===- Passes.h - lcc kernels passes ----------------------------*- C++ -*-===//
//
// Passes of kernels and library calls (CPU and CUDA); each is described in Passes.td beside this
// file.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_KERNELS_PASSES_H
#define LCC_PASSES_KERNELS_PASSES_H

#include "passes/PassBase.h"

namespace lcc {
#define GEN_PASS_DECL
#include "passes/kernels/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/kernels/Passes.h.inc"
} // namespace lcc

#endif
