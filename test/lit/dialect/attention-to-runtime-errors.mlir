// RUN: lcc-opt %s --one-shot-bufferize="bufferize-function-boundaries" -verify-diagnostics
// Tests dialects/lcc/lowering/Attention.cpp: the runtime function's name is
// taken by a function of another signature; the call would not link.

// expected-error @+1 {{@lcc_attention_fwd is defined with another signature than the runtime's (runtime/dist/Collectives.h, runtime/cpu/Attention.h)}}
func.func private @lcc_attention_fwd(i64)

func.func @fwd(%q: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @+1 {{failed to bufferize op}}
  %o = lcc.attention %q, %q, %q : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}
