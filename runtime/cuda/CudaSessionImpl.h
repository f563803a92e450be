//===- CudaSessionImpl.h - CudaSession's state (private) -------*- C++ -*-===//
//
// Shared by the files that implement CudaSession: CudaSession.cpp (loading,
// memory, graphs, launches, cuBLASLt, the fused attention) and
// CudaStreams.cpp (waiting, events, the collectives on the communication
// stream). Included only where the CUDA headers exist.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_CUDA_CUDASESSIONIMPL_H
#define LCC_RUNTIME_CUDA_CUDASESSIONIMPL_H

#include "runtime/cuda/CudaSession.h"
#include "runtime/cuda/GemmLayout.h"
#include "runtime/dist/Communicator.h"

#include <cublasLt.h>
#include <cuda.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace lcc {

/// The driver entry points a session uses (dlsym'd by their versioned names:
/// cuda.h maps e.g. cuMemAlloc to cuMemAlloc_v2 with macros).
struct CudaSessionApi {
  decltype(&cuDevicePrimaryCtxRetain) primaryCtxRetain = nullptr;
  decltype(&cuCtxSetCurrent) ctxSetCurrent = nullptr;
  decltype(&cuStreamCreate) streamCreate = nullptr;
  decltype(&cuStreamSynchronize) streamSynchronize = nullptr;
  decltype(&cuModuleLoadData) moduleLoadData = nullptr;
  decltype(&cuModuleGetFunction) moduleGetFunction = nullptr;
  decltype(&cuLaunchKernel) launchKernel = nullptr;
  decltype(&cuMemAlloc) memAlloc = nullptr;
  decltype(&cuMemFree) memFree = nullptr;
  decltype(&cuMemsetD8Async) memsetD8Async = nullptr;
  decltype(&cuMemcpyHtoDAsync) memcpyHtoDAsync = nullptr;
  decltype(&cuMemcpyDtoHAsync) memcpyDtoHAsync = nullptr;
  decltype(&cuStreamBeginCapture) streamBeginCapture = nullptr;
  decltype(&cuStreamEndCapture) streamEndCapture = nullptr;
  decltype(&cuGraphInstantiateWithFlags) graphInstantiate = nullptr;
  decltype(&cuGraphLaunch) graphLaunch = nullptr;
  decltype(&cuGraphDestroy) graphDestroy = nullptr;
  decltype(&cuGraphExecDestroy) graphExecDestroy = nullptr;
  decltype(&cuFuncSetAttribute) funcSetAttribute = nullptr;
  decltype(&cuStreamQuery) streamQuery = nullptr;
  decltype(&cuStreamWaitEvent) streamWaitEvent = nullptr;
  decltype(&cuEventCreate) eventCreate = nullptr;
  decltype(&cuEventRecord) eventRecord = nullptr;
  decltype(&cuMemcpyDtoDAsync) memcpyDtoDAsync = nullptr;
  decltype(&cuEventQuery) eventQuery = nullptr;
  decltype(&cuEventSynchronize) eventSynchronize = nullptr;
  decltype(&cuMemHostAlloc) memHostAlloc = nullptr;
  decltype(&cuMemFreeHost) memFreeHost = nullptr;

  decltype(&cublasLtCreate) ltCreate = nullptr;
  decltype(&cublasLtMatmulDescCreate) ltDescCreate = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) ltDescSet = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) ltLayoutCreate = nullptr;
  decltype(&cublasLtMatrixLayoutSetAttribute) ltLayoutSet = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) ltPrefCreate = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) ltPrefSet = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) ltHeuristic = nullptr;
  decltype(&cublasLtMatmul) ltMatmul = nullptr;
};

struct CudaSession::Impl {
  CudaSessionApi api;
  const CudaDriver *driver = nullptr;
  CudaDevice device;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  CUmodule module = nullptr;
  std::vector<CUfunction> functions;
  std::vector<std::string> names; // of `functions`, for error messages
  std::string loadedFrom;
  std::vector<CUdeviceptr> allocations;
  std::map<int, CUgraphExec> graphs;
  std::string error; // the first failure inside a launch or GEMM (sticky)

  // The fused attention: its module (loaded at the first call), kernels by
  // name, and the scratch its backward keeps lse and delta in.
  CUmodule flash = nullptr;
  std::map<std::string, CUfunction> flashKernels;
  CUdeviceptr scratch = 0;
  size_t scratchBytes = 0;
  CUfunction flashKernel(const std::string &name, unsigned long long smem);
  /// True when this launch failed first (the caller then says which it was).
  bool launchFlash(CUfunction f, unsigned gridX, unsigned gridY, unsigned long long smem,
                   void **params);

  cublasLtHandle_t lt = nullptr;
  CUdeviceptr workspace = 0;
  size_t workspaceBytes = 32u << 20;
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t x = nullptr, y = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool ok = false;
  };
  std::map<std::vector<int64_t>, Plan> plans;

  // Collectives (CudaSession::collective): the communication stream they
  // all run on, in the order the code issues them, the events that fork it
  // from the compute stream and join it back, the started ones by ticket,
  // and the groups with NCCL work enqueued (polled while waiting).
  CUstream comm = nullptr;
  CUevent fork = nullptr, join = nullptr;
  struct Started {
    CUevent done;
    uint64_t in, out;
  };
  std::map<int64_t, Started> started;
  std::vector<CUevent> spareEvents;
  std::set<dist::Communicator *> enqueuedOn;
  double collectiveTimeout = 300;
  CUevent event() {
    CUevent e = nullptr;
    if (!spareEvents.empty()) {
      e = spareEvents.back();
      spareEvents.pop_back();
    } else {
      check(api.eventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    }
    return e;
  }
  /// `to` waits for what was issued on `from` so far.
  bool order(CUstream from, CUstream to, CUevent e) {
    return check(api.eventRecord(e, from), "cuEventRecord") &&
           check(api.streamWaitEvent(to, e, 0), "cuStreamWaitEvent");
  }
  /// Waits until `query` stops saying CUDA_ERROR_NOT_READY. With NCCL work
  /// issued it polls, checking the groups too (a failed or missing peer
  /// leaves NCCL's kernels spinning forever); else it blocks in `block`.
  void wait(const std::function<CUresult()> &query, const std::function<CUresult()> &block,
            const char *what);
  CUevent marks[2] = {nullptr, nullptr}; // recordEvent's
  /// Every started collective was waited for (else a compiler bug, exit 3):
  /// the communication stream has joined the compute stream again.
  void checkJoined();
  /// A collective failed or a peer stopped answering: aborts every group with
  /// NCCL work enqueued (freeing its kernels) and ends the process, exit 4.
  [[noreturn]] void abandon(int worldRank, const std::string &why);
  std::vector<void *> hostAllocations;

  bool check(CUresult r, const char *what) {
    if (r == CUDA_SUCCESS)
      return true;
    if (error.empty())
      error = std::string(what) + " failed: " + driver->errorText(int(r));
    return false;
  }
  bool checkLt(cublasStatus_t s, const char *what) {
    if (s == CUBLAS_STATUS_SUCCESS)
      return true;
    if (error.empty())
      error = std::string(what) + " failed: cublasStatus " + std::to_string(int(s));
    return false;
  }
  const Plan &plan(const GemmCall &call, const std::vector<int64_t> &key, const LtGemm &g,
                   const uint32_t alignment[3]);
};

} // namespace lcc

#endif
