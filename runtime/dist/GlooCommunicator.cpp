//===- GlooCommunicator.cpp - collectives on CPU buffers over Gloo --------===//
//
// Gloo gives connected TCP pairs (rendezvous through our TcpStore, one
// context per group) and tagged point-to-point transfers; the collectives
// are written here on top of those transfers rather than with Gloo's
// algorithms, because Gloo's reductions (ring, halving-doubling) add in an
// order that depends on the rank, so ranks could end with different bits,
// and N-rank runs could not match 1-rank runs.
//
//   reduceScatter: rank r owns part r. Every rank sends part j of its input
//     straight to rank j and receives part r from every rank into a scratch
//     buffer, then sums the N parts in rank order 0..N-1. Per rank: sends
//     (N-1)/N of the input (as a ring does), in N-1 concurrent transfers.
//   allReduce: a reduce-scatter of the count split into N near-equal parts
//     (part j = [count*j/N, count*(j+1)/N)), then an allGather of the reduced
//     parts: 2(N-1)/N of the buffer sent per rank, like ring all-reduce, in
//     two steps instead of 2(N-1). Each element is reduced once, by its
//     owner, so every rank gets identical bytes.
//   allGather: every rank sends its part to every other (N-1)/N of the output.
//   broadcast: the root sends to each rank ((N-1) x count from the root; a
//     tree would be better for many ranks, but broadcasts are rare here).
//   barrier: a one-byte message from every rank to every other.
//
// Gloo reports failures by throwing (IoException for a closed or timed-out
// peer, EnforceNotMet for misuse). This file is compiled with -fexceptions
// and nothing thrown leaves it: every entry point catches and turns the
// exception into a Status naming the operation, the group and the peer.
// A timed-out transfer marks the whole Gloo context failed (Gloo signals all
// its pairs), so the communicator reports itself broken afterwards.
//
//===----------------------------------------------------------------------===//
#include "runtime/dist/Communicator.h"
#include "runtime/dist/Store.h"

#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>

#include <algorithm>
#include <arpa/inet.h>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

namespace lcc {
namespace dist {

namespace {

using Clock = std::chrono::steady_clock;

/// Gloo's view of our store: errors become the exceptions Gloo expects (and
/// come back out of connectFullMesh, where we catch them).
class GlooStore final : public gloo::rendezvous::Store {
public:
  explicit GlooStore(TcpStore &store) : store_(store) {}
  void set(const std::string &key, const std::vector<char> &data) override {
    check(store_.set(key, data));
  }
  std::vector<char> get(const std::string &key) override {
    std::vector<char> value;
    check(store_.get(key, value));
    return value;
  }
  void wait(const std::vector<std::string> &keys) override { check(store_.wait(keys, 0)); }
  void wait(const std::vector<std::string> &keys,
            const std::chrono::milliseconds &timeout) override {
    check(store_.wait(keys, double(timeout.count()) / 1000.0));
  }

private:
  static void check(const Status &s) {
    if (!s)
      throw gloo::IoException(s.message());
  }
  TcpStore &store_;
};

/// Gloo's messages start with "[file.cc:123] " (sometimes nested); the
/// location means nothing to a user.
std::string stripLocation(std::string msg) {
  for (;;) {
    size_t close = msg.find("] ");
    if (msg.empty() || msg[0] != '[' || close == std::string::npos || msg.find(':') > close)
      return msg;
    msg.erase(0, close + 2);
  }
}

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", s);
  return buf;
}

/// The address of this host's interface that routes to MASTER_ADDR: the
/// peers reach this rank where rank 0's store was reachable (for a loopback
/// MASTER_ADDR, loopback). A UDP connect sends nothing; it only routes.
Status localAddressFor(const std::string &host, int port, std::string &out) {
  addrinfo hints{}, *list = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &list);
  if (rc != 0)
    return Status::failure("cannot resolve MASTER_ADDR=" + host + ": " + gai_strerror(rc));
  std::string error = "no address";
  for (addrinfo *a = list; a; a = a->ai_next) {
    int fd = ::socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
      continue;
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr *>(&local), &len) == 0) {
      char text[INET6_ADDRSTRLEN] = {};
      const void *addr =
          local.ss_family == AF_INET6
              ? static_cast<const void *>(&reinterpret_cast<sockaddr_in6 *>(&local)->sin6_addr)
              : &reinterpret_cast<sockaddr_in *>(&local)->sin_addr;
      ::inet_ntop(local.ss_family, addr, text, sizeof text);
      ::close(fd);
      ::freeaddrinfo(list);
      out = text;
      return {};
    }
    error = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(list);
  return Status::failure("no local interface reaches MASTER_ADDR=" + host + ": " + error);
}

