// RUN: lcc-opt %s --lcc-build-generation="entry=decode_step context=8" | FileCheck %s
// RUN: lcc-opt %s --lcc-build-generation="entry=prefill" | FileCheck %s --check-prefix=PREFILL
// RUN: lcc-opt %s --lcc-build-generation="entry=prefill context=8 symbol=prefill_1" | FileCheck %s --check-prefix=SHORT
// Tests passes/train/BuildGeneration.cpp on a one-layer model at batch 1,
// sequence length 1: a position table, rotary embeddings, grouped-query
// attention (2 query heads share 1 key/value head) and a tied head.

// The decode step: the position is an input, the cache inputs and results.
// CHECK-LABEL: func.func @decode_step(
// CHECK-SAME: %[[WTE:[a-z0-9]+]]: tensor<16x8xf32> {lcc.param = "wte"}, %[[WPE:[a-z0-9]+]]: tensor<8x8xf32> {lcc.param = "wpe"}
// CHECK-SAME: %[[TOK:[a-z0-9]+]]: tensor<1x1xi32> {lcc.input = "tokens"}, %[[POS:[a-z0-9]+]]: tensor<1xi32> {lcc.input = "position"}
// CHECK-SAME: %[[KC:[a-z0-9]+]]: tensor<1x1x8x4xf32> {lcc.input = "cache.k.0"}, %[[VC:[a-z0-9]+]]: tensor<1x1x8x4xf32> {lcc.input = "cache.v.0"})
// CHECK-SAME: -> (tensor<1x1x16xf32> {lcc.output = "logits"}, tensor<1x1x8x4xf32> {lcc.output = "cache.k.0"}, tensor<1x1x8x4xf32> {lcc.output = "cache.v.0"})
// The position table's row at the position, not row 0.
// CHECK: lcc.gather %[[WPE]], %[[POS]] : tensor<8x8xf32>, tensor<1xi32> -> tensor<1x8xf32>
// rope at the position: cos/sin tables (theta 100, D 4: frequencies 1 and 0.1), row 1 = cos(1), cos(0.1)
// and -sin(1), -sin(0.1), sin(1), sin(0.1); rotate_half(x) is the halves swapped.
// CHECK: %[[COS:.*]] = lcc.constant dense<{{\[\[}}1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00], [0.540302277, 0.995004177, 0.540302277, 0.995004177]
// CHECK: %[[C:.*]] = lcc.gather %[[COS]], %[[POS]] : tensor<8x4xf32>, tensor<1xi32> -> tensor<1x4xf32>
// CHECK: %[[SIN:.*]] = lcc.constant dense<{{\[\[}}-0.000000e+00, -0.000000e+00, 0.000000e+00, 0.000000e+00], [-0.841470957, -0.0998334214, 0.841470957, 0.0998334214]
// CHECK: %[[S:.*]] = lcc.gather %[[SIN]], %[[POS]]
// CHECK: %[[LO:.*]] = lcc.slice %[[Q:.*]] {limit = array<i64: 1, 2, 1, 2>, start = array<i64: 0, 0, 0, 0>}
// CHECK: %[[HI:.*]] = lcc.slice %[[Q]] {limit = array<i64: 1, 2, 1, 4>, start = array<i64: 0, 0, 0, 2>}
// CHECK: %[[ROT:.*]] = lcc.concat %[[HI]], %[[LO]] {axis = 3 : i64}
// CHECK: %[[QC:.*]] = lcc.mul %[[Q]], %[[C]]
// CHECK: %[[QS:.*]] = lcc.mul %[[ROT]], %[[S]]
// CHECK: %[[QR:.*]] = lcc.add %[[QC]], %[[QS]]
// CHECK: %[[KR:.*]] = lcc.add
// The new key and value written at row `position` of the cache.
// CHECK: %[[ROW:.*]] = lcc.iota {dim = 2 : i64} : tensor<1x1x8x1xi32>
// CHECK: %[[HERE:.*]] = lcc.cmp "eq", %[[ROW]], %[[POS]]
// CHECK: %[[K:.*]] = lcc.where %[[HERE]], %[[KR]], %[[KC]] : tensor<1x1x8x1xi1>, tensor<1x1x1x4xf32>, tensor<1x1x8x4xf32> -> tensor<1x1x8x4xf32>
// CHECK: %[[V:.*]] = lcc.where %[[HERE]], %{{.*}}, %[[VC]]
// Two query heads grouped on their key/value head, scores over the 8 rows, scale 1/sqrt(4).
// CHECK: %[[QG:.*]] = lcc.reshape %[[QR]] : tensor<1x2x1x4xf32> -> tensor<1x1x2x4xf32>
// CHECK: %[[SC:.*]] = lcc.matmul %[[QG]], %[[K]] {transpose_rhs = true} : tensor<1x1x2x4xf32>, tensor<1x1x8x4xf32> -> tensor<1x1x2x8xf32>
// CHECK: lcc.fill {value = 5.000000e-01 : f64} : tensor<f32>
// Rows past the position masked with -inf before the softmax.
// CHECK: %[[KEYS:.*]] = lcc.iota : tensor<8xi32>
// CHECK: %[[SEEN:.*]] = lcc.cmp "le", %[[KEYS]], %[[POS]]
// CHECK: %[[NEG:.*]] = lcc.fill {value = 0xFFF0000000000000 : f64} : tensor<f32>
// CHECK: %[[M:.*]] = lcc.where %[[SEEN]], %{{.*}}, %[[NEG]]
// CHECK: %[[P:.*]] = lcc.softmax %[[M]]
// CHECK: %[[O:.*]] = lcc.matmul %[[P]], %[[V]] : tensor<1x1x2x8xf32>, tensor<1x1x8x4xf32> -> tensor<1x1x2x4xf32>
// CHECK: lcc.reshape %[[O]] : tensor<1x1x2x4xf32> -> tensor<1x2x1x4xf32>
// CHECK: %[[L:.*]] = lcc.matmul %{{.*}}, %[[WTE]] {transpose_rhs = true}
// CHECK: return %[[L]], %[[K]], %[[V]]
// CHECK-NOT: lcc.cross_entropy

