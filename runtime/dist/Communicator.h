//===- Communicator.h - process groups and their collectives ----*- C++ -*-===//
//
// Data and tensor parallel training run one process per device; the compiled
// step calls collectives (runtime/dist/Collectives.h) on the process groups
// the module declares. This header is the one interface those calls go
// through, so the compiled code and lcc-run never see which library moves
// the bytes:
//
//   - "gloo": CPU buffers over TCP (runtime/dist/GlooCommunicator.cpp);
//   - "nccl": CUDA device buffers (runtime/dist/NcclCommunicator.cpp), only
//     in builds that found NCCL and the CUDA runtime.
//
// Processes find each other like torchrun's: rank 0 serves a small key-value
// store on MASTER_ADDR:MASTER_PORT (runtime/dist/Store.h) through which every
// backend exchanges its connection details.
//
// Determinism. Data-parallel replicas must stay bitwise identical, and tests
// compare N-rank runs with 1-rank runs, so the Gloo backend reduces floats in
// a fixed order: element i of every reduction is
//   ((x_0[i] op x_1[i]) op x_2[i]) ... op x_{N-1}[i]
// (rank order of the group), computed once by the rank that owns the element
// and sent to the others: every rank gets the same bytes. Mean is that sum
// divided by N. (How the bytes travel, and how many: GlooCommunicator.cpp.)
// NCCL's order is fixed by its algorithm for a given group, size and
// topology (and identical on every rank), but it is not rank order.
//
// Errors are values (Status with a one-line message). Rejected arguments
// change nothing, but after a failed transfer (a peer died, a timeout) the
// communicator is broken, since the peers' state is unknown: every later
// call fails with the first cause; destroy it.
//
// Timeouts: every rendezvous and every collective is bounded by
// DistEnv::timeoutSeconds (LCC_DIST_TIMEOUT); nothing here waits forever.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_DIST_COMMUNICATOR_H
#define LCC_RUNTIME_DIST_COMMUNICATOR_H

#include "runtime/support/Status.h"

#include "runtime/support/HostTensor.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace lcc {
namespace dist {

//===----------------------------------------------------------------------===//
// Rendezvous environment
//===----------------------------------------------------------------------===//

struct DistEnv {
  int rank = 0, worldSize = 1, localRank = 0;
  std::string masterAddr = "127.0.0.1";
  int masterPort = 0; // 0 only when worldSize == 1 (no store is needed)
  double timeoutSeconds = 300;
};

/// Reads the launcher's variables:
///   rank/size: RANK + WORLD_SIZE (torchrun), else SLURM_PROCID +
///     SLURM_NTASKS, else OMPI_COMM_WORLD_RANK + OMPI_COMM_WORLD_SIZE, else
///     PMI_RANK + PMI_SIZE, else rank 0 of 1 (a plain single process);
///   local rank: LOCAL_RANK, else the same launcher's (SLURM_LOCALID,
///     OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID), else 0;
///   MASTER_ADDR, MASTER_PORT: required when the world has more than one
///     rank; a single process defaults to 127.0.0.1 and needs no port;
///   LCC_DIST_TIMEOUT: seconds (> 0, default 300) for rendezvous and for
///     every collective.
/// An empty variable counts as unset. Numbers must parse completely; errors
/// name the variable and its value ("RANK=4 is out of range for
/// WORLD_SIZE=4 (0..3)").
Status distEnvFromEnvironment(DistEnv &out);
/// The same over any lookup (nullptr = unset): tests use tables.
Status distEnvFromLookup(const std::function<const char *(const char *)> &lookup, DistEnv &out);

//===----------------------------------------------------------------------===//
// The interface
//===----------------------------------------------------------------------===//

/// Mean is defined for f32/f64 only: an integer mean would truncate, so it is
/// rejected ("mean of i32 is not supported"). i1 supports max (logical or)
/// and min (logical and) only: a sum of booleans is not a boolean.
enum class Reduction { Sum = 0, Mean = 1, Max = 2, Min = 3 };
const char *reductionName(Reduction op);

/// One collective for Communicator::enqueue: the blocking calls' arguments
/// (`peer` is the root of a broadcast).
struct StreamCollective {
  enum Kind { AllReduce, AllGather, ReduceScatter, Broadcast, Send, Recv };
  Kind kind = AllReduce;
  const void *in = nullptr;
  void *out = nullptr;
  int64_t count = 0; // countPerRank for all_gather and reduce_scatter
  ElementType type = ElementType::F32;
  Reduction op = Reduction::Sum;
  int peer = 0;
};
const char *streamCollectiveName(StreamCollective::Kind kind);

/// One process group. Thread-compatible: used from one thread. Every member
/// must call the same collectives in the same order (send/recv: matched per
/// pair of ranks in order).
class Communicator {
public:
  virtual ~Communicator();
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// "gloo", "nccl", or "local" (a 1-rank group: copies, no library).
  virtual const char *backend() const = 0;

