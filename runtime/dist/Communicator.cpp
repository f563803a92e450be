//===- Communicator.cpp - environment, argument checks, 1-rank groups -----===//
//
// What every backend shares: reading the launcher's variables, the argument
// checks (so gloo and nccl reject the same calls with the same words), the
// 1-rank group, and the grid split. The backends live in their own files.
//
//===----------------------------------------------------------------------===//
#include "runtime/dist/Communicator.h"
#include "runtime/dist/GlooCommunicator.h"
#include "runtime/dist/NcclCommunicator.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <set>
#include <thread>

namespace lcc {
namespace dist {

//===----------------------------------------------------------------------===//
// Environment
//===----------------------------------------------------------------------===//

namespace {

/// A decimal integer, all of it (no spaces, no trailing text).
bool parseInt(const char *text, long long &out) {
  if (!*text || std::isspace(static_cast<unsigned char>(*text)))
    return false;
  errno = 0;
  char *end = nullptr;
  out = std::strtoll(text, &end, 10);
  return errno == 0 && *end == '\0';
}

struct Launcher {
  const char *rank, *size, *localRank;
};
// In the order they are consulted; the first with a rank or size wins.
constexpr Launcher kLaunchers[] = {
    {"RANK", "WORLD_SIZE", "LOCAL_RANK"},
    {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
};

std::string assignment(const char *name, const char *value) {
  return std::string(name) + "=" + value;
}

} // namespace

Status distEnvFromLookup(const std::function<const char *(const char *)> &lookup, DistEnv &out) {
  auto get = [&](const char *name) -> const char * {
    const char *v = lookup(name);
    return v && *v ? v : nullptr;
  };
  DistEnv env;
  const Launcher *from = nullptr;
  for (const Launcher &l : kLaunchers)
    if (get(l.rank) || get(l.size)) {
      from = &l;
      break;
    }
  if (from) {
    const char *rank = get(from->rank), *size = get(from->size);
    if (!rank || !size)
      return Status::failure(std::string(rank ? from->rank : from->size) + " is set but " +
                             (rank ? from->size : from->rank) + " is not");
    long long r, n;
    if (!parseInt(size, n))
      return Status::failure(assignment(from->size, size) + " is not an integer");
    if (n < 1 || n > (1 << 24))
      return Status::failure(assignment(from->size, size) + " is not a world size (1..16777216)");
    if (!parseInt(rank, r))
      return Status::failure(assignment(from->rank, rank) + " is not an integer");
    if (r < 0 || r >= n)
      return Status::failure(assignment(from->rank, rank) + " is out of range for " +
                             assignment(from->size, size) + " (0.." + std::to_string(n - 1) + ")");
    env.rank = int(r);
    env.worldSize = int(n);
  }
  // LOCAL_RANK overrides the launcher's own local rank (torchrun under SLURM).
  const char *localName = "LOCAL_RANK";
  const char *local = get(localName);
  if (!local && from) {
    localName = from->localRank;
    local = get(localName);
  }
  if (local) {
    long long l;
    if (!parseInt(local, l))
      return Status::failure(assignment(localName, local) + " is not an integer");
    if (l < 0 || l >= (1 << 24))
      return Status::failure(assignment(localName, local) + " is not a local rank (>= 0)");
    env.localRank = int(l);
  }

  const char *addr = get("MASTER_ADDR"), *port = get("MASTER_PORT");
  if (env.worldSize > 1 && (!addr || !port)) {
    std::string missing = !addr && !port ? "MASTER_ADDR and MASTER_PORT"
                          : !addr        ? "MASTER_ADDR"
                                         : "MASTER_PORT";
    return Status::failure(assignment(from->size, get(from->size)) + " needs " + missing +
                           " (the address and port of rank 0's rendezvous store)");
  }
  if (addr)
    env.masterAddr = addr;
  if (port) {
    long long p;
    if (!parseInt(port, p))
      return Status::failure(assignment("MASTER_PORT", port) + " is not an integer");
    if (p < 1 || p > 65535)
      return Status::failure(assignment("MASTER_PORT", port) + " is not a port (1..65535)");
    env.masterPort = int(p);
  }

  if (const char *t = get("LCC_DIST_TIMEOUT")) {
    errno = 0;
    char *end = nullptr;
    double s = std::strtod(t, &end);
    if (errno != 0 || *end != '\0' || std::isspace(static_cast<unsigned char>(*t)) ||
        !std::isfinite(s) || s <= 0 || s > 1e7)
      return Status::failure(assignment("LCC_DIST_TIMEOUT", t) +
                             " is not a number of seconds (> 0)");
    env.timeoutSeconds = s;
  }
  out = env;
  return {};
}

Status distEnvFromEnvironment(DistEnv &out) {
  return distEnvFromLookup([](const char *name) { return std::getenv(name); }, out);
}

//===----------------------------------------------------------------------===//
// Argument checks
//===----------------------------------------------------------------------===//

const char *reductionName(Reduction op) {
  switch (op) {
  case Reduction::Sum:
    return "sum";
  case Reduction::Mean:
    return "mean";
  case Reduction::Max:
    return "max";
  case Reduction::Min:
    return "min";
  }
  return "?";
}

Communicator::~Communicator() = default;

const char *streamCollectiveName(StreamCollective::Kind kind) {
  switch (kind) {
  case StreamCollective::AllReduce:
    return "all_reduce";
  case StreamCollective::AllGather:
    return "all_gather";
  case StreamCollective::ReduceScatter:
    return "reduce_scatter";
  case StreamCollective::Broadcast:
    return "broadcast";
  case StreamCollective::Send:
    return "send";
  case StreamCollective::Recv:
    return "recv";
  }
  return "collective";
}

Status Communicator::sendRecv(const std::vector<PointToPoint> &transfers,
                              std::chrono::steady_clock::time_point sendsAt) {
  for (const PointToPoint &t : transfers)
    if (t.send) {
      std::this_thread::sleep_until(sendsAt);
      break;
    }
  for (bool sends : {true, false})
    for (const PointToPoint &t : transfers) {
      if (t.send != sends)
        continue;
      Status s =
          t.send ? send(t.data, t.count, t.type, t.peer) : recv(t.data, t.count, t.type, t.peer);
      if (!s)
        return s;
    }
  return {};
}

Status Communicator::enqueue(const StreamCollective &c, void *) {
  return failure(streamCollectiveName(c.kind),
                 std::string("the ") + backend() +
                     " backend moves host buffers, and a CUDA train.bin's collectives are on "
                     "device buffers (run lcc-run with --backend nccl)");
}

Status Communicator::subgroupRank(const std::string &name, const std::vector<int> &members,
                                  int &groupRank) const {
  groupRank = -1;
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i] < 0 || members[i] >= size())
      return Status::failure("group '" + name + "': rank " + std::to_string(members[i]) +
                             " is not in group '" + this->name() + "'");
    if (members[i] == rank())
      groupRank = int(i);
  }
  if (groupRank < 0)
    return Status::failure("group '" + name + "' does not contain this rank");
  return {};
}

