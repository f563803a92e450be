//===- Passes.h - lcc tensor passes -----------------------------*- C++ -*-===//
//
// Passes of the lcc dialect to linalg on tensors; each is described in Passes.td beside this file.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_TENSOR_PASSES_H
#define LCC_PASSES_TENSOR_PASSES_H

#include "passes/PassBase.h"

namespace lcc {
#define GEN_PASS_DECL
#include "passes/tensor/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/tensor/Passes.h.inc"
} // namespace lcc

#endif