// Slots (Gloo's tags) of our transfers: collectives count up in one space
// (every member runs the same sequence), point-to-point per peer and
// direction in another, so the two never match each other.
constexpr uint64_t kCollectiveSlot = uint64_t(0x4c) << 56;
constexpr uint64_t kPointToPointSlot = uint64_t(0x50) << 56;
constexpr uint64_t kSlotMask = (uint64_t(1) << 56) - 1;

template <typename T> bool isNan(T v) { return v != v; }

/// out[k] = parts[0][k] op parts[1][k] op ... in rank order (the order the
/// header promises); mean divides the sum by N.
template <typename T>
void reduceParts(T *out, const std::vector<const char *> &parts, int64_t n, Reduction op) {
  const T *first = reinterpret_cast<const T *>(parts[0]);
  std::memcpy(out, first, size_t(n) * sizeof(T));
  for (size_t i = 1; i < parts.size(); ++i) {
    const T *p = reinterpret_cast<const T *>(parts[i]);
    switch (op) {
    case Reduction::Sum:
    case Reduction::Mean:
      for (int64_t k = 0; k < n; ++k)
        out[k] = T(out[k] + p[k]);
      break;
    case Reduction::Max: // NaN wins: it stays once it is in
      for (int64_t k = 0; k < n; ++k)
        if (p[k] > out[k] || isNan(p[k]))
          out[k] = isNan(out[k]) ? out[k] : p[k];
      break;
    case Reduction::Min:
      for (int64_t k = 0; k < n; ++k)
        if (p[k] < out[k] || isNan(p[k]))
          out[k] = isNan(out[k]) ? out[k] : p[k];
      break;
    }
  }
  if (op == Reduction::Mean)
    for (int64_t k = 0; k < n; ++k)
      out[k] = T(out[k] / T(parts.size()));
}

void reduce(void *out, const std::vector<const char *> &parts, int64_t n, ElementType type,
            Reduction op) {
  switch (type) {
  case ElementType::F32:
    return reduceParts(static_cast<float *>(out), parts, n, op);
  case ElementType::F64:
    return reduceParts(static_cast<double *>(out), parts, n, op);
  case ElementType::I32:
    return reduceParts(static_cast<int32_t *>(out), parts, n, op);
  case ElementType::I64:
    return reduceParts(static_cast<int64_t *>(out), parts, n, op);
  case ElementType::I1: // 0/1 bytes: max is or, min is and
    return reduceParts(static_cast<uint8_t *>(out), parts, n, op);
  }
}

class GlooCommunicator final : public Communicator {
public:
  GlooCommunicator(std::string name, int worldRank, std::vector<int> members,
                   std::shared_ptr<TcpStore> store, std::shared_ptr<gloo::transport::Device> device,
                   std::shared_ptr<gloo::rendezvous::Context> context, double timeout)
      : Communicator(std::move(name), worldRank), members_(std::move(members)),
        store_(std::move(store)), device_(std::move(device)), context_(std::move(context)),
        timeout_(timeout), sendSeq_(size_t(context_->size), 0),
        recvSeq_(size_t(context_->size), 0) {}

  int rank() const override { return context_->rank; }
  int size() const override { return context_->size; }
  const char *backend() const override { return "gloo"; }

