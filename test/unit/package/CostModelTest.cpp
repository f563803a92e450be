//===- CostModelTest.cpp - the planner's cost model against hand sums -------===//
//
// compiler/package/CostModel.h: each piece against the number worked out by
// hand from the model's stated formula and the preset's datasheet figures.
//
//===----------------------------------------------------------------------===//
#include "compiler/package/CostModel.h"

#include <gtest/gtest.h>

namespace {

using namespace lcc::planner;

Cluster h100() { return llvm::cantFail(clusterPreset("h100-node")); }

// 8 GPUs of a node, 1 GB: 2 * 7 latencies of 3 us plus 2 * 7/8 of a GB at
// 450 GB/s = 14 * 3e-6 + 1.75e9 / 450e9 = 3.93089 ms.
TEST(CostModel, RingAllReduceWithinANode) {
  Cluster c = h100();
  Link link = groupLink(c, 8, 1);
  EXPECT_EQ(link.bandwidth, 450e9);
  EXPECT_NEAR(collectiveSeconds(Collective::AllReduce, 8, 1e9, link), 14 * 3e-6 + 1.75e9 / 450e9,
              1e-12);
  EXPECT_NEAR(collectiveSeconds(Collective::AllReduce, 8, 1e9, link), 3.93089e-3, 1e-8);
}

// 16 ranks 8 apart (data parallelism over two nodes' tp groups) leave the
// node: the InfiniBand NIC, 50 GB/s. An all-gather of 2 GB: 15 * 8 us +
// 15/16 * 2e9 / 50e9 = 37.62 ms; a reduce-scatter the same; one rank: 0.
TEST(CostModel, CollectivesAcrossNodes) {
  Cluster c = h100();
  Link link = groupLink(c, 16, 8);
  EXPECT_EQ(link.bandwidth, 50e9);
  double want = 15 * 8e-6 + 15.0 / 16 * 2e9 / 50e9;
  EXPECT_NEAR(collectiveSeconds(Collective::AllGather, 16, 2e9, link), want, 1e-12);
  EXPECT_NEAR(collectiveSeconds(Collective::ReduceScatter, 16, 2e9, link), want, 1e-12);
  EXPECT_NEAR(want, 37.62e-3, 1e-8);
  EXPECT_EQ(collectiveSeconds(Collective::AllReduce, 1, 2e9, link), 0);
  // A pipeline's activation, 8 MB, to the next node: 8 us + 8e6 / 50e9.
  EXPECT_NEAR(collectiveSeconds(Collective::SendRecv, 2, 8e6, link), 8e-6 + 8e6 / 50e9, 1e-15);
}

// An 8192^3 bf16 GEMM is compute-bound: 2 * 8192^3 FLOPs at 75% of
// 989.4 TFLOP/s = 1.48172 ms. A GEMV (m = 1) is bandwidth-bound: its
// 2 * (8192 + 8192^2 + 8192) bytes at 80% of 3.35 TB/s = 50.1 us.
TEST(CostModel, GemmRoofline) {
  Cluster c = h100();
  double big = 2.0 * 8192.0 * 8192.0 * 8192.0 / (989.4e12 * 0.75);
  EXPECT_NEAR(gemmSeconds(c, 8192, 8192, 8192, 2), big, big * 1e-12);
  EXPECT_NEAR(big, 1.48172e-3, 1e-8);
  double gemv = 2.0 * (8192.0 + 8192.0 * 8192.0 + 8192.0) / (3.35e12 * 0.8);
  EXPECT_NEAR(gemmSeconds(c, 1, 8192, 8192, 2), gemv, gemv * 1e-12);
  EXPECT_NEAR(gemv, 50.09e-6, 1e-8);
}

// Each schedule's bubble with equal stages and free transfers, from the
// simulator, against the papers' formulas: (P - 1) / M for GPipe and 1F1B,
// (P - 1) / (V M) interleaved, and ZB-H1's a third of 1F1B's for F = I = W.
TEST(CostModel, PipelineBubbles) {
  using lcc::pipeline::ScheduleKind;
  auto bubble = [](ScheduleKind k, int64_t v) {
    return llvm::cantFail(pipelineTime(k, 4, 8, v, 1.0, 2.0, 0.0)).bubble;
  };
  EXPECT_NEAR(bubble(ScheduleKind::GPipe, 1), 3.0 / 8, 1e-12);
  EXPECT_NEAR(bubble(ScheduleKind::OneFOneB, 1), 3.0 / 8, 1e-12);
  EXPECT_NEAR(bubble(ScheduleKind::Interleaved, 2), 3.0 / 16, 1e-12);
  EXPECT_NEAR(bubble(ScheduleKind::ZeroBubbleH1, 1), 3.0 / 8 / 3, 1e-12);
  // The makespan of 1F1B: (M + P - 1) (F + B) = 11 * 3.
  EXPECT_NEAR(llvm::cantFail(pipelineTime(ScheduleKind::OneFOneB, 4, 8, 1, 1.0, 2.0, 0.0)).makespan,
              33.0, 1e-9);
}

TEST(CostModel, Clusters) {
  for (const char *name : {"h100-node", "h200-node", "a100-node", "cpu"}) {
    auto c = clusterPreset(name);
    ASSERT_TRUE(bool(c)) << name;
    EXPECT_GT(c->peakFlops, 0);
    EXPECT_GT(c->memoryBytes, 0);
  }
  EXPECT_EQ(llvm::cantFail(clusterPreset("a100-node")).peakFlops, 312e12);
  auto c = parseCluster(R"({"name": "mine", "peak_flops": 1e15, "memory_bytes": 8e10,
      "memory_bandwidth": 3e12, "devices_per_node": 4, "intra_node_bandwidth": 2e11,
      "intra_node_latency": 2e-6, "inter_node_bandwidth": 2.5e10, "inter_node_latency": 0})");
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  EXPECT_EQ(c->name, "mine");
  EXPECT_EQ(c->devicesPerNode, 4);
  EXPECT_EQ(groupLink(*c, 2, 4).bandwidth, 2.5e10); // 8 devices: two nodes
  EXPECT_EQ(c->runtimeBytes, 0.0);                  // optional
  const std::string base = R"({"peak_flops": 1e15, "memory_bytes": 8e10, "memory_bandwidth": 3e12,
      "devices_per_node": 4, "intra_node_bandwidth": 2e11, "intra_node_latency": 2e-6,
      "inter_node_bandwidth": 2.5e10, "inter_node_latency": 0, "runtime_bytes": )";
  auto withRuntime = parseCluster(base + "1.5e9}");
  ASSERT_TRUE(bool(withRuntime)) << llvm::toString(withRuntime.takeError());
  EXPECT_EQ(withRuntime->runtimeBytes, 1.5e9);
  EXPECT_EQ(llvm::toString(parseCluster(base + "-1}").takeError()),
            "key 'runtime_bytes' must not be negative");
  EXPECT_EQ(llvm::toString(parseCluster(R"({"peak_flops": 1})").takeError()),
            "missing key 'memory_bytes'");
  EXPECT_EQ(llvm::toString(clusterPreset("tpu-pod").takeError()),
            "unknown cluster 'tpu-pod': expected h100-node, h200-node, a100-node, cpu or a JSON "
            "file");
}

} // namespace
