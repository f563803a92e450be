//===- Collectives.cpp - the collectives compiled code calls --------------===//
#include "runtime/dist/Collectives.h"

#include <cstdio>
#include <cstdlib>

namespace lcc {
namespace dist {

namespace {

struct Registry {
  std::vector<std::unique_ptr<Communicator>> groups;
  // The stand-in for every group while none is installed.
  std::unique_ptr<Communicator> local = makeLocalCommunicator("local", 0);
};

/// Deliberately never destroyed: compiled code may still run from exit
/// handlers, and a Gloo context must not be torn down during static
/// destruction (clearGroups is the orderly way).
Registry &registry() {
  static Registry *r = new Registry();
  return *r;
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

void check(Communicator &c, const DistStatus &s) {
  if (!s)
    die(c.worldRank(), s.error);
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

void clearGroups() { registry().groups.clear(); }

size_t installedGroupCount() { return registry().groups.size(); }

const CpuKernelSymbol *collectiveSymbols() {
  static const CpuKernelSymbol table[] = {
      {"lcc_all_reduce", reinterpret_cast<void *>(&lcc_all_reduce)},
      {"lcc_all_gather", reinterpret_cast<void *>(&lcc_all_gather)},
      {"lcc_reduce_scatter", reinterpret_cast<void *>(&lcc_reduce_scatter)},
      {"lcc_broadcast", reinterpret_cast<void *>(&lcc_broadcast)},
      {"lcc_send", reinterpret_cast<void *>(&lcc_send)},
      {"lcc_recv", reinterpret_cast<void *>(&lcc_recv)},
      {"lcc_group_rank", reinterpret_cast<void *>(&lcc_group_rank)},
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
  Communicator &c = lookup(group, "all_reduce");
  check(c, c.allReduce(cptr(in), ptr(out), count, typeOf(c, "all_reduce", dtype),
                       reductionOf(c, "all_reduce", reduction)));
}

void lcc_all_gather(int64_t group, int64_t dtype, int64_t in, int64_t out, int64_t countPerRank) {
  Communicator &c = lookup(group, "all_gather");
  check(c, c.allGather(cptr(in), ptr(out), countPerRank, typeOf(c, "all_gather", dtype)));
}

void lcc_reduce_scatter(int64_t group, int64_t dtype, int64_t reduction, int64_t in, int64_t out,
                        int64_t countPerRank) {
  Communicator &c = lookup(group, "reduce_scatter");
  check(c, c.reduceScatter(cptr(in), ptr(out), countPerRank, typeOf(c, "reduce_scatter", dtype),
                           reductionOf(c, "reduce_scatter", reduction)));
}

void lcc_broadcast(int64_t group, int64_t dtype, int64_t root, int64_t in, int64_t out,
                   int64_t count) {
  Communicator &c = lookup(group, "broadcast");
  int r = root < 0 || root > INT32_MAX ? -1 : int(root);
  check(c, c.broadcast(cptr(in), ptr(out), count, typeOf(c, "broadcast", dtype), r));
}

void lcc_send(int64_t group, int64_t dtype, int64_t peer, int64_t in, int64_t count) {
  Communicator &c = lookup(group, "send");
  int p = peer < 0 || peer > INT32_MAX ? -1 : int(peer);
  check(c, c.send(cptr(in), count, typeOf(c, "send", dtype), p));
}

void lcc_recv(int64_t group, int64_t dtype, int64_t peer, int64_t out, int64_t count) {
  Communicator &c = lookup(group, "recv");
  int p = peer < 0 || peer > INT32_MAX ? -1 : int(peer);
  check(c, c.recv(ptr(out), count, typeOf(c, "recv", dtype), p));
}

int64_t lcc_group_rank(int64_t group) { return lookup(group, "group_rank").rank(); }

} // extern "C"
