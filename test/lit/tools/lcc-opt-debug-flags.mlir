// lcc-opt accepts the debugging flags users of mlir-opt rely on.
// RUN: lcc-opt %s --lcc-decompose --lcc-lower-to-linalg --mlir-print-ir-after-all -o /dev/null 2>&1 | FileCheck %s
// RUN: lcc-opt %s --pass-pipeline='builtin.module(lcc-lower-pipeline)' --mlir-timing 2>&1 | FileCheck %s --check-prefix=TIMING
// RUN: lcc-opt %s --lcc-cpu-pipeline --mlir-print-ir-before=lcc-lower-to-linalg -o /dev/null 2>&1 | FileCheck %s --check-prefix=BEFORE

// CHECK: IR Dump After LccDecomposePass (lcc-decompose)
// CHECK: lcc.softmax
// CHECK: IR Dump After LccLowerToLinalgPass (lcc-lower-to-linalg)
// CHECK: linalg.generic
// TIMING: Execution time report
// TIMING: LccLowerToLinalgPass
// BEFORE: IR Dump Before LccLowerToLinalgPass (lcc-lower-to-linalg)
// BEFORE-NOT: lcc.attention
// BEFORE: lcc.matmul

func.func @attn(%q: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %0 = lcc.attention %q, %q, %q {causal = true} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
  return %0 : tensor<1x2x4x8xf32>
}
