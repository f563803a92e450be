//===- CollectivesTest.cpp - the Gloo backend across processes ------------===//
//
// N forked ranks (2, 3, 4) over loopback run each collective on inputs that
// are a function of (rank, index); the parent computes the expected output
// with a plain loop over ranks in rank order — the order the header promises
// — and compares bytes, so the float results are checked bitwise, and every
// rank's output must equal every other's.
//
//===----------------------------------------------------------------------===//
#include "Ranks.h"
#include "runtime/dist/Communicator.h"

#include <cmath>
#include <gtest/gtest.h>
#include <thread>

using namespace lcc;
using namespace lcc::dist;
using lcc::test::append;
using lcc::test::freePort;
using lcc::test::loopbackEnv;
using lcc::test::nowSeconds;
using lcc::test::runRanks;
using lcc::test::take;

namespace {

/// Inputs whose float sums depend on the order (magnitudes 1e-3 .. 1e3).
template <typename T> T inputValue(int rank, int64_t i) {
  // No a*b+c contraction: with constant arguments (the parent's reference)
  // the compiler would fold it as a fused multiply-add, unlike the children.
#pragma clang fp contract(off)
  int64_t base = (i * 37 + rank * 11) % 23 - 11;
  // (A table, not pow(): the compiler may fold pow differently from libm.)
  static const double scale[] = {1e-3, 1e-2, 1e-1, 1, 1e1, 1e2, 1e3};
  if constexpr (std::is_floating_point_v<T>)
    return T(base) * T(scale[(i + 3 * rank) % 7]) + T(0.1) * T(rank);
  else if constexpr (std::is_same_v<T, uint8_t>)
    return uint8_t((i + rank) % 3 == 0);
  else
    return T(base * (1 + rank));
}

template <typename T> std::vector<T> inputs(int rank, int64_t count, int64_t salt = 0) {
  std::vector<T> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    v[size_t(i)] = inputValue<T>(rank, i + salt);
  return v;
}

/// The reference: a left fold over ranks 0..n-1.
template <typename T> T combine(T a, T b, Reduction op) {
  switch (op) {
  case Reduction::Sum:
  case Reduction::Mean:
    return T(a + b);
  case Reduction::Max:
    return b > a ? b : a;
  case Reduction::Min:
    return b < a ? b : a;
  }
  return a;
}
template <typename T>
std::vector<T> reference(int n, int64_t count, Reduction op, int64_t salt = 0) {
  std::vector<T> acc = inputs<T>(0, count, salt);
  for (int r = 1; r < n; ++r) {
    std::vector<T> x = inputs<T>(r, count, salt);
    for (size_t i = 0; i < acc.size(); ++i)
      acc[i] = combine(acc[i], x[i], op);
  }
  if (op == Reduction::Mean)
    for (T &v : acc)
      v = T(v / T(n));
  return acc;
}

struct ReduceCase {
  ElementType type;
  Reduction op;
  int64_t count;
  bool inPlace;
};

std::vector<ReduceCase> reduceCases() {
  std::vector<ReduceCase> cases;
  for (ElementType t :
       {ElementType::F32, ElementType::F64, ElementType::I32, ElementType::I64, ElementType::I1})
    for (Reduction op : {Reduction::Sum, Reduction::Mean, Reduction::Max, Reduction::Min}) {
      if ((op == Reduction::Mean && !isFloatType(t)) ||
          (t == ElementType::I1 && op == Reduction::Sum))
        continue;
      for (int64_t count : {0, 1, 5, 1003})
        for (bool inPlace : {false, true})
          cases.push_back({t, op, count, inPlace});
    }
  return cases;
}

template <typename T>
std::string runReduce(Communicator &c, const ReduceCase &k, std::string &payload) {
  std::vector<T> in = inputs<T>(c.rank(), k.count), out(in.size());
  Status s = k.inPlace ? c.allReduce(in.data(), in.data(), k.count, k.type, k.op)
                       : c.allReduce(in.data(), out.data(), k.count, k.type, k.op);
  append(payload, k.inPlace ? in : out);
  return s ? "" : s.message();
}

template <typename T>
void expectReduce(const ReduceCase &k, int n, const std::string &payload, size_t &offset) {
  std::vector<T> got = take<T>(payload, offset, size_t(k.count));
  std::vector<T> want = reference<T>(n, k.count, k.op);
  ASSERT_EQ(got.empty() ? 0 : std::memcmp(got.data(), want.data(), got.size() * sizeof(T)), 0)
      << elementTypeName(k.type) << " " << reductionName(k.op) << " count " << k.count
      << (k.inPlace ? " in place" : "");
}

class DistAllReduce : public ::testing::TestWithParam<int> {};

TEST_P(DistAllReduce, EveryTypeAndReductionInRankOrder) {
  const int n = GetParam(), port = freePort();
  auto results = runRanks(n, [&](int rank, std::string &payload) -> std::string {
    std::unique_ptr<Communicator> world;
    Status s = createWorld(loopbackEnv(rank, n, port), "gloo", world);
    if (!s)
      return s.message();
    if (world->rank() != rank || world->size() != n || std::string(world->backend()) != "gloo")
      return "wrong world identity";
    for (const ReduceCase &k : reduceCases()) {
      std::string e;
      switch (k.type) {
      case ElementType::F32:
        e = runReduce<float>(*world, k, payload);
        break;
      case ElementType::F64:
        e = runReduce<double>(*world, k, payload);
        break;
      case ElementType::I32:
        e = runReduce<int32_t>(*world, k, payload);
        break;
      case ElementType::I64:
        e = runReduce<int64_t>(*world, k, payload);
        break;
      case ElementType::I1:
        e = runReduce<uint8_t>(*world, k, payload);
        break;
      }
      if (!e.empty())
        return e;
    }
    // A rejected call is an argument error on every rank, not a failure of
    // the group: the next collective still works.
    std::vector<int32_t> v(4);
    s = world->allReduce(v.data(), v.data(), 4, ElementType::I32, Reduction::Mean);
    if (s.message() != "all_reduce on group 'world' (" + std::to_string(n) +
                           " ranks) failed: mean of i32 is not supported (an integer mean would "
                           "truncate; use sum)")
      return "unexpected: " + s.message();
    return world->barrier() ? "" : "barrier after a rejected call failed";
  });
  for (int r = 0; r < n; ++r) {
    const auto &res = results[size_t(r)];
    ASSERT_EQ(res.exitCode, 0) << "rank " << r << ": " << res.error;
    size_t offset = 0;
    for (const ReduceCase &k : reduceCases()) {
      switch (k.type) {
      case ElementType::F32:
        expectReduce<float>(k, n, res.payload, offset);
        break;
      case ElementType::F64:
        expectReduce<double>(k, n, res.payload, offset);
        break;
      case ElementType::I32:
        expectReduce<int32_t>(k, n, res.payload, offset);
        break;
      case ElementType::I64:
        expectReduce<int64_t>(k, n, res.payload, offset);
        break;
      case ElementType::I1:
        expectReduce<uint8_t>(k, n, res.payload, offset);
        break;
      }
    }
    EXPECT_EQ(offset, res.payload.size());
    // Bitwise identical replicas.
    EXPECT_TRUE(res.payload == results[0].payload) << "rank " << r << " differs from rank 0";
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, DistAllReduce, ::testing::Values(2, 3, 4));

// allGather, reduceScatter (7 per rank: not a power of two), broadcast from
// a non-zero root (in place and not), on 3 ranks; rank 0 starts late, so the
// others must retry the store.
TEST(DistCollectives, GatherScatterBroadcast) {
  const int n = 3, port = freePort();
  auto results = runRanks(n, [&](int rank, std::string &payload) -> std::string {
    if (rank == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::unique_ptr<Communicator> world;
    Status s = createWorld(loopbackEnv(rank, n, port), "gloo", world);
    if (!s)
      return s.message();
    std::vector<float> g(5 * n);
    if (!(s = world->allGather(inputs<float>(rank, 5).data(), g.data(), 5, ElementType::F32)))
      return s.message();
    append(payload, g);
    std::vector<int64_t> gi(3 * n);
    if (!(s = world->allGather(inputs<int64_t>(rank, 3).data(), gi.data(), 3, ElementType::I64)))
      return s.message();
    append(payload, gi);
    std::vector<float> rsf(7);
    if (!(s = world->reduceScatter(inputs<float>(rank, 7 * n).data(), rsf.data(), 7,
                                   ElementType::F32, Reduction::Sum)))
      return s.message();
    append(payload, rsf);
    std::vector<double> rsd(7);
    if (!(s = world->reduceScatter(inputs<double>(rank, 7 * n).data(), rsd.data(), 7,
                                   ElementType::F64, Reduction::Mean)))
      return s.message();
    append(payload, rsd);
    std::vector<int64_t> rsi(7);
    if (!(s = world->reduceScatter(inputs<int64_t>(rank, 7 * n).data(), rsi.data(), 7,
                                   ElementType::I64, Reduction::Max)))
      return s.message();
    append(payload, rsi);
    // Broadcast from rank 2, out of place, then in place from rank 1.
    std::vector<double> b = inputs<double>(rank, 10), bo(10);
    if (!(s = world->broadcast(b.data(), bo.data(), 10, ElementType::F64, 2)))
      return s.message();
    append(payload, bo);
    std::vector<int32_t> bi = inputs<int32_t>(rank, 6);
    if (!(s = world->broadcast(bi.data(), bi.data(), 6, ElementType::I32, 1)))
      return s.message();
    append(payload, bi);
    return "";
  });
  for (int r = 0; r < n; ++r) {
    const auto &res = results[size_t(r)];
    ASSERT_EQ(res.exitCode, 0) << "rank " << r << ": " << res.error;
    size_t off = 0;
    std::vector<float> g;
    for (int j = 0; j < n; ++j)
      for (float v : inputs<float>(j, 5))
        g.push_back(v);
    EXPECT_EQ(take<float>(res.payload, off, 5 * n), g);
    std::vector<int64_t> gi;
    for (int j = 0; j < n; ++j)
      for (int64_t v : inputs<int64_t>(j, 3))
        gi.push_back(v);
    EXPECT_EQ(take<int64_t>(res.payload, off, 3 * n), gi);
    auto part = [&](auto whole) {
      return decltype(whole)(whole.begin() + 7 * r, whole.begin() + 7 * (r + 1));
    };
    EXPECT_EQ(take<float>(res.payload, off, 7), part(reference<float>(n, 7 * n, Reduction::Sum)));
    EXPECT_EQ(take<double>(res.payload, off, 7),
              part(reference<double>(n, 7 * n, Reduction::Mean)));
    EXPECT_EQ(take<int64_t>(res.payload, off, 7),
              part(reference<int64_t>(n, 7 * n, Reduction::Max)));
    EXPECT_EQ(take<double>(res.payload, off, 10), inputs<double>(2, 10));
    EXPECT_EQ(take<int32_t>(res.payload, off, 6), inputs<int32_t>(1, 6));
    EXPECT_EQ(off, res.payload.size());
  }
}

// A ring of 4: even ranks send first, odd ranks receive first (a send may
// wait for its receive). Two messages per link keep their order.
TEST(DistCollectives, SendRecvRing) {
  const int n = 4, port = freePort();
  auto results = runRanks(n, [&](int rank, std::string &payload) -> std::string {
    std::unique_ptr<Communicator> world;
    Status s = createWorld(loopbackEnv(rank, n, port), "gloo", world);
    if (!s)
      return s.message();
    int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    std::vector<float> a = inputs<float>(rank, 9), b = inputs<float>(rank, 4, 100);
    std::vector<float> ga(9), gb(4);
    auto sendBoth = [&] {
      Status t = world->send(a.data(), 9, ElementType::F32, next);
      return t ? world->send(b.data(), 4, ElementType::F32, next) : t;
    };
    auto recvBoth = [&] {
      Status t = world->recv(ga.data(), 9, ElementType::F32, prev);
      return t ? world->recv(gb.data(), 4, ElementType::F32, prev) : t;
    };
    if (rank % 2 == 0) {
      if (!(s = sendBoth()) || !(s = recvBoth()))
        return s.message();
    } else if (!(s = recvBoth()) || !(s = sendBoth())) {
      return s.message();
    }
    append(payload, ga);
    append(payload, gb);
    s = world->send(a.data(), 1, ElementType::F32, rank);
    if (s.message() != "send on group 'world' (4 ranks) failed: peer " + std::to_string(rank) +
                           " is this rank itself")
      return "unexpected: " + s.message();
    return "";
  });
  for (int r = 0; r < n; ++r) {
    const auto &res = results[size_t(r)];
    ASSERT_EQ(res.exitCode, 0) << "rank " << r << ": " << res.error;
    size_t off = 0;
    int prev = (r + n - 1) % n;
    EXPECT_EQ(take<float>(res.payload, off, 9), inputs<float>(prev, 9));
    EXPECT_EQ(take<float>(res.payload, off, 4), inputs<float>(prev, 4, 100));
  }
}

// A send/recv group posts its receives at once and its sends at `sendsAt`
// (LCC_DIST_LATENCY_MS's emulated latency, paid by the sender only): rank 1
// sends to rank 0, whose group also sends 300 ms later. Rank 1's send
// completes long before rank 0's group does, and both get the data.
TEST(DistCollectives, SendRecvDelaysOnlyTheSends) {
  const int n = 2, port = freePort();
  auto results = runRanks(n, [&](int rank, std::string &payload) -> std::string {
    std::unique_ptr<Communicator> world;
    Status s = createWorld(loopbackEnv(rank, n, port), "gloo", world);
    if (!s || !(s = world->barrier()))
      return s.message();
    std::vector<float> mine = inputs<float>(rank, 5), theirs(5);
    using P = Communicator::PointToPoint;
    P out{true, mine.data(), 5, ElementType::F32, 1 - rank};
    P in{false, theirs.data(), 5, ElementType::F32, 1 - rank};
    std::vector<double> t = {nowSeconds()};
    auto later = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    if (rank == 0)
      s = world->sendRecv({in, out}, later);
    else if ((s = world->sendRecv({out}, {})))
      t.push_back(nowSeconds()), s = world->sendRecv({in}, {});
    if (!s)
      return s.message();
    t.push_back(nowSeconds());
    append(payload, t);
    append(payload, theirs);
    return "";
  });
  std::vector<std::vector<double>> times;
  for (int r = 0; r < n; ++r) {
    const auto &res = results[size_t(r)];
    ASSERT_EQ(res.exitCode, 0) << "rank " << r << ": " << res.error;
    size_t off = 0;
    times.push_back(take<double>(res.payload, off, r == 0 ? 2 : 3));
    EXPECT_EQ(take<float>(res.payload, off, 5), inputs<float>(1 - r, 5));
  }
  EXPECT_GE(times[0][1] - times[0][0], 0.3) << "rank 0's send went out before sendsAt";
  EXPECT_LT(times[1][1], times[0][0] + 0.2) << "rank 0 posted its receive late";
}

// Nobody leaves the barrier before the last rank entered it.
TEST(DistCollectives, Barrier) {
  const int n = 3, port = freePort();
  auto results = runRanks(n, [&](int rank, std::string &payload) -> std::string {
    std::unique_ptr<Communicator> world;
    Status s = createWorld(loopbackEnv(rank, n, port), "gloo", world);
    if (!s)
      return s.message();
    std::this_thread::sleep_for(std::chrono::milliseconds(100 * rank));
    std::vector<double> t = {nowSeconds()};
    if (!(s = world->barrier()))
      return s.message();
    t.push_back(nowSeconds());
    append(payload, t);
    return "";
  });
  double lastIn = 0, firstOut = 1e300;
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(results[size_t(r)].exitCode, 0) << results[size_t(r)].error;
    size_t off = 0;
    std::vector<double> t = take<double>(results[size_t(r)].payload, off, 2);
    lastIn = std::max(lastIn, t[0]);
    firstOut = std::min(firstOut, t[1]);
  }
  EXPECT_GE(firstOut, lastIn);
}

// {dp=2, tp=2} over 4 ranks: rank = dp*2 + tp. Each group's identity and an
// all-reduce of the world ranks over it; then a second split ({all=4, one=1})
// of the same world, whose store keys must not collide with the first.
TEST(DistCollectives, GridGroups) {
  const int n = 4, port = freePort();
  auto results = runRanks(n, [&](int rank, std::string &payload) -> std::string {
    std::unique_ptr<Communicator> world;
    Status s = createWorld(loopbackEnv(rank, n, port), "gloo", world);
    if (!s)
      return s.message();
    std::vector<std::unique_ptr<Communicator>> groups, more;
    if (!(s = splitGroups(*world, {{"dp", 2}, {"tp", 2}}, groups)))
      return s.message();
    if (!(s = splitGroups(*world, {{"all", 4}, {"one", 1}}, more)))
      return s.message();
    std::vector<int64_t> out;
    for (auto *list : {&groups, &more})
      for (auto &g : *list) {
        int64_t mine = rank, sum = 0;
        if (!(s = g->allReduce(&mine, &sum, 1, ElementType::I64, Reduction::Sum)))
          return s.message();
        out.insert(out.end(), {g->rank(), g->size(), sum});
        payload += g->name() + ":" + g->backend() + ";";
      }
    append(payload, out);
    return "";
  });
  for (int r = 0; r < n; ++r) {
    const auto &res = results[size_t(r)];
    ASSERT_EQ(res.exitCode, 0) << "rank " << r << ": " << res.error;
    std::string names = "dp:gloo;tp:gloo;all:gloo;one:local;";
    ASSERT_EQ(res.payload.substr(0, names.size()), names);
    size_t off = names.size();
    int dp = r / 2, tp = r % 2;
    std::vector<int64_t> want = {dp, 2, tp + (tp + 2),         // dp: the ranks with this tp index
                                 tp, 2, 2 * dp + (2 * dp + 1), // tp: the ranks with this dp index
                                 r,  4, 0 + 1 + 2 + 3,         // all
                                 0,  1, r};                    // one (a 1-rank group copies)
    EXPECT_EQ(take<int64_t>(res.payload, off, want.size()), want) << "rank " << r;
  }
}

} // namespace
