//===- AbiTest.cpp - the C functions compiled code calls ------------------===//
//
// Through the int64-only ABI: 1-rank behaviour with nothing installed (in
// this process), the installed groups of a 2-rank job, and a failing call,
// which must end the process with exit code 4 and one line on stderr.
//
//===----------------------------------------------------------------------===//
#include "Ranks.h"
#include "runtime/dist/Collectives.h"

#include <cstdio>
#include <fstream>
#include <functional>
#include <chrono>
#include <gtest/gtest.h>
#include <thread>
#include <sstream>

using namespace lcc;
using namespace lcc::dist;
using lcc::test::append;
using lcc::test::freePort;
using lcc::test::loopbackEnv;
using lcc::test::nowSeconds;
using lcc::test::runRanks;
using lcc::test::take;

namespace {

int64_t addr(const void *p) { return int64_t(reinterpret_cast<uintptr_t>(p)); }

constexpr int64_t kF32 = int64_t(ElementType::F32), kI64 = int64_t(ElementType::I64);
constexpr int64_t kSum = int64_t(Reduction::Sum), kMax = int64_t(Reduction::Max);

/// Rank `rank` of an n-rank Gloo world on loopback, installed as the one
/// group "dp"; the error, or "" when installed.
std::string installWorldAsDp(int rank, int n, int port, double timeout = 20) {
  std::unique_ptr<Communicator> world;
  Status s = createWorld(loopbackEnv(rank, n, port, timeout), "gloo", world);
  if (!s)
    return s.message();
  std::vector<std::unique_ptr<Communicator>> groups;
  groups.push_back(std::move(world));
  installGroups(std::move(groups), {"dp"});
  return "";
}

TEST(DistAbi, WithoutGroupsEveryGroupIsOneRank) {
  clearGroups();
  std::vector<float> in = {1, 2, 3}, out(3);
  lcc_all_reduce(0, kF32, kSum, addr(in.data()), addr(out.data()), 3);
  EXPECT_EQ(out, in);
  std::vector<float> g(3);
  lcc_all_gather(3, kF32, addr(in.data()), addr(g.data()), 3);
  EXPECT_EQ(g, in);
  std::vector<float> b(3);
  lcc_broadcast(1, kF32, 0, addr(in.data()), addr(b.data()), 3);
  EXPECT_EQ(b, in);
  std::vector<float> rs(3);
  lcc_reduce_scatter(0, kF32, kMax, addr(in.data()), addr(rs.data()), 3);
  EXPECT_EQ(rs, in);
  std::vector<int64_t> msg = {7, 8}, got(2);
  lcc_send(0, kI64, 0, addr(msg.data()), 2);
  lcc_recv(0, kI64, 0, addr(got.data()), 2);
  EXPECT_EQ(got, msg);
  EXPECT_EQ(lcc_group_rank(5), 0);
}

// An exchange's sends and receives wait for its group_end (a 1-rank group:
// the receive takes what the send queued); a posted group's sends complete
// before the next synchronous call.
TEST(DistAbi, GroupedSendAndReceive) {
  clearGroups();
  std::vector<int64_t> msg = {5, 6}, got(2, 0);
  lcc_group_start(0);
  lcc_send(0, kI64, 0, addr(msg.data()), 2);
  lcc_recv(0, kI64, 0, addr(got.data()), 2);
  EXPECT_EQ(got, std::vector<int64_t>({0, 0})); // posted, not yet done
  lcc_group_end(0);
  EXPECT_EQ(got, msg);
  lcc_group_start(0);
  lcc_send(0, kI64, 0, addr(msg.data()), 2);
  lcc_group_end_posted(0);
  msg = {7, 8}; // the runtime sends its own copy
  got = {0, 0};
  lcc_recv(0, kI64, 0, addr(got.data()), 2);
  EXPECT_EQ(got, std::vector<int64_t>({5, 6}));
}

TEST(DistAbi, SymbolTable) {
  std::vector<std::string> names;
  for (const RuntimeSymbol *s = collectiveSymbols(); s->name; ++s)
    names.push_back(s->name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "lcc_all_reduce", "lcc_all_gather", "lcc_reduce_scatter", "lcc_broadcast",
                       "lcc_send", "lcc_recv", "lcc_group_start", "lcc_group_end",
                       "lcc_group_end_posted", "lcc_group_rank", "lcc_all_reduce_start",
                       "lcc_all_gather_start", "lcc_reduce_scatter_start", "lcc_wait"}));
  EXPECT_EQ(collectiveSymbols()[0].address, reinterpret_cast<void *>(&lcc_all_reduce));
}