Status Communicator::failure(const char *op, const std::string &cause) const {
  int n = size();
  return Status::failure(std::string(op) + " on group '" + name_ + "' (" + std::to_string(n) +
                         (n == 1 ? " rank" : " ranks") + ") failed: " + cause);
}

namespace {

bool validType(ElementType type) { return uint8_t(type) <= uint8_t(ElementType::I1); }

/// count elements of `type`, times `times`, in bytes without overflow.
bool fitsBytes(int64_t count, int64_t times, ElementType type) {
  return count <= INT64_MAX / times / int64_t(elementSize(type));
}

bool overlap(const void *a, int64_t aBytes, const void *b, int64_t bBytes) {
  auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return aBytes > 0 && bBytes > 0 && x < y + uint64_t(bBytes) && y < x + uint64_t(aBytes);
}

} // namespace

/// The checks on count, type and reduction; "" when fine.
static std::string countTypeReduction(int64_t count, ElementType type, bool reduce, Reduction red) {
  if (count < 0)
    return "count " + std::to_string(count) + " is negative";
  if (!validType(type))
    return "unknown element type " + std::to_string(int(type));
  if (!reduce)
    return "";
  if (red != Reduction::Sum && red != Reduction::Mean && red != Reduction::Max &&
      red != Reduction::Min)
    return "unknown reduction " + std::to_string(int(red));
  if (red == Reduction::Mean && !isFloatType(type))
    return std::string("mean of ") + elementTypeName(type) +
           " is not supported (an integer mean would truncate; use sum)";
  if (red == Reduction::Sum && type == ElementType::I1)
    return "sum of i1 is not supported (use max for or, min for and)";
  return "";
}

Status Communicator::checkReduce(const char *op, const void *in, const void *out, int64_t count,
                                 ElementType type, Reduction red) const {
  std::string why = countTypeReduction(count, type, true, red);
  if (why.empty() && count > 0 && (!in || !out))
    why = "null buffer";
  return why.empty() ? Status() : failure(op, why);
}

Status Communicator::checkGather(const char *op, const void *in, const void *out,
                                 int64_t countPerRank, ElementType type, bool reduce,
                                 Reduction red) const {
  std::string why = countTypeReduction(countPerRank, type, reduce, red);
  if (why.empty() && !fitsBytes(countPerRank, size(), type))
    why = "count " + std::to_string(countPerRank) + " per rank is too large";
  if (why.empty() && countPerRank > 0 && (!in || !out))
    why = "null buffer";
  if (why.empty()) {
    int64_t part = countPerRank * int64_t(elementSize(type)), whole = part * size();
    if (reduce ? overlap(in, whole, out, part) : overlap(in, part, out, whole))
      why = "the input and output buffers overlap";
  }
  return why.empty() ? Status() : failure(op, why);
}

