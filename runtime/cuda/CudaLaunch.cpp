//===- CudaLaunch.cpp - what CUDA train.bin host code calls ---------------===//
#include "runtime/cuda/CudaLaunch.h"

#include <cstdio>
#include <cstdlib>

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

GemmCall gemmCall(bool f64, const int64_t (&args)[27], bool bf16 = false, bool f16 = false) {
  GemmCall g;
  g.f64 = f64;
  g.bf16 = bf16;
  g.f16 = f16;
  for (int i = 0; i < 27; ++i)
    g.args[i] = args[i];
  return g;
}
} // namespace

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

} // namespace lcc

#define LCC_GEMM_PARAMS                                                                            \
  int64_t nb0, int64_t nb1, int64_t nb2, int64_t m, int64_t n, int64_t k, int64_t a, int64_t aOff, \
      int64_t aB0, int64_t aB1, int64_t aB2, int64_t aM, int64_t aK, int64_t b, int64_t bOff,      \
      int64_t bB0, int64_t bB1, int64_t bB2, int64_t bK, int64_t bN, int64_t c, int64_t cOff,      \
      int64_t cB0, int64_t cB1, int64_t cB2, int64_t cM, int64_t cN
#define LCC_GEMM_ARGS                                                                              \
  {                                                                                                \
    nb0, nb1, nb2, m, n, k, a, aOff, aB0, aB1, aB2, aM, aK, b, bOff, bB0, bB1, bB2, bK, bN, c,     \
        cOff, cB0, cB1, cB2, cM, cN                                                                \
  }

extern "C" __attribute__((visibility("default"))) void
lcc_cuda_launch(int64_t kernel, int64_t grid, int64_t block, int64_t argv, int64_t argc) {
  lcc::backendOrDie("lcc_cuda_launch")
      .launch(kernel, grid, block, reinterpret_cast<const uint64_t *>(argv), argc);
}

extern "C" __attribute__((visibility("default"))) void lcc_cuda_sgemm(LCC_GEMM_PARAMS) {
  const int64_t args[27] = LCC_GEMM_ARGS;
  lcc::backendOrDie("lcc_cuda_sgemm").gemm(lcc::gemmCall(false, args));
}

extern "C" __attribute__((visibility("default"))) void lcc_cuda_dgemm(LCC_GEMM_PARAMS) {
  const int64_t args[27] = LCC_GEMM_ARGS;
  lcc::backendOrDie("lcc_cuda_dgemm").gemm(lcc::gemmCall(true, args));
}

extern "C" __attribute__((visibility("default"))) void lcc_cuda_bf16gemm(LCC_GEMM_PARAMS) {
  const int64_t args[27] = LCC_GEMM_ARGS;
  lcc::backendOrDie("lcc_cuda_bf16gemm").gemm(lcc::gemmCall(false, args, /*bf16=*/true));
}

extern "C" __attribute__((visibility("default"))) void lcc_cuda_hgemm(LCC_GEMM_PARAMS) {
  const int64_t args[27] = LCC_GEMM_ARGS;
  lcc::backendOrDie("lcc_cuda_hgemm")
      .gemm(lcc::gemmCall(false, args, /*bf16=*/false, /*f16=*/true));
}
