//===- Launcher.cpp - lcc-run -n N: local ranks as child processes --------===//
#include "Launcher.h"
#include "runtime/dist/Store.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace lcc::run {

namespace {

// The latest signal and how many arrived (each is passed on once).
volatile sig_atomic_t gInterrupted = 0, gSignals = 0;
void onSignal(int sig) {
  gInterrupted = sig;
  gSignals = gSignals + 1;
}

int exitCodeOf(int status) {
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return 1;
}

} // namespace

int launchLocalRanks(int ranks, const std::vector<std::string> &args, const std::string &logDir,
                     double timeoutSeconds, const std::vector<int> &preemptSignals) {
  if (!logDir.empty() && mkdir(logDir.c_str(), 0777) != 0 && errno != EEXIST) {
    std::fprintf(stderr, "lcc-run: error: cannot create --log-dir '%s': %s\n", logDir.c_str(),
                 std::strerror(errno));
    return 2;
  }
  std::string port = std::to_string(dist::pickLoopbackPort());
  std::fflush(stdout);
  std::fflush(stderr);
  // Handlers first: a signal while ranks start must still reach them.
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  for (int sig : preemptSignals)
    sigaction(sig, &sa, nullptr);
  auto preempts = [&](int sig) {
    return std::find(preemptSignals.begin(), preemptSignals.end(), sig) != preemptSignals.end();
  };
  std::vector<pid_t> pids(ranks, -1);
  pid_t launcher = getpid();
  for (int r = 0; r < ranks; ++r) {
    pid_t pid = fork();
    if (pid < 0) {
      std::fprintf(stderr, "lcc-run: error: cannot start rank %d: %s\n", r, std::strerror(errno));
      for (pid_t p : pids)
        if (p > 0)
          kill(p, SIGKILL);
      return 1;
    }
    if (pid == 0) {
      // A rank never outlives its launcher (even one killed with SIGKILL).
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != launcher)
        _exit(1);
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(ranks).c_str(), 1);
      setenv("LOCAL_WORLD_SIZE", std::to_string(ranks).c_str(), 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      setenv("MASTER_PORT", port.c_str(), 1);
      if (!logDir.empty() && r != 0) {
        std::string path = logDir + "/rank-" + std::to_string(r) + ".log";
        int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
        if (fd >= 0) {
          dup2(fd, 1);
          dup2(fd, 2);
          close(fd);
        }
      } else if (r != 0) {
        // Progress is rank 0's; the others only report errors.
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0) {
          dup2(fd, 1);
          close(fd);
        }
      }
      std::vector<char *> argv;
      for (const std::string &a : args)
        argv.push_back(const_cast<char *>(a.c_str()));
      argv.push_back(nullptr);
      execv("/proc/self/exe", argv.data());
      std::fprintf(stderr, "lcc-run: error: cannot start rank %d: %s\n", r, std::strerror(errno));
      _exit(127);
    }
    pids[r] = pid;
  }

  using Clock = std::chrono::steady_clock;
  int running = ranks, result = 0, failedRank = -1;
  int forwarded = 0;
  std::vector<bool> stopped(ranks, false);
  bool stopping = false; // a signal that is not a preemption: ranks get 10 s
  Clock::time_point deadline{};
  while (running > 0) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG | WUNTRACED);
    if (pid > 0) {
      int r = 0;
      while (r < ranks && pids[r] != pid)
        ++r;
      if (r == ranks)
        continue;
      // A stopped rank (SIGSTOP, a debugger) is alive but silent: the others
      // will time out in their collectives; name it now.
      if (WIFSTOPPED(status)) {
        std::fprintf(stderr, "lcc-run: rank %d was stopped by signal %d (%s)\n", r,
                     WSTOPSIG(status), strsignal(WSTOPSIG(status)));
        stopped[r] = true;
        continue;
      }
      pids[r] = -1;
      --running;
      int code = exitCodeOf(status);
      // A rank killed by a signal says nothing itself: name it here.
      if (WIFSIGNALED(status))
        std::fprintf(stderr, "lcc-run: rank %d was killed by signal %d (%s)\n", r,
                     WTERMSIG(status), strsignal(WTERMSIG(status)));
      if (code != 0 && failedRank < 0) {
        failedRank = r;
        result = code;
        if (running > 0) {
          std::fprintf(stderr,
                       "lcc-run: rank %d exited with code %d; waiting up to %.0f s for the "
                       "other ranks to stop\n",
                       r, code, timeoutSeconds);
          deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(timeoutSeconds + 5));
        }
        // A stopped rank will not stop by itself: no need to wait for it.
        for (int s = 0; s < ranks; ++s)
          if (stopped[s] && pids[s] > 0) {
            std::fprintf(stderr, "lcc-run: killing rank %d (stopped, and rank %d failed)\n", s, r);
            kill(pids[s], SIGKILL);
          }
      }
      continue;
    }
    if (gSignals != forwarded) {
      int sig = gInterrupted;
      forwarded = gSignals;
      for (pid_t p : pids)
        if (p > 0)
          kill(p, sig);
      // A preempted rank finishes its step and checkpoints (which takes what
      // it takes: a rank that hangs meanwhile is the others' --timeout).
      if (!preempts(sig) && !stopping) {
        stopping = true;
        if (deadline == Clock::time_point{})
          deadline = Clock::now() + std::chrono::seconds(10);
      }
    }
    if (deadline != Clock::time_point{} && Clock::now() > deadline) {
      for (int r = 0; r < ranks; ++r)
        if (pids[r] > 0) {
          std::fprintf(stderr, "lcc-run: killing rank %d (still running after rank %d failed)\n",
                       r, failedRank);
          kill(pids[r], SIGKILL);
        }
      deadline = Clock::time_point{};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (stopping && result == 0)
    result = 128 + gInterrupted;
  return result;
}

} // namespace lcc::run
