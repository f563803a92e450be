//===- Preemption.h - stopping cleanly on a scheduler's signal --*- C++ -*-===//
//
// Clusters end jobs with a signal and a grace period: SLURM sends SIGTERM
// (or, with --signal=USR1@T, SIGUSR1 T seconds early) before SIGKILL, as
// does Kubernetes before evicting a pod. lcc-run records the signal and
// acts on it between steps: it finishes the step in flight, writes a
// checkpoint and exits 0, so `--resume auto` continues the requeued job.
// On a distributed job the ranks agree on the step (run::agree), whichever
// of them got the signal.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_TOOLS_LCC_RUN_PREEMPTION_H
#define LCC_TOOLS_LCC_RUN_PREEMPTION_H

#include <string>
#include <utility>
#include <vector>

namespace lcc::run {

/// Records the first of `signals` this process receives instead of their
/// default action. Interrupted system calls restart (SA_RESTART), so a
/// collective waiting on a socket carries on.
void catchPreemption(const std::vector<int> &signals);

/// The signal recorded, or 0.
int preemptionSignal();

/// "SIGTERM" for SIGTERM, and so on ("signal N" for one --preempt-signals
/// cannot name).
std::string signalName(int sig);

/// The signals --preempt-signals accepts, by name without "SIG".
const std::vector<std::pair<int, std::string>> &preemptionSignalNames();

} // namespace lcc::run

#endif
