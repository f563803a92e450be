//===- CudaSession.cpp - one GPU running a CUDA train.bin -----------------===//
#include "runtime/cuda/CudaSession.h"
#include "runtime/cuda/GemmLayout.h"
#include "runtime/cuda/kernels/FlashParams.h"

#ifdef LCC_HAVE_CUDA_HEADERS
#include "runtime/cuda/CudaSessionImpl.h"

#include <algorithm>
#include <cstdlib>
#include <dlfcn.h>
#include <map>
#include <tuple>
#include <vector>
#endif

namespace lcc {

#ifndef LCC_HAVE_CUDA_HEADERS

struct CudaSession::Impl {};
Status CudaSession::create(const Program &, int, std::unique_ptr<CudaSession> &) {
  return Status::failure(
      "this lcc-run was built without the CUDA headers (cuda.h, cublasLt.h); rebuild it "
      "where the CUDA toolkit is installed");
}
CudaSession::~CudaSession() = default;
const CudaDevice &CudaSession::device() const { std::abort(); }
std::string CudaSession::description() const { std::abort(); }
const std::string &CudaSession::loadedFrom() const { std::abort(); }
uint64_t CudaSession::allocate(size_t) { std::abort(); }
void CudaSession::release(uint64_t) { std::abort(); }
void CudaSession::upload(uint64_t, const void *, size_t) { std::abort(); }
void CudaSession::download(void *, uint64_t, size_t) { std::abort(); }
Status CudaSession::beginCapture() { std::abort(); }
Status CudaSession::endCapture(int) { std::abort(); }
bool CudaSession::hasGraph(int) const { return false; }
void CudaSession::dropGraphs() {}
Status CudaSession::replay(int) { std::abort(); }
void CudaSession::launch(int64_t, int64_t, int64_t, const uint64_t *, int64_t) { std::abort(); }
void CudaSession::gemm(const GemmCall &) { std::abort(); }
void CudaSession::attention(const AttentionCall &) { std::abort(); }

#else

namespace {


void *openFirst(const std::vector<std::string> &names) {
  for (const std::string &n : names)
    if (void *lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL))
      return lib;
  return nullptr;
}

} // namespace

