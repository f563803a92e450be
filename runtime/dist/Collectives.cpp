//===- Collectives.cpp - the collectives compiled code calls --------------===//
#include "runtime/dist/Collectives.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unistd.h>

namespace lcc {
namespace dist {

namespace {

[[noreturn]] void die(int worldRank, const std::string &message);

/// The communication thread and its queue. One thread, one collective at a
/// time, in start order: the order every rank issues them in.
struct Engine {
  struct Job {
    int64_t ticket;
    std::function<Status()> run;
    int worldRank = -1; // >= 0: detached (no wait): a failure ends the process
  };
  struct Ticket {
    int64_t in, out;
    bool done = false;
    Status status;
    int worldRank = 0;
  };
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<Job> queue;
  bool busy = false;
  std::map<int64_t, Ticket> tickets;
  bool started = false;

  void worker() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      changed.wait(lock, [&] { return !queue.empty(); });
      Job job = std::move(queue.front());
      queue.pop_front();
      busy = true;
      lock.unlock();
      Status status = job.run();
      if (job.worldRank >= 0 && !status)
        die(job.worldRank, status.message());
      lock.lock();
      busy = false;
      if (job.worldRank >= 0) {
        changed.notify_all();
        continue;
      }
      Ticket &t = tickets[job.ticket];
      t.done = true;
      t.status = std::move(status);
      changed.notify_all();
    }
  }

  /// Blocks until nothing is queued or running (results stay for the waits).
  void drain() {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return queue.empty() && !busy; });
  }
};

struct Registry {
  std::vector<std::unique_ptr<Communicator>> groups;
  // The stand-in for every group while none is installed.
  std::unique_ptr<Communicator> local = makeLocalCommunicator("local", 0);
  // Per process: a fork()ed child (the tests' ranks) inherits the engine but
  // not its thread, and a mutex or condition variable the thread was waiting
  // on is unusable there; the child gets a fresh engine (the old one leaks).
  Engine *engine = nullptr;
  pid_t enginePid = 0;
};

/// Deliberately never destroyed: compiled code may still run from exit
/// handlers, and a Gloo context must not be torn down during static
/// destruction (clearGroups is the orderly way).
Registry &registry() {
  static Registry *r = new Registry();
  return *r;
}

Engine &engine() {
  Registry &r = registry();
  if (!r.engine || r.enginePid != ::getpid()) {
    r.engine = new Engine();
    r.enginePid = ::getpid();
  }
  return *r.engine;
}

/// The sends and receives of an open lcc_group_start, posted at its end.
/// Compiled code calls from one thread, so one per process.
struct PendingGroup {
  bool open = false;
  int64_t group = 0;
  std::vector<Communicator::PointToPoint> transfers;
};
PendingGroup &pendingGroup() {
  static PendingGroup *g = new PendingGroup();
  return *g;
}

[[noreturn]] void die(int worldRank, const std::string &message) {
  std::fprintf(stderr, "lcc-run: rank %d: %s\n", worldRank, message.c_str());
  std::fflush(stderr);
  std::_Exit(kDistributedFailureExitCode);
}

Communicator &lookup(int64_t group, const char *op) {
  Registry &r = registry();
  if (r.groups.empty())
    return *r.local;
  if (group < 0 || group >= int64_t(r.groups.size()))
    die(r.groups[0]->worldRank(), std::string(op) + " on group #" + std::to_string(group) +
                                      " failed: no such group (" + std::to_string(r.groups.size()) +
                                      " installed)");
  return *r.groups[size_t(group)];
}

/// The dtype argument as an ElementType (the communicator rejects others).
ElementType typeOf(Communicator &c, const char *op, int64_t dtype) {
  if (dtype < 0 || dtype > int64_t(ElementType::I1))
    die(c.worldRank(), std::string(op) + " on group '" + c.name() +
                           "' failed: unknown element type " + std::to_string(dtype));
  return ElementType(dtype);
}

Reduction reductionOf(Communicator &c, const char *op, int64_t reduction) {
  if (reduction < 0 || reduction > int64_t(Reduction::Min))
    die(c.worldRank(), std::string(op) + " on group '" + c.name() + "' failed: unknown reduction " +
                           std::to_string(reduction));
  return Reduction(reduction);
}

void check(Communicator &c, const Status &s) {
  if (!s)
    die(c.worldRank(), s.message());
}

/// The compiled code broke the start/wait protocol: a compiler bug, not a
/// distributed failure (exit code 3, lcc-run's "internal error").
[[noreturn]] void internalError(const std::string &message) {
  std::fprintf(stderr, "lcc-run: internal error: %s\n", message.c_str());
  std::fflush(stderr);
  std::_Exit(3);
}

