//===- Passes.td - lcc passes ------------------------------*- tablegen -*-===//
//
// One pass per file; the order in which they run is written only in
// Pipelines.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_TD
#define LCC_PASSES_TD

include "mlir/Pass/PassBase.td"

def LccDecomposePass : Pass<"lcc-decompose"> {
  let summary = "Split composite lcc ops into simpler lcc ops";
  let description = [{
    Rewrites `lcc.attention` into matmul, causal_mask and softmax (repeating
    key/value heads for grouped-query attention), so that backends without a
    fused attention kernel can run it.

    ```mlir
    %o = lcc.attention %q, %k, %v {causal = true} : ...
    // becomes
    %s = lcc.matmul %q, %k {transpose_rhs = true} ...
    %m = lcc.causal_mask %s' ...   %p = lcc.softmax %m ...   %o = lcc.matmul %p, %v ...
    ```
  }];
  let dependentDialects = ["::lcc::LccDialect"];
}

def LccLowerToLinalgPass : Pass<"lcc-lower-to-linalg"> {
  let summary = "Lower lcc ops to linalg, tensor, arith and math on tensors";
  let description = [{
    Target-neutral lowering: the result is linalg on tensors that both the CPU
    (LLVM) and the CUDA (NVVM) paths consume. Composite ops that are not
    lowered directly must be decomposed first (`lcc-decompose`); an lcc op
    left behind is an error naming the op.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect"
  ];
}

#endif // LCC_PASSES_TD
