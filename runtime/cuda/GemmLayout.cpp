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

// Operand fields in the call: base, offset, 3 batch strides, row and column
// strides of A (6), B (13) and C (20).
const int64_t *operand(const GemmCall &call, int which) { return &call.args[6 + 7 * which]; }

} // namespace

LtGemm planLtGemm(const GemmCall &call) {
  LtGemm p;
  const auto &a = call.args;
  int64_t nb[3] = {a[0], a[1], a[2]};
  int64_t m = a[3], n = a[4], k = a[5];
  const int64_t *A = operand(call, 0), *B = operand(call, 1), *C = operand(call, 2);
  LtOperand out;
  if (describe(m, n, C[5], C[6], out) && !out.transpose) {
    p.m = m, p.n = n, p.ldc = out.ld;
    if (!describe(m, k, A[5], A[6], p.x) || !describe(k, n, B[5], B[6], p.y))
      p.error = "a GEMM operand with neither rows nor columns contiguous";
  } else if (describe(n, m, C[6], C[5], out) && !out.transpose) {
    p.swapped = true;
    p.m = n, p.n = m, p.ldc = out.ld;
    if (!describe(n, k, B[6], B[5], p.x) || !describe(k, m, A[6], A[5], p.y))
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
  for (const int64_t *o : {A, B, C})
    for (size_t i = 1; i < dims.size(); ++i)
      flat = flat && o[2 + dims[i - 1]] == nb[dims[i]] * o[2 + dims[i]];
  int inner = dims.empty() ? -1 : dims.back();
  p.batch = int32_t(flat ? nb[0] * nb[1] * nb[2] : nb[inner]);
  const int64_t *X = p.swapped ? B : A, *Y = p.swapped ? A : B;
  p.strideX = inner < 0 ? 0 : X[2 + inner];
  p.strideY = inner < 0 ? 0 : Y[2 + inner];
  p.strideC = inner < 0 ? 0 : C[2 + inner];
  if (!flat)
    p.outer.assign(dims.begin(), dims.end() - 1);
  return p;
}

int64_t ltCalls(const GemmCall &call, const LtGemm &plan) {
  int64_t calls = 1;
  for (int d : plan.outer)
    calls *= call.args[size_t(d)];
  return calls;
}

uint64_t ltAddress(const GemmCall &call, const LtGemm &plan, int which, int64_t index) {
  int real = which == 2 ? 2 : (which == 0) == plan.swapped ? 1 : 0; // X is B when swapped
  const int64_t *o = operand(call, real);
  int64_t e = o[1];
  for (size_t i = plan.outer.size(); i-- > 0;) {
    int d = plan.outer[i];
    e += (index % call.args[size_t(d)]) * o[2 + d];
    index /= call.args[size_t(d)];
  }
  return uint64_t(o[0]) + uint64_t(e) * call.elementSize(real);
}

} // namespace lcc