  // All counts are elements. `in` and `out` may be the same pointer for
  // allReduce and broadcast; for allGather/reduceScatter they must not overlap
  // (checked). Buffers are host memory for gloo, device memory for nccl.
  virtual Status allReduce(const void *in, void *out, int64_t count, ElementType type,
                           Reduction op) = 0;
  /// out = concatenation of every rank's `in` (countPerRank each), in rank order.
  virtual Status allGather(const void *in, void *out, int64_t countPerRank, ElementType type) = 0;
  /// `in` holds size()*countPerRank; rank r gets part r reduced over the ranks.
  virtual Status reduceScatter(const void *in, void *out, int64_t countPerRank, ElementType type,
                               Reduction op) = 0;
  /// Root's `in` to every rank's `out` (`in` is read on the root only).
  virtual Status broadcast(const void *in, void *out, int64_t count, ElementType type,
                           int root) = 0;
  /// Point to point; the k-th send to a peer matches that peer's k-th recv
  /// from this rank. Both block until the transfer is done, and a send may
  /// wait for the peer to post its recv (Gloo and NCCL both can), so a ring
  /// must alternate (even ranks send first, odd ranks receive first).
  virtual Status send(const void *in, int64_t count, ElementType type, int peer) = 0;
  virtual Status recv(void *out, int64_t count, ElementType type, int peer) = 0;
  /// Sends and receives posted together, done when every one is (NCCL's
  /// ncclGroupStart/End): two ranks that each send to and receive from the
  /// other in one group cannot wait on each other. Matched as send/recv
  /// are, in order. The sends are posted no earlier than `sendsAt` (an
  /// emulated network's latency, LCC_DIST_LATENCY_MS: paid once per
  /// message, by the sender), the receives at once. The default runs the
  /// sends, then the receives, one by one: right for a group of one rank,
  /// whose receives take what it sent.
  struct PointToPoint {
    bool send = false;
    void *data = nullptr; // read by a send
    int64_t count = 0;
    ElementType type = ElementType::F32;
    int peer = 0;
  };
  virtual Status sendRecv(const std::vector<PointToPoint> &transfers,
                          std::chrono::steady_clock::time_point sendsAt);
  /// Whether a group's sends and its receives may be two sendRecv calls
  /// running at once on two threads (the runtime then waits only for the
  /// receives where the group ends). Not for the default's 1-rank groups,
  /// whose receives take what the sends queued.
  virtual bool concurrentSendRecv() const { return false; }
  virtual Status barrier() = 0;

  /// Stream-ordered collectives on device buffers, for the CUDA target's
  /// step (runtime/cuda/CudaSession.cpp): `c` is enqueued on `stream` (a
  /// CUstream, which is also a cudaStream_t) and not waited for, so a CUDA
  /// graph can capture it. Only "nccl" groups can; the others say so. The
  /// arguments are checked as the blocking calls check them.
  virtual Status enqueue(const StreamCollective &c, void *stream);
  /// Brackets the sends and receives enqueued between them as one group
  /// (ncclGroupStart/End: posted together, so two ranks exchanging cannot
  /// wait on each other). The stream is the one they are enqueued on.
  virtual Status enqueueGroupStart() { return {}; }
  virtual Status enqueueGroupEnd() { return {}; }
  /// Whether work enqueued so far failed (NCCL's asynchronous error); does
  /// not wait. After a failure the group is broken, as above.
  virtual Status pollEnqueued() { return {}; }
  /// Gives up on work enqueued (a peer stopped answering): NCCL aborts the
  /// communicator, which frees its kernels stuck on the GPU. The group is
  /// broken afterwards, with `cause`.
  virtual void abortEnqueued(const std::string &cause) { (void)cause; }

