//===- GemmLayout.cpp - lcc's GEMM ABI as cuBLASLt calls ------------------===//
#include "runtime/cuda/GemmLayout.h"

namespace lcc {

namespace {

/// The logical rows x cols matrix with element (r, c) at r*rowStride +
/// c*colStride, as a column-major operand; false when neither dimension is
/// contiguous.
bool describe(int64_t rows, int64_t cols, int64_t rowStride, int64_t colStride, LtOperand &o) {
  if (rowStride == 1 || rows == 1)
    o = {false, rows, cols, cols == 1 ? rows : colStride};
  else if (colStride == 1 || cols == 1)
    o = {true, cols, rows, rows == 1 ? cols : rowStride};
  else
    return false;
  return o.ld >= o.rows && o.ld >= 1;
}

} // namespace

LtGemm planLtGemm(const GemmCall &call) {
  LtGemm p;
  const std::array<int64_t, 3> &nb = call.batch;
  int64_t m = call.m, n = call.n, k = call.k;
  const GemmOperand &A = call.a, &B = call.b, &C = call.c;
  LtOperand out;
  if (describe(m, n, C.rowStride, C.colStride, out) && !out.transpose) {
    p.m = m, p.n = n, p.ldc = out.ld;
    if (!describe(m, k, A.rowStride, A.colStride, p.x) ||
        !describe(k, n, B.rowStride, B.colStride, p.y))
      p.error = "a GEMM operand with neither rows nor columns contiguous";
  } else if (describe(n, m, C.colStride, C.rowStride, out) && !out.transpose) {
    p.swapped = true;
    p.m = n, p.n = m, p.ldc = out.ld;
    if (!describe(n, k, B.colStride, B.rowStride, p.x) ||
        !describe(k, m, A.colStride, A.rowStride, p.y))
      p.error = "a GEMM operand with neither rows nor columns contiguous";
  } else {
    p.error = "a GEMM output with neither rows nor columns contiguous";
  }
  p.k = k;
  std::vector<int> dims;
  for (int d = 0; d < 3; ++d)
    if (nb[d] > 1)
      dims.push_back(d);
  bool flat = true;
  for (const GemmOperand *o : {&A, &B, &C})
    for (size_t i = 1; i < dims.size(); ++i)
      flat = flat && o->batchStride[dims[i - 1]] == nb[dims[i]] * o->batchStride[dims[i]];
  int inner = dims.empty() ? -1 : dims.back();
  p.batch = int32_t(flat ? nb[0] * nb[1] * nb[2] : nb[inner]);
  const GemmOperand &X = p.swapped ? B : A, &Y = p.swapped ? A : B;
  p.strideX = inner < 0 ? 0 : X.batchStride[inner];
  p.strideY = inner < 0 ? 0 : Y.batchStride[inner];
  p.strideC = inner < 0 ? 0 : C.batchStride[inner];
  if (!flat)
    p.outer.assign(dims.begin(), dims.end() - 1);
  return p;
}

int64_t ltCalls(const GemmCall &call, const LtGemm &plan) {
  int64_t calls = 1;
  for (int d : plan.outer)
    calls *= call.batch[size_t(d)];
  return calls;
}

uint64_t ltAddress(const GemmCall &call, const LtGemm &plan, int which, int64_t index) {
  int real = which == 2 ? 2 : (which == 0) == plan.swapped ? 1 : 0; // X is B when swapped
  const GemmOperand &o = call.operand(real);
  int64_t e = o.offset;
  for (size_t i = plan.outer.size(); i-- > 0;) {
    int d = plan.outer[i];
    e += (index % call.batch[size_t(d)]) * o.batchStride[size_t(d)];
    index /= call.batch[size_t(d)];
  }
  return o.base + uint64_t(e) * call.elementSize(real);
}

} // namespace lcc