  Status allReduce(const void *in, void *out, int64_t count, ElementType type,
                   Reduction op) override;
  Status allGather(const void *in, void *out, int64_t countPerRank, ElementType type) override;
  Status reduceScatter(const void *in, void *out, int64_t countPerRank, ElementType type,
                       Reduction op) override;
  Status broadcast(const void *in, void *out, int64_t count, ElementType type, int root) override;
  Status send(const void *in, int64_t count, ElementType type, int peer) override;
  Status recv(void *out, int64_t count, ElementType type, int peer) override;
  Status sendRecv(const std::vector<PointToPoint> &transfers,
                  std::chrono::steady_clock::time_point sendsAt) override;
  /// Gloo's pairs lock their own state; this communicator's counters are
  /// per direction (sendSeq_, recvSeq_) and its failure is locked.
  bool concurrentSendRecv() const override { return true; }
  Status barrier() override;
  Status subgroup(const std::string &name, const std::vector<int> &members, const std::string &tag,
                  std::unique_ptr<Communicator> &out) override;

  /// Connects a Gloo context over the store's keys under `tag`; `members`
  /// are the group's ranks in the world (errors name peers by them).
  static Status connect(const std::string &name, int worldRank, int rank,
                        const std::vector<int> &members, const std::string &tag,
                        std::shared_ptr<TcpStore> store,
                        std::shared_ptr<gloo::transport::Device> device, double timeout,
                        std::unique_ptr<Communicator> &out);

private:
  struct Transfer {
    int peer;
    bool isSend;
    char *data;
    size_t bytes;
    uint64_t slot = 0; // its own slot (point to point), else exchange's
  };
  /// Posts every transfer, the receives first and the sends no earlier
  /// than `sendsAt`, then waits for each (one deadline for all); the first
  /// failure names its peer.
  Status exchange(const char *op, const std::vector<Transfer> &transfers, uint64_t slot,
                  Clock::time_point sendsAt = {});
  uint64_t nextCollectiveSlot() { return kCollectiveSlot | (collectiveSeq_++ & kSlotMask); }
  /// Empty while the group works (read and set by the communication
  /// thread's sends and the caller's receives alike).
  std::string brokenCause() const {
    std::lock_guard<std::mutex> lock(brokenMutex_);
    return brokenCause_;
  }
  Status broken(const char *op) const {
    return failure(op, "the group failed earlier (" + brokenCause() + ")");
  }
  /// Reduce-scatter of `parts` (offset, count per rank, in elements) of
  /// `in`; rank r's reduced part goes to `out`.
  Status reduceScatterParts(const char *op, const char *in, char *out,
                            const std::vector<int64_t> &offsets, const std::vector<int64_t> &counts,
                            ElementType type, Reduction red);

  std::vector<int> members_;        // world rank of each rank of this group
  std::shared_ptr<TcpStore> store_; // kept for subgroups; the server lives on rank 0
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
  double timeout_;
  uint64_t collectiveSeq_ = 0;
  std::vector<uint64_t> sendSeq_, recvSeq_;
  mutable std::mutex brokenMutex_;
  std::string brokenCause_;
  std::vector<char> scratch_;
};

Status GlooCommunicator::exchange(const char *op, const std::vector<Transfer> &transfers,
                                  uint64_t slot, Clock::time_point sendsAt) {
  if (!brokenCause().empty())
    return broken(op);
  Clock::time_point deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                  std::chrono::duration<double>(timeout_));
  std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> buffers(transfers.size());
  size_t i = 0;
  std::string cause;
  try {
    bool anySends =
        std::any_of(transfers.begin(), transfers.end(), [](const Transfer &t) { return t.isSend; });
    for (bool sends : {false, true}) {
      if (sends && anySends)
        std::this_thread::sleep_until(sendsAt);
      for (i = 0; i < transfers.size(); ++i) {
        const Transfer &t = transfers[i];
        if (t.isSend != sends)
          continue;
        buffers[i] = context_->createUnboundBuffer(t.data, t.bytes);
        if (t.isSend)
          buffers[i]->send(t.peer, t.slot ? t.slot : slot);
        else
          buffers[i]->recv(t.peer, t.slot ? t.slot : slot);
      }
    }
    for (i = 0; i < transfers.size(); ++i) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() < 1)
        left = std::chrono::milliseconds(1);
      bool done = transfers[i].isSend ? buffers[i]->waitSend(left) : buffers[i]->waitRecv(left);
      if (!done)
        throw gloo::IoException("the transfer was aborted");
    }
    return {};
  } catch (const std::exception &e) {
    cause = stripLocation(e.what());
  } catch (...) {
    cause = "unknown error";
  }
  const Transfer &t = transfers[i < transfers.size() ? i : transfers.size() - 1];
  // The world's name for the peer: the user's logs are per world rank.
  std::string peer = "rank " + std::to_string(members_[size_t(t.peer)]);
  auto has = [&](const char *text) { return cause.find(text) != std::string::npos; };
  if (has("Timed out"))
    cause = "timed out after " + seconds(timeout_) + (t.isSend ? " sending to " : " waiting for ") +
            peer;
  else if (has("closed by peer") || has("reset by peer") || has("Broken pipe") ||
           has("Connection refused"))
    cause = "peer " + peer + " closed the connection";
  else
    cause = peer + ": " + cause;
  {
    std::lock_guard<std::mutex> lock(brokenMutex_);
    brokenCause_ = cause;
  }
  return failure(op, cause);
}

