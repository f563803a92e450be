//===- CostModel.cpp - step time on a cluster, from FLOPs and bytes -------===//
#include "compiler/package/CostModel.h"

#include "runtime/support/Json.h"

#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <thread>
#include <unistd.h>

namespace lcc::planner {

namespace {

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

// Datasheet figures: dense bf16 tensor-core FLOP/s, HBM capacity and
// bandwidth, NVLink per direction (half the quoted bidirectional), one
// InfiniBand NIC per GPU. Latencies are NCCL's order of magnitude for small
// messages within and across nodes.
Cluster gpuNode(const char *name, double flops, double memory, double hbm, double nvlink,
                double nic) {
  Cluster c;
  c.name = name;
  c.peakFlops = flops;
  c.memoryBytes = memory;
  c.memoryBandwidth = hbm;
  c.devicesPerNode = 8;
  c.intraNode = {nvlink, 3e-6};
  c.interNode = {nic, 8e-6};
  return c;
}

/// This machine: each rank one process on its share of the cores (AVX-512:
/// 2 FMA units x 16 f32 lanes x 2 FLOPs per cycle at about 2.5 GHz), DRAM
/// shared, ranks talking over loopback TCP (Gloo). Rough, and not yet
/// checked against measured steps (issue 25's on-machine validation).
Cluster thisCpu() {
  Cluster c;
  c.name = "cpu";
  double cores = std::max(1u, std::thread::hardware_concurrency());
  c.peakFlops = cores * 64 * 2.5e9;
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
  c.memoryBytes = pages > 0 && size > 0 ? double(pages) * double(size) : 16e9;
  c.memoryBandwidth = 20e9;
  c.devicesPerNode = 1 << 20; // every rank on this machine
  c.intraNode = {3e9, 30e-6};
  c.interNode = c.intraNode;
  // lcc-run's peak RSS less its plan, measured (benchmarks/planner_sweep.py,
  // 2026-12-06): 2 ranks on Gloo, one thread each, about 17.4 MB per rank.
  c.runtimeBytes = 17.4e6;
  return c;
}

} // namespace

llvm::Expected<Cluster> clusterPreset(llvm::StringRef name) {
  if (name == "h100-node")
    return gpuNode("h100-node", 989.4e12, 80e9, 3.35e12, 450e9, 50e9);
  if (name == "h200-node")
    return gpuNode("h200-node", 989.4e12, 141e9, 4.8e12, 450e9, 50e9);
  if (name == "a100-node")
    return gpuNode("a100-node", 312e12, 80e9, 2.039e12, 300e9, 25e9);
  if (name == "cpu")
    return thisCpu();
  return fail("unknown cluster '" + name +
              "': expected h100-node, h200-node, a100-node, cpu or "
              "a JSON file");
}

llvm::Expected<Cluster> parseCluster(llvm::StringRef text) {
  json::Value v;
  if (Status st = json::parse(std::string_view(text.data(), text.size()), v); !st)
    return fail("not JSON: " + st.message());
  Cluster c;
  c.name = "custom";
  if (v.get("name"))
    if (Status st = json::getString(v, "name", c.name); !st)
      return fail(st.message());
  int64_t perNode = 0;
  struct Key {
    const char *name;
    double *out;
  } keys[] = {{"peak_flops", &c.peakFlops},
              {"memory_bytes", &c.memoryBytes},
              {"memory_bandwidth", &c.memoryBandwidth},
              {"intra_node_bandwidth", &c.intraNode.bandwidth},
              {"intra_node_latency", &c.intraNode.latency},
              {"inter_node_bandwidth", &c.interNode.bandwidth},
              {"inter_node_latency", &c.interNode.latency}};
  for (const Key &k : keys) {
    if (Status st = json::getDouble(v, k.name, *k.out); !st)
      return fail(st.message());
    bool latency = llvm::StringRef(k.name).ends_with("latency");
    if (!(*k.out > 0) && !(latency && *k.out == 0))
      return fail(llvm::Twine("key '") + k.name + "' must be positive");
  }
  if (Status st = json::getInt(v, "devices_per_node", perNode); !st)
    return fail(st.message());
  if (v.get("runtime_bytes")) {
    if (Status st = json::getDouble(v, "runtime_bytes", c.runtimeBytes); !st)
      return fail(st.message());
    if (!(c.runtimeBytes >= 0))
      return fail("key 'runtime_bytes' must not be negative");
  }
  if (perNode < 1)
    return fail("key 'devices_per_node' must be at least 1");
  c.devicesPerNode = perNode;
  return c;
}

llvm::Expected<Cluster> loadCluster(llvm::StringRef nameOrPath) {
  if (!nameOrPath.ends_with(".json"))
    return clusterPreset(nameOrPath);
  auto file = llvm::MemoryBuffer::getFile(nameOrPath);
  if (!file)
    return fail("cannot read '" + nameOrPath + "': " + file.getError().message());
  auto c = parseCluster((*file)->getBuffer());
  if (!c)
    return fail(nameOrPath + ": " + llvm::toString(c.takeError()));
  return c;
}

double rooflineSeconds(const Cluster &c, double flops, double bytes) {
  return std::max(flops / (c.peakFlops * kGemmEfficiency),
                  bytes / (c.memoryBandwidth * kMemoryEfficiency));
}

double gemmSeconds(const Cluster &c, int64_t m, int64_t n, int64_t k, int64_t elementBytes) {
  double flops = 2.0 * double(m) * double(n) * double(k);
  double bytes = double(elementBytes) * (double(m) * k + double(k) * n + double(m) * n);
  return rooflineSeconds(c, flops, bytes);
}

Link groupLink(const Cluster &c, int64_t size, int64_t stride) {
  return size * stride <= c.devicesPerNode ? c.intraNode : c.interNode;
}

double collectiveSeconds(Collective kind, int64_t size, double bytes, const Link &link) {
  if (kind == Collective::SendRecv)
    return link.latency + bytes / link.bandwidth;
  if (size <= 1)
    return 0;
  double n = double(size), steps = n - 1, share = (n - 1) / n * bytes / link.bandwidth;
  if (kind == Collective::AllReduce)
    return 2 * steps * link.latency + 2 * share;
  return steps * link.latency + share;
}

llvm::Expected<PipelineTime> pipelineTime(pipeline::ScheduleKind kind, int64_t ranks,
                                          int64_t microbatches, int64_t virtualStages,
                                          double forward, double backward, double transfer) {
  auto schedule = pipeline::buildSchedule(kind, ranks, microbatches, virtualStages);
  if (!schedule)
    return schedule.takeError();
  pipeline::Costs costs;
  costs.forward = forward;
  costs.backwardInput = backward / 2;
  costs.backwardWeight = backward / 2;
  costs.transfer = transfer;
  auto sim = pipeline::simulate(*schedule, costs);
  if (!sim)
    return sim.takeError();
  int64_t inFlight = 0;
  for (int64_t n : sim->inFlight)
    inFlight = std::max(inFlight, n);
  return PipelineTime{sim->makespan, sim->bubble, inFlight};
}

} // namespace lcc::planner
