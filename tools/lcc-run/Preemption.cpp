//===- Preemption.cpp - stopping cleanly on a scheduler's signal ----------===//
#include "Preemption.h"

#include <csignal>

namespace lcc::run {

namespace {
volatile sig_atomic_t gSignal = 0;
void onSignal(int sig) {
  if (!gSignal)
    gSignal = sig;
}
} // namespace

void catchPreemption(const std::vector<int> &signals) {
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int sig : signals)
    sigaction(sig, &sa, nullptr);
}

int preemptionSignal() { return gSignal; }

std::string signalName(int sig) {
  for (auto [n, name] : preemptionSignalNames())
    if (n == sig)
      return "SIG" + name;
  return "signal " + std::to_string(sig);
}

const std::vector<std::pair<int, std::string>> &preemptionSignalNames() {
  static const std::vector<std::pair<int, std::string>> kNames = {
      {SIGTERM, "TERM"}, {SIGUSR1, "USR1"}, {SIGUSR2, "USR2"},
      {SIGINT, "INT"},   {SIGHUP, "HUP"},   {SIGXCPU, "XCPU"}};
  return kNames;
}

} // namespace lcc::run
