// One invalid case per op; each must be rejected with the exact message.
// RUN: lcc-opt %s -split-input-file -verify-diagnostics

func.func @f0(%x: tensor<4xf32>) {
  // expected-error @+1 {{failed to verify that all of {value, result} have same type}}
  %0 = "lcc.constant"() {value = dense<1.0> : tensor<4xf32>} : () -> tensor<5xf32>
  return
}
// -----

func.func @f1() {
  // expected-error @+1 {{requires attribute 'value'}}
  %0 = lcc.fill : tensor<4xf32>
  return
}
// -----

func.func @f2() {
  %s = arith.constant 1 : i64
  // expected-error @+1 {{std must be >= 0, got -1}}
  %0 = lcc.random_normal %s {std = -1.0} : tensor<4xf32>
  return
}
// -----

func.func @f3() {
  %s = arith.constant 1 : i64
  // expected-error @+1 {{needs low < high, got [1, 0.5)}}
  %0 = lcc.random_uniform %s {low = 1.0, high = 0.5} : tensor<4xf32>
  return
}
// -----

func.func @f4() {
  // expected-error @+1 {{dim 2 is out of range for rank 2}}
  %0 = lcc.iota {dim = 2} : tensor<4x4xi32>
  return
}
// -----

func.func @f5(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float values}}
  %0 = lcc.neg %x : tensor<4xi32>
  return
}
// -----

func.func @f6(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float values}}
  %0 = lcc.exp %x : tensor<4xi32>
  return
}
// -----

func.func @f7(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float values}}
  %0 = lcc.log %x : tensor<4xi32>
  return
}
// -----

func.func @f8(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float values}}
  %0 = lcc.tanh %x : tensor<4xi32>
  return
}
// -----

func.func @f9(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float values}}
  %0 = lcc.erf %x : tensor<4xi32>
  return
}
// -----

func.func @f10(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float values}}
  %0 = lcc.sqrt %x : tensor<4xi32>
  return
}
// -----

func.func @f11(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float values}}
  %0 = lcc.rsqrt %x : tensor<4xi32>
  return
}
// -----

func.func @f12(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float values}}
  %0 = lcc.relu %x : tensor<4xi32>
  return
}
// -----

func.func @f13(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float values}}
  %0 = lcc.sigmoid %x : tensor<4xi32>
  return
}
// -----

func.func @f14(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float values}}
  %0 = lcc.silu %x : tensor<4xi32>
  return
}
// -----

func.func @f15(%x: tensor<4xf32>) {
  // expected-error @+1 {{approximate = "fast" is not known; expected "none" (erf) or "tanh"}}
  %0 = lcc.gelu %x {approximate = "fast"} : tensor<4xf32>
  return
}
// -----

func.func @f16(%a: tensor<4x3xf32>, %b: tensor<5xf32>) {
  // expected-error @+1 {{operand shapes [4, 3] and [5] do not broadcast; expected each pair of trailing dimensions to be equal or 1}}
  %0 = lcc.add %a, %b : tensor<4x3xf32>, tensor<5xf32> -> tensor<4x3xf32>
  return
}
// -----

func.func @f17(%a: tensor<4x3xf32>, %b: tensor<5xf32>) {
  // expected-error @+1 {{operand shapes [4, 3] and [5] do not broadcast; expected each pair of trailing dimensions to be equal or 1}}
  %0 = lcc.sub %a, %b : tensor<4x3xf32>, tensor<5xf32> -> tensor<4x3xf32>
  return
}
// -----

func.func @f18(%a: tensor<4x3xf32>, %b: tensor<5xf32>) {
  // expected-error @+1 {{operand shapes [4, 3] and [5] do not broadcast; expected each pair of trailing dimensions to be equal or 1}}
  %0 = lcc.mul %a, %b : tensor<4x3xf32>, tensor<5xf32> -> tensor<4x3xf32>
  return
}
// -----

func.func @f19(%a: tensor<4x3xf32>, %b: tensor<5xf32>) {
  // expected-error @+1 {{operand shapes [4, 3] and [5] do not broadcast; expected each pair of trailing dimensions to be equal or 1}}
  %0 = lcc.div %a, %b : tensor<4x3xf32>, tensor<5xf32> -> tensor<4x3xf32>
  return
}
// -----

func.func @f20(%a: tensor<4x3xf32>, %b: tensor<5xf32>) {
  // expected-error @+1 {{operand shapes [4, 3] and [5] do not broadcast; expected each pair of trailing dimensions to be equal or 1}}
  %0 = lcc.pow %a, %b : tensor<4x3xf32>, tensor<5xf32> -> tensor<4x3xf32>
  return
}
// -----

