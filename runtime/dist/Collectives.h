//===- Collectives.h - the collectives compiled code calls ------*- C++ -*-===//
//
// The lowering of the lcc collective ops (all_reduce, all_gather, ...) turns
// them into calls of these C functions. Like lcc_sgemm (runtime/cpu/CpuKernels.h)
// every argument is an int64, so the generated code needs no types:
//
//   group      index into the groups installGroups installed
//   dtype      ElementType value: 0 f32, 1 f64, 2 i32, 3 i64, 4 i1
//   reduction  Reduction value: 0 sum, 1 mean, 2 max, 3 min
//   in, out    buffer addresses; counts in elements (see Communicator.h for
//              each collective's semantics and the summation order)
//
// With no groups installed every group behaves as a 1-rank group (a copy
// from in to out when they differ; lcc_group_rank is 0), so single-process
// runs of code with collectives work unchanged.
//
// Compiled code cannot handle an error, so a failed call ends the process:
// it prints one line to stderr,
//   lcc-run: rank R: <op> on group '<name>' (<n> ranks) failed: <cause>
// (R the world rank) and exits with code 4 (std::_Exit: no destructors, the
// peers are in an unknown state). Exit code 4 means "distributed failure"
// for lcc-run and its launchers; 2 and 3 keep their meanings (user error,
// internal failure).
//
// Asynchronous collectives (lcc-overlap-collectives): the `_start` variants
// take a ticket (a number the compiler gave the collective, unique among those
// in flight) first, queue the collective for this process's communication
// thread and return at once; lcc_wait(ticket, in, out) returns when it has
// finished (in and out must be the addresses the start got: a mismatch is a
// compiler bug, exit code 3). The thread runs collectives one at a time in the
// order they were started, and a synchronous call first waits for the queue
// to empty, so every rank still runs the same collectives in the same order.
// A failed asynchronous collective ends the process at its wait, as above.
//
// The installed groups are process-wide and not synchronized: install them
// before the compiled code runs and call the functions from one thread (the
// communication thread is the runtime's own).
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_DIST_COLLECTIVES_H
#define LCC_RUNTIME_DIST_COLLECTIVES_H

#include "runtime/dist/Communicator.h"
#include "runtime/support/Symbol.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

extern "C" {
void lcc_all_reduce(int64_t group, int64_t dtype, int64_t reduction, int64_t in, int64_t out,
                    int64_t count);
void lcc_all_gather(int64_t group, int64_t dtype, int64_t in, int64_t out, int64_t countPerRank);
void lcc_reduce_scatter(int64_t group, int64_t dtype, int64_t reduction, int64_t in, int64_t out,
                        int64_t countPerRank);
void lcc_broadcast(int64_t group, int64_t dtype, int64_t root, int64_t in, int64_t out,
                   int64_t count);
void lcc_send(int64_t group, int64_t dtype, int64_t peer, int64_t in, int64_t count);
void lcc_recv(int64_t group, int64_t dtype, int64_t peer, int64_t out, int64_t count);
/// The sends and receives on `group` between these two are posted together
/// at the end (Communicator::sendRecv): an lcc.exchange. lcc_group_end
/// returns when the receives are done; where the backend can
/// (Communicator::concurrentSendRecv, Gloo), the sends are copied and
/// complete on the communication thread, before the next synchronous call,
/// as a posted group's do.
void lcc_group_start(int64_t group);
void lcc_group_end(int64_t group);
/// The same for a group of sends only, returning once they are posted: the
/// data is copied, and the sends complete on the communication thread
/// before the next synchronous call (a posted lcc.exchange).
void lcc_group_end_posted(int64_t group);
/// This process's rank in the group.
int64_t lcc_group_rank(int64_t group);

void lcc_all_reduce_start(int64_t ticket, int64_t group, int64_t dtype, int64_t reduction,
                          int64_t in, int64_t out, int64_t count);
void lcc_all_gather_start(int64_t ticket, int64_t group, int64_t dtype, int64_t in, int64_t out,
                          int64_t countPerRank);
void lcc_reduce_scatter_start(int64_t ticket, int64_t group, int64_t dtype, int64_t reduction,
                              int64_t in, int64_t out, int64_t countPerRank);
void lcc_wait(int64_t ticket, int64_t in, int64_t out);
}

namespace lcc {
namespace dist {

/// The exit code of a failed collective in compiled code.
constexpr int kDistributedFailureExitCode = 4;

/// Installs the groups the compiled code indexes (group i = groups[i]);
/// `names[i]`, when given and not empty, renames group i for messages (the
/// module's group names). Replaces any installed before.
void installGroups(std::vector<std::unique_ptr<Communicator>> groups,
                   std::vector<std::string> names = {});
/// Destroys the installed groups (back to 1-rank behaviour), after the
/// collectives in flight have finished.
void clearGroups();
/// Number of installed groups.
size_t installedGroupCount();
/// Asynchronous collectives started and not yet waited for.
size_t collectivesInFlight();

// For the CUDA target (runtime/cuda/CudaSession.cpp), which enqueues the
// compiled code's collectives on its streams (Communicator::enqueue) rather
// than calling the functions above: the same lookup, argument decoding and
// failure handling.

/// The group compiled code calls `group` (the 1-rank stand-in while none is
/// installed); a bad index ends the process as above.
Communicator &compiledGroup(int64_t group, const char *op);
ElementType compiledType(Communicator &c, const char *op, int64_t dtype);
Reduction compiledReduction(Communicator &c, const char *op, int64_t reduction);
/// "lcc-run: rank R: <message>", exit code 4.
[[noreturn]] void collectiveFailed(int worldRank, const std::string &message);
/// A broken start/wait protocol (a compiler bug): exit code 3.
[[noreturn]] void collectiveProtocolError(const std::string &message);

/// Every collective, for JITs that bind symbols explicitly.
const RuntimeSymbol *collectiveSymbols();

} // namespace dist
} // namespace lcc

#endif