Status CudaSession::create(const Program &program, int ordinal, std::unique_ptr<CudaSession> &out) {
  auto session = std::unique_ptr<CudaSession>(new CudaSession());
  session->impl_ = std::make_unique<Impl>();
  Impl &s = *session->impl_;
  if (Status st = loadCudaDriver(ordinal, s.driver, s.device); !st)
    return st;
  void *cuda = s.driver->library;
  std::vector<std::string> ltNames;
  if (const char *o = std::getenv("LCC_CUBLASLT"); o && *o)
    ltNames.push_back(o);
  for (const char *root : {std::getenv("CUDA_HOME"), std::getenv("CUDA_PATH")})
    if (root && *root)
      ltNames.push_back(std::string(root) + "/lib64/libcublasLt.so");
  for (const char *n : {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so",
                        "/usr/local/cuda/lib64/libcublasLt.so"})
    ltNames.push_back(n);
  void *lt = openFirst(ltNames);
  if (!lt)
    return Status::failure("cuBLASLt (libcublasLt.so) cannot be loaded; install the CUDA toolkit's "
                           "cuBLAS or set LCC_CUBLASLT to the library");
  std::string missing;
  CudaSessionApi &a = s.api;
#define LCC_RESOLVE_DRIVER(member, declaration, symbol) resolveSymbol(cuda, symbol, a.member, missing);
#define LCC_RESOLVE_CUBLASLT(member, declaration, symbol) resolveSymbol(lt, symbol, a.member, missing);
  LCC_CUDA_SESSION_DRIVER_API(LCC_RESOLVE_DRIVER)
  LCC_CUDA_SESSION_CUBLASLT_API(LCC_RESOLVE_CUBLASLT)
#undef LCC_RESOLVE_DRIVER
#undef LCC_RESOLVE_CUBLASLT
  if (!missing.empty())
    return Status::failure("the CUDA driver or cuBLASLt lacks " + missing);

  if (!s.check(a.primaryCtxRetain(&s.context, CUdevice(s.device.handle)),
               "cuDevicePrimaryCtxRetain") ||
      !s.check(a.ctxSetCurrent(s.context), "cuCtxSetCurrent") ||
      !s.check(a.streamCreate(&s.stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate") ||
      !s.check(a.streamCreate(&s.comm, CU_STREAM_NON_BLOCKING), "cuStreamCreate") ||
      !(s.fork = s.event()) || !(s.join = s.event()))
    return Status::failure(s.error);
  // The cubin when it is for this GPU; otherwise the PTX, compiled by the
  // driver for whatever GPU this is (newer architectures).
  if (program.cudaArch() == s.device.arch() && !program.cudaCubin().empty() &&
      a.moduleLoadData(&s.module, program.cudaCubin().data()) == CUDA_SUCCESS) {
    s.loadedFrom = "cubin";
  } else {
    std::string ptx = program.cudaPtx(); // NUL-terminated for the driver
    if (!s.check(a.moduleLoadData(&s.module, ptx.c_str()), "loading the kernels' PTX"))
      return Status::failure(s.error + " (the train.bin is for " + program.cudaArch() +
                             ", this GPU is " + s.device.arch() + ")");
    s.loadedFrom = "ptx";
  }
  for (const std::string &name : program.cudaKernels()) {
    CUfunction f = nullptr;
    if (!s.check(a.moduleGetFunction(&f, s.module, name.c_str()),
                 ("cuModuleGetFunction(" + name + ")").c_str()))
      return Status::failure(s.error);
    s.functions.push_back(f);
    s.names.push_back(name);
  }
  if (!s.checkLt(a.ltCreate(&s.lt), "cublasLtCreate"))
    return Status::failure(s.error);
  s.workspace = session->allocate(s.workspaceBytes);
  if (!s.error.empty())
    return Status::failure(s.error);
  out = std::move(session);
  return {};
}

CudaSession::~CudaSession() {
  if (!impl_ || !impl_->stream)
    return;
  (void)synchronize(); // a destructor has no caller to tell
  for (CUdeviceptr p : impl_->allocations)
    impl_->api.memFree(p);
  for (void *p : impl_->hostAllocations)
    impl_->api.memFreeHost(p);
}

const CudaDevice &CudaSession::device() const { return impl_->device; }
std::string CudaSession::description() const {
  return impl_->device.name + " (" + impl_->device.arch() + ", kernels from " + impl_->loadedFrom +
         ")";
}
const std::string &CudaSession::loadedFrom() const { return impl_->loadedFrom; }

uint64_t CudaSession::allocate(size_t bytes) {
  CUdeviceptr p = 0;
  if (!impl_->check(impl_->api.memAlloc(&p, bytes ? bytes : 1), "cuMemAlloc"))
    return 0;
  impl_->allocations.push_back(p);
  impl_->check(impl_->api.memsetD8Async(p, 0, bytes ? bytes : 1, impl_->stream), "cuMemsetD8Async");
  return p;
}

// Freeing synchronizes with the device (cuMemFree), so whatever still used
// the buffer has finished.
void CudaSession::release(uint64_t buffer) {
  auto &list = impl_->allocations;
  auto it = std::find(list.begin(), list.end(), CUdeviceptr(buffer));
  if (it == list.end())
    return;
  impl_->check(impl_->api.memFree(*it), "cuMemFree");
  list.erase(it);
}

void CudaSession::upload(uint64_t device, const void *host, size_t bytes) {
  if (bytes)
    impl_->check(impl_->api.memcpyHtoDAsync(device, host, bytes, impl_->stream), "cuMemcpyHtoD");
}

void CudaSession::download(void *host, uint64_t device, size_t bytes) {
  if (bytes)
    impl_->check(impl_->api.memcpyDtoHAsync(host, device, bytes, impl_->stream), "cuMemcpyDtoH");
}

Status CudaSession::beginCapture() {
  if (!impl_->check(impl_->api.streamBeginCapture(impl_->stream, CU_STREAM_CAPTURE_MODE_GLOBAL),
                    "cuStreamBeginCapture"))
    return Status::failure(impl_->error);
  return {};
}

Status CudaSession::endCapture(int slot) {
  impl_->checkJoined(); // a stream forked in the capture must have joined it
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  if (!impl_->check(impl_->api.streamEndCapture(impl_->stream, &graph), "cuStreamEndCapture") ||
      !impl_->check(impl_->api.graphInstantiate(&exec, graph, 0), "cuGraphInstantiate"))
    return Status::failure(impl_->error);
  impl_->api.graphDestroy(graph); // the executable graph is a copy
  impl_->graphs[slot] = exec;
  return {};
}

bool CudaSession::hasGraph(int slot) const { return impl_->graphs.count(slot) > 0; }

// (They hold resources of their own, NCCL's among them.) Nothing is
// replaying: the Trainer drops them between steps.
void CudaSession::dropGraphs() {
  for (auto &[slot, exec] : impl_->graphs)
    impl_->api.graphExecDestroy(exec);
  impl_->graphs.clear();
}

Status CudaSession::replay(int slot) {
  if (!impl_->check(impl_->api.graphLaunch(impl_->graphs.at(slot), impl_->stream), "cuGraphLaunch"))
    return Status::failure(impl_->error);
  return {};
}

void CudaSession::launch(int64_t kernel, int64_t grid, int64_t block, const uint64_t *args,
                         int64_t argc) {
  Impl &s = *impl_;
  if (kernel < 0 || kernel >= int64_t(s.functions.size())) {
    if (s.error.empty())
      s.error = "the code launched kernel #" + std::to_string(kernel) + ", which does not exist";
    return;
  }
  if (grid == 0) // an empty tensor: nothing to do (and cuLaunchKernel refuses 0 blocks)
    return;
  // cuLaunchKernel takes a pointer to each parameter; the values are copied
  // at launch (or capture), so pointers into `args` are enough.
  std::vector<void *> params(static_cast<size_t>(argc));
  for (int64_t i = 0; i < argc; ++i)
    params[size_t(i)] = const_cast<uint64_t *>(&args[i]);
  bool first = s.error.empty(); // name the kernel only in the error it caused
  if (!s.check(s.api.launchKernel(s.functions[size_t(kernel)], unsigned(grid), 1, 1,
                                 unsigned(block), 1, 1, 0, s.stream, params.data(), nullptr),
               "cuLaunchKernel") &&
      first)
    s.error += " (kernel " + s.names[size_t(kernel)] + ", " + std::to_string(grid) + " blocks of " +
               std::to_string(block) + " threads, " + std::to_string(argc) + " arguments)";
}

const CudaSession::Impl::Plan &CudaSession::Impl::plan(const GemmCall &call,
                                                       const std::vector<int64_t> &key,
                                                       const LtGemm &g,
                                                       const uint32_t alignment[3]) {
  auto found = plans.find(key);
  if (found != plans.end())
    return found->second;
  Plan &p = plans[key];
  cudaDataType_t type = call.f64 ? CUDA_R_64F : CUDA_R_32F;
  // bf16/f16 operands into an f32 output (tensor cores, f32 accumulation).
  cudaDataType_t inType = call.bf16 ? CUDA_R_16BF : call.f16 ? CUDA_R_16F : type;
  // fp32 GEMMs in fp32 (no TF32): the CUDA target matches the CPU's losses
  // to 1e-4; mixed precision (--precision=bf16|fp16) is where tensor cores come in.
  cublasComputeType_t compute = call.f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
  if (!checkLt(api.ltDescCreate(&p.desc, compute, type), "cublasLtMatmulDescCreate"))
    return p;
  cublasOperation_t tx = g.x.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t ty = g.y.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  api.ltDescSet(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &tx, sizeof(tx));
  api.ltDescSet(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &ty, sizeof(ty));
  int32_t batch = g.batch;
  auto layout = [&](cublasLtMatrixLayout_t &l, cudaDataType_t t, int64_t rows, int64_t cols,
                    int64_t ld, int64_t stride) {
    if (!checkLt(api.ltLayoutCreate(&l, t, uint64_t(rows), uint64_t(cols), ld),
                 "cublasLtMatrixLayoutCreate"))
      return false;
    api.ltLayoutSet(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch));
    api.ltLayoutSet(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride));
    return true;
  };
  if (!layout(p.x, inType, g.x.rows, g.x.cols, g.x.ld, g.strideX) ||
      !layout(p.y, inType, g.y.rows, g.y.cols, g.y.ld, g.strideY) ||
      !layout(p.c, type, g.m, g.n, g.ldc, g.strideC))
    return p;
  cublasLtMatmulPreference_t pref = nullptr;
  if (!checkLt(api.ltPrefCreate(&pref), "cublasLtMatmulPreferenceCreate"))
    return p;
  uint64_t ws = workspaceBytes;
  api.ltPrefSet(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  // The heuristic assumes 256-byte aligned matrices unless told otherwise;
  // views into the arena (q, k, v of one projection) are less aligned.
  api.ltPrefSet(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alignment[0], sizeof(uint32_t));
  api.ltPrefSet(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &alignment[1], sizeof(uint32_t));
  api.ltPrefSet(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alignment[2], sizeof(uint32_t));
  api.ltPrefSet(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alignment[2], sizeof(uint32_t));
  cublasLtMatmulHeuristicResult_t result{};
  int count = 0;
  // What to say when cuBLASLt refuses: the GEMM as it was asked for.
  std::string shape = std::to_string(g.m) + "x" + std::to_string(g.n) + "x" +
                      std::to_string(g.k) + " GEMM (batch " + std::to_string(g.batch) + ", " +
                      (call.f64 ? "f64" : call.bf16 ? "bf16" : call.f16 ? "f16" : "f32") +
                      (g.x.transpose ? ", A^T" : "") + (g.y.transpose ? ", B^T" : "") +
                      ", alignment " + std::to_string(alignment[0]) + "/" +
                      std::to_string(alignment[1]) + "/" + std::to_string(alignment[2]) + " bytes)";
  bool first = error.empty();
  if (!checkLt(api.ltHeuristic(lt, p.desc, p.x, p.y, p.c, p.c, pref, 1, &result, &count),
               "cublasLtMatmulAlgoGetHeuristic")) {
    if (first)
      error += " for a " + shape;
    return p;
  }
  if (count == 0) {
    if (error.empty())
      error = "cuBLASLt has no algorithm for a " + shape;
    return p;
  }
  p.algo = result.algo;
  p.ok = true;
  return p;
}

void CudaSession::gemm(const GemmCall &call) {
  Impl &s = *impl_;
  LtGemm g = planLtGemm(call);
  if (!g.error.empty()) {
    if (s.error.empty())
      s.error = g.error;
    return;
  }
  GemmCall shape = call; // pointers and offsets do not change the plan
  for (GemmOperand *o : {&shape.a, &shape.b, &shape.c})
    o->base = 0, o->offset = 0;
  std::array<int64_t, 28> abi = shape.abi();
  std::vector<int64_t> key(abi.begin(), abi.end());
  key.push_back(call.f64);
  key.push_back(call.bf16);
  key.push_back(call.f16);
  // The least alignment of each matrix over the calls (and batches) it makes.
  uint32_t alignment[3] = {256, 256, 256};
  int64_t strides[3] = {g.strideX, g.strideY, g.strideC};
  for (int which = 0; which < 3; ++which) {
    for (int64_t i = 0, n = ltCalls(call, g); i < n; ++i)
      while (ltAddress(call, g, which, i) % alignment[which])
        alignment[which] /= 2;
    while (g.batch > 1 && (uint64_t(strides[which]) * call.elementSize(which)) % alignment[which])
      alignment[which] /= 2;
    key.push_back(alignment[which]);
  }
  const Impl::Plan &p = s.plan(call, key, g, alignment);
  if (!p.ok)
    return;
  double oneD = 1.0, betaD = call.accumulate ? 1.0 : 0.0;
  float oneF = 1.0f, betaF = call.accumulate ? 1.0f : 0.0f;
  const void *one = call.f64 ? static_cast<const void *>(&oneD) : &oneF;
  const void *beta = call.f64 ? static_cast<const void *>(&betaD) : &betaF;
  for (int64_t i = 0, n = ltCalls(call, g); i < n; ++i) {
    auto at = [&](int which) { return reinterpret_cast<void *>(ltAddress(call, g, which, i)); };
    // beta 1: C accumulates; 0: C is overwritten (lcc-gemm-to-library dropped
    // its zero fill), and cuBLASLt never reads it.
    s.checkLt(s.api.ltMatmul(s.lt, p.desc, one, at(0), p.x, at(1), p.y, beta, at(2), p.c, at(2), p.c,
                             &p.algo, reinterpret_cast<void *>(s.workspace), s.workspaceBytes,
                             s.stream),
              "cublasLtMatmul");
  }
}

#ifdef LCC_HAVE_FLASH_FATBIN
extern "C" {
extern const unsigned char lcc_flash_fatbin[];
extern const size_t lcc_flash_fatbin_size;
}
#endif

CUfunction CudaSession::Impl::flashKernel(const std::string &name, unsigned long long smem) {
  auto found = flashKernels.find(name);
  if (found != flashKernels.end())
    return found->second;
#ifdef LCC_HAVE_FLASH_FATBIN
  if (!flash && !check(api.moduleLoadData(&flash, lcc_flash_fatbin),
                       "loading the fused attention kernels (cuModuleLoadData)"))
    return nullptr;
#else
  if (error.empty())
    error = "this lcc-run was built without nvcc, so it has no fused attention kernels for "
            "GPUs; rebuild it where nvcc is, or compile the model with --attention=decomposed";
  return nullptr;
#endif
  // Hopper allows 227 KB per block, A100 163 KB, sm_86/89 99 KB: head size
  // 128 (and 64's backward on sm_86/89) may not fit.
  if (device.sharedMemoryOptIn > 0 && smem > (unsigned long long)device.sharedMemoryOptIn) {
    if (error.empty())
      error = name + " needs " + std::to_string(smem) + " bytes of shared memory per block; " +
              device.name + " allows " + std::to_string(device.sharedMemoryOptIn) +
              " (compile with --attention=decomposed for this GPU)";
    return nullptr;
  }
  CUfunction f = nullptr;
  if (!check(api.moduleGetFunction(&f, flash, name.c_str()),
             ("cuModuleGetFunction(" + name + ")").c_str()))
    return nullptr;
  // More than the default 48 KiB of shared memory must be asked for.
  if (!check(api.funcSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(smem)),
             ("cuFuncSetAttribute(" + name + ", " + std::to_string(smem) +
              " bytes of shared memory)").c_str()))
    return nullptr;
  return flashKernels[name] = f;
}

