//===- Partition.cpp - pipeline stages balanced by cost and memory --------===//
#include "passes/pipeline/Partition.h"

#include <algorithm>
#include <limits>

namespace lcc::pipeline {

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

constexpr double kNever = std::numeric_limits<double>::infinity();

/// Sums over runs of pieces, and the stage costs of a cut.
class Runs {
public:
  Runs(llvm::ArrayRef<Piece> pieces, llvm::ArrayRef<int64_t> inFlight)
      : pieces_(pieces), inFlight_(inFlight) {
    cost_.push_back(0);
    state_.push_back(0);
    act_.push_back(0);
    for (const Piece &p : pieces) {
      cost_.push_back(cost_.back() + p.cost);
      state_.push_back(state_.back() + p.stateBytes);
      act_.push_back(act_.back() + p.activationBytes);
    }
  }
  size_t size() const { return pieces_.size(); }
  size_t stages() const { return inFlight_.size(); }
  /// Whether a stage may start at piece i: the first, or between two layers.
  bool startsAt(size_t i) const {
    return i == 0 || (i < size() && pieces_[i - 1].layer && pieces_[i].layer);
  }
  double cost(size_t i, size_t j) const { return cost_[j] - cost_[i]; }
  int64_t memory(size_t i, size_t j, size_t stage) const {
    return state_[j] - state_[i] + inFlight_[stage] * (act_[j] - act_[i]);
  }
  StagePlan plan(std::vector<size_t> first) const {
    StagePlan p;
    p.first = std::move(first);
    for (size_t s = 0; s < p.first.size(); ++s) {
      size_t end = s + 1 < p.first.size() ? p.first[s + 1] : size();
      p.cost.push_back(cost(p.first[s], end));
      p.memory.push_back(memory(p.first[s], end, s));
    }
    return p;
  }

  /// The cut minimizing the largest of `value(stage's pieces, stage)` over
  /// the stages that `allowed` accepts; nullopt when none is allowed.
  template <typename Value, typename Allowed>
  std::optional<std::vector<size_t>> minMax(Value value, Allowed allowed) const {
    size_t n = size(), S = stages();
    // best[s][j]: the least largest value of stages 0..s, stage s ending at j.
    std::vector<std::vector<double>> best(S, std::vector<double>(n + 1, kNever));
    std::vector<std::vector<size_t>> from(S, std::vector<size_t>(n + 1, 0));
    for (size_t s = 0; s < S; ++s)
      for (size_t j = 1; j <= n; ++j) {
        if (j < n && !startsAt(j))
          continue;
        for (size_t i = s == 0 ? 0 : 1; i < j; ++i) {
          if (!startsAt(i) || (s == 0) != (i == 0) || !allowed(i, j, s))
            continue;
          double before = s == 0 ? 0 : best[s - 1][i];
          double here = std::max(before, value(i, j, s));
          if (here < best[s][j]) {
            best[s][j] = here;
            from[s][j] = i;
          }
        }
      }
    if (best[S - 1][n] == kNever)
      return std::nullopt;
    std::vector<size_t> first(S);
    for (size_t s = S, j = n; s-- > 0;) {
      first[s] = from[s][j];
      j = first[s];
    }
    return first;
  }

private:
  llvm::ArrayRef<Piece> pieces_;
  llvm::ArrayRef<int64_t> inFlight_;
  std::vector<double> cost_;
  std::vector<int64_t> state_, act_;
};

int64_t layers(llvm::ArrayRef<Piece> pieces) {
  return int64_t(llvm::count_if(pieces, [](const Piece &p) { return p.layer; }));
}

} // namespace

llvm::Expected<StagePlan> balanceStages(llvm::ArrayRef<Piece> pieces,
                                        llvm::ArrayRef<int64_t> inFlight,
                                        std::optional<int64_t> memoryLimit) {
  int64_t stages = int64_t(inFlight.size()), have = layers(pieces);
  if (stages < 1)
    return error("a pipeline needs at least one stage");
  if (have < stages)
    return error("cannot cut the model into " + llvm::Twine(stages) + " pipeline stages: it has " +
                 llvm::Twine(have) + " layer" + (have == 1 ? "" : "s") +
                 ", and each stage needs at least one (stages are cut between layers)");
  Runs runs(pieces, inFlight);
  auto cost = [&](size_t i, size_t j, size_t) { return runs.cost(i, j); };
  auto memory = [&](size_t i, size_t j, size_t s) { return double(runs.memory(i, j, s)); };
  auto underLimit = [&](size_t i, size_t j, size_t s) {
    return !memoryLimit || runs.memory(i, j, s) <= *memoryLimit;
  };
  std::optional<std::vector<size_t>> fastest = runs.minMax(cost, underLimit);
  if (!fastest) {
    StagePlan least = runs.plan(*runs.minMax(memory, [](size_t, size_t, size_t) { return true; }));
    return error(
        "no cut into " + llvm::Twine(stages) + " pipeline stages keeps every stage under " +
        llvm::Twine(*memoryLimit) + " bytes; the least peak any cut reaches is " +
        llvm::Twine(*std::max_element(least.memory.begin(), least.memory.end())) + " bytes");
  }
  StagePlan plan = runs.plan(*fastest);
  double slowest = *std::max_element(plan.cost.begin(), plan.cost.end());
  // Among the cuts as fast (within rounding), the smallest largest stage.
  double tolerance = slowest * 1e-12;
  std::optional<std::vector<size_t>> lean = runs.minMax(memory, [&](size_t i, size_t j, size_t s) {
    return underLimit(i, j, s) && runs.cost(i, j) <= slowest + tolerance;
  });
  return lean ? runs.plan(*lean) : plan;
}

llvm::Expected<StagePlan> stagesAt(llvm::ArrayRef<Piece> pieces, llvm::ArrayRef<int64_t> inFlight,
                                   llvm::ArrayRef<int64_t> firstLayers) {
  int64_t stages = int64_t(inFlight.size()), have = layers(pieces);
  if (int64_t(firstLayers.size()) + 1 != stages)
    return error(llvm::Twine(stages) + " pipeline stages need " + llvm::Twine(stages - 1) +
                 " boundaries, got " + llvm::Twine(firstLayers.size()));
  // Layer k's piece index.
  std::vector<size_t> layerAt;
  for (size_t i = 0; i < pieces.size(); ++i)
    if (pieces[i].layer)
      layerAt.push_back(i);
  Runs runs(pieces, inFlight);
  std::vector<size_t> first{0};
  int64_t previous = 0;
  for (int64_t k : firstLayers) {
    if (k <= previous || k >= have)
      return error("pipeline stage boundaries must be increasing layer numbers in 1.." +
                   llvm::Twine(have - 1) + " (a stage starts at that layer), got " +
                   llvm::Twine(k) + (k <= previous ? " after " + llvm::Twine(previous) : ""));
    size_t at = layerAt[size_t(k)];
    if (!runs.startsAt(at))
      return error("layer " + llvm::Twine(k) + " (" + pieces[at].name +
                   ") does not directly follow another layer, so no stage can start there");
    first.push_back(at);
    previous = k;
  }
  return runs.plan(std::move(first));
}

} // namespace lcc::pipeline