// Started collectives complete by their waits, in any wait order; with
// nothing installed they are 1-rank copies like the synchronous ones.
TEST(DistAbi, AsyncWithoutGroups) {
  clearGroups();
  std::vector<float> in = {1, 2, 3}, gathered(3), part(3), reduced = {4, 5, 6};
  lcc_all_gather_start(7, 0, kF32, addr(in.data()), addr(gathered.data()), 3);
  lcc_reduce_scatter_start(8, 0, kF32, kSum, addr(in.data()), addr(part.data()), 3);
  lcc_all_reduce_start(9, 0, kF32, kSum, addr(reduced.data()), addr(reduced.data()), 3);
  lcc_wait(9, addr(reduced.data()), addr(reduced.data()));
  lcc_wait(7, addr(in.data()), addr(gathered.data()));
  EXPECT_EQ(collectivesInFlight(), 1u);
  lcc_wait(8, addr(in.data()), addr(part.data()));
  EXPECT_EQ(collectivesInFlight(), 0u);
  EXPECT_EQ(gathered, in);
  EXPECT_EQ(part, in);
  EXPECT_EQ(reduced, (std::vector<float>{4, 5, 6}));
}

// Two ranks: collectives started before a synchronous one all run before it
// (the runtime drains its queue), and each wait gets its own results even
// when the waits come in another order than the starts.
TEST(DistAbi, AsyncInstalledGroups) {
  const int n = 2, port = freePort();
  auto results = runRanks(n, [&](int rank, std::string &payload) -> std::string {
    if (std::string error = installWorldAsDp(rank, n, port); !error.empty())
      return error;
    std::vector<float> x(1000), y(1000), sync = {float(rank)};
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = float(i) + float(rank), y[i] = float(rank + 1) * float(i);
    std::vector<float> all(2000), mine(500);
    lcc_all_reduce_start(0, 0, kF32, kSum, addr(x.data()), addr(x.data()), 1000);
    lcc_all_gather_start(1, 0, kF32, addr(y.data()), addr(all.data()), 1000);
    lcc_reduce_scatter_start(2, 0, kF32, kMax, addr(y.data()), addr(mine.data()), 500);
    lcc_all_reduce(0, kF32, kSum, addr(sync.data()), addr(sync.data()), 1);
    lcc_wait(2, addr(y.data()), addr(mine.data()));
    lcc_wait(0, addr(x.data()), addr(x.data()));
    lcc_wait(1, addr(y.data()), addr(all.data()));
    append(payload, x);
    append(payload, all);
    append(payload, mine);
    append(payload, sync);
    clearGroups();
    return "";
  });
  for (int r = 0; r < n; ++r) {
    const auto &res = results[size_t(r)];
    ASSERT_EQ(res.exitCode, 0) << "rank " << r << ": " << res.error;
    size_t off = 0;
    auto x = take<float>(res.payload, off, 1000), all = take<float>(res.payload, off, 2000),
         mine = take<float>(res.payload, off, 500), sync = take<float>(res.payload, off, 1);
    for (size_t i = 0; i < 1000; ++i) {
      ASSERT_EQ(x[i], 2.0f * float(i) + 1.0f) << i;
      ASSERT_EQ(all[i], float(i)) << i;             // rank 0's y
      ASSERT_EQ(all[1000 + i], 2.0f * float(i)) << i; // rank 1's y
    }
    // Part r of max(y_0, y_1) = y_1 = 2 i, elements [500 r, 500 r + 500).
    for (size_t i = 0; i < 500; ++i)
      ASSERT_EQ(mine[i], 2.0f * float(500 * r + int(i))) << i;
    EXPECT_EQ(sync, (std::vector<float>{1.0f}));
  }
}

