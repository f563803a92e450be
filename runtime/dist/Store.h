//===- Store.h - the rendezvous key-value store over TCP --------*- C++ -*-===//
//
// Processes of a job know only MASTER_ADDR:MASTER_PORT. Gloo needs a store to
// exchange its pairs' addresses, NCCL to share its unique id, and Gloo ships
// none that works across machines without Redis (FileStore needs a shared
// file system). So, like PyTorch's TCPStore: rank 0 runs a small server
// thread on the port and every rank, rank 0 included, is a client.
//
// The server is one thread polling the listening socket, its clients and a
// wake-up pipe; it answers each request at once (no blocking requests on the
// server), and the clients wait for keys by asking again with a growing
// pause (0.2 ms up to 10 ms). Rendezvous is a handful of keys, so this costs
// nothing measurable and keeps a timed-out or vanished client from leaving
// state on the server. Clients that disconnect are simply dropped; the
// server stops (thread joined) when its store is destroyed.
//
// Every wait is bounded: a key that does not appear within the timeout is an
// error naming the key and the timeout, and a client that cannot connect
// (rank 0 may start later) retries until the timeout.
//
// Wire format (both directions little-endian): a request is an op byte, then
//   'S' set:   u32 keyLen, key, u64 valueLen, value  -> u8 0
//   'G' get:   u32 keyLen, key                        -> u8 found [, u64 len, value]
//   'A' add:   u32 keyLen, key, i64 delta             -> i64 new value
//   'C' check: u32 n, n x (u32 keyLen, key)           -> u8 all present
// Counters (add) are stored as decimal text, so get() of a counter reads it.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_DIST_STORE_H
#define LCC_RUNTIME_DIST_STORE_H

#include "runtime/dist/Communicator.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace lcc {
namespace dist {

class StoreServer;

class TcpStore {
public:
  /// Connects to host:port. With `serve`, first starts the server on `port`
  /// (all interfaces, SO_REUSEADDR; port 0 picks a free one, see port()).
  /// `timeoutSeconds` bounds connecting and is the default for get().
  static Status create(const std::string &host, int port, bool serve, double timeoutSeconds,
                       std::unique_ptr<TcpStore> &out);
  ~TcpStore();

  Status set(const std::string &key, const std::vector<char> &value);
  /// Waits up to the store's timeout for `key`, then reads it.
  Status get(const std::string &key, std::vector<char> &value);
  /// Waits until every key is present (timeoutSeconds <= 0: the store's).
  Status wait(const std::vector<std::string> &keys, double timeoutSeconds);
  /// Atomically adds `delta` to the counter `key` (absent = 0); `result` is
  /// the new value.
  Status add(const std::string &key, int64_t delta, int64_t &result);

  double timeoutSeconds() const { return timeout_; }
  /// The port clients connect to (the bound one when created with port 0).
  int port() const { return port_; }

private:
  TcpStore() = default;
  Status connectToServer();
  Status request(const std::string &message, std::vector<char> &reply, size_t fixedReply,
                 bool lengthPrefixed);
  Status check(const std::vector<std::string> &keys, bool &present);
  std::string where() const;

  std::unique_ptr<StoreServer> server_;
  std::string host_;
  int port_ = 0;
  double timeout_ = 300;
  int fd_ = -1;
  std::mutex mutex_; // one request at a time on the connection
};

/// A TCP port free right now on 127.0.0.1 for a store that binds it moments
/// later (lcc-run -n, the tests' ranks). Drawn at random below Linux's
/// ephemeral range (32768-60999), so no socket bound to port 0 meanwhile (Gloo's
/// pair listeners, another job's connections) can take it, and concurrent
/// jobs rarely draw the same one. Asking the kernel for a port (bind to 0)
/// returns an ephemeral one, which a concurrent job's Gloo could then take
/// first: tests running in parallel failed that way now and then.
int pickLoopbackPort();

} // namespace dist
} // namespace lcc

#endif
