//===- CudaLaunch.h - what CUDA train.bin host code calls -------*- C++ -*-===//
//
// The host code of a --target=cuda train.bin (passes/GpuKernels.cpp,
// lcc-gemm-to-library{prefix=lcc_cuda_}) never touches device memory: it
// computes buffer addresses and calls
//
//   lcc_cuda_launch(kernel id, grid, block, argv, argc)   argv: argc device pointers
//   lcc_cuda_sgemm / lcc_cuda_dgemm(27 x i64)             runtime/CpuKernels.h's ABI
//
// (and the collectives of runtime/dist). These forward to the process's
// current CudaBackend: the GPU one (stream launches, cuBLASLt, capture into
// a CUDA graph), or a recorder that keeps the calls, which is how the
// launch sequence is tested on machines without a GPU.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_CUDA_CUDALAUNCH_H
#define LCC_RUNTIME_CUDA_CUDALAUNCH_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

extern "C" {
void lcc_cuda_launch(int64_t kernel, int64_t grid, int64_t block, int64_t argv, int64_t argc);
void lcc_cuda_sgemm(int64_t nb0, int64_t nb1, int64_t nb2, int64_t m, int64_t n, int64_t k,
                    int64_t a, int64_t aOff, int64_t aB0, int64_t aB1, int64_t aB2, int64_t aM,
                    int64_t aK, int64_t b, int64_t bOff, int64_t bB0, int64_t bB1, int64_t bB2,
                    int64_t bK, int64_t bN, int64_t c, int64_t cOff, int64_t cB0, int64_t cB1,
                    int64_t cB2, int64_t cM, int64_t cN);
void lcc_cuda_bf16gemm(int64_t nb0, int64_t nb1, int64_t nb2, int64_t m, int64_t n, int64_t k,
                       int64_t a, int64_t aOff, int64_t aB0, int64_t aB1, int64_t aB2, int64_t aM,
                       int64_t aK, int64_t b, int64_t bOff, int64_t bB0, int64_t bB1, int64_t bB2,
                       int64_t bK, int64_t bN, int64_t c, int64_t cOff, int64_t cB0, int64_t cB1,
                       int64_t cB2, int64_t cM, int64_t cN);
void lcc_cuda_hgemm(int64_t nb0, int64_t nb1, int64_t nb2, int64_t m, int64_t n, int64_t k,
                    int64_t a, int64_t aOff, int64_t aB0, int64_t aB1, int64_t aB2, int64_t aM,
                    int64_t aK, int64_t b, int64_t bOff, int64_t bB0, int64_t bB1, int64_t bB2,
                    int64_t bK, int64_t bN, int64_t c, int64_t cOff, int64_t cB0, int64_t cB1,
                    int64_t cB2, int64_t cM, int64_t cN);
void lcc_cuda_dgemm(int64_t nb0, int64_t nb1, int64_t nb2, int64_t m, int64_t n, int64_t k,
                    int64_t a, int64_t aOff, int64_t aB0, int64_t aB1, int64_t aB2, int64_t aM,
                    int64_t aK, int64_t b, int64_t bOff, int64_t bB0, int64_t bB1, int64_t bB2,
                    int64_t bK, int64_t bN, int64_t c, int64_t cOff, int64_t cB0, int64_t cB1,
                    int64_t cB2, int64_t cM, int64_t cN);
}

namespace lcc {

/// One GEMM in lcc_sgemm's ABI: batch sizes (3), M, N, K, then for A, B and
/// C the base pointer, the offset and the strides of the three batch dims
/// and the two matrix dims, in elements.
struct GemmCall {
  bool f64 = false;
  bool bf16 = false; // A and B bf16, C f32 (lcc --precision=bf16)
  bool f16 = false;  // A and B f16, C f32 (lcc --precision=fp16)
  /// Bytes per element of A/B (0, 1) or C (2).
  size_t elementSize(int operand) const {
    return f64 ? 8 : ((bf16 || f16) && operand < 2) ? 2 : 4;
  }
  std::array<int64_t, 27> args{};
};

/// Where the calls of compiled host code go.
class CudaBackend {
public:
  virtual ~CudaBackend() = default;
  virtual void launch(int64_t kernel, int64_t grid, int64_t block, const uint64_t *args,
                      int64_t argc) = 0;
  virtual void gemm(const GemmCall &call) = 0;
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
    bool isGemm = false;
    Launch launch;
    GemmCall gemm;
  };
  std::vector<Call> calls;

  void launch(int64_t kernel, int64_t grid, int64_t block, const uint64_t *args,
              int64_t argc) override;
  void gemm(const GemmCall &call) override;
};

} // namespace lcc

#endif
