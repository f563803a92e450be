//===- CostModel.h - step time on a cluster, from FLOPs and bytes -*- C++ -*-===//
//
// The planner's cost model (`lcc --shard=auto`, docs/memory.md "The
// planner"): every constant it assumes is in this header and CostModel.cpp,
// nowhere else.
//
// - Computation: a roofline per op. An op of F FLOPs that moves B bytes
//   takes max(F / (peak * gemmEfficiency), B / (bandwidth *
//   memoryEfficiency)) on one device: GEMMs are compute-bound at the
//   efficiency cuBLAS reaches on large shapes, elementwise ops and norms
//   bandwidth-bound.
// - Communication: the alpha-beta model of ring collectives over the link a
//   group uses (within a node if the whole group fits in one, else the
//   inter-node link, the ring's slowest hop). For n ranks and S bytes (the
//   whole tensor): all-reduce 2(n-1) alpha + 2 (n-1)/n S / beta; all-gather
//   and reduce-scatter (n-1) alpha + (n-1)/n S / beta; a send/receive
//   alpha + S / beta.
// - Pipelines: the schedule played by lcc's simulator
//   (passes/pipeline/Schedule.h) with the stage's forward and backward
//   times: its bubble, not a formula.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_COMPILER_PACKAGE_COSTMODEL_H
#define LCC_COMPILER_PACKAGE_COSTMODEL_H

#include "passes/pipeline/Schedule.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace lcc::planner {

/// One direction of a device's link: bytes per second and seconds per
/// message.
struct Link {
  double bandwidth = 0, latency = 0;
};

/// What `--cluster` describes (a preset name or a JSON file with these keys:
/// docs/memory.md).
struct Cluster {
  std::string name;
  double peakFlops = 0;       ///< dense matmul FLOP/s per device, training precision
  double memoryBytes = 0;     ///< per device
  double memoryBandwidth = 0; ///< bytes/s per device
  int64_t devicesPerNode = 1;
  Link intraNode, interNode; ///< per device, one direction
  /// Per rank, beside the compiled plan: what the runtime process itself
  /// holds (code, libraries, thread stacks, communicator buffers; on a GPU
  /// the CUDA context). `--mem` with --shard=auto bounds plan + this.
  double runtimeBytes = 0;
};

/// Fractions of peak the model assumes (stated once, here).
inline constexpr double kGemmEfficiency = 0.75;   ///< large GEMMs (cuBLAS, MKL)
inline constexpr double kMemoryEfficiency = 0.80; ///< streaming elementwise kernels

/// "h100-node" (8 H100 SXM, NVLink 4, 8 x 400 Gb/s InfiniBand), "h200-node",
/// "a100-node" (8 A100 80GB SXM, NVLink 3, 8 x 200 Gb/s HDR: Selene's, the
/// machine of Megatron's paper) and "cpu" (this machine's cores as one
/// device per rank, ranks on loopback TCP).
llvm::Expected<Cluster> clusterPreset(llvm::StringRef name);
/// A JSON object with keys name (optional), peak_flops, memory_bytes,
/// memory_bandwidth, devices_per_node, intra_node_bandwidth,
/// intra_node_latency, inter_node_bandwidth, inter_node_latency,
/// runtime_bytes (optional, default 0) (SI units).
llvm::Expected<Cluster> parseCluster(llvm::StringRef json);
/// A preset's name, else a file holding parseCluster's JSON.
llvm::Expected<Cluster> loadCluster(llvm::StringRef nameOrPath);

/// Roofline time of an op of `flops` FLOPs moving `bytes` bytes.
double rooflineSeconds(const Cluster &c, double flops, double bytes);
/// A [m, k] x [k, n] GEMM with elements of `elementBytes`.
double gemmSeconds(const Cluster &c, int64_t m, int64_t n, int64_t k, int64_t elementBytes);

enum class Collective { AllReduce, AllGather, ReduceScatter, SendRecv };
/// The link a group of `size` ranks, `stride` apart in the device numbering
/// (tp = 1, then dp or pp outside it), communicates over.
Link groupLink(const Cluster &c, int64_t size, int64_t stride);
/// Seconds for `bytes` (the whole tensor; a send's message) over `size`
/// ranks on `link`.
double collectiveSeconds(Collective kind, int64_t size, double bytes, const Link &link);

/// The bubble fraction and makespan of schedule `kind` (P ranks, M
/// micro-batches, V stages per rank) with per-stage forward and backward
/// times (the backward split into input and weight halves where the
/// schedule splits it) and a transfer time per message.
struct PipelineTime {
  double makespan = 0, bubble = 0;
  int64_t inFlight = 0; ///< the most (virtual) stage activations any rank holds
};
llvm::Expected<PipelineTime> pipelineTime(pipeline::ScheduleKind kind, int64_t ranks,
                                          int64_t microbatches, int64_t virtualStages,
                                          double forward, double backward, double transfer);

} // namespace lcc::planner

#endif
