//===- Schedule.cpp - pipeline schedules, checked before they run ---------===//
#include "passes/pipeline/Schedule.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <tuple>

namespace lcc::pipeline {

static llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::StringRef scheduleName(ScheduleKind kind) {
  switch (kind) {
  case ScheduleKind::GPipe: return "gpipe";
  case ScheduleKind::OneFOneB: return "1f1b";
  case ScheduleKind::Interleaved: return "interleaved";
  case ScheduleKind::ZeroBubbleH1: return "zb-h1";
  case ScheduleKind::Custom: return "custom";
  }
  return "";
}

std::optional<ScheduleKind> parseScheduleKind(llvm::StringRef name) {
  for (ScheduleKind k : {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::Interleaved,
                         ScheduleKind::ZeroBubbleH1})
    if (scheduleName(k) == name)
      return k;
  return std::nullopt;
}

std::string describe(const Action &a) {
  auto at = [&](const char *what) {
    return what + std::to_string(a.microbatch) + "@s" + std::to_string(a.stage);
  };
  switch (a.kind) {
  case Action::Forward: return at("F");
  case Action::Backward: return at("B");
  case Action::BackwardInput: return at("I");
  case Action::BackwardWeight: return at("W");
  case Action::Wait: return "wait";
  case Action::Transfers: break;
  }
  std::string out = a.wait ? "{" : "start {";
  for (const Transfer &t : a.transfers) {
    if (out.size() > 1)
      out += " ";
    out += (t.send ? "send " : "recv ") + std::string(t.gradient ? "grad " : "act ") +
           std::to_string(t.microbatch) + "@s" + std::to_string(t.stage) +
           (t.send ? " to r" : " from r") + std::to_string(t.peer);
  }
  return out + "}";
}

namespace {

Action compute(Action::Kind kind, int64_t stage, int64_t microbatch) {
  Action a;
  a.kind = kind;
  a.stage = stage;
  a.microbatch = microbatch;
  return a;
}

/// A rank's computations in slots: what runs back to back, with the
/// transfers between two slots posted as one group (the previous slot's
/// sends and the next slot's receives).
using Slots = std::vector<std::vector<Action>>;

/// One rank's slots for a schedule on one stage per rank: GPipe, or 1F1B's
/// warm-up of P - 1 - rank forwards, then one forward and one backward at a
/// time, each its own slot (Megatron's send_forward_recv_backward between
/// them); ZB-H1 is 1F1B's order with each backward split.
Slots oneStageSlots(ScheduleKind kind, int64_t rank, int64_t ranks, int64_t m) {
  Slots slots;
  auto add = [&](Action::Kind k, int64_t mb) { slots.push_back({compute(k, rank, mb)}); };
  if (kind == ScheduleKind::GPipe) {
    for (int64_t i = 0; i < m; ++i)
      add(Action::Forward, i);
    for (int64_t i = 0; i < m; ++i)
      add(Action::Backward, i);
    return slots;
  }
  // ZB-H1: each backward is its input gradient, sent on at once; rank r
  // keeps its last r weight gradients for later, so the gradients reach the
  // first stage sooner and the deferred W fill the waits of the cool-down
  // and the end. Rank r holds at most P - r + r = P micro-batches, rank 0's
  // 1F1B peak.
  bool split = kind == ScheduleKind::ZeroBubbleH1;
  std::deque<int64_t> deferred;
  auto backward = [&](int64_t mb) {
    if (!split)
      return add(Action::Backward, mb);
    add(Action::BackwardInput, mb);
    deferred.push_back(mb);
    while (int64_t(deferred.size()) > rank) {
      add(Action::BackwardWeight, deferred.front());
      deferred.pop_front();
    }
  };
  int64_t warmup = std::min(ranks - 1 - rank, m);
  for (int64_t i = 0; i < warmup; ++i)
    add(Action::Forward, i);
  for (int64_t i = 0; i < m - warmup; ++i) {
    add(Action::Forward, warmup + i);
    backward(i);
  }
  for (int64_t i = m - warmup; i < m; ++i)
    backward(i);
  for (int64_t mb : deferred)
    add(Action::BackwardWeight, mb);
  return slots;
}

/// Megatron's interleaved 1F1B: rank r runs virtual stages c*P + r; its k-th
/// forward is of chunk (k / P) % V, micro-batch (k / (P V)) P + k % P, its
/// backwards the same with the chunks in reverse. In the steady state a
/// forward and a backward are one slot: their transfers and the next pair's
/// receives are one group (send_forward_backward_recv_forward_backward).
Slots interleavedSlots(int64_t rank, int64_t ranks, int64_t m, int64_t v) {
  int64_t total = m * v;
  auto at = [&](Action::Kind kind, int64_t k) {
    int64_t chunk = (k / ranks) % v;
    if (kind == Action::Backward)
      chunk = v - 1 - chunk;
    return compute(kind, chunk * ranks + rank, (k / (ranks * v)) * ranks + k % ranks);
  };
  int64_t warmup = std::min((ranks - rank - 1) * 2 + (v - 1) * ranks, total);
  Slots slots;
  for (int64_t k = 0; k < warmup; ++k)
    slots.push_back({at(Action::Forward, k)});
  for (int64_t k = 0; k < total - warmup; ++k)
    slots.push_back({at(Action::Forward, warmup + k), at(Action::Backward, k)});
  for (int64_t k = total - warmup; k < total; ++k)
    slots.push_back({at(Action::Backward, k)});
  return slots;
}

/// Adds the transfers: a forward receives its input activation and sends its
/// output, a backward receives its output's gradient and sends its input's.
/// What one slot sends and the next receives are one group, or a rank that
/// sends would wait for a neighbour that is sending to it.
std::vector<Action> withTransfers(const Schedule &s, int64_t rank, const Slots &slots) {
  std::vector<Action> out;
  Action group;
  group.kind = Action::Transfers;
  int64_t last = s.stages() - 1;
  auto remote = [&](int64_t stage) { return s.rankOf(stage) != rank; };
  auto isForward = [](const Action &a) { return a.kind == Action::Forward; };
  auto isBackward = [](const Action &a) {
    return a.kind == Action::Backward || a.kind == Action::BackwardInput;
  };
  // Sends started before weight gradients, not yet waited for.
  bool started = false;
  auto wait = [&]() {
    if (started)
      out.push_back(compute(Action::Wait, 0, 0));
    started = false;
  };
  for (const std::vector<Action> &slot : slots) {
    for (const Action &a : slot) {
      if (isForward(a) && a.stage > 0 && remote(a.stage - 1))
        group.transfers.push_back({false, s.rankOf(a.stage - 1), false, a.stage - 1, a.microbatch});
      if (isBackward(a) && a.stage < last && remote(a.stage + 1))
        group.transfers.push_back({false, s.rankOf(a.stage + 1), true, a.stage + 1, a.microbatch});
    }
    // Weight gradients need nothing from a peer: the input gradient's send
    // is in flight while they run (so the previous stage gets it at once).
    bool weights =
        llvm::all_of(slot, [](const Action &a) { return a.kind == Action::BackwardWeight; });
    if (!group.transfers.empty()) {
      if (weights) {
        group.wait = false;
        out.push_back(group);
        group.wait = true;
        started = true;
      } else {
        wait();
        out.push_back(group);
      }
    }
    group.transfers.clear();
    for (const Action &a : slot) {
      out.push_back(a);
      if (isForward(a) && a.stage < last && remote(a.stage + 1))
        group.transfers.push_back({true, s.rankOf(a.stage + 1), false, a.stage, a.microbatch});
      if (isBackward(a) && a.stage > 0 && remote(a.stage - 1))
        group.transfers.push_back({true, s.rankOf(a.stage - 1), true, a.stage, a.microbatch});
    }
  }
  wait();
  if (!group.transfers.empty())
    out.push_back(group);
  return out;
}

} // namespace

llvm::Expected<Schedule> buildSchedule(ScheduleKind kind, int64_t ranks, int64_t microbatches,
                                       int64_t virtualStages) {
  if (ranks < 1 || microbatches < 1 || virtualStages < 1)
    return error("a pipeline needs at least one rank, micro-batch and stage per rank (got " +
                 llvm::Twine(ranks) + ", " + llvm::Twine(microbatches) + ", " +
                 llvm::Twine(virtualStages) + ")");
  if (kind == ScheduleKind::Interleaved) {
    if (virtualStages < 2)
      return error("the interleaved schedule needs at least 2 virtual stages per rank");
    if (microbatches % ranks)
      return error("the interleaved schedule needs the micro-batches (" +
                   llvm::Twine(microbatches) + ") to be a multiple of the pipeline ranks (" +
                   llvm::Twine(ranks) + ")");
  } else if (kind == ScheduleKind::Custom) {
    return error("a custom order is text for parseSchedule");
  } else if (virtualStages != 1) {
    return error("only the interleaved schedule runs several stages per rank; " +
                 scheduleName(kind) + " runs one");
  }
  Schedule s;
  s.kind = kind;
  s.ranks = ranks;
  s.microbatches = microbatches;
  s.virtualStages = virtualStages;
  for (int64_t r = 0; r < ranks; ++r)
    s.program.push_back(withTransfers(s, r,
                                      kind == ScheduleKind::Interleaved
                                          ? interleavedSlots(r, ranks, microbatches, virtualStages)
                                          : oneStageSlots(kind, r, ranks, microbatches)));
  return s;
}

llvm::Expected<Schedule> parseSchedule(llvm::StringRef text, int64_t microbatches) {
  llvm::SmallVector<llvm::StringRef> ranks;
  text.split(ranks, '|');
  Schedule s;
  s.kind = ScheduleKind::Custom;
  s.ranks = int64_t(ranks.size());
  s.microbatches = microbatches;
  for (auto [r, program] : llvm::enumerate(ranks)) {
    Slots slots;
    llvm::SmallVector<llvm::StringRef> tokens;
    program.split(tokens, ' ', -1, /*KeepEmpty=*/false);
    for (llvm::StringRef token : tokens) {
      std::optional<Action::Kind> kind =
          token.starts_with("F")   ? std::optional(Action::Forward)
          : token.starts_with("B") ? std::optional(Action::Backward)
          : token.starts_with("I") ? std::optional(Action::BackwardInput)
          : token.starts_with("W") ? std::optional(Action::BackwardWeight)
                                   : std::nullopt;
      int64_t mb = -1;
      if (!kind || token.drop_front().getAsInteger(10, mb) || mb < 0 || mb >= microbatches)
        return error("'" + token + "' in the order of rank " + llvm::Twine(r) +
                     " is not F, B, I or W and a micro-batch (0.." + llvm::Twine(microbatches - 1) +
                     ")");
      slots.push_back({compute(*kind, int64_t(r), mb)});
    }
    s.program.push_back(withTransfers(s, int64_t(r), slots));
  }
  return s;
}

double formulaBubble(ScheduleKind kind, int64_t ranks, int64_t microbatches, int64_t virtualStages,
                     const Costs &costs) {
  double p = double(ranks), m = double(microbatches);
  switch (kind) {
  case ScheduleKind::GPipe:
  case ScheduleKind::OneFOneB: return (p - 1) / m;
  case ScheduleKind::Interleaved: return (p - 1) / (double(virtualStages) * m);
  case ScheduleKind::ZeroBubbleH1: {
    double busy = costs.forward + costs.backwardInput + costs.backwardWeight;
    return (p - 1) * (costs.forward + costs.backwardInput - costs.backwardWeight) / (m * busy);
  }
  case ScheduleKind::Custom: return 0; // no formula: simulate it
  }
  return 0;
}

namespace {

/// A send or receive waiting for its other side.
struct Posted {
  int64_t rank;
  Transfer transfer;
  double at;
};

/// What a stage's computation of one micro-batch has done on its rank.
enum Done : uint8_t { DidForward = 1, DidInput = 2, DidWeight = 4 };

} // namespace

llvm::Expected<Simulation> simulate(const Schedule &s, const Costs &costs) {
  const int64_t ranks = int64_t(s.program.size()), last = s.stages() - 1;
  struct Rank {
    size_t pc = 0;
    double time = 0;
    bool posted = false;
    int64_t waiting = 0; // transfers of the posted group not yet met
    double groupDone = 0;
    // Without costs.waitForSends: sends not yet met, which the rank's next
    // group waits for (not its computation), and when the last was.
    int64_t sending = 0;
    double sendsDone = 0;
    std::map<std::pair<int64_t, int64_t>, uint8_t> done; // (stage, micro-batch)
    std::set<std::tuple<bool, int64_t, int64_t>> have;   // received (gradient, stage, mb)
    std::vector<std::tuple<bool, int64_t, int64_t>> arriving; // received, not waited for
    bool started = false; // a group was started and not waited for since
    int64_t inFlight = 0;
  };
  std::vector<Rank> rs(size_t(ranks), Rank{});
  Simulation sim;
  sim.busy.assign(size_t(ranks), 0);
  sim.inFlight.assign(size_t(ranks), 0);
  // Per (sender, receiver): posted sends and receives, matched in order.
  std::map<std::pair<int64_t, int64_t>, std::pair<std::deque<Posted>, std::deque<Posted>>> channels;

  auto dataName = [](bool gradient, int64_t stage, int64_t mb) {
    return std::string(gradient ? "the gradient" : "the activation") + " of micro-batch " +
           std::to_string(mb) + " from stage " + std::to_string(stage);
  };
  // The data `r` needs is local (its own stage computed it) or received.
  auto has = [&](int64_t r, bool gradient, int64_t stage, int64_t mb) {
    Rank &k = rs[size_t(r)];
    if (s.rankOf(stage) == r) {
      auto it = k.done.find({stage, mb});
      uint8_t need = gradient ? DidInput : DidForward;
      return it != k.done.end() && (it->second & need);
    }
    return k.have.count({gradient, stage, mb}) > 0;
  };
  auto match = [&]() -> llvm::Error {
    for (auto &[ends, queues] : channels) {
      auto &[sends, recvs] = queues;
      while (!sends.empty() && !recvs.empty()) {
        Posted out = sends.front(), in = recvs.front();
        sends.pop_front();
        recvs.pop_front();
        const Transfer &a = out.transfer, &b = in.transfer;
        if (a.gradient != b.gradient || a.stage != b.stage || a.microbatch != b.microbatch)
          return error("rank " + llvm::Twine(ends.first) + " sends " +
                       dataName(a.gradient, a.stage, a.microbatch) + " to rank " +
                       llvm::Twine(ends.second) + ", which receives it as " +
                       dataName(b.gradient, b.stage, b.microbatch) +
                       " (sends and receives between two ranks pair in order)");
        // The data leaves when its send is posted and arrives `transfer`
        // later; a receive posted after that takes it at once.
        double at = std::max(out.at + costs.transfer, in.at);
        for (int64_t r : {out.rank, in.rank}) {
          Rank &k = rs[size_t(r)];
          if (r == out.rank && !costs.waitForSends) {
            --k.sending;
            k.sendsDone = std::max(k.sendsDone, at);
            continue;
          }
          --k.waiting;
          k.groupDone = std::max(k.groupDone, at);
        }
        rs[size_t(in.rank)].arriving.push_back({b.gradient, b.stage, b.microbatch});
      }
    }
    return llvm::Error::success();
  };
  auto runCompute = [&](int64_t r, const Action &a) -> llvm::Error {
    Rank &k = rs[size_t(r)];
    auto fail = [&](const std::string &why) {
      return error("rank " + llvm::Twine(r) + ": " + describe(a) + " " + why);
    };
    if (s.rankOf(a.stage) != r || a.stage < 0 || a.stage > last || a.microbatch < 0 ||
        a.microbatch >= s.microbatches)
      return fail("is not a stage and micro-batch of this rank");
    uint8_t &done = k.done[{a.stage, a.microbatch}];
    double cost = 0;
    switch (a.kind) {
    case Action::Forward:
      if (done & DidForward)
        return fail("runs twice");
      if (a.stage > 0 && !has(r, false, a.stage - 1, a.microbatch))
        return fail("runs before " + dataName(false, a.stage - 1, a.microbatch) + " is there");
      done |= DidForward;
      cost = costs.forward;
      sim.inFlight[size_t(r)] = std::max(sim.inFlight[size_t(r)], ++k.inFlight);
      break;
    case Action::Backward:
    case Action::BackwardInput:
      if (!(done & DidForward) || (done & DidInput))
        return fail(done & DidInput ? "runs twice" : "runs before its forward");
      if (a.stage < last && !has(r, true, a.stage + 1, a.microbatch))
        return fail("runs before " + dataName(true, a.stage + 1, a.microbatch) + " is there");
      done |= DidInput;
      cost = costs.backwardInput;
      if (a.kind == Action::Backward) {
        done |= DidWeight;
        cost += costs.backwardWeight;
        --k.inFlight;
      }
      break;
    case Action::BackwardWeight:
      if (!(done & DidInput) || (done & DidWeight))
        return fail(done & DidWeight ? "runs twice" : "runs before its input gradient");
      done |= DidWeight;
      cost = costs.backwardWeight;
      --k.inFlight;
      break;
    case Action::Transfers:
    case Action::Wait: break;
    }
    if (size_t(a.stage) < costs.stageScale.size())
      cost *= costs.stageScale[size_t(a.stage)];
    sim.blocks.push_back({r, a.kind, a.stage, a.microbatch, k.time, k.time + cost});
    k.time += cost;
    sim.busy[size_t(r)] += cost;
    return llvm::Error::success();
  };

  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t r = 0; r < ranks; ++r) {
      Rank &k = rs[size_t(r)];
      const std::vector<Action> &program = s.program[size_t(r)];
      while (k.pc < program.size()) {
        const Action &a = program[k.pc];
        if (a.kind == Action::Wait || (a.kind == Action::Transfers && k.posted)) {
          if (k.waiting > 0)
            break; // waits for its peers
          k.posted = k.started = false;
          k.time = std::max(k.time, k.groupDone);
          k.have.insert(k.arriving.begin(), k.arriving.end());
          k.arriving.clear();
        } else if (a.kind == Action::Transfers) {
          if (k.sending > 0)
            break; // its earlier sends go first
          k.time = std::max(k.time, k.sendsDone);
          k.posted = a.wait;
          k.groupDone = std::max(k.groupDone, k.time);
          for (const Transfer &t : a.transfers) {
            (t.send && !costs.waitForSends ? k.sending : k.waiting) += 1;
            if (t.peer < 0 || t.peer >= ranks || t.peer == r)
              return error("rank " + llvm::Twine(r) + ": " + describe(a) + " names no other rank");
            if (t.send && !has(r, t.gradient, t.stage, t.microbatch))
              return error("rank " + llvm::Twine(r) + " sends " +
                           dataName(t.gradient, t.stage, t.microbatch) + " before computing it");
            auto &queues = channels[t.send ? std::make_pair(r, t.peer) : std::make_pair(t.peer, r)];
            (t.send ? queues.first : queues.second).push_back({r, t, k.time});
          }
          if (llvm::Error e = match())
            return std::move(e);
          progress = true;
          if (!a.wait) {
            k.started = true;
            ++k.pc;
          }
          continue;
        } else if (llvm::Error e = runCompute(r, a)) {
          return std::move(e);
        }
        ++k.pc;
        progress = true;
      }
    }
  }

  std::string blocked;
  for (int64_t r = 0; r < ranks; ++r) {
    const Rank &k = rs[size_t(r)];
    if (k.pc == s.program[size_t(r)].size() && k.started)
      return error("rank " + llvm::Twine(r) +
                   " ends with transfers it started and never waited for");
    if (k.pc == s.program[size_t(r)].size() && k.sending > 0) {
      blocked += "\n  rank " + std::to_string(r) + " waits for its last sends";
      continue;
    }
    if (k.pc == s.program[size_t(r)].size())
      continue;
    blocked +=
        "\n  rank " + std::to_string(r) + " waits in " + describe(s.program[size_t(r)][k.pc]);
  }
  if (!blocked.empty())
    return error("the schedule hangs: every rank left waits for a transfer its peer has not "
                 "posted yet:" +
                 blocked);
  for (int64_t r = 0; r < ranks; ++r)
    for (int64_t stage = r; stage <= last; stage += ranks)
      for (int64_t mb = 0; mb < s.microbatches; ++mb) {
        auto it = rs[size_t(r)].done.find({stage, mb});
        if (it == rs[size_t(r)].done.end() || it->second != (DidForward | DidInput | DidWeight))
          return error("rank " + llvm::Twine(r) + " does not run all of micro-batch " +
                       llvm::Twine(mb) + " on stage " + llvm::Twine(stage));
      }
  double busiest = 0;
  for (int64_t r = 0; r < ranks; ++r) {
    // (A step ends with its sends done: the runtime's next call waits.)
    sim.makespan = std::max({sim.makespan, rs[size_t(r)].time, rs[size_t(r)].sendsDone});
    busiest = std::max(busiest, sim.busy[size_t(r)]);
  }
  sim.bubble = busiest > 0 ? (sim.makespan - busiest) / busiest : 0;
  return sim;
}

} // namespace lcc::pipeline
