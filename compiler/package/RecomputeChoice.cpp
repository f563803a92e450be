//===- RecomputeChoice.cpp - recomputation chosen for a byte budget -------===//
#include "compiler/package/RecomputeChoice.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

namespace lcc {

std::vector<RecomputeRung> recomputeLadder(int64_t layers) {
  std::vector<RecomputeRung> ladder = {{RecomputeMode::None, -1}};
  if (layers <= 0)
    return ladder;
  // Selective on the first k, skipping k = L - 1: the one layer left
  // without recomputation would be the only one of its structure and
  // stay inline (lcc-outline-layers), which costs more than it saves.
  for (int64_t k = 1; k <= layers - 2; ++k)
    ladder.push_back({RecomputeMode::Selective, k});
  ladder.push_back({RecomputeMode::Selective, -1});
  for (int64_t k = 1; k <= layers; ++k)
    ladder.push_back({RecomputeMode::Full, k == layers ? -1 : k});
  return ladder;
}

std::string describeRung(const RecomputeRung &rung, int64_t layers) {
  std::string name(modeName(rung.mode));
  if (rung.mode == RecomputeMode::None || rung.layers < 0)
    return name;
  std::string out =
      name + " on " + std::to_string(rung.layers) + " of " + std::to_string(layers) + " layers";
  return rung.mode == RecomputeMode::Full ? out + " (the rest selective)" : out;
}

llvm::Expected<RecomputeTrial>
chooseRecompute(int64_t layers, int64_t budget,
                llvm::function_ref<llvm::Expected<RecomputeTrial>(const RecomputeRung &)> measure,
                std::vector<RecomputeTrial> &tried) {
  std::vector<RecomputeRung> ladder = recomputeLadder(layers);
  std::vector<std::optional<RecomputeTrial>> at(ladder.size());
  auto trial = [&](size_t i) -> llvm::Expected<RecomputeTrial> {
    if (at[i])
      return *at[i];
    auto t = measure(ladder[i]);
    if (!t)
      return t.takeError();
    t->rung = ladder[i];
    tried.push_back(*t);
    at[i] = *t;
    return *t;
  };
  auto fits = [&](const RecomputeTrial &t) { return t.planBytes <= budget; };
  auto none = trial(0);
  if (!none || fits(*none))
    return none;
  if (ladder.size() == 1)
    return llvm::createStringError("the plan needs " + formatBytes(none->planBytes) +
                                   " per rank, more than --mem=" + formatBytes(budget) +
                                   ", and the model has no named layers to recompute");
  // The two segments end at all-selective and all-full.
  size_t allSelective = ladder.size() - size_t(layers) - 1, allFull = ladder.size() - 1;
  auto selective = trial(allSelective);
  if (!selective)
    return selective.takeError();
  auto full = trial(allFull);
  if (!full)
    return full.takeError();
  // The first fitting rung of the segment (lo, hi], hi known to fit.
  size_t lo, hi;
  if (fits(*selective)) {
    lo = 0, hi = allSelective;
  } else if (fits(*full)) {
    lo = allSelective, hi = allFull;
  } else {
    const RecomputeTrial *best = &tried.front();
    for (const RecomputeTrial &t : tried)
      if (t.planBytes < best->planBytes)
        best = &t;
    return llvm::createStringError(
        "no recomputation fits --mem=" + formatBytes(budget) + " per rank: the smallest plan is " +
        formatBytes(best->planBytes) + " (" + std::to_string(best->planBytes) + " bytes, with " +
        describeRung(best->rung, layers) + ")");
  }
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    auto t = trial(mid);
    if (!t)
      return t.takeError();
    (fits(*t) ? hi : lo) = mid;
  }
  return trial(hi);
}

std::optional<int64_t> parseByteSize(const std::string &text) {
  llvm::StringRef s = llvm::StringRef(text).trim();
  size_t n = 0;
  while (n < s.size() && (llvm::isDigit(s[n]) || s[n] == '.' || s[n] == 'e' || s[n] == 'E' ||
                          ((s[n] == '+' || s[n] == '-') && n > 0 && (s[n - 1] | 32) == 'e')))
    ++n;
  // "1e9" is a number, "1EB" is not a unit lcc knows: back off a trailing e.
  while (n > 0 && (s[n - 1] | 32) == 'e')
    --n;
  double value = 0;
  if (n == 0 || s.take_front(n).getAsDouble(value) || !(value > 0) || !std::isfinite(value))
    return std::nullopt;
  std::string unit = s.drop_front(n).trim().lower();
  static const std::pair<const char *, double> units[] = {{"", 1},
                                                          {"b", 1},
                                                          {"kb", 1e3},
                                                          {"mb", 1e6},
                                                          {"gb", 1e9},
                                                          {"tb", 1e12},
                                                          {"kib", 1024.0},
                                                          {"mib", 1048576.0},
                                                          {"gib", 1073741824.0},
                                                          {"tib", 1099511627776.0}};
  for (auto [name, scale] : units)
    if (unit == name) {
      double bytes = value * scale;
      if (bytes >= 9.2e18)
        return std::nullopt;
      return int64_t(bytes);
    }
  return std::nullopt;
}

std::string formatBytes(int64_t bytes) {
  std::string out;
  llvm::raw_string_ostream os(out);
  double b = double(bytes);
  if (b >= 1e9)
    os << llvm::format("%.2f GB", b / 1e9);
  else if (b >= 1e6)
    os << llvm::format("%.2f MB", b / 1e6);
  else if (b >= 1e3)
    os << llvm::format("%.2f KB", b / 1e3);
  else
    os << bytes << " B";
  os.flush();
  return out;
}

} // namespace lcc