/// While a group is open, a send or receive joins it (false otherwise).
bool queuedInGroup(bool send, int64_t group, int64_t dtype, int peer, void *data, int64_t count) {
  PendingGroup &g = pendingGroup();
  if (!g.open)
    return false;
  const char *op = send ? "send" : "recv";
  Communicator &c = lookup(group, op);
  g.transfers.push_back({send, data, count, typeOf(c, op, dtype), peer});
  return true;
}

/// Ends the open group on `group`, giving its transfers.
std::vector<Communicator::PointToPoint> closeGroup(Communicator &c, int64_t group) {
  PendingGroup &g = pendingGroup();
  if (!g.open || g.group != group)
    die(c.worldRank(), "group_end without its group_start");
  g.open = false;
  return std::move(g.transfers);
}

/// LCC_DIST_LATENCY_MS (benchmarks only): every collective starts moving
/// bytes this long after the rank issued it, as on a network with that
/// latency. Loopback has next to none, so this is how benchmarks/cpu_overlap.py
/// and cpu_pipeline.py show what overlapping communication with computation
/// hides on a real network. Measured from when the rank issued it, not from
/// when the communication thread gets to it: messages in flight at once
/// overlap their latencies, as on a network (a queued collective, or a
/// pipeline's posted sends followed by the next transfers, do not pay it
/// twice). In a send/recv group only the sends wait: a receive gets its
/// data at once if the peer sent it long enough ago.
std::chrono::microseconds emulatedLatency() {
  static const std::chrono::microseconds latency = [] {
    const char *v = std::getenv("LCC_DIST_LATENCY_MS");
    double ms = v ? std::atof(v) : 0.0;
    return std::chrono::microseconds(ms > 0 ? int64_t(ms * 1000.0) : 0);
  }();
  return latency;
}

void emulateLatency(std::chrono::steady_clock::time_point issued) {
  if (emulatedLatency().count() > 0)
    std::this_thread::sleep_until(issued + emulatedLatency());
}

/// Queues `run`, issued by the rank at `issued`, for the communication
/// thread (the engine's lock held): under a ticket a wait will ask for, or
/// (`detachedRank` >= 0) for nobody to wait for.
void enqueue(Engine &e, int64_t ticket, std::function<Status()> run, int detachedRank,
             std::chrono::steady_clock::time_point issued = std::chrono::steady_clock::now()) {
  e.queue.push_back({ticket,
                     [run = std::move(run), issued] {
                       emulateLatency(issued);
                       return run();
                     },
                     detachedRank});
  if (!e.started) {
    // Detached: it sleeps on the queue and must not keep the process alive.
    std::thread([&e] { e.worker(); }).detach();
    e.started = true;
  }
  e.changed.notify_all();
}

/// Queues `run` under `ticket` for the communication thread.
void start(Communicator &c, int64_t ticket, int64_t in, int64_t out, std::function<Status()> run) {
  Engine &e = engine();
  std::lock_guard<std::mutex> lock(e.mutex);
  if (!e.tickets.emplace(ticket, Engine::Ticket{in, out, false, {}, c.worldRank()}).second)
    internalError("collective ticket " + std::to_string(ticket) +
                  " started again before its wait");
  enqueue(e, ticket, std::move(run), -1);
}

/// Queues `run` for the communication thread with nothing to wait for it:
/// what comes after it (a synchronous call drains the queue) waits.
void detach(Communicator &c, std::function<Status()> run,
            std::chrono::steady_clock::time_point issued) {
  Engine &e = engine();
  std::lock_guard<std::mutex> lock(e.mutex);
  enqueue(e, -1, std::move(run), c.worldRank(), issued);
}

/// Detaches the sends of `transfers` (taken out of it), on copies the job
/// owns: the compiled code may reuse its buffers as soon as the group call
/// returns. The copies are the runtime's, outside the memory plan, and live
/// until the sends complete.
void detachSends(Communicator &c, std::vector<Communicator::PointToPoint> &transfers,
                 std::chrono::steady_clock::time_point issued) {
  auto data = std::make_shared<std::vector<std::vector<char>>>();
  std::vector<Communicator::PointToPoint> sends;
  for (Communicator::PointToPoint &t : transfers) {
    if (!t.send)
      continue;
    const char *from = static_cast<const char *>(t.data);
    data->emplace_back(from, from + size_t(t.count) * elementSize(t.type));
    sends.push_back(t);
    sends.back().data = data->back().data();
  }
  transfers.erase(std::remove_if(transfers.begin(), transfers.end(),
                                 [](const Communicator::PointToPoint &t) { return t.send; }),
                  transfers.end());
  if (!sends.empty())
    detach(
        c, [&c, sends, data] { return c.sendRecv(sends, {}); }, issued);
}

