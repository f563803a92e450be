//===- Passes.h - lcc buffer passes -----------------------------*- C++ -*-===//
//
// Passes of bufferization and the memory plan; each is described in Passes.td beside this file.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_BUFFER_PASSES_H
#define LCC_PASSES_BUFFER_PASSES_H

#include "passes/PassBase.h"

namespace lcc {
#define GEN_PASS_DECL
#include "passes/buffer/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/buffer/Passes.h.inc"
} // namespace lcc

#endif