// Groups 0 = world, 1 = {dp=2} of a 2-rank job, renamed by installGroups.
TEST(DistAbi, InstalledGroups) {
  const int n = 2, port = freePort();
  auto results = runRanks(n, [&](int rank, std::string &payload) -> std::string {
    std::unique_ptr<Communicator> world;
    Status s = createWorld(loopbackEnv(rank, n, port), "gloo", world);
    if (!s)
      return s.message();
    std::vector<std::unique_ptr<Communicator>> groups;
    if (!(s = splitGroups(*world, {{"dp", 2}}, groups)))
      return s.message();
    groups.insert(groups.begin(), std::move(world));
    installGroups(std::move(groups), {"", "data"});
    if (installedGroupCount() != 2)
      return "not installed";
    std::vector<float> x = {float(rank + 1), 0.5f * float(rank)}, sum(2);
    lcc_all_reduce(1, kF32, kSum, addr(x.data()), addr(sum.data()), 2);
    lcc_all_reduce(0, kF32, kMax, addr(x.data()), addr(x.data()), 2); // in place
    std::vector<int64_t> mine = {rank * 10, rank * 10 + 1}, all(4), part(1), root(2, -1);
    lcc_all_gather(0, kI64, addr(mine.data()), addr(all.data()), 2);
    lcc_reduce_scatter(1, kI64, kSum, addr(all.data()), addr(part.data()), 1);
    lcc_broadcast(1, kI64, 1, addr(mine.data()), addr(root.data()), 2);
    std::vector<int64_t> sent = {42 + rank}, received(1);
    if (rank == 0) {
      lcc_send(1, kI64, 1, addr(sent.data()), 1);
      lcc_recv(1, kI64, 1, addr(received.data()), 1);
    } else {
      lcc_recv(1, kI64, 0, addr(received.data()), 1);
      lcc_send(1, kI64, 0, addr(sent.data()), 1);
    }
    append(payload, sum);
    append(payload, x);
    append(payload, all);
    append(payload, part);
    append(payload, root);
    append(payload, received);
    append(payload, std::vector<int64_t>{lcc_group_rank(0), lcc_group_rank(1)});
    clearGroups();
    return "";
  });
  for (int r = 0; r < n; ++r) {
    const auto &res = results[size_t(r)];
    ASSERT_EQ(res.exitCode, 0) << "rank " << r << ": " << res.error;
    size_t off = 0;
    EXPECT_EQ(take<float>(res.payload, off, 2), (std::vector<float>{3, 0.5f}));
    EXPECT_EQ(take<float>(res.payload, off, 2), (std::vector<float>{2, 0.5f}));
    EXPECT_EQ(take<int64_t>(res.payload, off, 4), (std::vector<int64_t>{0, 1, 10, 11}));
    // Every rank contributes {0, 1, 10, 11}: part r of the sum is 2x element r.
    EXPECT_EQ(take<int64_t>(res.payload, off, 1), (std::vector<int64_t>{2 * (r == 0 ? 0 : 1)}));
    EXPECT_EQ(take<int64_t>(res.payload, off, 2), (std::vector<int64_t>{10, 11}));
    EXPECT_EQ(take<int64_t>(res.payload, off, 1), (std::vector<int64_t>{42 + (1 - r)}));
    EXPECT_EQ(take<int64_t>(res.payload, off, 2), (std::vector<int64_t>{r, r}));
  }
}