  /// The communicator of a subgroup of this one: `members` are ranks of this
  /// group in the new group's rank order, this rank among them. Called by
  /// exactly the members, with the same arguments; `tag` must be unique per
  /// subgroup over the life of the world (it names the group's store keys).
  /// splitGroups is the usual caller.
  virtual Status subgroup(const std::string &name, const std::vector<int> &members,
                          const std::string &tag, std::unique_ptr<Communicator> &out) = 0;

  /// The group's name in messages ("world", "dp", ...); installGroups renames.
  const std::string &name() const { return name_; }
  void setName(std::string name) { name_ = std::move(name); }
  /// This process's rank in the world (for messages).
  int worldRank() const { return worldRank_; }
  /// Number of splitGroups calls so far (keeps their store keys apart).
  int nextSplitIndex() { return splits_++; }

protected:
  Communicator(std::string name, int worldRank) : name_(std::move(name)), worldRank_(worldRank) {}

  /// "<op> on group '<name>' (<size> ranks) failed: <cause>".
  Status failure(const char *op, const std::string &cause) const;
  /// subgroup's check of `members` (ranks of this group, this rank among
  /// them); `groupRank` is this rank's place in the new group.
  Status subgroupRank(const std::string &name, const std::vector<int> &members,
                      int &groupRank) const;
  // Argument checks shared by the backends (the message is the whole error).
  Status checkReduce(const char *op, const void *in, const void *out, int64_t count,
                     ElementType type, Reduction red) const;
  Status checkGather(const char *op, const void *in, const void *out, int64_t countPerRank,
                     ElementType type, bool reduce, Reduction red) const;
  Status checkBroadcast(const void *in, const void *out, int64_t count, ElementType type,
                        int root) const;
  Status checkPeer(const char *op, const void *buf, int64_t count, ElementType type, int peer,
                   bool allowSelf) const;

private:
  std::string name_;
  int worldRank_;
  int splits_ = 0;
};

/// Copies `bytes` between buffers of a backend's memory (host: memmove).
using CopyFn = Status (*)(void *dst, const void *src, size_t bytes);

/// A group of one rank: every collective is a copy (in -> out when they
/// differ); send to itself queues a copy that its next recv from itself
/// takes, so single-process runs of code with collectives work.
std::unique_ptr<Communicator> makeLocalCommunicator(std::string name, int worldRank,
                                                    CopyFn copy = nullptr);

/// The world of `env` on `backend` ("gloo" or "nccl"). Rank 0 serves the
/// rendezvous store (which lives as long as any communicator of this world);
/// a 1-rank world needs no store and is a "local" communicator ("nccl" still
/// selects the CUDA device and fails without one). Returns when every rank
/// has connected. The gloo backend sets SIGPIPE to SIG_IGN when it is at its
/// default: Gloo writes with writev(), and a dead peer must become an error,
/// not kill this process.
Status createWorld(const DistEnv &env, const std::string &backend,
                   std::unique_ptr<Communicator> &world);

struct GroupSpec {
  std::string name;
  int size = 1;
};
/// `grid` lays the world's ranks out row-major in the listed order: for
/// {dp=2, tp=2}, world rank = dpIndex*2 + tpIndex, and the "dp" group of a
/// rank is the ranks with the same tp index (ordered by dp index). Returns
/// this rank's group of each entry, in grid order. The product of the sizes
/// must be the world size. Collective over the world: every rank calls it
/// with the same grid.
Status splitGroups(Communicator &world, const std::vector<GroupSpec> &grid,
                   std::vector<std::unique_ptr<Communicator>> &groups);
/// The world ranks in `grid`'s group `axis` that contain world rank `rank`,
/// in group-rank order (pure arithmetic, exposed for tests and the compiler).
std::vector<int> gridGroupMembers(const std::vector<GroupSpec> &grid, size_t axis, int rank);

} // namespace dist
} // namespace lcc

#endif
