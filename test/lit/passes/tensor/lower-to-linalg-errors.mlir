// RUN: lcc-opt %s --lcc-lower-to-linalg -split-input-file -verify-diagnostics

func.func @dynamic_shape(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{failed to lower 'lcc.exp': only static shapes are supported, got 'tensor<?x4xf32>'}}
  %0 = lcc.exp %a : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
