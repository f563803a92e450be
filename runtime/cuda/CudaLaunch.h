//===- CudaLaunch.h - what CUDA train.bin host code calls -------*- C++ -*-===//
//
// The host code of a --target=cuda train.bin (passes/gpu/GpuKernels.cpp,
// lcc-gemm-to-library{prefix=lcc_cuda_}) never touches device memory: it
// computes buffer addresses and calls
//
//   lcc_cuda_launch(kernel id, grid, block, argv, argc)   argv: argc device pointers
//   lcc_cuda_sgemm / lcc_cuda_dgemm(28 x i64)             runtime/cpu/CpuKernels.h's ABI
//   lcc_cuda_attention_fwd / _bwd(13 / 17 x i64)          runtime/cpu/Attention.h's ABI
//   lcc_cuda_all_reduce, ..., lcc_cuda_wait               runtime/dist/Collectives.h's ABI
//
// (lcc_group_rank, a host query, stays the CPU's). These forward to the process's
// current CudaBackend: the GPU one (stream launches, cuBLASLt, capture into
// a CUDA graph), or a recorder that keeps the calls, which is how the
// launch sequence is tested on machines without a GPU.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_CUDA_CUDALAUNCH_H
#define LCC_RUNTIME_CUDA_CUDALAUNCH_H

#include "runtime/support/GemmAbi.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

extern "C" {
void lcc_cuda_launch(int64_t kernel, int64_t grid, int64_t block, int64_t argv, int64_t argc);
void lcc_cuda_sgemm(LCC_GEMM_PARAMS);
void lcc_cuda_bf16gemm(LCC_GEMM_PARAMS);
void lcc_cuda_hgemm(LCC_GEMM_PARAMS);
void lcc_cuda_dgemm(LCC_GEMM_PARAMS);
void lcc_cuda_attention_fwd(int64_t dtype, int64_t b, int64_t h, int64_t hkv, int64_t tq,
                            int64_t tk, int64_t d, int64_t causal, int64_t scaleBits, int64_t q,
                            int64_t k, int64_t v, int64_t o);
void lcc_cuda_attention_bwd(int64_t dtype, int64_t b, int64_t h, int64_t hkv, int64_t tq,
                            int64_t tk, int64_t d, int64_t causal, int64_t scaleBits, int64_t q,
                            int64_t k, int64_t v, int64_t o, int64_t dout, int64_t dq, int64_t dk,
                            int64_t dv);
void lcc_cuda_all_reduce(int64_t group, int64_t dtype, int64_t reduction, int64_t in, int64_t out,
                         int64_t count);
void lcc_cuda_all_gather(int64_t group, int64_t dtype, int64_t in, int64_t out,
                         int64_t countPerRank);
void lcc_cuda_reduce_scatter(int64_t group, int64_t dtype, int64_t reduction, int64_t in,
                             int64_t out, int64_t countPerRank);
void lcc_cuda_broadcast(int64_t group, int64_t dtype, int64_t root, int64_t in, int64_t out,
                        int64_t count);
void lcc_cuda_send(int64_t group, int64_t dtype, int64_t peer, int64_t in, int64_t count);
void lcc_cuda_recv(int64_t group, int64_t dtype, int64_t peer, int64_t out, int64_t count);
void lcc_cuda_group_start(int64_t group);
void lcc_cuda_group_end(int64_t group);
void lcc_cuda_group_end_posted(int64_t group);
void lcc_cuda_all_reduce_start(int64_t ticket, int64_t group, int64_t dtype, int64_t reduction,
                               int64_t in, int64_t out, int64_t count);
void lcc_cuda_all_gather_start(int64_t ticket, int64_t group, int64_t dtype, int64_t in,
                               int64_t out, int64_t countPerRank);
void lcc_cuda_reduce_scatter_start(int64_t ticket, int64_t group, int64_t dtype,
                                   int64_t reduction, int64_t in, int64_t out,
                                   int64_t countPerRank);
void lcc_cuda_wait(int64_t ticket, int64_t in, int64_t out);
}

namespace lcc {

/// One operand of a GEMM: its element (batch i0, i1, i2; row r, column c) is
/// at base + (offset + i0*batchStride[0] + i1*batchStride[1] +
/// i2*batchStride[2] + r*rowStride + c*colStride) elements.
struct GemmOperand {
  uint64_t base = 0;
  int64_t offset = 0;
  std::array<int64_t, 3> batchStride{};
  int64_t rowStride = 0, colStride = 0;
};

/// One GEMM of compiled code, decoded from lcc_sgemm's 28 positional values
/// (runtime/cpu/CpuKernels.h) once, by fromAbi: per batch index, C (m x n) =
/// A (m x k) B (k x n), added to C when `accumulate`.
struct GemmCall {
  bool f64 = false;
  bool bf16 = false; // A and B bf16, C f32 (lcc --precision=bf16)
  bool f16 = false;  // A and B f16, C f32 (lcc --precision=fp16)
  std::array<int64_t, 3> batch{1, 1, 1};
  int64_t m = 0, n = 0, k = 0;
  GemmOperand a, b, c;
  bool accumulate = false; // beta 1; 0 overwrites C without reading it

