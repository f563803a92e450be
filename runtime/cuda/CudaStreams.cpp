//===- CudaStreams.cpp - CudaSession: waiting, events, collectives --------===//
#include "runtime/cuda/CudaSession.h"

#ifdef LCC_HAVE_CUDA_HEADERS
#include "runtime/cuda/CudaSessionImpl.h"
#include "runtime/dist/Collectives.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <thread>
#else
#include <cstdlib>
#endif

namespace lcc {

#ifndef LCC_HAVE_CUDA_HEADERS

Status CudaSession::synchronize() { std::abort(); }
void *CudaSession::allocateHost(size_t) { std::abort(); }
Status CudaSession::recordEvent(int) { std::abort(); }
Status CudaSession::waitEvent(int) { std::abort(); }
void CudaSession::collective(const CollectiveCall &) { std::abort(); }
void CudaSession::setCollectiveTimeout(double) {}

#else

Status CudaSession::synchronize() {
  Impl &s = *impl_;
  s.checkJoined();
  s.wait([&] { return s.api.streamQuery(s.stream); },
         [&] { return s.api.streamSynchronize(s.stream); }, "the step on the GPU");
  return s.error.empty() ? Status() : Status::failure(s.error);
}

void *CudaSession::allocateHost(size_t bytes) {
  void *p = nullptr;
  if (!impl_->check(impl_->api.memHostAlloc(&p, bytes, 0), "cuMemHostAlloc"))
    return nullptr;
  impl_->hostAllocations.push_back(p);
  return p;
}

void CudaSession::Impl::checkJoined() {
  if (!started.empty())
    dist::collectiveProtocolError("collective ticket " + std::to_string(started.begin()->first) +
                                  " was started and never waited for");
}

Status CudaSession::recordEvent(int slot) {
  Impl &s = *impl_;
  s.checkJoined(); // the mark must cover the communication stream's work too
  CUevent &e = s.marks[slot & 1];
  if (!e)
    e = s.event();
  if (e)
    s.check(s.api.eventRecord(e, s.stream), "cuEventRecord");
  return s.error.empty() ? Status() : Status::failure(s.error);
}

Status CudaSession::waitEvent(int slot) {
  Impl &s = *impl_;
  CUevent e = s.marks[slot & 1];
  if (e)
    s.wait([&] { return s.api.eventQuery(e); }, [&] { return s.api.eventSynchronize(e); },
           "the step on the GPU");
  return s.error.empty() ? Status() : Status::failure(s.error);
}

void CudaSession::Impl::wait(const std::function<CUresult()> &query,
                             const std::function<CUresult()> &block, const char *what) {
  if (enqueuedOn.empty()) {
    check(block(), what);
    return;
  }
  using Clock = std::chrono::steady_clock;
  Clock::time_point deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                  std::chrono::duration<double>(collectiveTimeout));
  for (int spins = 0;; ++spins) {
    CUresult r = query();
    if (r != CUDA_ERROR_NOT_READY) {
      check(r, what);
      return;
    }
    for (dist::Communicator *g : enqueuedOn)
      if (Status st = g->pollEnqueued(); !st)
        abandon(g->worldRank(), st.message());
    if (Clock::now() >= deadline)
      abandon((*enqueuedOn.begin())->worldRank(),
              "the step's collectives did not finish within " +
                  std::to_string(int(collectiveTimeout)) +
                  " s (a peer did not take part; the NCCL communicators were aborted)");
    // Spin first (a step's tail is short), then sleep.
    if (spins > 1000)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void CudaSession::Impl::abandon(int worldRank, const std::string &why) {
  for (dist::Communicator *g : enqueuedOn)
    g->abortEnqueued(why);
  dist::collectiveFailed(worldRank, why);
}

void CudaSession::setCollectiveTimeout(double seconds) {
  if (seconds > 0)
    impl_->collectiveTimeout = seconds;
}

// The collectives of the step, issued on the communication stream in the
// order the code calls them, which is the same on every rank (NCCL needs one
// order per communicator, and different groups must not interleave
// differently). The compute stream forks to it before each one (so it reads
// what was computed before it) and joins back at its wait: at once for the
// blocking ones, at lcc_cuda_wait for the started ones, so the computation
// issued in between runs beside the transfer. Events and stream waits are
// captured into the CUDA graph like kernels are.
void CudaSession::collective(const CollectiveCall &call) {
  Impl &s = *impl_;
  if (call.kind == CollectiveCall::Wait) {
    auto it = s.started.find(call.ticket);
    if (it == s.started.end())
      dist::collectiveProtocolError("wait for collective ticket " + std::to_string(call.ticket) +
                                    ", which was never started");
    if (it->second.in != call.in || it->second.out != call.out)
      dist::collectiveProtocolError("wait for collective ticket " + std::to_string(call.ticket) +
                                    " names other buffers than its start");
    s.check(s.api.streamWaitEvent(s.stream, it->second.done, 0), "cuStreamWaitEvent");
    s.spareEvents.push_back(it->second.done);
    s.started.erase(it);
    return;
  }
  static_assert(int(CollectiveCall::Recv) == int(dist::StreamCollective::Recv),
                "CollectiveCall's kinds are StreamCollective's");
  const char *op = call.name();
  dist::Communicator &group = dist::compiledGroup(call.group, op);
  // An exchange: the stream forks once before its group and joins after
  // it. NCCL issues a group's transfers at ncclGroupEnd, so an event
  // recorded between them would not follow them.
  if (call.kind == CollectiveCall::GroupStart || call.kind == CollectiveCall::GroupEnd) {
    bool start = call.kind == CollectiveCall::GroupStart;
    if (start == s.inGroup)
      dist::collectiveProtocolError(start ? "group_start inside an open group"
                                          : "group_end without its group_start");
    s.inGroup = start;
    if (start && !s.order(s.stream, s.comm, s.fork))
      s.abandon(group.worldRank(), std::string(op) + ": " + s.error);
    if (group.size() > 1)
      if (Status st = start ? group.enqueueGroupStart() : group.enqueueGroupEnd(); !st)
        s.abandon(group.worldRank(), st.message());
    if (!start && !s.order(s.comm, s.stream, s.join))
      s.abandon(group.worldRank(), std::string(op) + ": " + s.error);
    return;
  }
  dist::StreamCollective c;
  c.kind = dist::StreamCollective::Kind(call.kind);
  c.in = reinterpret_cast<const void *>(call.in);
  c.out = reinterpret_cast<void *>(call.out);
  c.count = call.count;
  c.type = dist::compiledType(group, op, call.dtype);
  if (c.kind == dist::StreamCollective::AllReduce || c.kind == dist::StreamCollective::ReduceScatter)
    c.op = dist::compiledReduction(group, op, call.reduction);
  c.peer = call.peer < 0 || call.peer > INT32_MAX ? -1 : int(call.peer);
  if (call.start && s.started.count(call.ticket))
    dist::collectiveProtocolError("collective ticket " + std::to_string(call.ticket) +
                                  " started again before its wait");
  // A collective this rank fails to issue leaves its peers waiting in it:
  // give up on the groups at once rather than let them time out.
  auto fail = [&](const std::string &why) {
    group.abortEnqueued(why);
    s.abandon(group.worldRank(),
              std::string(op) + " on group '" + group.name() + "' failed: " + why);
  };
  if (!s.inGroup && !s.order(s.stream, s.comm, s.fork))
    fail(s.error);
  if (group.size() == 1) {
    // A 1-rank group has no NCCL communicator: every collective is a copy
    // of `count` elements (mean and the rest alike), on the stream.
    if (c.kind == dist::StreamCollective::Send || c.kind == dist::StreamCollective::Recv)
      dist::collectiveFailed(group.worldRank(), std::string(op) + " on group '" + group.name() +
                                                    "' (1 rank) failed: no peer to " + op +
                                                    (c.kind == dist::StreamCollective::Send
                                                         ? " to"
                                                         : " from"));
    size_t bytes = size_t(std::max<int64_t>(c.count, 0)) * elementSize(c.type);
    if (bytes && call.in != call.out)
      s.check(s.api.memcpyDtoDAsync(CUdeviceptr(call.out), CUdeviceptr(call.in), bytes, s.comm),
              "cuMemcpyDtoDAsync (a 1-rank collective)");
  } else {
    if (Status st = group.enqueue(c, s.comm); !st)
      s.abandon(group.worldRank(), st.message());
    s.enqueuedOn.insert(&group);
  }
  if (call.start) {
    CUevent done = s.event();
    if (!done || !s.check(s.api.eventRecord(done, s.comm), "cuEventRecord"))
      fail(s.error);
    s.started[call.ticket] = {done, call.in, call.out};
    return;
  }
  if (!s.inGroup && !s.order(s.comm, s.stream, s.join))
    fail(s.error);
}

#endif

} // namespace lcc