func.func @f21(%a: tensor<4x3xf32>, %b: tensor<5xf32>) {
  // expected-error @+1 {{operand shapes [4, 3] and [5] do not broadcast; expected each pair of trailing dimensions to be equal or 1}}
  %0 = lcc.maximum %a, %b : tensor<4x3xf32>, tensor<5xf32> -> tensor<4x3xf32>
  return
}
// -----

func.func @f22(%a: tensor<4x3xf32>, %b: tensor<5xf32>) {
  // expected-error @+1 {{operand shapes [4, 3] and [5] do not broadcast; expected each pair of trailing dimensions to be equal or 1}}
  %0 = lcc.minimum %a, %b : tensor<4x3xf32>, tensor<5xf32> -> tensor<4x3xf32>
  return
}
// -----

func.func @f23(%a: tensor<4x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{unknown predicate 'approx'; expected one of eq, ne, lt, le, gt, ge}}
  %0 = lcc.cmp "approx", %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xi1>
  return
}
// -----

func.func @f24(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf64>) {
  // expected-error @+1 {{branches have element types 'f32' and 'f64'; expected the same}}
  %0 = lcc.where %c, %a, %b : tensor<4xi1>, tensor<4xf32>, tensor<4xf64> -> tensor<4xf32>
  return
}
// -----

func.func @f25(%x: tensor<4xf32>) {
  // expected-error @+1 {{changes the shape from [4] to [2, 2]; convert changes only the element type}}
  %0 = lcc.convert %x : tensor<4xf32> -> tensor<2x2xbf16>
  return
}
// -----

func.func @f26(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{axis 2 is out of range for an input of rank 2}}
  %0 = lcc.reduce_sum %x {axes = array<i64: 2>} : tensor<2x3xf32> -> tensor<2xf32>
  return
}
// -----

func.func @f27(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{result type 'tensor<3xf32>' is wrong; expected shape [2] with element type 'f32'}}
  %0 = lcc.reduce_mean %x {axes = array<i64: 1>} : tensor<2x3xf32> -> tensor<3xf32>
  return
}
// -----

func.func @f28(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{axis -2 is listed twice}}
  %0 = lcc.reduce_max %x {axes = array<i64: 0, -2>} : tensor<2x3xf32> -> tensor<3xf32>
  return
}
// -----

func.func @f29(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = lcc.softmax %x {axis = 2} : tensor<2x3xf32>
  return
}
// -----

func.func @f30(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{axis -3 is out of range for rank 2}}
  %0 = lcc.log_softmax %x {axis = -3} : tensor<2x3xf32>
  return
}
// -----

func.func @f31(%x: tensor<2x8xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{weight has shape [4]; expected [8] (the size of the input's last dimension)}}
  %0 = lcc.layer_norm %x, %w, %w : tensor<2x8xf32>, tensor<4xf32>, tensor<4xf32>
  return
}
// -----

func.func @f32(%x: tensor<2x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{eps must be > 0}}
  %0 = lcc.rms_norm %x, %w {eps = 0.0} : tensor<2x8xf32>, tensor<8xf32>
  return
}
// -----

func.func @f33(%a: tensor<2x4x8xf32>, %b: tensor<7x16xf32>) {
  // expected-error @+1 {{contraction sizes differ: lhs [2, 4, 8] has K = 8 but rhs [7, 16] has K = 7}}
  %0 = lcc.matmul %a, %b : tensor<2x4x8xf32>, tensor<7x16xf32> -> tensor<2x4x16xf32>
  return
}
// -----

func.func @f34(%x: tensor<4x7xf32>) {
  // expected-error @+1 {{input [4, 7] must be [..., T, D] with an even head dimension D}}
  %0 = lcc.rope %x : tensor<4x7xf32>
  return
}
// -----

func.func @f35(%x: tensor<4xf32>) {
  // expected-error @+1 {{input [4] must have rank >= 2 ([..., Tq, Tk] scores)}}
  %0 = lcc.causal_mask %x : tensor<4xf32>
  return
}
// -----

func.func @f36(%q: tensor<1x3x4x8xf32>, %k: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{query heads (3) must be a multiple of key/value heads (2)}}
  %0 = lcc.attention %q, %k, %k : tensor<1x3x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
  return
}
// -----

func.func @attention_grad_heads(%q: tensor<1x3x4x8xf32>, %k: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{'lcc.attention_grad' op query [1, 3, 4, 8], key [1, 2, 4, 8] and value [1, 2, 4, 8] are not valid lcc.attention operands}}
  %0:3 = lcc.attention_grad %q, %k, %k, %q, %q : tensor<1x3x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x3x4x8xf32>, tensor<1x3x4x8xf32> -> tensor<1x3x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
  return
}
// -----