Status GlooCommunicator::reduceScatterParts(const char *op, const char *in, char *out,
                                            const std::vector<int64_t> &offsets,
                                            const std::vector<int64_t> &counts, ElementType type,
                                            Reduction red) {
  const int n = size(), r = rank();
  const size_t es = elementSize(type), mine = size_t(counts[size_t(r)]) * es;
  // Slot j holds rank j's part r; our own part is copied in too, since with
  // in == out writing the result would overwrite it mid-reduction.
  scratch_.resize(size_t(n) * mine);
  std::vector<Transfer> transfers;
  for (int j = 0; j < n; ++j) {
    if (j == r)
      continue;
    size_t bytes = size_t(counts[size_t(j)]) * es;
    if (bytes)
      transfers.push_back(
          {j, true, const_cast<char *>(in) + offsets[size_t(j)] * int64_t(es), bytes});
    if (mine)
      transfers.push_back({j, false, scratch_.data() + size_t(j) * mine, mine});
  }
  Status s = exchange(op, transfers, nextCollectiveSlot());
  if (!s || !mine)
    return s;
  std::memcpy(scratch_.data() + size_t(r) * mine, in + offsets[size_t(r)] * int64_t(es), mine);
  std::vector<const char *> parts;
  for (int j = 0; j < n; ++j)
    parts.push_back(scratch_.data() + size_t(j) * mine);
  reduce(out, parts, counts[size_t(r)], type, red);
  return {};
}

Status GlooCommunicator::allReduce(const void *in, void *out, int64_t count, ElementType type,
                                   Reduction op) {
  if (Status s = checkReduce("all_reduce", in, out, count, type, op); !s)
    return s;
  const int n = size(), r = rank();
  const int64_t es = int64_t(elementSize(type));
  std::vector<int64_t> offsets(size_t(n) + 1), counts(static_cast<size_t>(n));
  for (int j = 0; j <= n; ++j)
    offsets[size_t(j)] = count * j / n;
  for (int j = 0; j < n; ++j)
    counts[size_t(j)] = offsets[size_t(j) + 1] - offsets[size_t(j)];
  char *o = static_cast<char *>(out);
  Status s = reduceScatterParts("all_reduce", static_cast<const char *>(in),
                                o + offsets[size_t(r)] * es, offsets, counts, type, op);
  if (!s)
    return s;
  // Every rank's reduced part to every other rank.
  std::vector<Transfer> transfers;
  for (int j = 0; j < n; ++j) {
    if (j == r)
      continue;
    if (counts[size_t(r)])
      transfers.push_back({j, true, o + offsets[size_t(r)] * es, size_t(counts[size_t(r)] * es)});
    if (counts[size_t(j)])
      transfers.push_back({j, false, o + offsets[size_t(j)] * es, size_t(counts[size_t(j)] * es)});
  }
  return exchange("all_reduce", transfers, nextCollectiveSlot());
}

