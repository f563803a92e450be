//===- Passes.h - lcc shard passes ------------------------------*- C++ -*-===//
//
// Passes of sharding (dp, tp, vocab, ZeRO) and collective scheduling; each is described in
// Passes.td beside this file.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_SHARD_PASSES_H
#define LCC_PASSES_SHARD_PASSES_H

#include "passes/PassBase.h"

namespace lcc {
#define GEN_PASS_DECL
#include "passes/shard/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/shard/Passes.h.inc"
} // namespace lcc

#endif
