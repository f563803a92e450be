//===- Passes.td - lcc passes ------------------------------*- tablegen -*-===//
//
// One pass per file; the order in which they run is written only in
// Pipelines.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_TD
#define LCC_PASSES_TD

include "mlir/Pass/PassBase.td"

def LccAutodiffPass : Pass<"lcc-autodiff", "::mlir::ModuleOp"> {
  let summary = "Reverse-mode autodiff: @F(params, batch) -> loss gives @F_grad";
  let description = [{
    For the function named by `function`, whose arguments carry
    `{lcc.param = "name"}` (trainable unless also `{lcc.frozen}`) and which
    returns a rank-0 float loss, adds a public function `@<function>_grad`
    with the same arguments returning the loss and the gradient of every
    trainable parameter, in argument order, each result tagged
    `{lcc.grad_of = "name"}`. `@<function>` is left unchanged.

    The forward ops are cloned into the new function and the backward is
    appended: a reverse sweep that asks each op on a path from a trainable
    parameter to the loss for its VJP (`VjpOpInterface`), accumulating
    fan-out with `lcc.add`. Nothing is built for frozen parameters, integer
    operands or values that do not reach the loss; a parameter that does not
    influence the loss gets `lcc.fill 0`. An op on such a path without a VJP
    is an error naming the op.

    ```mlir
    func.func @forward(%w: tensor<4xf32> {lcc.param = "w"}, %x: tensor<4xf32> {lcc.input = "x"}) -> tensor<f32>
    // adds
    func.func @forward_grad(...) -> (tensor<f32>, tensor<4xf32> {lcc.grad_of = "w"})
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"forward\"",
           "The function to differentiate">,
  ];
  let dependentDialects = ["::lcc::LccDialect"];
}

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
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    // scatter_add lowers to an scf.for over its indices.
    "::mlir::scf::SCFDialect"
  ];
}

#endif // LCC_PASSES_TD
