//===- EnvTest.cpp - launcher variables, 1-rank groups, argument checks ---===//
//
// What needs no second process: the environment parser over tables of good
// and bad variable sets (exact messages, since users read them), the grid
// arithmetic, the 1-rank communicator, the shared argument checks and the
// factories' errors (unknown backend, NCCL without a GPU).
//
//===----------------------------------------------------------------------===//
#include "runtime/dist/Communicator.h"
#include "runtime/dist/NcclCommunicator.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>

using namespace lcc;
using namespace lcc::dist;

namespace {

Status parse(const std::map<std::string, std::string> &vars, DistEnv &env) {
  return distEnvFromLookup(
      [&](const char *name) -> const char * {
        auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
      },
      env);
}

TEST(DistEnv, GoodVariableSets) {
  struct Case {
    std::map<std::string, std::string> vars;
    int rank, world, local;
    std::string addr;
    int port;
    double timeout;
  };
  const Case cases[] = {
      {{}, 0, 1, 0, "127.0.0.1", 0, 300},
      {{{"RANK", "1"},
        {"WORLD_SIZE", "4"},
        {"LOCAL_RANK", "1"},
        {"MASTER_ADDR", "node0"},
        {"MASTER_PORT", "29500"}},
       1,
       4,
       1,
       "node0",
       29500,
       300},
      {{{"SLURM_PROCID", "5"},
        {"SLURM_NTASKS", "8"},
        {"SLURM_LOCALID", "1"},
        {"MASTER_ADDR", "10.0.0.1"},
        {"MASTER_PORT", "1234"},
        {"LCC_DIST_TIMEOUT", "2.5"}},
       5,
       8,
       1,
       "10.0.0.1",
       1234,
       2.5},
      {{{"OMPI_COMM_WORLD_RANK", "2"},
        {"OMPI_COMM_WORLD_SIZE", "3"},
        {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
        {"MASTER_ADDR", "h"},
        {"MASTER_PORT", "1"}},
       2,
       3,
       0,
       "h",
       1,
       300},
      {{{"PMI_RANK", "1"},
        {"PMI_SIZE", "2"},
        {"MPI_LOCALRANKID", "1"},
        {"MASTER_ADDR", "h"},
        {"MASTER_PORT", "65535"}},
       1,
       2,
       1,
       "h",
       65535,
       300},
      // torchrun's variables win over the launcher's; LOCAL_RANK over SLURM_LOCALID.
      {{{"RANK", "0"},
        {"WORLD_SIZE", "2"},
        {"SLURM_PROCID", "7"},
        {"SLURM_NTASKS", "9"},
        {"SLURM_LOCALID", "3"},
        {"LOCAL_RANK", "0"},
        {"MASTER_ADDR", "h"},
        {"MASTER_PORT", "9"}},
       0,
       2,
       0,
       "h",
       9,
       300},
      // A single process needs no store; empty variables count as unset.
      {{{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", ""}}, 0, 1, 0, "127.0.0.1", 0, 300},
  };
  for (const Case &c : cases) {
    DistEnv env;
    Status s = parse(c.vars, env);
    ASSERT_TRUE(s) << s.message();
    EXPECT_EQ(env.rank, c.rank);
    EXPECT_EQ(env.worldSize, c.world);
    EXPECT_EQ(env.localRank, c.local);
    EXPECT_EQ(env.masterAddr, c.addr);
    EXPECT_EQ(env.masterPort, c.port);
    EXPECT_DOUBLE_EQ(env.timeoutSeconds, c.timeout);
  }
}

TEST(DistEnv, BadVariableSetsNameTheVariable) {
  const std::map<std::string, std::string> store = {{"MASTER_ADDR", "h"}, {"MASTER_PORT", "9"}};
  auto with = [&](std::map<std::string, std::string> v) {
    for (const auto &kv : store)
      v.insert(kv);
    return v;
  };
  const std::pair<std::map<std::string, std::string>, std::string> cases[] = {
      {with({{"RANK", "1"}}), "RANK is set but WORLD_SIZE is not"},
      {with({{"WORLD_SIZE", "2"}}), "WORLD_SIZE is set but RANK is not"},
      {with({{"RANK", "abc"}, {"WORLD_SIZE", "2"}}), "RANK=abc is not an integer"},
      {with({{"RANK", "1x"}, {"WORLD_SIZE", "2"}}), "RANK=1x is not an integer"},
      {with({{"RANK", " 1"}, {"WORLD_SIZE", "2"}}), "RANK= 1 is not an integer"},
      {with({{"RANK", "4"}, {"WORLD_SIZE", "4"}}),
       "RANK=4 is out of range for WORLD_SIZE=4 (0..3)"},
      {with({{"RANK", "-1"}, {"WORLD_SIZE", "4"}}),
       "RANK=-1 is out of range for WORLD_SIZE=4 (0..3)"},
      {with({{"RANK", "0"}, {"WORLD_SIZE", "0"}}),
       "WORLD_SIZE=0 is not a world size (1..16777216)"},
      {with({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "2"}}),
       "SLURM_PROCID=3 is out of range for SLURM_NTASKS=2 (0..1)"},
      {with({{"OMPI_COMM_WORLD_RANK", "0"}}),
       "OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not"},
      {with({{"PMI_RANK", "0"}, {"PMI_SIZE", "two"}}), "PMI_SIZE=two is not an integer"},
      {with({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "-2"}}),
       "LOCAL_RANK=-2 is not a local rank (>= 0)"},
      {with({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "z"}}),
       "SLURM_LOCALID=z is not an integer"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "2"}},
       "WORLD_SIZE=2 needs MASTER_ADDR and MASTER_PORT (the address and port of rank 0's "
       "rendezvous store)"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}},
       "WORLD_SIZE=2 needs MASTER_PORT (the address and port of rank 0's rendezvous store)"},
      {{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"MASTER_PORT", "5"}},
       "SLURM_NTASKS=2 needs MASTER_ADDR (the address and port of rank 0's rendezvous store)"},
      {with({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}}),
       "MASTER_PORT=70000 is not a port (1..65535)"},
      {with({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "0"}}),
       "MASTER_PORT=0 is not a port (1..65535)"},
      {with({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "80a"}}),
       "MASTER_PORT=80a is not an integer"},
      {with({{"LCC_DIST_TIMEOUT", "0"}}), "LCC_DIST_TIMEOUT=0 is not a number of seconds (> 0)"},
      {with({{"LCC_DIST_TIMEOUT", "10s"}}),
       "LCC_DIST_TIMEOUT=10s is not a number of seconds (> 0)"},
      {with({{"LCC_DIST_TIMEOUT", "nan"}}),
       "LCC_DIST_TIMEOUT=nan is not a number of seconds (> 0)"},
  };
  for (const auto &[vars, message] : cases) {
    DistEnv env;
    Status s = parse(vars, env);
    EXPECT_FALSE(s) << message;
    EXPECT_EQ(s.message(), message);
  }
}