func.func @attention_grad_types(%q: tensor<1x4x4x8xf32>, %k: tensor<1x2x4x8xf32>, %g: tensor<1x4x4x4xf32>) {
  // expected-error @+1 {{out and grad_out must have the query's type 'tensor<1x4x4x8xf32>'}}
  %0:3 = lcc.attention_grad %q, %k, %k, %q, %g : tensor<1x4x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x4x4x8xf32>, tensor<1x4x4x4xf32> -> tensor<1x4x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
  return
}
// -----

func.func @f37(%l: tensor<4x5x256xf32>, %t: tensor<4x6xi32>) {
  // expected-error @+1 {{logits [4, 5, 256] and targets [4, 6] do not match; expected logits [..., V] with targets [...]}}
  %0 = lcc.cross_entropy %l, %t : tensor<4x5x256xf32>, tensor<4x6xi32> -> tensor<f32>
  return
}
// -----

func.func @f38(%x: tensor<2x6xf32>) {
  // expected-error @+1 {{cannot reshape [2, 6] (12 elements) to [5, 2] (10 elements)}}
  %0 = lcc.reshape %x : tensor<2x6xf32> -> tensor<5x2xf32>
  return
}
// -----

func.func @f39(%x: tensor<2x6xf32>) {
  // expected-error @+1 {{perm [0, 0] is not a permutation of 0..1}}
  %0 = lcc.transpose %x {perm = array<i64: 0, 0>} : tensor<2x6xf32> -> tensor<2x2xf32>
  return
}
// -----

func.func @f40(%x: tensor<2x6xf32>) {
  // expected-error @+1 {{dim 1: range [4, 8) is not within [0, 6]}}
  %0 = lcc.slice %x {start = array<i64: 0, 4>, limit = array<i64: 2, 8>} : tensor<2x6xf32> -> tensor<2x4xf32>
  return
}
// -----

func.func @f41(%a: tensor<2x6xf32>, %b: tensor<3x5xf32>) {
  // expected-error @+1 {{input 1 has shape [3, 5]; all inputs must match [2, 6] except along axis 0}}
  %0 = lcc.concat %a, %b {axis = 0} : tensor<2x6xf32>, tensor<3x5xf32> -> tensor<5x6xf32>
  return
}
// -----

func.func @f42(%x: tensor<2x6xf32>) {
  // expected-error @+1 {{cannot broadcast [2, 6] to [3, 6]; each input dimension must equal the target's or be 1}}
  %0 = lcc.broadcast_to %x : tensor<2x6xf32> -> tensor<3x6xf32>
  return
}
// -----

func.func @f43(%t: tensor<10x4xf32>, %i: tensor<3xi32>) {
  // expected-error @+1 {{result shape [3, 10] is wrong; expected [3, 4] (input.shape[:axis] + indices.shape + input.shape[axis+1:])}}
  %0 = lcc.gather %t, %i : tensor<10x4xf32>, tensor<3xi32> -> tensor<3x10xf32>
  return
}
// -----

func.func @f44(%g: tensor<3x4xf32>, %i: tensor<3xi32>) {
  // expected-error @+1 {{updates shape [3, 4] is wrong for result [10, 5] and indices [3]; expected [3, 5] (result.shape[:axis] + indices.shape + result.shape[axis+1:])}}
  %0 = lcc.scatter_add %g, %i : tensor<3x4xf32>, tensor<3xi32> -> tensor<10x5xf32>
  return
}
// -----

func.func @f45(%g: tensor<3x4xf32>, %i: tensor<3xi32>) {
  // expected-error @+1 {{axis 2 is out of range for a result of rank 2}}
  %0 = lcc.scatter_add %g, %i {axis = 2} : tensor<3x4xf32>, tensor<3xi32> -> tensor<10x4xf32>
  return
}
// -----

func.func @f46(%g: tensor<3x4xf32>, %i: tensor<3xi32>) {
  // expected-error @+1 {{result [0, 4] has size 0 along axis 0; expected at least 1}}
  %0 = lcc.scatter_add %g, %i : tensor<3x4xf32>, tensor<3xi32> -> tensor<0x4xf32>
  return
}
// -----

func.func @f47(%g: tensor<3x4xf32>, %i: tensor<3xi32>) {
  // expected-error @+1 {{changes the element type from 'f32' to 'f64'; use lcc.convert}}
  %0 = lcc.scatter_add %g, %i : tensor<3x4xf32>, tensor<3xi32> -> tensor<10x4xf64>
  return
}
