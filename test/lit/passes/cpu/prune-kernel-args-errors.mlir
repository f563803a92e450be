// RUN: lcc-opt %s --lcc-prune-kernel-args -verify-diagnostics
// Tests passes/cpu/PruneKernelArgs.cpp.

// A kernel whose address is taken may be called where the pass cannot see,
// so its signature must not change.
llvm.func @step(%p: !llvm.ptr) -> !llvm.ptr {
  // expected-error @+1 {{lcc-prune-kernel-args: the address of kernel @step_k0 is taken, so its calls cannot be rewritten}}
  %f = llvm.mlir.addressof @step_k0 : !llvm.ptr
  llvm.call @step_k0(%p, %p) : (!llvm.ptr, !llvm.ptr) -> ()
  llvm.return %f : !llvm.ptr
}
llvm.func internal @step_k0(%a: !llvm.ptr, %b: !llvm.ptr) attributes {lcc.kernel} {
  llvm.return
}