/// Collectives that run on the caller's thread go after all started ones.
Communicator &syncLookup(int64_t group, const char *op) {
  auto issued = std::chrono::steady_clock::now();
  engine().drain();
  emulateLatency(issued);
  return lookup(group, op);
}

const void *cptr(int64_t address) { return reinterpret_cast<const void *>(address); }
void *ptr(int64_t address) { return reinterpret_cast<void *>(address); }

} // namespace

void installGroups(std::vector<std::unique_ptr<Communicator>> groups,
                   std::vector<std::string> names) {
  for (size_t i = 0; i < groups.size() && i < names.size(); ++i)
    if (groups[i] && !names[i].empty())
      groups[i]->setName(names[i]);
  registry().groups = std::move(groups);
}

void clearGroups() {
  engine().drain();
  registry().groups.clear();
}

Communicator &compiledGroup(int64_t group, const char *op) { return lookup(group, op); }
ElementType compiledType(Communicator &c, const char *op, int64_t dtype) {
  return typeOf(c, op, dtype);
}
Reduction compiledReduction(Communicator &c, const char *op, int64_t reduction) {
  return reductionOf(c, op, reduction);
}
void collectiveFailed(int worldRank, const std::string &message) { die(worldRank, message); }
void collectiveProtocolError(const std::string &message) { internalError(message); }

size_t installedGroupCount() { return registry().groups.size(); }

size_t collectivesInFlight() {
  Engine &e = engine();
  std::lock_guard<std::mutex> lock(e.mutex);
  return e.tickets.size();
}

const RuntimeSymbol *collectiveSymbols() {
  static const RuntimeSymbol table[] = {
      {"lcc_all_reduce", reinterpret_cast<void *>(&lcc_all_reduce)},
      {"lcc_all_gather", reinterpret_cast<void *>(&lcc_all_gather)},
      {"lcc_reduce_scatter", reinterpret_cast<void *>(&lcc_reduce_scatter)},
      {"lcc_broadcast", reinterpret_cast<void *>(&lcc_broadcast)},
      {"lcc_send", reinterpret_cast<void *>(&lcc_send)},
      {"lcc_recv", reinterpret_cast<void *>(&lcc_recv)},
      {"lcc_group_start", reinterpret_cast<void *>(&lcc_group_start)},
      {"lcc_group_end", reinterpret_cast<void *>(&lcc_group_end)},
      {"lcc_group_end_posted", reinterpret_cast<void *>(&lcc_group_end_posted)},
      {"lcc_group_rank", reinterpret_cast<void *>(&lcc_group_rank)},
      {"lcc_all_reduce_start", reinterpret_cast<void *>(&lcc_all_reduce_start)},
      {"lcc_all_gather_start", reinterpret_cast<void *>(&lcc_all_gather_start)},
      {"lcc_reduce_scatter_start", reinterpret_cast<void *>(&lcc_reduce_scatter_start)},
      {"lcc_wait", reinterpret_cast<void *>(&lcc_wait)},
      {nullptr, nullptr}};
  return table;
}

} // namespace dist
} // namespace lcc

using namespace lcc;
using namespace lcc::dist;