TEST(DistGrid, RowMajorMembers) {
  std::vector<GroupSpec> grid = {{"dp", 2}, {"tp", 2}};
  // rank = dp*2 + tp: the dp group of rank r has r's tp index.
  EXPECT_EQ(gridGroupMembers(grid, 0, 0), (std::vector<int>{0, 2}));
  EXPECT_EQ(gridGroupMembers(grid, 0, 3), (std::vector<int>{1, 3}));
  EXPECT_EQ(gridGroupMembers(grid, 1, 2), (std::vector<int>{2, 3}));
  std::vector<GroupSpec> three = {{"pp", 2}, {"dp", 3}, {"tp", 2}};
  // 7 = pp 1, dp 0, tp 1.
  EXPECT_EQ(gridGroupMembers(three, 0, 7), (std::vector<int>{1, 7}));
  EXPECT_EQ(gridGroupMembers(three, 1, 7), (std::vector<int>{7, 9, 11}));
  EXPECT_EQ(gridGroupMembers(three, 2, 7), (std::vector<int>{6, 7}));
}

TEST(DistLocal, OneRankGroupsCopy) {
  std::unique_ptr<Communicator> world;
  Status s = createWorld(DistEnv(), "gloo", world);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(world->size(), 1);
  EXPECT_STREQ(world->backend(), "local");
  std::vector<float> in = {1.5f, -2, 3}, out(3);
  ASSERT_TRUE(world->allReduce(in.data(), out.data(), 3, ElementType::F32, Reduction::Mean));
  EXPECT_EQ(out, in);
  ASSERT_TRUE(world->allReduce(in.data(), in.data(), 3, ElementType::F32, Reduction::Sum));
  std::vector<float> more(3);
  ASSERT_TRUE(world->broadcast(in.data(), more.data(), 3, ElementType::F32, 0));
  EXPECT_EQ(more, in);
  // Sends to itself queue up for its own receives, in order.
  std::vector<int64_t> a = {1, 2}, b = {3}, got(2);
  ASSERT_TRUE(world->send(a.data(), 2, ElementType::I64, 0));
  ASSERT_TRUE(world->send(b.data(), 1, ElementType::I64, 0));
  ASSERT_TRUE(world->recv(got.data(), 2, ElementType::I64, 0));
  EXPECT_EQ(got, a);
  s = world->recv(got.data(), 2, ElementType::I64, 0);
  EXPECT_EQ(s.message(),
            "recv on group 'world' (1 rank) failed: the matching send has 8 bytes, the "
            "receive expects 16");
  s = world->recv(got.data(), 1, ElementType::I64, 0);
  EXPECT_EQ(s.message(), "recv on group 'world' (1 rank) failed: no matching send (a 1-rank group "
                         "receives only what it sent itself, and nothing was sent)");
  ASSERT_TRUE(world->barrier());

  std::vector<std::unique_ptr<Communicator>> groups;
  s = splitGroups(*world, {{"dp", 1}, {"tp", 1}}, groups);
  ASSERT_TRUE(s) << s.message();
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[1]->name(), "tp");
  s = splitGroups(*world, {{"dp", 2}}, groups);
  EXPECT_EQ(s.message(), "process grid dp=2 has 2 ranks but the world has 1");
  s = splitGroups(*world, {{"dp", 1}, {"dp", 1}}, groups);
  EXPECT_EQ(s.message(), "process group 'dp' is listed twice");
}