// The prefill: @forward's ops (attention, rope) as they are; the targets go,
// the head multiplies the row at the position; the caches are the keys after rope and the values.
// PREFILL-LABEL: func.func @prefill(
// PREFILL-SAME: %{{.*}}: tensor<1x1xi32> {lcc.input = "tokens"}, %[[POS:[a-z0-9]+]]: tensor<1xi32> {lcc.input = "position"})
// PREFILL-SAME: -> (tensor<1x1x16xf32> {lcc.output = "logits"}, tensor<1x1x1x4xf32> {lcc.output = "cache.k.0"}, tensor<1x1x1x4xf32> {lcc.output = "cache.v.0"})
// PREFILL: %[[KR:.*]] = lcc.rope %{{.*}} : tensor<1x1x1x4xf32>
// PREFILL: %[[Y:.*]] = lcc.attention %{{.*}}, %[[KR]], %[[V:[0-9]+]] {causal = true}
// PREFILL: %[[YF:.*]] = lcc.reshape %[[Y]]
// PREFILL: %[[ROW:.*]] = lcc.gather %[[YF]], %[[POS]] {axis = 1 : i64} : tensor<1x1x8xf32>, tensor<1xi32> -> tensor<1x1x8xf32>
// PREFILL: %[[L:.*]] = lcc.matmul %[[ROW]], %{{.*}} {transpose_rhs = true}
// PREFILL: return %[[L]], %[[KR]], %[[V]]

// A prefill shorter than the context (named by `symbol`) returns the cache
// padded with zero rows to the context, the decode step's shape.
// SHORT-LABEL: func.func @prefill_1(
// SHORT-SAME: -> (tensor<1x1x16xf32> {lcc.output = "logits"}, tensor<1x1x8x4xf32> {lcc.output = "cache.k.0"}, tensor<1x1x8x4xf32> {lcc.output = "cache.v.0"})
// SHORT: %[[KR:.*]] = lcc.rope %{{.*}} : tensor<1x1x1x4xf32>
// SHORT: %[[KZ:.*]] = lcc.fill {value = 0.000000e+00 : f64} : tensor<1x1x7x4xf32>
// SHORT: %[[K:.*]] = lcc.concat %[[KR]], %[[KZ]] {axis = 2 : i64} : tensor<1x1x1x4xf32>, tensor<1x1x7x4xf32> -> tensor<1x1x8x4xf32>
// SHORT: return %{{.*}}, %[[K]], %{{.*}}

func.func @forward(%wte: tensor<16x8xf32> {lcc.param = "wte"}, %wpe: tensor<8x8xf32> {lcc.param = "wpe"},
                   %wq: tensor<8x8xf32> {lcc.param = "wq"}, %wk: tensor<8x4xf32> {lcc.param = "wk"},
                   %wv: tensor<8x4xf32> {lcc.param = "wv"},
                   %tok: tensor<1x1xi32> {lcc.input = "tokens"}, %t: tensor<1x1xi32> {lcc.input = "targets"}) -> tensor<f32> {
  %e = lcc.gather %wte, %tok : tensor<16x8xf32>, tensor<1x1xi32> -> tensor<1x1x8xf32>
  %p = lcc.slice %wpe {limit = array<i64: 1, 8>, start = array<i64: 0, 0>} : tensor<8x8xf32> -> tensor<1x8xf32>
  %x = lcc.add %e, %p : tensor<1x1x8xf32>, tensor<1x8xf32> -> tensor<1x1x8xf32>
  %q = lcc.matmul %x, %wq : tensor<1x1x8xf32>, tensor<8x8xf32> -> tensor<1x1x8xf32>
  %k = lcc.matmul %x, %wk : tensor<1x1x8xf32>, tensor<8x4xf32> -> tensor<1x1x4xf32>
  %v = lcc.matmul %x, %wv : tensor<1x1x8xf32>, tensor<8x4xf32> -> tensor<1x1x4xf32>
  %qh = lcc.reshape %q : tensor<1x1x8xf32> -> tensor<1x2x1x4xf32>
  %kh = lcc.reshape %k : tensor<1x1x4xf32> -> tensor<1x1x1x4xf32>
  %vh = lcc.reshape %v : tensor<1x1x4xf32> -> tensor<1x1x1x4xf32>
  %qr = lcc.rope %qh {theta = 100.0 : f64} : tensor<1x2x1x4xf32>
  %kr = lcc.rope %kh {theta = 100.0 : f64} : tensor<1x1x1x4xf32>
  %y = lcc.attention %qr, %kr, %vh {causal = true} : tensor<1x2x1x4xf32>, tensor<1x1x1x4xf32>, tensor<1x1x1x4xf32>
  %yf = lcc.reshape %y : tensor<1x2x1x4xf32> -> tensor<1x1x8xf32>
  %l = lcc.matmul %yf, %wte {transpose_rhs = true} : tensor<1x1x8xf32>, tensor<16x8xf32> -> tensor<1x1x16xf32>
  %loss = lcc.cross_entropy %l, %t : tensor<1x1x16xf32>, tensor<1x1xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
