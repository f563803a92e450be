//===- NcclCommunicator.cpp - collectives on CUDA buffers over NCCL -------===//
//
// Only compiled when CMake found NCCL and the CUDA runtime. Buffers are
// device pointers of the device createNcclWorld selected.
//
// Hangs are the failure mode NCCL is known for (a missing peer blocks a
// kernel forever), so every communicator is created non-blocking
// (config.blocking = 0) and every wait is a polling loop over
// ncclCommGetAsyncError and cudaStreamQuery with the job's timeout: on an
// error or timeout the communicator is aborted (ncclCommAbort frees the
// stuck kernels) and the call returns a one-line error. Such a communicator
// is broken for good, like a failed Gloo one.
//
// The blocking calls (lcc-run's own: barriers, gathers for an export) run on
// the communicator's own stream, created as a blocking stream, and wait for
// their operation before returning, because the caller reads or reuses the
// buffers right after and because the wait is where timeouts are detected.
// The CUDA target's step does not use them: it enqueues its collectives on
// its communication stream (enqueue(), not waited for, captured into its
// graph; runtime/cuda/CudaStreams.cpp) and polls pollEnqueued() while it
// waits for the step.
//
// Sum order: NCCL's (ring or tree, chosen by size and topology). Every rank
// gets the same bytes, but the order is not rank order, so N-rank results
// are close to, not bitwise equal with, a 1-rank run.
//
//===----------------------------------------------------------------------===//
#include "runtime/dist/NcclCommunicator.h"
#include "runtime/dist/Store.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <thread>
#include <vector>

