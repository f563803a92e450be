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

/// The driver and cuBLASLt entry points a session uses, one line each:
/// X(member, the cuda.h / cublasLt.h declaration its type comes from, the
/// symbol dlsym finds; versioned where cuda.h's macros map the name, e.g.
/// cuMemAlloc to cuMemAlloc_v2). CudaSession::create resolves them all.
#define LCC_CUDA_SESSION_DRIVER_API(X) \
  X(primaryCtxRetain, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") \
  X(ctxSetCurrent, cuCtxSetCurrent, "cuCtxSetCurrent") \
  X(streamCreate, cuStreamCreate, "cuStreamCreate") \
  X(streamSynchronize, cuStreamSynchronize, "cuStreamSynchronize") \
  X(moduleLoadData, cuModuleLoadData, "cuModuleLoadData") \
  X(moduleGetFunction, cuModuleGetFunction, "cuModuleGetFunction") \
  X(launchKernel, cuLaunchKernel, "cuLaunchKernel") \
  X(memAlloc, cuMemAlloc, "cuMemAlloc_v2") \
  X(memFree, cuMemFree, "cuMemFree_v2") \
  X(memsetD8Async, cuMemsetD8Async, "cuMemsetD8Async") \
  X(memcpyHtoDAsync, cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2") \
  X(memcpyDtoHAsync, cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2") \
  X(streamBeginCapture, cuStreamBeginCapture, "cuStreamBeginCapture_v2") \
  X(streamEndCapture, cuStreamEndCapture, "cuStreamEndCapture") \
  X(graphInstantiate, cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags") \
  X(graphLaunch, cuGraphLaunch, "cuGraphLaunch") \
  X(graphDestroy, cuGraphDestroy, "cuGraphDestroy") \
  X(graphExecDestroy, cuGraphExecDestroy, "cuGraphExecDestroy") \
  X(funcSetAttribute, cuFuncSetAttribute, "cuFuncSetAttribute") \
  X(streamQuery, cuStreamQuery, "cuStreamQuery") \
  X(streamWaitEvent, cuStreamWaitEvent, "cuStreamWaitEvent") \
  X(eventCreate, cuEventCreate, "cuEventCreate") \
  X(eventRecord, cuEventRecord, "cuEventRecord") \
  X(memcpyDtoDAsync, cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2") \
  X(eventQuery, cuEventQuery, "cuEventQuery") \
  X(eventSynchronize, cuEventSynchronize, "cuEventSynchronize") \
  X(memHostAlloc, cuMemHostAlloc, "cuMemHostAlloc") \
  X(memFreeHost, cuMemFreeHost, "cuMemFreeHost")

#define LCC_CUDA_SESSION_CUBLASLT_API(X) \
  X(ltCreate, cublasLtCreate, "cublasLtCreate") \
  X(ltDescCreate, cublasLtMatmulDescCreate, "cublasLtMatmulDescCreate") \
  X(ltDescSet, cublasLtMatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute") \
  X(ltLayoutCreate, cublasLtMatrixLayoutCreate, "cublasLtMatrixLayoutCreate") \
  X(ltLayoutSet, cublasLtMatrixLayoutSetAttribute, "cublasLtMatrixLayoutSetAttribute") \
  X(ltPrefCreate, cublasLtMatmulPreferenceCreate, "cublasLtMatmulPreferenceCreate") \
  X(ltPrefSet, cublasLtMatmulPreferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute") \
  X(ltHeuristic, cublasLtMatmulAlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic") \
  X(ltMatmul, cublasLtMatmul, "cublasLtMatmul")

struct CudaSessionApi {
#define LCC_DECLARE_ENTRY(member, declaration, symbol) decltype(&declaration) member = nullptr;
  LCC_CUDA_SESSION_DRIVER_API(LCC_DECLARE_ENTRY)
  LCC_CUDA_SESSION_CUBLASLT_API(LCC_DECLARE_ENTRY)
#undef LCC_DECLARE_ENTRY
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
  /// Between an exchange's group_start and group_end (CudaStreams.cpp).
  bool inGroup = false;
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
