// RUN: lcc-opt %s --lcc-lower-to-linalg -split-input-file -verify-diagnostics

// Attention has no direct lowering: lcc-decompose must run first.
func.func @attention_left(%q: tensor<1x2x4x8xf32>, %kv: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @+1 {{failed to lower 'lcc.attention': run lcc-decompose first}}
  %0 = lcc.attention %q, %kv, %kv : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
  return %0 : tensor<1x2x4x8xf32>
}

// -----

func.func @dynamic_shape(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{failed to lower 'lcc.exp': only static shapes are supported, got 'tensor<?x4xf32>'}}
  %0 = lcc.exp %a : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
