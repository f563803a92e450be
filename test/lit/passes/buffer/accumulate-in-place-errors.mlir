// RUN: lcc-opt %s --lcc-accumulate-in-place -split-input-file -verify-diagnostics
// Tests passes/buffer/AccumulateInPlace.cpp: it runs before bufferization.

func.func @bufferized(%m: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  // expected-error @+1 {{lcc-accumulate-in-place: runs on tensors, before bufferization}}
  %r = scf.for %k = %c0 to %c4 step %c1 iter_args(%a = %m) -> (memref<8xf32>) {
    scf.yield %a : memref<8xf32>
  } {lcc.micro_batches}
  return
}