Status GlooCommunicator::reduceScatter(const void *in, void *out, int64_t countPerRank,
                                       ElementType type, Reduction op) {
  if (Status s = checkGather("reduce_scatter", in, out, countPerRank, type, true, op); !s)
    return s;
  const int n = size();
  std::vector<int64_t> offsets(static_cast<size_t>(n)),
      counts(static_cast<size_t>(n), countPerRank);
  for (int j = 0; j < n; ++j)
    offsets[size_t(j)] = countPerRank * j;
  return reduceScatterParts("reduce_scatter", static_cast<const char *>(in),
                            static_cast<char *>(out), offsets, counts, type, op);
}

Status GlooCommunicator::allGather(const void *in, void *out, int64_t countPerRank,
                                   ElementType type) {
  if (Status s = checkGather("all_gather", in, out, countPerRank, type, false, Reduction::Sum); !s)
    return s;
  const int n = size(), r = rank();
  const size_t bytes = size_t(countPerRank) * elementSize(type);
  char *o = static_cast<char *>(out);
  if (!brokenCause().empty())
    return broken("all_gather");
  if (bytes)
    std::memcpy(o + size_t(r) * bytes, in, bytes);
  std::vector<Transfer> transfers;
  for (int j = 0; j < n && bytes; ++j) {
    if (j == r)
      continue;
    transfers.push_back({j, true, const_cast<char *>(static_cast<const char *>(in)), bytes});
    transfers.push_back({j, false, o + size_t(j) * bytes, bytes});
  }
  return exchange("all_gather", transfers, nextCollectiveSlot());
}

Status GlooCommunicator::broadcast(const void *in, void *out, int64_t count, ElementType type,
                                   int root) {
  if (Status s = checkBroadcast(in, out, count, type, root); !s)
    return s;
  const size_t bytes = size_t(count) * elementSize(type);
  std::vector<Transfer> transfers;
  if (!brokenCause().empty())
    return broken("broadcast");
  if (rank() == root) {
    if (bytes && in != out)
      std::memmove(out, in, bytes);
    for (int j = 0; j < size() && bytes; ++j)
      if (j != root)
        transfers.push_back({j, true, static_cast<char *>(out), bytes});
  } else if (bytes) {
    transfers.push_back({root, false, static_cast<char *>(out), bytes});
  }
  return exchange("broadcast", transfers, nextCollectiveSlot());
}

Status GlooCommunicator::send(const void *in, int64_t count, ElementType type, int peer) {
  if (Status s = checkPeer("send", in, count, type, peer, false); !s)
    return s;
  const size_t bytes = size_t(count) * elementSize(type);
  if (!bytes)
    return {};
  uint64_t slot = kPointToPointSlot | (sendSeq_[size_t(peer)]++ & kSlotMask);
  return exchange("send", {{peer, true, const_cast<char *>(static_cast<const char *>(in)), bytes}},
                  slot);
}

Status GlooCommunicator::recv(void *out, int64_t count, ElementType type, int peer) {
  if (Status s = checkPeer("recv", out, count, type, peer, false); !s)
    return s;
  const size_t bytes = size_t(count) * elementSize(type);
  if (!bytes)
    return {};
  uint64_t slot = kPointToPointSlot | (recvSeq_[size_t(peer)]++ & kSlotMask);
  return exchange("recv", {{peer, false, static_cast<char *>(out), bytes}}, slot);
}

Status GlooCommunicator::sendRecv(const std::vector<PointToPoint> &transfers,
                                  Clock::time_point sendsAt) {
  std::vector<Transfer> posted;
  for (const PointToPoint &t : transfers) {
    const char *op = t.send ? "send" : "recv";
    if (Status s = checkPeer(op, t.data, t.count, t.type, t.peer, false); !s)
      return s;
    const size_t bytes = size_t(t.count) * elementSize(t.type);
    if (!bytes)
      continue;
    uint64_t &seq = (t.send ? sendSeq_ : recvSeq_)[size_t(t.peer)];
    posted.push_back({t.peer, t.send, static_cast<char *>(t.data), bytes,
                      kPointToPointSlot | (seq++ & kSlotMask)});
  }
  return posted.empty() ? Status() : exchange("send/recv", posted, 0, sendsAt);
}

