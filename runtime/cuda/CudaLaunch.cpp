//===- CudaLaunch.cpp - what CUDA train.bin host code calls ---------------===//
#include "runtime/cuda/CudaLaunch.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace lcc {

namespace {
CudaBackend *current = nullptr;

CudaBackend &backendOrDie(const char *what) {
  if (!current) {
    std::fprintf(
        stderr, "lcc-run: internal error: CUDA host code called %s without a CUDA backend\n", what);
    std::abort();
  }
  return *current;
}

} // namespace

// The operand fields in lcc_sgemm's order: base, offset, three batch
// strides, the row stride and the column stride (of A: M then K; of B: K then
// N; of C: M then N).
std::array<int64_t, 28> GemmCall::abi() const {
  std::array<int64_t, 28> v{batch[0], batch[1], batch[2], m, n, k};
  size_t i = 6;
  for (const GemmOperand *o : {&a, &b, &c}) {
    v[i++] = int64_t(o->base);
    v[i++] = o->offset;
    for (int64_t stride : o->batchStride)
      v[i++] = stride;
    v[i++] = o->rowStride;
    v[i++] = o->colStride;
  }
  v[27] = accumulate ? 1 : 0;
  return v;
}

GemmCall GemmCall::fromAbi(const std::array<int64_t, 28> &v, bool f64, bool bf16, bool f16) {
  GemmCall g;
  g.f64 = f64;
  g.bf16 = bf16;
  g.f16 = f16;
  g.batch = {v[0], v[1], v[2]};
  g.m = v[3], g.n = v[4], g.k = v[5];
  size_t i = 6;
  for (GemmOperand *o : {&g.a, &g.b, &g.c}) {
    o->base = uint64_t(v[i++]);
    o->offset = v[i++];
    for (int64_t &stride : o->batchStride)
      stride = v[i++];
    o->rowStride = v[i++];
    o->colStride = v[i++];
  }
  g.accumulate = v[27] != 0;
  return g;
}

void setCudaBackend(CudaBackend *backend) { current = backend; }
CudaBackend *cudaBackend() { return current; }

void RecordingBackend::launch(int64_t kernel, int64_t grid, int64_t block, const uint64_t *args,
                              int64_t argc) {
  Call c;
  c.launch = {kernel, grid, block, std::vector<uint64_t>(args, args + argc)};
  calls.push_back(std::move(c));
}

void RecordingBackend::gemm(const GemmCall &call) {
  Call c;
  c.isGemm = true;
  c.gemm = call;
  calls.push_back(std::move(c));
}

void RecordingBackend::attention(const AttentionCall &call) {
  Call c;
  c.isAttention = true;
  c.attention = call;
  calls.push_back(std::move(c));
}

void RecordingBackend::collective(const CollectiveCall &call) {
  Call c;
  c.isCollective = true;
  c.collective = call;
  calls.push_back(std::move(c));
}

const char *CollectiveCall::name() const {
  static const char *const names[] = {"all_reduce", "all_gather",  "reduce_scatter",
                                      "broadcast",  "send",        "recv",
                                      "wait",       "group_start", "group_end"};
  return names[kind];
}

namespace {
CollectiveCall collectiveCall(CollectiveCall::Kind kind, int64_t ticket, int64_t group,
                              int64_t dtype, int64_t reduction, int64_t peer, int64_t in,
                              int64_t out, int64_t count) {
  CollectiveCall c;
  c.kind = kind;
  c.start = ticket >= 0 && kind != CollectiveCall::Wait;
  c.ticket = ticket;
  c.group = group;
  c.dtype = dtype;
  c.reduction = reduction;
  c.peer = peer;
  c.in = uint64_t(in);
  c.out = uint64_t(out);
  c.count = count;
  return c;
}

void forward(const char *what, const CollectiveCall &call) {
  backendOrDie(what).collective(call);
}

AttentionCall attentionCall(bool backward, int64_t dtype, int64_t b, int64_t h, int64_t hkv,
                            int64_t tq, int64_t tk, int64_t d, int64_t causal, int64_t scaleBits,
                            std::initializer_list<int64_t> buffers) {
  AttentionCall a;
  a.backward = backward;
  a.dtype = dtype;
  a.b = b;
  a.h = h;
  a.hkv = hkv;
  a.tq = tq;
  a.tk = tk;
  a.d = d;
  a.causal = causal != 0;
  std::memcpy(&a.scale, &scaleBits, sizeof(double));
  int i = 0;
  for (int64_t p : buffers)
    a.buffers[size_t(i++)] = uint64_t(p);
  return a;
}
} // namespace

} // namespace lcc

