//===- Modes.h - the training modes lcc's flags and options name -*- C++ -*-===//
//
// Each mode a user picks by name (lcc --optimizer, --shard, ...; the same
// names in the pass options lcc-opt replays) is an enum class with one table
// of names. Text is parsed once where it enters (the driver's flags, a pass's
// string option) with parseMode, and printed back with modeName; everything
// else compares enums.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_MODES_H
#define LCC_PASSES_MODES_H

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace lcc {

enum class Optimizer { AdamW, SGD };
enum class Schedule { Constant, Cosine };
enum class LossScale { None, Dynamic };
enum class Precision { FP32, BF16, FP16 };
/// docs/distributed.md.
enum class ShardMode { None, DP, Zero1, Zero2, Zero3 };
/// attentionMinScores (passes/Pipelines.h).
enum class AttentionMode { Auto, Decomposed, Fused };
/// What the backward computes again instead of keeping from the forward
/// (lcc-recompute, docs/memory.md); auto: the driver picks for --mem.
enum class RecomputeMode { None, Selective, Full, Auto };

/// How a CUDA kernel's threads cover its loops (passes/gpu/GpuKernelBodies.h);
/// lcc --report counts kernels by it.
enum class GpuMapping { Threads, Rows, Slices, Serial, Multi };

/// The names of a mode, in the order lcc's messages list them.
template <typename E> struct ModeNames;
template <> struct ModeNames<Optimizer> {
  static constexpr std::pair<Optimizer, std::string_view> table[] = {{Optimizer::AdamW, "adamw"},
                                                                     {Optimizer::SGD, "sgd"}};
};
template <> struct ModeNames<Schedule> {
  static constexpr std::pair<Schedule, std::string_view> table[] = {
      {Schedule::Constant, "constant"}, {Schedule::Cosine, "cosine"}};
};
template <> struct ModeNames<LossScale> {
  static constexpr std::pair<LossScale, std::string_view> table[] = {
      {LossScale::None, "none"}, {LossScale::Dynamic, "dynamic"}};
};
template <> struct ModeNames<Precision> {
  static constexpr std::pair<Precision, std::string_view> table[] = {
      {Precision::FP32, "fp32"}, {Precision::BF16, "bf16"}, {Precision::FP16, "fp16"}};
};
template <> struct ModeNames<ShardMode> {
  static constexpr std::pair<ShardMode, std::string_view> table[] = {{ShardMode::None, "none"},
                                                                     {ShardMode::DP, "dp"},
                                                                     {ShardMode::Zero1, "zero1"},
                                                                     {ShardMode::Zero2, "zero2"},
                                                                     {ShardMode::Zero3, "zero3"}};
};
template <> struct ModeNames<AttentionMode> {
  static constexpr std::pair<AttentionMode, std::string_view> table[] = {
      {AttentionMode::Auto, "auto"},
      {AttentionMode::Decomposed, "decomposed"},
      {AttentionMode::Fused, "fused"}};
};
template <> struct ModeNames<RecomputeMode> {
  static constexpr std::pair<RecomputeMode, std::string_view> table[] = {
      {RecomputeMode::None, "none"},
      {RecomputeMode::Selective, "selective"},
      {RecomputeMode::Full, "full"},
      {RecomputeMode::Auto, "auto"}};
};

template <> struct ModeNames<GpuMapping> {
  static constexpr std::pair<GpuMapping, std::string_view> table[] = {
      {GpuMapping::Threads, "threads"},
      {GpuMapping::Rows, "rows"},
      {GpuMapping::Slices, "slices"},
      {GpuMapping::Serial, "serial"},
      {GpuMapping::Multi, "multi"}};
};

template <typename E> std::string_view modeName(E mode) {
  for (const auto &[value, name] : ModeNames<E>::table)
    if (value == mode)
      return name;
  return "?";
}

template <typename E> std::optional<E> parseMode(std::string_view name) {
  for (const auto &[value, text] : ModeNames<E>::table)
    if (text == name)
      return value;
  return std::nullopt;
}

/// "fp32, bf16 or fp16": what an error about a bad name expects.
template <typename E> std::string modeChoices() {
  std::string out;
  constexpr size_t n = std::size(ModeNames<E>::table);
  for (size_t i = 0; i < n; ++i) {
    if (i)
      out += i + 1 == n ? " or " : ", ";
    out += ModeNames<E>::table[i].second;
  }
  return out;
}

} // namespace lcc

#endif // LCC_PASSES_MODES_H
