//===- RecomputeChoice.h - recomputation chosen for a byte budget -*- C++ -*-===//
//
// `lcc --recompute=auto --mem=BYTES` (docs/memory.md): the least recomputation
// whose memory plan fits. The choices form a ladder of rising extra FLOPs
// (recomputeLadder): none; selective on the first layers, then all; then,
// with every layer selective, full on the first 1..L layers. Each rung's plan is measured by
// compiling it (the caller's `measure`: the plan lcc-run allocates, and
// the FLOPs lcc-recompute added), not estimated. The search measures none,
// all-selective and all-full, then bisects the first segment whose end fits:
// 3 + log2(L) compiles. It assumes the plan shrinks along a segment (each
// rung recomputes a superset of the one before); every rung it returns was
// measured to fit.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_COMPILER_PACKAGE_RECOMPUTECHOICE_H
#define LCC_COMPILER_PACKAGE_RECOMPUTECHOICE_H

#include "passes/Modes.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lcc {

/// One rung: the mode for the first `layers` layers (-1: all); with full
/// the others are selective (lcc-recompute's `layers`).
struct RecomputeRung {
  RecomputeMode mode = RecomputeMode::None;
  int64_t layers = -1;
};

struct RecomputeTrial {
  RecomputeRung rung;
  int64_t planBytes = 0; ///< the plan lcc-run allocates per rank
  int64_t flops = 0;     ///< FLOPs made again per micro-batch
};

/// The ladder for `layers` layers, cheapest first: none; selective on the
/// first 1..L-2 layers, then all (not L-1: RecomputeChoice.cpp); full on
/// the first 1..L (the rest selective).
std::vector<RecomputeRung> recomputeLadder(int64_t layers);

/// "selective on 3 of 12 layers", "full", "none".
std::string describeRung(const RecomputeRung &rung, int64_t layers);

/// The cheapest rung whose plan is at most `budget` bytes; every trial in
/// `tried`, in order. When none fits, an error saying the smallest plan
/// measured and with which rung.
llvm::Expected<RecomputeTrial>
chooseRecompute(int64_t layers, int64_t budget,
                llvm::function_ref<llvm::Expected<RecomputeTrial>(const RecomputeRung &)> measure,
                std::vector<RecomputeTrial> &tried);

/// "80GB" (10^9), "16GiB" (2^30), "512MB", "1.5e9", "123456" (bytes), case
/// insensitive; nullopt when it is not a positive size.
std::optional<int64_t> parseByteSize(const std::string &text);

/// 16000000000 -> "16.00 GB" (powers of 1000, as --mem's GB).
std::string formatBytes(int64_t bytes);

} // namespace lcc

#endif