extern "C" __attribute__((visibility("default"))) void
lcc_cuda_launch(int64_t kernel, int64_t grid, int64_t block, int64_t argv, int64_t argc) {
  lcc::backendOrDie("lcc_cuda_launch")
      .launch(kernel, grid, block, reinterpret_cast<const uint64_t *>(argv), argc);
}

extern "C" __attribute__((visibility("default"))) void lcc_cuda_sgemm(LCC_GEMM_PARAMS) {
  const std::array<int64_t, 28> args{LCC_GEMM_ARGS};
  lcc::backendOrDie("lcc_cuda_sgemm").gemm(lcc::GemmCall::fromAbi(args, false, false, false));
}

extern "C" __attribute__((visibility("default"))) void lcc_cuda_dgemm(LCC_GEMM_PARAMS) {
  const std::array<int64_t, 28> args{LCC_GEMM_ARGS};
  lcc::backendOrDie("lcc_cuda_dgemm").gemm(lcc::GemmCall::fromAbi(args, true, false, false));
}

extern "C" __attribute__((visibility("default"))) void lcc_cuda_bf16gemm(LCC_GEMM_PARAMS) {
  const std::array<int64_t, 28> args{LCC_GEMM_ARGS};
  lcc::backendOrDie("lcc_cuda_bf16gemm")
      .gemm(lcc::GemmCall::fromAbi(args, false, /*bf16=*/true, false));
}

extern "C" __attribute__((visibility("default"))) void lcc_cuda_hgemm(LCC_GEMM_PARAMS) {
  const std::array<int64_t, 28> args{LCC_GEMM_ARGS};
  lcc::backendOrDie("lcc_cuda_hgemm")
      .gemm(lcc::GemmCall::fromAbi(args, false, false, /*f16=*/true));
}

extern "C" __attribute__((visibility("default"))) void
lcc_cuda_attention_fwd(int64_t dtype, int64_t b, int64_t h, int64_t hkv, int64_t tq, int64_t tk,
                       int64_t d, int64_t causal, int64_t scaleBits, int64_t q, int64_t k,
                       int64_t v, int64_t o) {
  lcc::backendOrDie("lcc_cuda_attention_fwd")
      .attention(lcc::attentionCall(false, dtype, b, h, hkv, tq, tk, d, causal, scaleBits,
                                    {q, k, v, o}));
}

extern "C" __attribute__((visibility("default"))) void
lcc_cuda_attention_bwd(int64_t dtype, int64_t b, int64_t h, int64_t hkv, int64_t tq, int64_t tk,
                       int64_t d, int64_t causal, int64_t scaleBits, int64_t q, int64_t k,
                       int64_t v, int64_t o, int64_t dout, int64_t dq, int64_t dk, int64_t dv) {
  lcc::backendOrDie("lcc_cuda_attention_bwd")
      .attention(lcc::attentionCall(true, dtype, b, h, hkv, tq, tk, d, causal, scaleBits,
                                    {q, k, v, o, dout, dq, dk, dv}));
}

// The collectives: stream-ordered on the GPU (CudaSession), recorded in
// tests. A ticket of -1 marks the blocking ones.
using lcc::CollectiveCall;

extern "C" __attribute__((visibility("default"))) void
lcc_cuda_all_reduce(int64_t group, int64_t dtype, int64_t reduction, int64_t in, int64_t out,
                    int64_t count) {
  lcc::forward("lcc_cuda_all_reduce", lcc::collectiveCall(CollectiveCall::AllReduce, -1, group,
                                                          dtype, reduction, 0, in, out, count));
}

extern "C" __attribute__((visibility("default"))) void
lcc_cuda_all_gather(int64_t group, int64_t dtype, int64_t in, int64_t out, int64_t countPerRank) {
  lcc::forward("lcc_cuda_all_gather", lcc::collectiveCall(CollectiveCall::AllGather, -1, group,
                                                          dtype, 0, 0, in, out, countPerRank));
}

