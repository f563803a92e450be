//===- Passes.h - lcc cpu passes --------------------------------*- C++ -*-===//
//
// Passes of the CPU target after kernels; each is described in Passes.td beside this file.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_CPU_PASSES_H
#define LCC_PASSES_CPU_PASSES_H

#include "passes/PassBase.h"

namespace lcc {
#define GEN_PASS_DECL
#include "passes/cpu/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/cpu/Passes.h.inc"
} // namespace lcc

#endif