namespace lcc {
namespace dist {

namespace {

using Clock = std::chrono::steady_clock;

// NCCL and the CUDA runtime are loaded when a job first asks for the nccl
// backend, not linked: an lcc-run built where they are installed must still
// start on machines without them (CPU training, one GPU process), as the
// CUDA driver does (runtime/cuda/CudaDriver.h). The headers give the types.
#define LCC_NCCL_API(X)                                                                            \
  X(ncclAllGather)                                                                                 \
  X(ncclAllReduce) X(ncclBroadcast) X(ncclCommAbort) X(ncclCommCuDevice) X(ncclCommDestroy)        \
      X(ncclCommFinalize) X(ncclCommGetAsyncError) X(ncclCommInitRankConfig) X(ncclGetErrorString) \
          X(ncclGetLastError) X(ncclGetUniqueId) X(ncclGroupEnd) X(ncclGroupStart) X(ncclRecv)     \
              X(ncclReduceScatter) X(ncclSend)
#define LCC_CUDART_API(X)                                                                          \
  X(cudaFree) X(cudaGetDeviceCount) X(cudaGetErrorName) X(cudaGetErrorString) X(cudaGetLastError)  \
  X(cudaMemcpy) X(cudaPointerGetAttributes) X(cudaSetDevice) X(cudaStreamCreate)                  \
  X(cudaStreamDestroy) X(cudaStreamQuery)

struct Api {
#define LCC_FIELD(name) decltype(&::name) name = nullptr;
  LCC_NCCL_API(LCC_FIELD)
  LCC_CUDART_API(LCC_FIELD)
#undef LCC_FIELD
  cudaError_t (*cudaMalloc)(void **, size_t) = nullptr; // (C++ overloads it)
};

Api loaded;
const Api &api() { return loaded; }

/// `override` when given, else the first of `names` (each also under the
/// CUDA toolkit's lib64) that dlopen accepts; fails with the last refusal.
Status openLibrary(const char *override, std::vector<std::string> names, void *&handle) {
  if (override && *override)
    names = {override};
  const char *roots[] = {std::getenv("CUDA_HOME"), std::getenv("CUDA_PATH"), "/usr/local/cuda"};
  for (const char *root : roots)
    if (root && *root)
      for (size_t i = 0, n = names.size(); i < n; ++i)
        if (names[i].find('/') == std::string::npos)
          names.push_back(std::string(root) + "/lib64/" + names[i]);
  std::string why;
  for (const std::string &n : names) {
    if ((handle = dlopen(n.c_str(), RTLD_NOW | RTLD_GLOBAL)))
      return {};
    why = dlerror();
  }
  return Status::failure(why);
}

/// Loads both libraries, once. $LCC_NCCL and $LCC_CUDART name other files.
Status loadLibraries() {
  static const Status loadedOnce = []() -> Status {
    void *cudart = nullptr, *nccl = nullptr;
    if (Status st = openLibrary(std::getenv("LCC_CUDART"),
                                {"libcudart.so.13", "libcudart.so.12", "libcudart.so"}, cudart);
        !st)
      return Status::failure("the CUDA runtime (libcudart.so) cannot be loaded: " + st.message());
    if (Status st = openLibrary(std::getenv("LCC_NCCL"), {"libnccl.so.2", "libnccl.so"}, nccl); !st)
      return Status::failure("NCCL (libnccl.so.2) cannot be loaded: " + st.message());
    std::string missing;
#define LCC_RESOLVE(library, name)                                                                 \
  if (!(loaded.name = reinterpret_cast<decltype(loaded.name)>(dlsym(library, #name))))             \
    missing += std::string(missing.empty() ? "" : ", ") + #name;
#define LCC_NCCL(name) LCC_RESOLVE(nccl, name)
#define LCC_CUDART(name) LCC_RESOLVE(cudart, name)
    LCC_NCCL_API(LCC_NCCL)
    LCC_CUDART_API(LCC_CUDART)
    LCC_CUDART(cudaMalloc)
#undef LCC_CUDART
#undef LCC_NCCL
#undef LCC_RESOLVE
    if (!missing.empty())
      return Status::failure("NCCL or the CUDA runtime lacks " + missing + " (too old?)");
    return {};
  }();
  return loadedOnce;
}

std::string cudaText(cudaError_t e) {
  return std::string(api().cudaGetErrorName(e)) + " (" + api().cudaGetErrorString(e) + ")";
}

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", s);
  return buf;
}

/// cudaMemcpyDefault: the copy of 1-rank groups (and their send-to-self
/// queue in host memory) works between any host and device pointers.
Status deviceCopy(void *dst, const void *src, size_t bytes) {
  cudaError_t e = api().cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
  return e == cudaSuccess ? Status() : Status::failure("cudaMemcpy: " + cudaText(e));
}

ncclDataType_t ncclType(ElementType type) {
  switch (type) {
  case ElementType::F32:
    return ncclFloat32;
  case ElementType::F64:
    return ncclFloat64;
  case ElementType::I32:
    return ncclInt32;
  case ElementType::I64:
    return ncclInt64;
  case ElementType::I1:
    return ncclUint8;
  }
  return ncclUint8;
}

ncclRedOp_t ncclOp(Reduction op) {
  switch (op) {
  case Reduction::Sum:
    return ncclSum;
  case Reduction::Mean:
    return ncclAvg;
  case Reduction::Max:
    return ncclMax;
  case Reduction::Min:
    return ncclMin;
  }
  return ncclSum;
}

/// Polls a non-blocking communicator until its pending work (init,
/// finalize, an enqueue that returned ncclInProgress) is done. Aborts it on
/// error or timeout; "" when done.
std::string waitComm(ncclComm_t comm, double timeout) {
  Clock::time_point deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                  std::chrono::duration<double>(timeout));
  for (;;) {
    ncclResult_t state = ncclSuccess;
    ncclResult_t r = api().ncclCommGetAsyncError(comm, &state);
    if (r != ncclSuccess)
      state = r;
    if (state == ncclSuccess)
      return "";
    if (state != ncclInProgress) {
      std::string why =
          std::string(api().ncclGetErrorString(state)) + ": " + api().ncclGetLastError(comm);
      api().ncclCommAbort(comm);
      return why;
    }
    if (Clock::now() >= deadline) {
      api().ncclCommAbort(comm);
      return "timed out after " + seconds(timeout) + " (did every rank join?)";
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

class NcclCommunicator final : public Communicator {
public:
  NcclCommunicator(std::string name, int worldRank, int rank, int size,
                   std::shared_ptr<TcpStore> store, ncclComm_t comm, cudaStream_t stream,
                   int *scratch, double timeout)
      : Communicator(std::move(name), worldRank), rank_(rank), size_(size),
        store_(std::move(store)), comm_(comm), stream_(stream), scratch_(scratch),
        timeout_(timeout) {}
  ~NcclCommunicator() override {
    if (comm_) { // (a broken communicator was aborted already)
      // Finalize waits for what is still enqueued (a CUDA session
      // synchronizes before it goes); it is polled like everything else and
      // aborts the communicator on failure.
      ncclResult_t r = api().ncclCommFinalize(comm_);
      if (r != ncclSuccess && r != ncclInProgress)
        api().ncclCommAbort(comm_);
      else if (waitComm(comm_, timeout_).empty())
        api().ncclCommDestroy(comm_);
    }
    api().cudaStreamDestroy(stream_);
    api().cudaFree(scratch_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char *backend() const override { return "nccl"; }

  Status allReduce(const void *in, void *out, int64_t count, ElementType type,
                   Reduction op) override {
    return blocking({StreamCollective::AllReduce, in, out, count, type, op, 0});
  }
  Status allGather(const void *in, void *out, int64_t countPerRank, ElementType type) override {
    return blocking({StreamCollective::AllGather, in, out, countPerRank, type, Reduction::Sum, 0});
  }
  Status reduceScatter(const void *in, void *out, int64_t countPerRank, ElementType type,
                       Reduction op) override {
    return blocking({StreamCollective::ReduceScatter, in, out, countPerRank, type, op, 0});
  }
  Status broadcast(const void *in, void *out, int64_t count, ElementType type, int root) override {
    return blocking({StreamCollective::Broadcast, in, out, count, type, Reduction::Sum, root});
  }
  Status send(const void *in, int64_t count, ElementType type, int peer) override {
    return blocking({StreamCollective::Send, in, nullptr, count, type, Reduction::Sum, peer});
  }
  Status recv(void *out, int64_t count, ElementType type, int peer) override {
    return blocking({StreamCollective::Recv, nullptr, out, count, type, Reduction::Sum, peer});
  }
  /// The CUDA target's step: on its stream, not waited for (a graph
  /// captures it). A non-blocking communicator may still be busy enqueuing
  /// when the call returns (ncclInProgress); that is waited for here, on
  /// the host, since the next call on the communicator must not start
  /// before it.
  Status enqueue(const StreamCollective &c, void *stream) override {
    const char *op = streamCollectiveName(c.kind);
    if (Status s = check(c); !s)
      return s;
    if (!brokenCause_.empty())
      return failure(op, "the group failed earlier (" + brokenCause_ + ")");
    if (c.count == 0)
      return {};
    ncclResult_t r = issue(c, static_cast<cudaStream_t>(stream));
    if (r != ncclSuccess && r != ncclInProgress)
      return broken(op, std::string(api().ncclGetErrorString(r)) + ": " +
                            api().ncclGetLastError(comm_));
    if (r == ncclInProgress)
      if (std::string why = waitComm(comm_, timeout_); !why.empty()) { // (aborted it)
        brokenCause_ = why;
        comm_ = nullptr;
        return failure(op, why);
      }
    return {};
  }
  Status enqueueGroupStart() override {
    if (!brokenCause_.empty())
      return failure("send/recv", "the group failed earlier (" + brokenCause_ + ")");
    ncclResult_t r = api().ncclGroupStart();
    if (r != ncclSuccess)
      return broken("send/recv", api().ncclGetErrorString(r));
    return {};
  }
  /// The group's sends and receives are issued here; a non-blocking
  /// communicator may still be enqueuing them (ncclInProgress).
  Status enqueueGroupEnd() override {
    ncclResult_t r = api().ncclGroupEnd();
    if (r != ncclSuccess && r != ncclInProgress)
      return broken("send/recv", std::string(api().ncclGetErrorString(r)) + ": " +
                                     api().ncclGetLastError(comm_));
    if (r == ncclInProgress)
      if (std::string why = waitComm(comm_, timeout_); !why.empty()) {
        brokenCause_ = why;
        comm_ = nullptr;
        return failure("send/recv", why);
      }
    return {};
  }
  Status pollEnqueued() override {
    if (!brokenCause_.empty())
      return failure("collective", "the group failed earlier (" + brokenCause_ + ")");
    ncclResult_t state = ncclSuccess;
    ncclResult_t r = api().ncclCommGetAsyncError(comm_, &state);
    if (r != ncclSuccess)
      state = r;
    if (state != ncclSuccess && state != ncclInProgress)
      return broken("collective", std::string(api().ncclGetErrorString(state)) + ": " +
                                      api().ncclGetLastError(comm_));
    return {};
  }
  void abortEnqueued(const std::string &cause) override {
    if (brokenCause_.empty())
      (void)broken("collective", cause); // recorded: later calls report it
  }
  /// NCCL has no barrier: a one-element all-reduce does the same.
  Status barrier() override {
    return run("barrier", 1, [&] {
      return api().ncclAllReduce(scratch_, scratch_, 1, ncclInt32, ncclSum, comm_, stream_);
    });
  }
  Status subgroup(const std::string &name, const std::vector<int> &members, const std::string &tag,
                  std::unique_ptr<Communicator> &out) override;

  /// Creates the stream and scratch, then the communicator (non-blocking,
  /// polled with the timeout).
  static Status connect(const std::string &name, int worldRank, int rank, int size,
                        const ncclUniqueId &id, std::shared_ptr<TcpStore> store, double timeout,
                        std::unique_ptr<Communicator> &out);

private:
  Status check(const StreamCollective &c) const {
    const char *op = streamCollectiveName(c.kind);
    switch (c.kind) {
    case StreamCollective::AllReduce:
      return checkReduce(op, c.in, c.out, c.count, c.type, c.op);
    case StreamCollective::AllGather:
      return checkGather(op, c.in, c.out, c.count, c.type, false, Reduction::Sum);
    case StreamCollective::ReduceScatter:
      return checkGather(op, c.in, c.out, c.count, c.type, true, c.op);
    case StreamCollective::Broadcast:
      return checkBroadcast(c.in, c.out, c.count, c.type, c.peer);
    case StreamCollective::Send:
      return checkPeer(op, c.in, c.count, c.type, c.peer, false);
    case StreamCollective::Recv:
      return checkPeer(op, c.out, c.count, c.type, c.peer, false);
    }
    return failure(op, "unknown collective");
  }
  /// The NCCL call of `c` on `stream` (arguments checked).
  ncclResult_t issue(const StreamCollective &c, cudaStream_t stream) {
    size_t n = size_t(c.count);
    ncclDataType_t t = ncclType(c.type);
    switch (c.kind) {
    case StreamCollective::AllReduce:
      return api().ncclAllReduce(c.in, c.out, n, t, ncclOp(c.op), comm_, stream);
    case StreamCollective::AllGather:
      return api().ncclAllGather(c.in, c.out, n, t, comm_, stream);
    case StreamCollective::ReduceScatter:
      return api().ncclReduceScatter(c.in, c.out, n, t, ncclOp(c.op), comm_, stream);
    case StreamCollective::Broadcast:
      return api().ncclBroadcast(c.in, c.out, n, t, c.peer, comm_, stream);
    case StreamCollective::Send:
      return api().ncclSend(c.in, n, t, c.peer, comm_, stream);
    case StreamCollective::Recv:
      return api().ncclRecv(c.out, n, t, c.peer, comm_, stream);
    }
    return ncclInvalidArgument;
  }
  /// The blocking calls also serve lcc-run itself (gathering a partitioned
  /// tensor for an export), which passes host memory; NCCL moves device
  /// memory only, so such buffers go through temporary device copies.
  Status blocking(const StreamCollective &c) {
    if (Status s = check(c); !s)
      return s;
    const char *op = streamCollectiveName(c.kind);
    bool hostIn = c.in && !onDevice(c.in), hostOut = c.out && !onDevice(c.out);
    if (!hostIn && !hostOut)
      return run(op, c.count, [&] { return issue(c, stream_); });
    size_t e = elementSize(c.type), n = size_t(c.count) * e, all = n * size_t(size_);
    size_t inBytes = c.kind == StreamCollective::ReduceScatter ? all : n;
    size_t outBytes = c.kind == StreamCollective::AllGather ? all : n;
    StreamCollective d = c;
    void *din = nullptr, *dout = nullptr;
    auto release = [&] {
      api().cudaFree(din);
      if (dout != din)
        api().cudaFree(dout);
    };
    if (hostIn && (api().cudaMalloc(&din, std::max<size_t>(inBytes, 1)) != cudaSuccess ||
                   api().cudaMemcpy(din, c.in, inBytes, cudaMemcpyHostToDevice) != cudaSuccess))
      return release(), failure(op, "staging host memory on the device failed");
    if (hostIn)
      d.in = din;
    if (hostOut) {
      if (c.out == c.in)
        dout = din;
      else if (api().cudaMalloc(&dout, std::max<size_t>(outBytes, 1)) != cudaSuccess)
        return release(), failure(op, "staging host memory on the device failed");
      d.out = dout;
    }
    Status st = run(op, c.count, [&] { return issue(d, stream_); });
    if (st && hostOut &&
        api().cudaMemcpy(c.out, dout, outBytes, cudaMemcpyDeviceToHost) != cudaSuccess)
      st = failure(op, "copying the result back to host memory failed");
    release();
    return st;
  }
  static bool onDevice(const void *p) {
    cudaPointerAttributes a{};
    if (api().cudaPointerGetAttributes(&a, p) != cudaSuccess) {
      api().cudaGetLastError(); // (clears the error a plain host pointer may leave)
      return false;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
  }
  template <typename Enqueue> Status run(const char *op, int64_t count, Enqueue enqueue) {
    if (!brokenCause_.empty())
      return failure(op, "the group failed earlier (" + brokenCause_ + ")");
    if (count == 0)
      return {};
    // The current device is per thread, and the runtime's communication
    // thread (runtime/dist/Collectives.cpp) calls here too: select this
    // communicator's device first.
    int device = 0;
    if (api().ncclCommCuDevice(comm_, &device) == ncclSuccess)
      api().cudaSetDevice(device);
    ncclResult_t r = enqueue();
    if (r != ncclSuccess && r != ncclInProgress)
      return broken(op, std::string(api().ncclGetErrorString(r)) + ": " +
                            api().ncclGetLastError(comm_));
    return finish(op);
  }
  Status finish(const char *op);
  Status broken(const char *op, const std::string &cause) {
    brokenCause_ = cause;
    api().ncclCommAbort(comm_);
    comm_ = nullptr;
    return failure(op, cause);
  }

  int rank_, size_;
  std::shared_ptr<TcpStore> store_;
  ncclComm_t comm_;
  cudaStream_t stream_;
  int *scratch_;
  double timeout_;
  std::string brokenCause_;
};

Status NcclCommunicator::finish(const char *op) {
  Clock::time_point deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                  std::chrono::duration<double>(timeout_));
  int spins = 0;
  for (;;) {
    ncclResult_t state = ncclSuccess;
    ncclResult_t r = api().ncclCommGetAsyncError(comm_, &state);
    if (r != ncclSuccess)
      state = r;
    if (state != ncclSuccess && state != ncclInProgress)
      return broken(op, std::string(api().ncclGetErrorString(state)) + ": " +
                            api().ncclGetLastError(comm_));
    if (state == ncclSuccess) {
      cudaError_t e = api().cudaStreamQuery(stream_);
      if (e == cudaSuccess)
        return {};
      if (e != cudaErrorNotReady)
        return broken(op, "CUDA error " + cudaText(e));
    }
    if (Clock::now() >= deadline)
      return broken(op, "timed out after " + seconds(timeout_) +
                            " (a peer did not take part; the NCCL communicator was aborted)");
    // Spin first (most collectives finish within microseconds), then sleep.
    if (++spins > 1000)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

Status NcclCommunicator::connect(const std::string &name, int worldRank, int rank, int size,
                                 const ncclUniqueId &id, std::shared_ptr<TcpStore> store,
                                 double timeout, std::unique_ptr<Communicator> &out) {
  std::string prefix =
      "connecting group '" + name + "' (" + std::to_string(size) + " ranks) with NCCL failed: ";
  cudaStream_t stream = nullptr;
  if (cudaError_t e = api().cudaStreamCreate(&stream); e != cudaSuccess)
    return Status::failure(prefix + "cudaStreamCreate: " + cudaText(e));
  void *scratch = nullptr;
  if (cudaError_t e = api().cudaMalloc(&scratch, sizeof(int64_t)); e != cudaSuccess) {
    api().cudaStreamDestroy(stream);
    return Status::failure(prefix + "cudaMalloc: " + cudaText(e));
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  ncclResult_t r = api().ncclCommInitRankConfig(&comm, size, id, rank, &config);
  std::string why;
  if (r != ncclSuccess && r != ncclInProgress) {
    why = std::string(api().ncclGetErrorString(r)) + ": " + api().ncclGetLastError(comm);
    if (comm)
      api().ncclCommAbort(comm);
  } else {
    why = waitComm(comm, timeout);
  }
  if (!why.empty()) {
    api().cudaStreamDestroy(stream);
    api().cudaFree(scratch);
    return Status::failure(prefix + why);
  }
  out.reset(new NcclCommunicator(name, worldRank, rank, size, std::move(store), comm, stream,
                                 static_cast<int *>(scratch), timeout));
  return {};
}

/// Member 0 makes the id and publishes it under `key`; the others read it.
Status shareId(TcpStore &store, bool make, const std::string &key, ncclUniqueId &id) {
  if (make) {
    if (ncclResult_t r = api().ncclGetUniqueId(&id); r != ncclSuccess)
      return Status::failure(std::string("ncclGetUniqueId: ") + api().ncclGetErrorString(r));
    return store.set(key, std::vector<char>(id.internal, id.internal + sizeof id.internal));
  }
  std::vector<char> bytes;
  if (Status s = store.get(key, bytes); !s)
    return s;
  if (bytes.size() != sizeof id.internal)
    return Status::failure("store key '" + key + "' does not hold an NCCL unique id");
  std::memcpy(id.internal, bytes.data(), bytes.size());
  return {};
}

Status NcclCommunicator::subgroup(const std::string &name, const std::vector<int> &members,
                                  const std::string &tag, std::unique_ptr<Communicator> &out) {
  int groupRank;
  if (Status s = subgroupRank(name, members, groupRank); !s)
    return s;
  if (members.size() == 1) {
    out = makeLocalCommunicator(name, worldRank(), deviceCopy);
    return {};
  }
  ncclUniqueId id;
  if (Status s = shareId(*store_, groupRank == 0, tag + "/nccl-id", id); !s)
    return s;
  return connect(name, worldRank(), groupRank, int(members.size()), id, store_, timeout_, out);
}

} // namespace

bool haveNccl() { return true; }

Status createNcclWorld(const DistEnv &env, std::unique_ptr<Communicator> &world) {
  if (Status st = loadLibraries(); !st)
    return Status::failure("the nccl backend needs NCCL and the CUDA runtime: " + st.message());
  int devices = 0;
  cudaError_t e = api().cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) {
    std::string why = e == cudaSuccess ? std::string("no CUDA device is visible")
                                       : "cudaGetDeviceCount: " + cudaText(e);
    if (e == cudaErrorInsufficientDriver)
      why += "; is the NVIDIA driver installed?";
    return Status::failure("the nccl backend needs a CUDA device, and none is usable: " + why);
  }
  // One GPU per process: LOCAL_RANK's, or the only one this process sees.
  int device = devices == 1 ? 0 : env.localRank;
  if (device >= devices)
    return Status::failure("LOCAL_RANK=" + std::to_string(env.localRank) + " but only " +
                           std::to_string(devices) + " CUDA devices are visible");
  if ((e = api().cudaSetDevice(device)) != cudaSuccess)
    return Status::failure("api().cudaSetDevice(" + std::to_string(device) + "): " + cudaText(e));
  if (env.worldSize == 1) {
    world = makeLocalCommunicator("world", 0, deviceCopy);
    return {};
  }
  std::unique_ptr<TcpStore> owned;
  Status s =
      TcpStore::create(env.masterAddr, env.masterPort, env.rank == 0, env.timeoutSeconds, owned);
  if (!s)
    return s;
  std::shared_ptr<TcpStore> store(std::move(owned));
  ncclUniqueId id;
  if (!(s = shareId(*store, env.rank == 0, "world/nccl-id", id)))
    return s;
  // Init returns once every rank joined, so all have read the id: no
  // closing barrier is needed (unlike Gloo's).
  return NcclCommunicator::connect("world", env.rank, env.rank, env.worldSize, id, store,
                                   env.timeoutSeconds, world);
}

} // namespace dist
} // namespace lcc