TEST(DistLocal, ArgumentChecks) {
  std::unique_ptr<Communicator> c = makeLocalCommunicator("dp", 0);
  std::vector<int32_t> v(8);
  std::vector<float> f(8);
  EXPECT_EQ(c->allReduce(v.data(), v.data(), 8, ElementType::I32, Reduction::Mean).message(),
            "all_reduce on group 'dp' (1 rank) failed: mean of i32 is not supported (an integer "
            "mean would truncate; use sum)");
  EXPECT_EQ(c->allReduce(v.data(), v.data(), 8, ElementType::I1, Reduction::Sum).message(),
            "all_reduce on group 'dp' (1 rank) failed: sum of i1 is not supported (use max for "
            "or, min for and)");
  EXPECT_EQ(c->allReduce(f.data(), f.data(), -1, ElementType::F32, Reduction::Sum).message(),
            "all_reduce on group 'dp' (1 rank) failed: count -1 is negative");
  EXPECT_EQ(c->allReduce(f.data(), f.data(), 1, ElementType(9), Reduction::Sum).message(),
            "all_reduce on group 'dp' (1 rank) failed: unknown element type 9");
  EXPECT_EQ(c->allGather(f.data(), f.data() + 2, 4, ElementType::F32).message(),
            "all_gather on group 'dp' (1 rank) failed: the input and output buffers overlap");
  EXPECT_EQ(c->broadcast(f.data(), f.data(), 4, ElementType::F32, 1).message(),
            "broadcast on group 'dp' (1 rank) failed: root 1 is not a rank of the group (0..0)");
  EXPECT_EQ(c->send(f.data(), 4, ElementType::F32, -1).message(),
            "send on group 'dp' (1 rank) failed: peer -1 is not a rank of the group (0..0)");
  EXPECT_EQ(c->allReduce(nullptr, f.data(), 4, ElementType::F32, Reduction::Max).message(),
            "all_reduce on group 'dp' (1 rank) failed: null buffer");
  // Zero elements need no buffers.
  EXPECT_TRUE(c->allReduce(nullptr, nullptr, 0, ElementType::F32, Reduction::Sum));
}

TEST(DistFactory, Errors) {
  std::unique_ptr<Communicator> world;
  EXPECT_EQ(createWorld(DistEnv(), "mpi", world).message(),
            "unknown distributed backend 'mpi' (expected gloo or nccl)");
  DistEnv two;
  two.worldSize = 2;
  EXPECT_EQ(createWorld(two, "gloo", world).message(),
            "a world of 2 ranks needs MASTER_ADDR and MASTER_PORT (1..65535)");
}

// Here (no GPU) the nccl backend must fail cleanly, whichever way it was built.
TEST(DistFactory, NcclWithoutGpuIsAClearError) {
  std::unique_ptr<Communicator> world;
  Status s = createWorld(DistEnv(), "nccl", world);
  if (s)
    GTEST_SKIP() << "a CUDA device is present";
  if (haveNccl())
    EXPECT_EQ(s.message().rfind("the nccl backend needs a CUDA device, and none is usable: ", 0),
              0u)
        << s.message();
  else
    EXPECT_EQ(s.message(), "the nccl backend is not available: built without NCCL");
  EXPECT_FALSE(world);
}

// NCCL is loaded at run time (lcc-run does not link it): a missing library
// is an error naming it. In a fresh process (the loader runs once).
TEST(DistFactoryDeathTest, MissingNcclLibraryIsAClearError) {
  if (!haveNccl())
    GTEST_SKIP() << "built without NCCL";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("LCC_NCCL", "/nonexistent/libnccl.so.2", 1);
        std::unique_ptr<Communicator> world;
        Status s = createWorld(DistEnv(), "nccl", world);
        std::fprintf(stderr, "%s\n", s.message().c_str());
        std::exit(s ? 1 : 0);
      },
      testing::ExitedWithCode(0),
      "the nccl backend needs NCCL and the CUDA runtime: NCCL \\(libnccl.so.2\\) cannot be "
      "loaded: /nonexistent/libnccl.so.2");
}

} // namespace