extern "C" {

void lcc_all_reduce(int64_t group, int64_t dtype, int64_t reduction, int64_t in, int64_t out,
                    int64_t count) {
  Communicator &c = syncLookup(group, "all_reduce");
  check(c, c.allReduce(cptr(in), ptr(out), count, typeOf(c, "all_reduce", dtype),
                       reductionOf(c, "all_reduce", reduction)));
}

void lcc_all_gather(int64_t group, int64_t dtype, int64_t in, int64_t out, int64_t countPerRank) {
  Communicator &c = syncLookup(group, "all_gather");
  check(c, c.allGather(cptr(in), ptr(out), countPerRank, typeOf(c, "all_gather", dtype)));
}

void lcc_reduce_scatter(int64_t group, int64_t dtype, int64_t reduction, int64_t in, int64_t out,
                        int64_t countPerRank) {
  Communicator &c = syncLookup(group, "reduce_scatter");
  check(c, c.reduceScatter(cptr(in), ptr(out), countPerRank, typeOf(c, "reduce_scatter", dtype),
                           reductionOf(c, "reduce_scatter", reduction)));
}

void lcc_broadcast(int64_t group, int64_t dtype, int64_t root, int64_t in, int64_t out,
                   int64_t count) {
  Communicator &c = syncLookup(group, "broadcast");
  int r = root < 0 || root > INT32_MAX ? -1 : int(root);
  check(c, c.broadcast(cptr(in), ptr(out), count, typeOf(c, "broadcast", dtype), r));
}

void lcc_send(int64_t group, int64_t dtype, int64_t peer, int64_t in, int64_t count) {
  int p = peer < 0 || peer > INT32_MAX ? -1 : int(peer);
  if (queuedInGroup(true, group, dtype, p, ptr(in), count))
    return;
  Communicator &c = syncLookup(group, "send");
  check(c, c.send(cptr(in), count, typeOf(c, "send", dtype), p));
}

void lcc_recv(int64_t group, int64_t dtype, int64_t peer, int64_t out, int64_t count) {
  int p = peer < 0 || peer > INT32_MAX ? -1 : int(peer);
  if (queuedInGroup(false, group, dtype, p, ptr(out), count))
    return;
  Communicator &c = syncLookup(group, "recv");
  check(c, c.recv(ptr(out), count, typeOf(c, "recv", dtype), p));
}

void lcc_group_start(int64_t group) {
  PendingGroup &g = pendingGroup();
  if (g.open)
    die(lookup(group, "group_start").worldRank(),
        "group_start inside an open group: compiled code nests lcc.exchange calls");
  g.open = true;
  g.group = group;
  g.transfers.clear();
}

void lcc_group_end(int64_t group) {
  auto issued = std::chrono::steady_clock::now();
  engine().drain(); // earlier groups' sends first, in order (as on NCCL's stream)
  Communicator &c = lookup(group, "send/recv");
  std::vector<Communicator::PointToPoint> transfers = closeGroup(c, group);
  // The rank waits for what it receives, not for its sends: they complete
  // on the communication thread while it computes (before its next
  // transfers), so a send's latency delays only its receiver. Its
  // receives are posted at once: their data is late only when the peer's
  // send is (the emulated latency counts from when the peer issued it).
  if (c.concurrentSendRecv())
    detachSends(c, transfers, issued);
  check(c, c.sendRecv(transfers, issued + emulatedLatency()));
}

void lcc_group_end_posted(int64_t group) {
  Communicator &c = lookup(group, "send/recv");
  std::vector<Communicator::PointToPoint> transfers = closeGroup(c, group);
  if (std::any_of(transfers.begin(), transfers.end(),
                  [](const Communicator::PointToPoint &t) { return !t.send; }))
    die(c.worldRank(), "a posted send/recv group receives");
  // Its latency is the communication thread's wait before it runs.
  detachSends(c, transfers, std::chrono::steady_clock::now());
}

int64_t lcc_group_rank(int64_t group) { return lookup(group, "group_rank").rank(); }

// The arguments are checked on the calling thread, so a bad one fails where
// it was passed; the transfer's own failure shows at the wait.
void lcc_all_reduce_start(int64_t ticket, int64_t group, int64_t dtype, int64_t reduction,
                          int64_t in, int64_t out, int64_t count) {
  Communicator &c = lookup(group, "all_reduce");
  ElementType type = typeOf(c, "all_reduce", dtype);
  Reduction r = reductionOf(c, "all_reduce", reduction);
  start(c, ticket, in, out,
        [&c, in, out, count, type, r] { return c.allReduce(cptr(in), ptr(out), count, type, r); });
}

void lcc_all_gather_start(int64_t ticket, int64_t group, int64_t dtype, int64_t in, int64_t out,
                          int64_t countPerRank) {
  Communicator &c = lookup(group, "all_gather");
  ElementType type = typeOf(c, "all_gather", dtype);
  start(c, ticket, in, out, [&c, in, out, countPerRank, type] {
    return c.allGather(cptr(in), ptr(out), countPerRank, type);
  });
}

void lcc_reduce_scatter_start(int64_t ticket, int64_t group, int64_t dtype, int64_t reduction,
                              int64_t in, int64_t out, int64_t countPerRank) {
  Communicator &c = lookup(group, "reduce_scatter");
  ElementType type = typeOf(c, "reduce_scatter", dtype);
  Reduction r = reductionOf(c, "reduce_scatter", reduction);
  start(c, ticket, in, out, [&c, in, out, countPerRank, type, r] {
    return c.reduceScatter(cptr(in), ptr(out), countPerRank, type, r);
  });
}

void lcc_wait(int64_t ticket, int64_t in, int64_t out) {
  Engine &e = engine();
  std::unique_lock<std::mutex> lock(e.mutex);
  auto it = e.tickets.find(ticket);
  if (it == e.tickets.end())
    internalError("wait for collective ticket " + std::to_string(ticket) +
                  ", which was never started");
  if (it->second.in != in || it->second.out != out)
    internalError("wait for collective ticket " + std::to_string(ticket) +
                  " names other buffers than its start");
  e.changed.wait(lock, [&] { return it->second.done; });
  Status status = std::move(it->second.status);
  int rank = it->second.worldRank;
  e.tickets.erase(it);
  lock.unlock();
  if (!status)
    die(rank, status.message());
}

} // extern "C"
