//===- FaultTest.cpp - a rank that dies or stalls must not hang the others -===//
//
// With a short LCC_DIST_TIMEOUT-style timeout, the survivors' collective
// returns an error (and the communicator stays broken) within the timeout
// plus a margin, and tearing it down does not hang either: the parent's own
// deadline would catch a hang as a killed child.
//
//===----------------------------------------------------------------------===//
#include "Ranks.h"
#include "runtime/dist/Communicator.h"

#include <gtest/gtest.h>
#include <thread>

using namespace lcc;
using namespace lcc::dist;
using lcc::test::freePort;
using lcc::test::loopbackEnv;
using lcc::test::runRanks;

namespace {

// Rank 2 exits right before an all-reduce; ranks 0 and 1 see its connection
// close (no need to wait for the timeout).
TEST(DistFault, DeadPeerIsAnErrorNotAHang) {
  const int n = 3, port = freePort();
  const double timeout = 2;
  auto results = runRanks(
      n,
      [&](int rank, std::string &payload) -> std::string {
        std::unique_ptr<Communicator> world;
        Status s = createWorld(loopbackEnv(rank, n, port, timeout), "gloo", world);
        if (!s)
          return "setup: " + s.message();
        if (rank == 2)
          ::_exit(0);
        auto t0 = std::chrono::steady_clock::now();
        std::vector<float> v(1000, 1.0f);
        s = world->allReduce(v.data(), v.data(), 1000, ElementType::F32, Reduction::Sum);
        double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        payload = std::to_string(took);
        if (s)
          return "the all-reduce succeeded without rank 2";
        // Broken from now on, with the first cause.
        Status again = world->barrier();
        if (again.message().find("the group failed earlier") == std::string::npos)
          return "after the failure: " + again.message();
        return s.message();
      },
      timeout + 10);
  EXPECT_EQ(results[2].exitCode, 0);
  // A survivor may see the other survivor go first (it exits on its own
  // failure, closing its connections): the cause is a closed peer either way,
  // and at least one survivor names the dead rank.
  const std::string prefix = "all_reduce on group 'world' (3 ranks) failed: peer rank ";
  const std::string suffix = " closed the connection";
  int namedDead = 0;
  for (int r = 0; r < 2; ++r) {
    const auto &res = results[size_t(r)];
    EXPECT_FALSE(res.timedOut) << "rank " << r << " hung";
    EXPECT_EQ(res.exitCode, 1);
    std::string peer = "?";
    if (res.error.size() == prefix.size() + 1 + suffix.size() &&
        res.error.compare(0, prefix.size(), prefix) == 0 &&
        res.error.compare(prefix.size() + 1, suffix.size(), suffix) == 0)
      peer = res.error.substr(prefix.size(), 1);
    EXPECT_TRUE(peer == "2" || peer == std::to_string(1 - r)) << "rank " << r << ": " << res.error;
    namedDead += peer == "2";
    EXPECT_LT(std::stod(res.payload.empty() ? "99" : res.payload), timeout + 3) << res.error;
  }
  EXPECT_GE(namedDead, 1);
}

// In a group of some ranks the error names the dead peer by its world rank
// (the one in the user's logs), not its place in the group: ranks 1 and 3
// form a group, and rank 3 dies; rank 1's peer is group rank 1.
TEST(DistFault, SubgroupErrorNamesTheWorldRank) {
  const int n = 4, port = freePort();
  const double timeout = 2;
  auto results = runRanks(
      n,
      [&](int rank, std::string &) -> std::string {
        std::unique_ptr<Communicator> world, odd;
        Status s = createWorld(loopbackEnv(rank, n, port, timeout), "gloo", world);
        if (!s)
          return "setup: " + s.message();
        if (rank % 2 == 0)
          return world->barrier() ? "" : "barrier failed";
        if (!(s = world->subgroup("odd", {1, 3}, "odd", odd)))
          return "subgroup: " + s.message();
        if (!(s = world->barrier()))
          return "barrier failed";
        if (rank == 3)
          ::_exit(0);
        std::vector<float> v(100, 1.0f);
        s = odd->allReduce(v.data(), v.data(), 100, ElementType::F32, Reduction::Sum);
        return s ? "the all-reduce succeeded without rank 3" : s.message();
      },
      timeout + 10);
  EXPECT_EQ(results[1].error,
            "all_reduce on group 'odd' (2 ranks) failed: peer rank 3 closed the connection");
}

// Rank 2 is alive but never calls: the others time out.
TEST(DistFault, StalledPeerTimesOut) {
  const int n = 3, port = freePort();
  const double timeout = 1;
  auto results = runRanks(
      n,
      [&](int rank, std::string &payload) -> std::string {
        std::unique_ptr<Communicator> world;
        Status s = createWorld(loopbackEnv(rank, n, port, timeout), "gloo", world);
        if (!s)
          return "setup: " + s.message();
        if (rank == 2) {
          std::this_thread::sleep_for(std::chrono::milliseconds(2500));
          ::_exit(0);
        }
        auto t0 = std::chrono::steady_clock::now();
        std::vector<double> v(10, 1.0);
        s = world->allReduce(v.data(), v.data(), 10, ElementType::F64, Reduction::Sum);
        payload = std::to_string(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        return s ? "the all-reduce succeeded without rank 2" : s.message();
      },
      timeout + 10);
  int timedOut = 0;
  for (int r = 0; r < 2; ++r) {
    const auto &res = results[size_t(r)];
    EXPECT_FALSE(res.timedOut) << "rank " << r << " hung";
    EXPECT_EQ(res.exitCode, 1);
    EXPECT_EQ(res.error.rfind("all_reduce on group 'world' (3 ranks) failed: ", 0), 0u)
        << res.error;
    timedOut += res.error.find("timed out after 1 s") != std::string::npos;
    EXPECT_LT(std::stod(res.payload.empty() ? "99" : res.payload), timeout + 1.5) << res.error;
  }
  EXPECT_GE(timedOut, 1) << results[0].error << "\n" << results[1].error;
}

// Rank 1 never starts: rank 0's rendezvous fails after the timeout, naming
// what it waited for.
TEST(DistFault, MissingRankFailsRendezvous) {
  const int port = freePort();
  auto results = runRanks(1, [&](int, std::string &) -> std::string {
    std::unique_ptr<Communicator> world;
    Status s = createWorld(loopbackEnv(0, 2, port, 0.5), "gloo", world);
    return s ? "rendezvous succeeded alone" : s.message();
  });
  EXPECT_EQ(results[0].exitCode, 1);
  EXPECT_EQ(results[0].error,
            "connecting group 'world' (2 ranks) failed: timed out after 0.5 s waiting for key "
            "'world/1' in the rendezvous store at 127.0.0.1:" +
                std::to_string(port))
      << results[0].error;
}

} // namespace
