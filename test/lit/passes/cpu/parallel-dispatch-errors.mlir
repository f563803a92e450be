// RUN: lcc-opt %s --lcc-parallel-dispatch -verify-diagnostics
// Tests passes/cpu/ParallelDispatch.cpp.

// The bounds must be the whole range as constants: the pool splits [0, N)
// itself, so a call covering only part of it cannot be dispatched.
llvm.func @step(%p: !llvm.ptr, %hi: i64) {
  %c0 = llvm.mlir.constant(0 : i64) : i64
  // expected-error @+1 {{lcc-parallel-dispatch: call to @step_k0 must pass the loop bounds 0 and 64 as constants}}
  llvm.call @step_k0(%p, %c0, %hi) : (!llvm.ptr, i64, i64) -> ()
  llvm.return
}
llvm.func internal @step_k0(%a: !llvm.ptr, %lo: i64, %hi: i64)
    attributes {lcc.kernel, lcc.parallel = 64 : i64} {
  llvm.return
}