Status Communicator::checkBroadcast(const void *in, const void *out, int64_t count,
                                    ElementType type, int root) const {
  std::string why = countTypeReduction(count, type, false, Reduction::Sum);
  if (why.empty() && (root < 0 || root >= size()))
    why = "root " + std::to_string(root) + " is not a rank of the group (0.." +
          std::to_string(size() - 1) + ")";
  if (why.empty() && count > 0 && (!out || (rank() == root && !in)))
    why = "null buffer";
  return why.empty() ? Status() : failure("broadcast", why);
}

Status Communicator::checkPeer(const char *op, const void *buf, int64_t count, ElementType type,
                               int peer, bool allowSelf) const {
  std::string why = countTypeReduction(count, type, false, Reduction::Sum);
  if (why.empty() && (peer < 0 || peer >= size()))
    why = "peer " + std::to_string(peer) + " is not a rank of the group (0.." +
          std::to_string(size() - 1) + ")";
  if (why.empty() && peer == rank() && !allowSelf)
    why = "peer " + std::to_string(peer) + " is this rank itself";
  if (why.empty() && count > 0 && !buf)
    why = "null buffer";
  return why.empty() ? Status() : failure(op, why);
}

//===----------------------------------------------------------------------===//
// 1-rank groups
//===----------------------------------------------------------------------===//

namespace {

Status hostCopy(void *dst, const void *src, size_t bytes) {
  std::memmove(dst, src, bytes);
  return {};
}

class LocalCommunicator final : public Communicator {
public:
  LocalCommunicator(std::string name, int worldRank, CopyFn copy)
      : Communicator(std::move(name), worldRank), copy_(copy ? copy : hostCopy) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const char *backend() const override { return "local"; }

  Status allReduce(const void *in, void *out, int64_t count, ElementType type,
                   Reduction op) override {
    if (Status s = checkReduce("all_reduce", in, out, count, type, op); !s)
      return s;
    return copy("all_reduce", out, in, count, type);
  }
  Status allGather(const void *in, void *out, int64_t countPerRank, ElementType type) override {
    if (Status s = checkGather("all_gather", in, out, countPerRank, type, false, Reduction::Sum);
        !s)
      return s;
    return copy("all_gather", out, in, countPerRank, type);
  }
  Status reduceScatter(const void *in, void *out, int64_t countPerRank, ElementType type,
                       Reduction op) override {
    if (Status s = checkGather("reduce_scatter", in, out, countPerRank, type, true, op); !s)
      return s;
    return copy("reduce_scatter", out, in, countPerRank, type);
  }
  Status broadcast(const void *in, void *out, int64_t count, ElementType type, int root) override {
    if (Status s = checkBroadcast(in, out, count, type, root); !s)
      return s;
    return copy("broadcast", out, in, count, type);
  }
  Status send(const void *in, int64_t count, ElementType type, int peer) override {
    if (Status s = checkPeer("send", in, count, type, peer, true); !s)
      return s;
    std::vector<char> message(size_t(count) * elementSize(type));
    if (!message.empty())
      if (Status s = copy_(message.data(), in, message.size()); !s)
        return failure("send", s.message());
    queue_.push_back(std::move(message));
    return {};
  }
  Status recv(void *out, int64_t count, ElementType type, int peer) override {
    if (Status s = checkPeer("recv", out, count, type, peer, true); !s)
      return s;
    if (queue_.empty())
      return failure("recv", "no matching send (a 1-rank group receives only what it sent "
                             "itself, and nothing was sent)");
    std::vector<char> message = std::move(queue_.front());
    queue_.pop_front();
    size_t bytes = size_t(count) * elementSize(type);
    if (message.size() != bytes)
      return failure("recv", "the matching send has " + std::to_string(message.size()) +
                                 " bytes, the receive expects " + std::to_string(bytes));
    if (bytes)
      if (Status s = copy_(out, message.data(), bytes); !s)
        return failure("recv", s.message());
    return {};
  }
  Status barrier() override { return {}; }
  Status subgroup(const std::string &name, const std::vector<int> &members, const std::string &,
                  std::unique_ptr<Communicator> &out) override {
    if (members.size() != 1 || members[0] != 0)
      return Status::failure("group '" + name + "' has ranks outside the 1-rank group '" +
                             this->name() + "'");
    out.reset(new LocalCommunicator(name, worldRank(), copy_));
    return {};
  }

private:
  Status copy(const char *op, void *out, const void *in, int64_t count, ElementType type) {
    size_t bytes = size_t(count) * elementSize(type);
    if (bytes == 0 || in == out)
      return {};
    Status s = copy_(out, in, bytes);
    return s ? s : failure(op, s.message());
  }

