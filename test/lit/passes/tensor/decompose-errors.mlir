// RUN: lcc-opt %s --lcc-decompose -verify-diagnostics -split-input-file

// Repeating key/value heads needs static sizes.
func.func @dynamic_attention(%q: tensor<?x4x3x8xf32>, %kv: tensor<?x2x3x8xf32>) -> tensor<?x4x3x8xf32> {
  // expected-error @+1 {{cannot decompose 'lcc.attention' with dynamic shapes 'tensor<?x4x3x8xf32>' and 'tensor<?x2x3x8xf32>'; expected static [B, H, T, D]}}
  %0 = lcc.attention %q, %kv, %kv {causal = true} : tensor<?x4x3x8xf32>, tensor<?x2x3x8xf32>, tensor<?x2x3x8xf32>
  return %0 : tensor<?x4x3x8xf32>
}

// -----

func.func @dynamic_grad(%q: tensor<?x4x3x8xf32>, %kv: tensor<?x2x3x8xf32>) -> tensor<?x4x3x8xf32> {
  // expected-error @+1 {{cannot decompose 'lcc.attention_grad' with dynamic shapes 'tensor<?x4x3x8xf32>' and 'tensor<?x2x3x8xf32>'; expected static [B, H, T, D]}}
  %r:3 = lcc.attention_grad %q, %kv, %kv, %q, %q : tensor<?x4x3x8xf32>, tensor<?x2x3x8xf32>, tensor<?x2x3x8xf32>, tensor<?x4x3x8xf32>, tensor<?x4x3x8xf32> -> tensor<?x4x3x8xf32>, tensor<?x2x3x8xf32>, tensor<?x2x3x8xf32>
  return %r#0 : tensor<?x4x3x8xf32>
}