Status GlooCommunicator::barrier() {
  const int n = size(), r = rank();
  static char token = 1;
  std::vector<char> got(static_cast<size_t>(n));
  std::vector<Transfer> transfers;
  for (int j = 0; j < n; ++j) {
    if (j == r)
      continue;
    transfers.push_back({j, true, &token, 1});
    transfers.push_back({j, false, &got[size_t(j)], 1});
  }
  return exchange("barrier", transfers, nextCollectiveSlot());
}

Status GlooCommunicator::connect(const std::string &name, int worldRank, int rank,
                                 const std::vector<int> &members, const std::string &tag,
                                 std::shared_ptr<TcpStore> store,
                                 std::shared_ptr<gloo::transport::Device> device, double timeout,
                                 std::unique_ptr<Communicator> &out) {
  std::string cause;
  try {
    int size = int(members.size());
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(std::chrono::milliseconds(int64_t(timeout * 1000)));
    GlooStore adapter(*store);
    gloo::rendezvous::PrefixStore prefixed(tag, adapter);
    context->connectFullMesh(prefixed, device);
    out.reset(new GlooCommunicator(name, worldRank, members, std::move(store), std::move(device),
                                   std::move(context), timeout));
    return {};
  } catch (const std::exception &e) {
    cause = stripLocation(e.what());
  } catch (...) {
    cause = "unknown error";
  }
  return Status::failure("connecting group '" + name + "' (" + std::to_string(members.size()) +
                         " ranks) failed: " + cause);
}

Status GlooCommunicator::subgroup(const std::string &name, const std::vector<int> &members,
                                  const std::string &tag, std::unique_ptr<Communicator> &out) {
  int groupRank;
  if (Status s = subgroupRank(name, members, groupRank); !s)
    return s;
  if (members.size() == 1) {
    out = makeLocalCommunicator(name, worldRank());
    return {};
  }
  // (The members are this group's parent's ranks: world ranks of world ranks.)
  std::vector<int> world;
  for (int m : members)
    world.push_back(members_[size_t(m)]);
  return connect(name, worldRank(), groupRank, world, tag, store_, device_, timeout_, out);
}

} // namespace

bool haveGloo() { return true; }

Status createGlooWorld(const DistEnv &env, std::unique_ptr<Communicator> &world) {
  if (env.worldSize == 1) {
    world = makeLocalCommunicator("world", 0);
    return {};
  }
  // Gloo writes with writev(), so a peer that died would kill this process
  // with SIGPIPE instead of letting the collective report it. Ignore the
  // signal unless the program installed a handler of its own.
  struct sigaction old {};
  if (sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL)
    std::signal(SIGPIPE, SIG_IGN);
  std::unique_ptr<TcpStore> owned;
  Status s =
      TcpStore::create(env.masterAddr, env.masterPort, env.rank == 0, env.timeoutSeconds, owned);
  if (!s)
    return s;
  std::shared_ptr<TcpStore> store(std::move(owned));
  std::shared_ptr<gloo::transport::Device> device;
  gloo::transport::tcp::attr attr;
  if (const char *iface = std::getenv("GLOO_SOCKET_IFNAME"); iface && *iface) {
    attr.iface = iface; // the user's choice of interface, as with PyTorch
  } else if (!(s = localAddressFor(env.masterAddr, env.masterPort, attr.hostname))) {
    return s;
  }
  try {
    device = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception &e) {
    return Status::failure("cannot open a Gloo TCP device on " +
                           (attr.iface.empty() ? attr.hostname : attr.iface) + ": " +
                           stripLocation(e.what()));
  } catch (...) {
    return Status::failure("cannot open a Gloo TCP device");
  }
  std::unique_ptr<Communicator> comm;
  std::vector<int> everyone(size_t(env.worldSize));
  for (int r = 0; r < env.worldSize; ++r)
    everyone[size_t(r)] = r;
  if (!(s = GlooCommunicator::connect("world", env.rank, env.rank, everyone, "world", store, device,
                                      env.timeoutSeconds, comm)))
    return s;
  // Nobody may leave (and rank 0 take the store down) while a peer still
  // reads its keys.
  if (!(s = comm->barrier()))
    return s;
  world = std::move(comm);
  return {};
}

} // namespace dist
} // namespace lcc