  /// Operand 0 (A), 1 (B) or 2 (C).
  const GemmOperand &operand(int which) const { return which == 0 ? a : which == 1 ? b : c; }
  /// Bytes per element of A/B (0, 1) or C (2).
  size_t elementSize(int which) const { return f64 ? 8 : ((bf16 || f16) && which < 2) ? 2 : 4; }
  /// The call's values in lcc_sgemm's order (what the CPU kernels take).
  std::array<int64_t, 28> abi() const;
  static GemmCall fromAbi(const std::array<int64_t, 28> &values, bool f64, bool bf16, bool f16);
};

/// One fused attention call (runtime/cpu/Attention.h's ABI): the forward reads
/// q, k, v and writes o; the backward reads q, k, v, o, dO and writes dq, dk,
/// dv. dtype: 0 f32, 1 f64, 2 bf16, 3 f16.
struct AttentionCall {
  bool backward = false;
  int64_t dtype = 0, b = 0, h = 0, hkv = 0, tq = 0, tk = 0, d = 0;
  bool causal = false;
  double scale = 0;
  std::array<uint64_t, 8> buffers{}; // q, k, v, o[, dO, dq, dk, dv]
  int numBuffers() const { return backward ? 8 : 4; }
  /// Bytes of buffer i: query-shaped (q, o, dO, dq) or key-shaped (k, v, dk, dv).
  size_t bytes(int i) const {
    bool keyShaped = i == 1 || i == 2 || i == 6 || i == 7;
    size_t elem = dtype == 1 ? 8 : dtype == 0 ? 4 : 2;
    return size_t(b) * size_t(keyShaped ? hkv : h) * size_t(keyShaped ? tk : tq) * size_t(d) *
           elem;
  }
  /// Whether buffer i is written.
  bool writes(int i) const { return backward ? i >= 5 : i == 3; }
};

/// One collective of compiled code (runtime/dist/Collectives.h's ABI). The
/// kinds are dist::StreamCollective's, in the same order, plus Wait and the
/// brackets of an lcc.exchange's sends and receives (GroupStart, GroupEnd:
/// one NCCL group; a posted exchange's GroupEnd has `start` set). A `start`
/// runs beside the computation until the Wait with its ticket (and the same
/// in and out); the others are in stream order.
struct CollectiveCall {
  enum Kind {
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast,
    Send,
    Recv,
    Wait,
    GroupStart,
    GroupEnd
  };
  Kind kind = AllReduce;
  bool start = false;
  int64_t ticket = -1, group = 0, dtype = 0, reduction = 0;
  int64_t peer = 0; // the root of a broadcast
  uint64_t in = 0, out = 0;
  int64_t count = 0; // elements; per rank for all_gather and reduce_scatter
  const char *name() const;
};

/// Where the calls of compiled host code go.
class CudaBackend {
public:
  virtual ~CudaBackend() = default;
  virtual void launch(int64_t kernel, int64_t grid, int64_t block, const uint64_t *args,
                      int64_t argc) = 0;
  virtual void gemm(const GemmCall &call) = 0;
  virtual void attention(const AttentionCall &call) = 0;
  virtual void collective(const CollectiveCall &call) = 0;
};

/// The backend of this process (null: none; a call then aborts with a
/// message, since host code can only run under one). Not thread-safe: the
/// step runs on one thread.
void setCudaBackend(CudaBackend *backend);
CudaBackend *cudaBackend();

/// Keeps every call in order, touching no memory: what a GPU backend would
/// launch or capture into its graph, and on which buffers.
class RecordingBackend : public CudaBackend {
public:
  struct Launch {
    int64_t kernel = 0, grid = 0, block = 0;
    std::vector<uint64_t> args;
  };
  struct Call {
    bool isGemm = false, isAttention = false, isCollective = false;
    Launch launch;
    GemmCall gemm;
    AttentionCall attention;
    CollectiveCall collective;
  };
  std::vector<Call> calls;

  void launch(int64_t kernel, int64_t grid, int64_t block, const uint64_t *args,
              int64_t argc) override;
  void gemm(const GemmCall &call) override;
  void attention(const AttentionCall &call) override;
  void collective(const CollectiveCall &call) override;
};

} // namespace lcc

#endif
