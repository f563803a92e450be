//===- StoreTest.cpp - the rendezvous key-value store ---------------------===//
//
// The store in one process (server and clients on threads' sockets) for its
// operations and errors, and across processes for what rendezvous relies
// on: a late server, atomic counters as a barrier, clients that vanish.
//
//===----------------------------------------------------------------------===//
#include "runtime/dist/Store.h"
#include "Ranks.h"

#include <gtest/gtest.h>
#include <thread>

using namespace lcc;
using namespace lcc::dist;
using lcc::test::freePort;
using lcc::test::runRanks;

namespace {

std::vector<char> bytes(const std::string &s) { return std::vector<char>(s.begin(), s.end()); }

TEST(DistStore, SetGetAddWait) {
  std::unique_ptr<TcpStore> server, client;
  Status s = TcpStore::create("127.0.0.1", 0, true, 5, server);
  ASSERT_TRUE(s) << s.message();
  ASSERT_GT(server->port(), 0);
  ASSERT_TRUE(TcpStore::create("localhost", server->port(), false, 5, client));
  ASSERT_TRUE(client->set("a", bytes("hello")));
  std::vector<char> value;
  ASSERT_TRUE(server->get("a", value));
  EXPECT_EQ(value, bytes("hello"));
  ASSERT_TRUE(server->set("empty", {}));
  ASSERT_TRUE(client->get("empty", value));
  EXPECT_TRUE(value.empty());
  std::vector<char> big(3 << 20);
  for (size_t i = 0; i < big.size(); ++i)
    big[i] = char(i * 7);
  ASSERT_TRUE(client->set("big", big));
  ASSERT_TRUE(server->get("big", value));
  EXPECT_EQ(value, big);
  int64_t n = 0;
  ASSERT_TRUE(client->add("count", 5, n));
  EXPECT_EQ(n, 5);
  ASSERT_TRUE(server->add("count", -2, n));
  EXPECT_EQ(n, 3);
  ASSERT_TRUE(client->get("count", value)); // counters read as text
  EXPECT_EQ(value, bytes("3"));
  ASSERT_TRUE(client->wait({"a", "count"}, 1));
  // A get that waits for a key another client sets later.
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_TRUE(server->set("late", bytes("x")));
  });
  ASSERT_TRUE(client->get("late", value));
  late.join();
  EXPECT_EQ(value, bytes("x"));
}

TEST(DistStore, TimeoutsAreErrorsNamingTheKey) {
  std::unique_ptr<TcpStore> store;
  ASSERT_TRUE(TcpStore::create("127.0.0.1", 0, true, 0.3, store));
  std::string where = "the rendezvous store at 127.0.0.1:" + std::to_string(store->port());
  std::vector<char> value;
  auto t0 = std::chrono::steady_clock::now();
  Status s = store->get("missing", value);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(s.message(), "timed out after 0.3 s waiting for key 'missing' in " + where);
  EXPECT_GE(took, 0.29);
  EXPECT_LT(took, 2.0);
  ASSERT_TRUE(store->set("here", {}));
  s = store->wait({"here", "x", "y"}, 0.2);
  EXPECT_EQ(s.message(), "timed out after 0.2 s waiting for keys 'here', 'x', 'y' in " + where);
  // The connection is still good after a timeout.
  EXPECT_TRUE(store->get("here", value));
}

TEST(DistStore, PortInUseAndNoServer) {
  std::unique_ptr<TcpStore> first, second;
  ASSERT_TRUE(TcpStore::create("127.0.0.1", 0, true, 1, first));
  int port = first->port();
  Status s = TcpStore::create("127.0.0.1", port, true, 1, second);
  EXPECT_EQ(s.message(), "cannot serve the rendezvous store on port " + std::to_string(port) +
                             ": port in use (another job or a stale process holds MASTER_PORT)");
  first.reset(); // the server stops and frees the port
  s = TcpStore::create("127.0.0.1", port, false, 0.3, second);
  EXPECT_EQ(s.message(), "cannot reach the rendezvous store at 127.0.0.1:" + std::to_string(port) +
                             " within 0.3 s: Connection refused (is rank 0 running? "
                             "MASTER_ADDR/MASTER_PORT)");
  s = TcpStore::create("no-such-host.invalid", port, false, 0.1, second);
  EXPECT_NE(s.message().find("cannot resolve 'no-such-host.invalid'"), std::string::npos)
      << s.message();
}

TEST(DistStore, ServerOutlivesItsClientsAndStopsWithClientsConnected) {
  std::unique_ptr<TcpStore> server;
  ASSERT_TRUE(TcpStore::create("127.0.0.1", 0, true, 2, server));
  for (int i = 0; i < 3; ++i) {
    std::unique_ptr<TcpStore> client;
    ASSERT_TRUE(TcpStore::create("127.0.0.1", server->port(), false, 2, client));
    ASSERT_TRUE(client->set("k" + std::to_string(i), bytes("v")));
  } // each client disconnects here
  ASSERT_TRUE(server->wait({"k0", "k1", "k2"}, 1));
  std::unique_ptr<TcpStore> stays;
  ASSERT_TRUE(TcpStore::create("127.0.0.1", server->port(), false, 2, stays));
  server.reset(); // joins the server thread although a client is connected
  std::vector<char> value;
  Status s = stays->get("k0", value);
  EXPECT_NE(s.message().find("closed the connection"), std::string::npos) << s.message();
}

// Three processes: rank 0 serves late, the others retry; add() counts
// arrivals; every rank reads every other rank's key.
TEST(DistStore, RendezvousAcrossProcesses) {
  const int n = 3, port = freePort();
  auto results = runRanks(n, [&](int rank, std::string &payload) -> std::string {
    if (rank == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::unique_ptr<TcpStore> store;
    Status s = TcpStore::create("127.0.0.1", port, rank == 0, 10, store);
    if (!s)
      return s.message();
    if (!(s = store->set("rank" + std::to_string(rank), bytes(std::to_string(rank * 10)))))
      return s.message();
    int64_t arrived = 0;
    if (!(s = store->add("arrived", 1, arrived)))
      return s.message();
    std::vector<char> value;
    for (int r = 0; r < n; ++r) {
      if (!(s = store->get("rank" + std::to_string(r), value)))
        return s.message();
      payload += std::string(value.begin(), value.end()) + ",";
    }
    // A barrier on counters: everyone arrives ("done"), then rank 0 (the
    // server) waits until the others have seen that ("left") before leaving.
    auto until = [&](const char *key, int64_t want) -> std::string {
      int64_t v = 0;
      for (int tries = 0; tries < 5000; ++tries) {
        if (!(s = store->add(key, 0, v)))
          return s.message();
        if (v == want)
          return "";
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      return std::string(key) + " stuck at " + std::to_string(v);
    };
    if (!(s = store->add("done", 1, arrived)))
      return s.message();
    std::string e = until("done", n);
    if (!e.empty())
      return e;
    if (rank == 0)
      return until("left", n - 1);
    return (s = store->add("left", 1, arrived)) ? "" : s.message();
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(results[size_t(r)].exitCode, 0) << "rank " << r << ": " << results[size_t(r)].error;
    EXPECT_EQ(results[size_t(r)].payload, "0,10,20,");
  }
}

} // namespace