extern "C" __attribute__((visibility("default"))) void
lcc_cuda_reduce_scatter(int64_t group, int64_t dtype, int64_t reduction, int64_t in, int64_t out,
                        int64_t countPerRank) {
  lcc::forward("lcc_cuda_reduce_scatter",
               lcc::collectiveCall(CollectiveCall::ReduceScatter, -1, group, dtype, reduction, 0,
                                   in, out, countPerRank));
}

extern "C" __attribute__((visibility("default"))) void
lcc_cuda_broadcast(int64_t group, int64_t dtype, int64_t root, int64_t in, int64_t out,
                   int64_t count) {
  lcc::forward("lcc_cuda_broadcast", lcc::collectiveCall(CollectiveCall::Broadcast, -1, group,
                                                         dtype, 0, root, in, out, count));
}

extern "C" __attribute__((visibility("default"))) void
lcc_cuda_send(int64_t group, int64_t dtype, int64_t peer, int64_t in, int64_t count) {
  lcc::forward("lcc_cuda_send",
               lcc::collectiveCall(CollectiveCall::Send, -1, group, dtype, 0, peer, in, 0, count));
}

extern "C" __attribute__((visibility("default"))) void
lcc_cuda_recv(int64_t group, int64_t dtype, int64_t peer, int64_t out, int64_t count) {
  lcc::forward("lcc_cuda_recv",
               lcc::collectiveCall(CollectiveCall::Recv, -1, group, dtype, 0, peer, 0, out, count));
}

extern "C" __attribute__((visibility("default"))) void
lcc_cuda_all_reduce_start(int64_t ticket, int64_t group, int64_t dtype, int64_t reduction,
                          int64_t in, int64_t out, int64_t count) {
  lcc::forward("lcc_cuda_all_reduce_start",
               lcc::collectiveCall(CollectiveCall::AllReduce, ticket, group, dtype, reduction, 0,
                                   in, out, count));
}

extern "C" __attribute__((visibility("default"))) void
lcc_cuda_all_gather_start(int64_t ticket, int64_t group, int64_t dtype, int64_t in, int64_t out,
                          int64_t countPerRank) {
  lcc::forward("lcc_cuda_all_gather_start",
               lcc::collectiveCall(CollectiveCall::AllGather, ticket, group, dtype, 0, 0, in, out,
                                   countPerRank));
}

extern "C" __attribute__((visibility("default"))) void
lcc_cuda_reduce_scatter_start(int64_t ticket, int64_t group, int64_t dtype, int64_t reduction,
                              int64_t in, int64_t out, int64_t countPerRank) {
  lcc::forward("lcc_cuda_reduce_scatter_start",
               lcc::collectiveCall(CollectiveCall::ReduceScatter, ticket, group, dtype, reduction,
                                   0, in, out, countPerRank));
}

extern "C" __attribute__((visibility("default"))) void lcc_cuda_group_start(int64_t group) {
  lcc::forward("lcc_cuda_group_start",
               lcc::collectiveCall(CollectiveCall::GroupStart, -1, group, 0, 0, 0, 0, 0, 0));
}

extern "C" __attribute__((visibility("default"))) void lcc_cuda_group_end(int64_t group) {
  lcc::forward("lcc_cuda_group_end",
               lcc::collectiveCall(CollectiveCall::GroupEnd, -1, group, 0, 0, 0, 0, 0, 0));
}

// A posted exchange: on the GPU the communication stream already runs
// beside the computation; the session joins it back as for any group.
extern "C" __attribute__((visibility("default"))) void lcc_cuda_group_end_posted(int64_t group) {
  lcc::forward("lcc_cuda_group_end_posted",
               lcc::collectiveCall(CollectiveCall::GroupEnd, 0, group, 0, 0, 0, 0, 0, 0));
}

extern "C" __attribute__((visibility("default"))) void lcc_cuda_wait(int64_t ticket, int64_t in,
                                                                     int64_t out) {
  lcc::forward("lcc_cuda_wait",
               lcc::collectiveCall(CollectiveCall::Wait, ticket, 0, 0, 0, 0, in, out, 0));
}
