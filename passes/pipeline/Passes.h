//===- Passes.h - lcc pipeline-parallel passes ------------------*- C++ -*-===//
//
// Passes of pipeline parallelism; each is described in Passes.td beside this file.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_PIPELINE_PASSES_H
#define LCC_PASSES_PIPELINE_PASSES_H

#include "passes/PassBase.h"

namespace lcc {
#define GEN_PASS_DECL
#include "passes/pipeline/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/pipeline/Passes.h.inc"
} // namespace lcc

#endif
