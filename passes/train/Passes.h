//===- Passes.h - lcc train passes ------------------------------*- C++ -*-===//
//
// Passes of the training step (autodiff, recomputation, optimizer, precision); each is described in
// Passes.td beside this file.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_TRAIN_PASSES_H
#define LCC_PASSES_TRAIN_PASSES_H

#include "passes/PassBase.h"

namespace lcc {
#define GEN_PASS_DECL
#include "passes/train/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/train/Passes.h.inc"
} // namespace lcc

#endif