  CopyFn copy_;
  std::deque<std::vector<char>> queue_; // sends to itself awaiting their recv
};

} // namespace

std::unique_ptr<Communicator> makeLocalCommunicator(std::string name, int worldRank, CopyFn copy) {
  return std::unique_ptr<Communicator>(new LocalCommunicator(std::move(name), worldRank, copy));
}

//===----------------------------------------------------------------------===//
// Factories
//===----------------------------------------------------------------------===//

Status createWorld(const DistEnv &env, const std::string &backend,
                   std::unique_ptr<Communicator> &world) {
  if (env.worldSize < 1 || env.rank < 0 || env.rank >= env.worldSize)
    return Status::failure("rank " + std::to_string(env.rank) + " is out of range for world size " +
                           std::to_string(env.worldSize));
  if (env.worldSize > 1 && (env.masterPort < 1 || env.masterPort > 65535 || env.masterAddr.empty()))
    return Status::failure("a world of " + std::to_string(env.worldSize) +
                           " ranks needs MASTER_ADDR and MASTER_PORT (1..65535)");
  if (!(env.timeoutSeconds > 0))
    return Status::failure("the distributed timeout must be > 0 seconds");
  if (backend == "gloo")
    return createGlooWorld(env, world);
  if (backend == "nccl")
    return createNcclWorld(env, world);
  return Status::failure("unknown distributed backend '" + backend + "' (expected gloo or nccl)");
}

std::vector<int> gridGroupMembers(const std::vector<GroupSpec> &grid, size_t axis, int rank) {
  int64_t stride = 1;
  for (size_t i = axis + 1; i < grid.size(); ++i)
    stride *= grid[i].size;
  int64_t n = grid[axis].size;
  int64_t coordinate = (rank / stride) % n;
  int64_t base = rank - coordinate * stride;
  std::vector<int> members;
  for (int64_t k = 0; k < n; ++k)
    members.push_back(int(base + k * stride));
  return members;
}

Status splitGroups(Communicator &world, const std::vector<GroupSpec> &grid,
                   std::vector<std::unique_ptr<Communicator>> &groups) {
  int64_t product = 1;
  std::string shape;
  std::set<std::string> names;
  for (const GroupSpec &g : grid) {
    if (g.name.empty())
      return Status::failure("a process group has no name");
    if (!names.insert(g.name).second)
      return Status::failure("process group '" + g.name + "' is listed twice");
    if (g.size < 1)
      return Status::failure("process group '" + g.name + "' has size " + std::to_string(g.size) +
                             " (must be >= 1)");
    product *= g.size;
    if (product > INT32_MAX)
      break;
    shape += (shape.empty() ? "" : " x ") + g.name + "=" + std::to_string(g.size);
  }
  if (product != world.size())
    return Status::failure("process grid " + (shape.empty() ? std::string("()") : shape) + " has " +
                           std::to_string(product) + " ranks but the world has " +
                           std::to_string(world.size()));
  int split = world.nextSplitIndex();
  std::vector<std::unique_ptr<Communicator>> result;
  for (size_t axis = 0; axis < grid.size(); ++axis) {
    std::vector<int> members = gridGroupMembers(grid, axis, world.rank());
    // Unique per split, group and member set: the Gloo/NCCL store keys.
    std::string tag =
        "split" + std::to_string(split) + "/" + grid[axis].name + "/" + std::to_string(members[0]);
    std::unique_ptr<Communicator> group;
    if (Status s = world.subgroup(grid[axis].name, members, tag, group); !s)
      return s;
    result.push_back(std::move(group));
  }
  // As after createWorld: no rank leaves while another still reads keys.
  if (Status s = world.barrier(); !s)
    return s;
  groups = std::move(result);
  return {};
}

// Backends missing from this build keep their factories, with an error.
#ifndef LCC_HAVE_GLOO
bool haveGloo() { return false; }
Status createGlooWorld(const DistEnv &env, std::unique_ptr<Communicator> &world) {
  if (env.worldSize == 1) { // nothing to connect
    world = makeLocalCommunicator("world", 0);
    return {};
  }
  return Status::failure("the gloo backend is not available: built without Gloo "
                         "(install libgloo-dev and reconfigure)");
}
#endif
#ifndef LCC_HAVE_NCCL
bool haveNccl() { return false; }
Status createNcclWorld(const DistEnv &, std::unique_ptr<Communicator> &) {
  return Status::failure("the nccl backend is not available: built without NCCL");
}
#endif

} // namespace dist
} // namespace lcc