bool CudaSession::Impl::launchFlash(CUfunction f, unsigned gridX, unsigned gridY,
                                    unsigned long long smem, void **params) {
  if (!f || gridX == 0 || gridY == 0)
    return false;
  bool first = error.empty();
  return !check(api.launchKernel(f, gridX, gridY, 1, unsigned(flash::kThreads), 1, 1,
                                 unsigned(smem), stream, params, nullptr),
                "cuLaunchKernel") &&
         first;
}

void CudaSession::attention(const AttentionCall &call) {
  Impl &s = *impl_;
  // For error messages only: built when something failed, not per call.
  auto shape = [&call] {
    return "attention B " + std::to_string(call.b) + ", H " + std::to_string(call.h) + "/" +
           std::to_string(call.hkv) + ", T " + std::to_string(call.tq) + "x" +
           std::to_string(call.tk) + ", D " + std::to_string(call.d);
  };
  if (call.dtype != 2 && call.dtype != 3) {
    if (s.error.empty())
      s.error = "the GPU's fused attention takes bf16 or f16 operands; compile with "
                "--precision=bf16|fp16, or --attention=decomposed (" + shape() + ")";
    return;
  }
  if (!flash::hasKernelFor(call.d)) {
    if (s.error.empty())
      s.error = "the GPU's fused attention has kernels for head sizes 16, 32, 64 and 128 (" +
                shape() + ")";
    return;
  }
  std::string suffix = std::string(call.dtype == 2 ? "bf16" : "f16") + "_d" +
                       std::to_string(call.d);
  flash::Params p{int(call.b),  int(call.h),   int(call.hkv),      int(call.tq),
                  int(call.tk), int(call.causal), float(call.scale)};
  uint64_t buf[8];
  for (int i = 0; i < 8; ++i)
    buf[i] = call.buffers[size_t(i)];
  unsigned queryBlocks = unsigned((call.tq + flash::kRows - 1) / flash::kRows);
  unsigned keyBlocks = unsigned((call.tk + flash::kRows - 1) / flash::kRows);
  if (!call.backward) {
    unsigned long long smem = flash::forwardSmem(int(call.d), 2);
    void *params[] = {&p, &buf[0], &buf[1], &buf[2], &buf[3]};
    if (s.launchFlash(s.flashKernel("lcc_flash_fwd_" + suffix, smem), unsigned(call.b * call.h),
                      queryBlocks, smem, params))
      s.error += " (" + shape() + ", forward)";
    return;
  }
  // lse and delta, one f32 each per query row: allocated by the first
  // (eager) step; captured steps reuse the buffer.
  size_t rows = size_t(call.b * call.h * call.tq);
  if (s.scratchBytes < 2 * rows * sizeof(float)) {
    uint64_t scratch = allocate(2 * rows * sizeof(float));
    if (!scratch)
      return;
    s.scratch = scratch;
    s.scratchBytes = 2 * rows * sizeof(float);
  }
  uint64_t lse = s.scratch, delta = s.scratch + rows * sizeof(float);
  unsigned long long smemQ = flash::backwardQuerySmem(int(call.d), 2);
  void *paramsQ[] = {&p, &buf[0], &buf[1], &buf[2], &buf[3], &buf[4], &buf[5], &lse, &delta};
  if (s.launchFlash(s.flashKernel("lcc_flash_bwd_q_" + suffix, smemQ), unsigned(call.b * call.h),
                    queryBlocks, smemQ, paramsQ))
    s.error += " (" + shape() + ", backward, queries)";
  unsigned long long smemK = flash::backwardKeysSmem(int(call.d), 2);
  void *paramsK[] = {&p, &buf[0], &buf[1], &buf[2], &buf[4], &buf[6], &buf[7], &lse, &delta};
  if (s.launchFlash(s.flashKernel("lcc_flash_bwd_kv_" + suffix, smemK),
                    unsigned(call.b * call.hkv), keyBlocks, smemK, paramsK))
    s.error += " (" + shape() + ", backward, keys)";
}

#endif

} // namespace lcc