/// A file a forked rank's stderr goes to (redirect, in the child) and the
/// parent reads (text); removed with the object.
struct StderrFile {
  std::string path;
  StderrFile() {
    char name[] = "/tmp/lcc-dist-abi-XXXXXX";
    int fd = mkstemp(name);
    if (fd >= 0) {
      ::close(fd);
      path = name;
    }
  }
  ~StderrFile() {
    if (!path.empty())
      ::unlink(path.c_str());
  }
  void redirect() const {
    FILE *f = std::freopen(path.c_str(), "w", stderr);
    (void)f;
  }
  std::string text() const {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
};

// A failed call prints one line and exits with 4, without returning.
TEST(DistAbi, FailureExitsWithFour) {
  StderrFile err;
  ASSERT_FALSE(err.path.empty());
  auto results = runRanks(1, [&](int, std::string &) -> std::string {
    err.redirect();
    clearGroups();
    int64_t x = 0;
    lcc_recv(0, kI64, 0, addr(&x), 1); // nothing was sent
    return "lcc_recv returned";
  });
  EXPECT_EQ(results[0].exitCode, kDistributedFailureExitCode);
  EXPECT_EQ(err.text(), "lcc-run: rank 0: recv on group 'local' (1 rank) failed: no matching "
                        "send (a 1-rank group receives only what it sent itself, and nothing "
                        "was sent)\n");
}

/// Runs `call` on rank 0 of a 2-rank job (group "dp") whose rank 1 is gone;
/// returns rank 0's exit code and stderr.
std::pair<int, std::string> withLostPeer(const std::function<void()> &call) {
  StderrFile err;
  if (err.path.empty())
    return {-1, "mkstemp failed"};
  const int port = freePort();
  auto results = runRanks(2, [&](int rank, std::string &) -> std::string {
    if (std::string error = installWorldAsDp(rank, 2, port, 5); !error.empty())
      return error;
    if (rank == 1)
      ::_exit(0);
    err.redirect();
    call();
    return "the collective returned";
  });
  return {results[0].exitCode,
          results[1].exitCode == 0 ? err.text() : "rank 1: " + results[1].error};
}

// On Gloo an exchange returns when its receives are done: its sends are
// copied and complete on the communication thread. Rank 0 sends and
// receives in one group while rank 1 receives only 300 ms later: rank 0's
// group returns before that, and overwriting its send buffer at once does
// not change what rank 1 gets.
TEST(DistAbi, ExchangeWaitsOnlyForItsReceives) {
  const int n = 2, port = freePort();
  auto results = runRanks(n, [&](int rank, std::string &payload) -> std::string {
    if (std::string error = installWorldAsDp(rank, n, port); !error.empty())
      return error;
    std::vector<int64_t> msg = {7 + rank, 8 + rank}, got(2, 0);
    std::vector<double> t;
    if (rank == 0) {
      lcc_group_start(0);
      lcc_send(0, kI64, 1, addr(msg.data()), 2);
      lcc_recv(0, kI64, 1, addr(got.data()), 2);
      lcc_group_end(0);
      t.push_back(nowSeconds());
      msg = {-1, -1};
    } else {
      lcc_group_start(0);
      lcc_send(0, kI64, 0, addr(msg.data()), 2);
      lcc_group_end(0);
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      t.push_back(nowSeconds());
      lcc_group_start(0);
      lcc_recv(0, kI64, 0, addr(got.data()), 2);
      lcc_group_end(0);
    }
    append(payload, got);
    append(payload, t);
    clearGroups();
    return "";
  });
  std::vector<double> at;
  for (int r = 0; r < n; ++r) {
    const auto &res = results[size_t(r)];
    ASSERT_EQ(res.exitCode, 0) << "rank " << r << ": " << res.error;
    size_t off = 0;
    EXPECT_EQ(take<int64_t>(res.payload, off, 2), (std::vector<int64_t>{8 - r, 9 - r}));
    at.push_back(take<double>(res.payload, off, 1)[0]);
  }
  EXPECT_LT(at[0], at[1]) << "rank 0's exchange waited for rank 1 to receive";
}

// A peer that is gone: the survivor's collective ends the process with 4,
// naming the group by its installed name and the world rank.
TEST(DistAbi, LostPeerExitsWithFour) {
  auto [code, err] = withLostPeer([] {
    std::vector<float> v(100, 1.0f);
    lcc_all_reduce(0, kF32, kSum, addr(v.data()), addr(v.data()), 100);
  });
  EXPECT_EQ(code, kDistributedFailureExitCode) << err;
  EXPECT_EQ(err, "lcc-run: rank 0: all_reduce on group 'dp' (2 ranks) failed: peer rank 1 "
                 "closed the connection\n");
}

// A started collective whose peer is gone fails at its wait: exit code 4 and
// the same line as a synchronous one.
TEST(DistAbi, LostPeerFailsAtTheWait) {
  auto [code, err] = withLostPeer([] {
    std::vector<float> v(100, 1.0f), all(200);
    lcc_all_gather_start(4, 0, kF32, addr(v.data()), addr(all.data()), 100);
    lcc_wait(4, addr(v.data()), addr(all.data()));
  });
  EXPECT_EQ(code, kDistributedFailureExitCode) << err;
  EXPECT_EQ(err, "lcc-run: rank 0: all_gather on group 'dp' (2 ranks) failed: peer rank 1 "
                 "closed the connection\n");
}

// Breaking the start/wait protocol is a compiler bug: exit code 3, one line.
TEST(DistAbi, WaitWithoutStartIsInternalError) {
  StderrFile err;
  ASSERT_FALSE(err.path.empty());
  auto results = runRanks(1, [&](int, std::string &) -> std::string {
    err.redirect();
    clearGroups();
    lcc_wait(11, 0, 0);
    return "lcc_wait returned";
  });
  EXPECT_EQ(results[0].exitCode, 3);
  EXPECT_EQ(err.text(),
            "lcc-run: internal error: wait for collective ticket 11, which was never started\n");
}

} // namespace
