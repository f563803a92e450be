//===- Ranks.h - run a body as N processes over loopback --------*- C++ -*-===//
//
// The collectives are tested as real multi-process jobs: the test forks one
// child per rank, each child connects to the others over 127.0.0.1 and runs
// the body, and reports back through a pipe: an error line (empty when its
// calls succeeded) and a payload of result bytes, which the parent compares
// with a reference it computes itself. The parent waits with its own
// deadline and kills whatever is left, so a hang fails the test instead of
// stalling it. Nothing distributed is created in the parent before fork.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_TEST_UNIT_DIST_RANKS_H
#define LCC_TEST_UNIT_DIST_RANKS_H

#include "runtime/dist/Communicator.h"
#include "runtime/dist/Store.h"

#include <arpa/inet.h>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <netinet/in.h>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace lcc::test {

/// A port nothing listens on right now (runtime/dist/Store.h).
inline int freePort() { return dist::pickLoopbackPort(); }

/// Seconds on the monotonic clock, which forked ranks share: their times
/// compare across processes.
inline double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline dist::DistEnv loopbackEnv(int rank, int n, int port, double timeout = 20) {
  dist::DistEnv env;
  env.rank = rank;
  env.worldSize = n;
  env.localRank = rank;
  env.masterAddr = "127.0.0.1";
  env.masterPort = port;
  env.timeoutSeconds = timeout;
  return env;
}

struct RankResult {
  int exitCode = -1; // -1: killed by a signal or by the deadline
  bool timedOut = false;
  std::string error;   // the body's error ("" = all its calls succeeded)
  std::string payload; // the body's result bytes
  double seconds = 0;  // from fork to exit
};

/// body(rank, payload) returns "" or an error; payload is sent to the parent.
using RankBody = std::function<std::string(int rank, std::string &payload)>;

/// Runs `body` in n forked children and collects their results; children
/// still running after `deadlineSeconds` are killed. A child's exit code is
/// 0 when its body returned "", else 1 (or what it _exit()ed with).
inline std::vector<RankResult> runRanks(int n, const RankBody &body, double deadlineSeconds = 20) {
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  std::vector<pid_t> pids(size_t(n), -1);
  std::vector<int> fds(size_t(n), -1);
  std::vector<RankResult> results(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    int p[2];
    if (::pipe(p) != 0)
      return results;
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(p[0]);
      std::string payload;
      std::string error = body(r, payload);
      // Framing: error length, error, payload (to EOF).
      uint64_t len = error.size();
      std::string msg(reinterpret_cast<const char *>(&len), sizeof len);
      msg += error + payload;
      size_t off = 0;
      while (off < msg.size()) {
        ssize_t w = ::write(p[1], msg.data() + off, msg.size() - off);
        if (w <= 0)
          break;
        off += size_t(w);
      }
      ::close(p[1]);
      std::_Exit(error.empty() ? 0 : 1);
    }
    ::close(p[1]);
    pids[size_t(r)] = pid;
    fds[size_t(r)] = p[0];
    ::fcntl(p[0], F_SETFL, O_NONBLOCK);
  }
  std::vector<std::string> raw(static_cast<size_t>(n));
  int running = n;
  while (running > 0) {
    std::vector<pollfd> polls;
    for (int fd : fds)
      if (fd >= 0)
        polls.push_back({fd, POLLIN, 0});
    if (!polls.empty())
      ::poll(polls.data(), polls.size(), 20);
    else
      ::usleep(5000);
    for (int r = 0; r < n; ++r) {
      int &fd = fds[size_t(r)];
      char buf[1 << 16];
      for (;;) {
        if (fd < 0)
          break;
        ssize_t got = ::read(fd, buf, sizeof buf);
        if (got > 0) {
          raw[size_t(r)].append(buf, size_t(got));
          continue;
        }
        if (got == 0) {
          ::close(fd);
          fd = -1;
        }
        break;
      }
      if (pids[size_t(r)] > 0) {
        int status = 0;
        if (::waitpid(pids[size_t(r)], &status, WNOHANG) == pids[size_t(r)]) {
          pids[size_t(r)] = -1;
          --running;
          results[size_t(r)].exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
          results[size_t(r)].seconds = std::chrono::duration<double>(Clock::now() - start).count();
        }
      }
    }
    if (std::chrono::duration<double>(Clock::now() - start).count() > deadlineSeconds) {
      for (int r = 0; r < n; ++r)
        if (pids[size_t(r)] > 0) {
          ::kill(pids[size_t(r)], SIGKILL);
          ::waitpid(pids[size_t(r)], nullptr, 0);
          results[size_t(r)].timedOut = true;
          pids[size_t(r)] = -1;
          --running;
        }
    }
  }
  for (int r = 0; r < n; ++r) {
    if (fds[size_t(r)] >= 0)
      ::close(fds[size_t(r)]);
    const std::string &m = raw[size_t(r)];
    uint64_t len = 0;
    if (m.size() >= sizeof len) {
      std::memcpy(&len, m.data(), sizeof len);
      if (m.size() >= sizeof len + len) {
        results[size_t(r)].error = m.substr(sizeof len, len);
        results[size_t(r)].payload = m.substr(sizeof len + len);
      }
    }
  }
  return results;
}

/// Appends the bytes of `data` to a payload.
template <typename T> void append(std::string &payload, const std::vector<T> &data) {
  payload.append(reinterpret_cast<const char *>(data.data()), data.size() * sizeof(T));
}

/// Reads `count` values of T from `payload` at `offset` (advanced).
template <typename T>
std::vector<T> take(const std::string &payload, size_t &offset, size_t count) {
  std::vector<T> out(count);
  if (offset + count * sizeof(T) <= payload.size() && count)
    std::memcpy(out.data(), payload.data() + offset, count * sizeof(T));
  offset += count * sizeof(T);
  return out;
}

} // namespace lcc::test

#endif
