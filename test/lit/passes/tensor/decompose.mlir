// RUN: lcc-opt %s --lcc-decompose | FileCheck %s
// RUN: lcc-opt %s --lcc-decompose=keep-attention | FileCheck %s --check-prefix=KEEP
// RUN: lcc-opt %s --lcc-decompose=keep-attention-min-scores=15 | FileCheck %s --check-prefix=MIN
// With keep-attention-min-scores=15 (what --attention=auto sets, at 512 * 512,
// on the CPU): @mha and @grad (Tq * Tk = 3 * 5) stay whole, @gqa (3 * 3) is
// decomposed.
// MIN-LABEL: func.func @mha
// MIN: lcc.attention
// MIN-LABEL: func.func @gqa
// MIN-NOT: lcc.attention
// MIN: lcc.softmax
// MIN-LABEL: func.func @grad
// MIN: lcc.attention_grad

// Multi-head, causal, default scale 1/sqrt(8).
// CHECK-LABEL: func.func @mha
// CHECK-SAME:    (%[[Q:.+]]: tensor<2x4x3x8xf32>, %[[K:.+]]: tensor<2x4x5x8xf32>, %[[V:.+]]: tensor<2x4x5x8xf32>)
// CHECK:         %[[SCALE:.+]] = lcc.constant dense<0.353553385> : tensor<f32>
// CHECK:         %[[S:.+]] = lcc.matmul %[[Q]], %[[K]] {transpose_rhs = true} : tensor<2x4x3x8xf32>, tensor<2x4x5x8xf32> -> tensor<2x4x3x5xf32>
// CHECK:         %[[SS:.+]] = lcc.mul %[[S]], %[[SCALE]] : tensor<2x4x3x5xf32>, tensor<f32> -> tensor<2x4x3x5xf32>
// CHECK:         %[[M:.+]] = lcc.causal_mask %[[SS]] : tensor<2x4x3x5xf32>
// CHECK:         %[[P:.+]] = lcc.softmax %[[M]] : tensor<2x4x3x5xf32>
// CHECK:         %[[O:.+]] = lcc.matmul %[[P]], %[[V]] : tensor<2x4x3x5xf32>, tensor<2x4x5x8xf32> -> tensor<2x4x3x8xf32>
// CHECK:         return %[[O]]
// CHECK-NOT:     lcc.attention
func.func @mha(%q: tensor<2x4x3x8xf32>, %k: tensor<2x4x5x8xf32>, %v: tensor<2x4x5x8xf32>) -> tensor<2x4x3x8xf32> {
  %0 = lcc.attention %q, %k, %v {causal = true} : tensor<2x4x3x8xf32>, tensor<2x4x5x8xf32>, tensor<2x4x5x8xf32>
  return %0 : tensor<2x4x3x8xf32>
}

// Grouped-query: 6 query heads over 2 key/value heads (G = 3); explicit
// scale, not causal, f64.
// CHECK-LABEL: func.func @gqa
// CHECK-SAME:    (%[[Q:.+]]: tensor<1x6x3x4xf64>, %[[K:.+]]: tensor<1x2x3x4xf64>, %[[V:.+]]: tensor<1x2x3x4xf64>)
// CHECK:         %[[SCALE:.+]] = lcc.constant dense<2.500000e-01> : tensor<f64>
// CHECK:         %[[K5:.+]] = lcc.reshape %[[K]] : tensor<1x2x3x4xf64> -> tensor<1x2x1x3x4xf64>
// CHECK:         %[[KB:.+]] = lcc.broadcast_to %[[K5]] : tensor<1x2x1x3x4xf64> -> tensor<1x2x3x3x4xf64>
// CHECK:         %[[KR:.+]] = lcc.reshape %[[KB]] : tensor<1x2x3x3x4xf64> -> tensor<1x6x3x4xf64>
// CHECK:         %[[V5:.+]] = lcc.reshape %[[V]] : tensor<1x2x3x4xf64> -> tensor<1x2x1x3x4xf64>
// CHECK:         %[[VB:.+]] = lcc.broadcast_to %[[V5]] : tensor<1x2x1x3x4xf64> -> tensor<1x2x3x3x4xf64>
// CHECK:         %[[VR:.+]] = lcc.reshape %[[VB]] : tensor<1x2x3x3x4xf64> -> tensor<1x6x3x4xf64>
// CHECK:         %[[S:.+]] = lcc.matmul %[[Q]], %[[KR]] {transpose_rhs = true} : tensor<1x6x3x4xf64>, tensor<1x6x3x4xf64> -> tensor<1x6x3x3xf64>
// CHECK:         %[[SS:.+]] = lcc.mul %[[S]], %[[SCALE]]
// CHECK-NOT:     lcc.causal_mask
// CHECK:         %[[P:.+]] = lcc.softmax %[[SS]] : tensor<1x6x3x3xf64>
// CHECK:         lcc.matmul %[[P]], %[[VR]] : tensor<1x6x3x3xf64>, tensor<1x6x3x4xf64> -> tensor<1x6x3x4xf64>
func.func @gqa(%q: tensor<1x6x3x4xf64>, %k: tensor<1x2x3x4xf64>, %v: tensor<1x2x3x4xf64>) -> tensor<1x6x3x4xf64> {
  %0 = lcc.attention %q, %k, %v {scale = 0.25 : f64} : tensor<1x6x3x4xf64>, tensor<1x2x3x4xf64>, tensor<1x2x3x4xf64>
  return %0 : tensor<1x6x3x4xf64>
}

// Shared key/value tensor is repeated once; bf16 keeps its element type.
// CHECK-LABEL: func.func @gqa_shared_kv_bf16
// CHECK-COUNT-1: lcc.broadcast_to
// CHECK-NOT:     lcc.broadcast_to
// CHECK:         lcc.causal_mask %{{.+}} : tensor<1x4x2x2xbf16>
func.func @gqa_shared_kv_bf16(%q: tensor<1x4x2x8xbf16>, %kv: tensor<1x1x2x8xbf16>) -> tensor<1x4x2x8xbf16> {
  %0 = lcc.attention %q, %kv, %kv {causal = true} : tensor<1x4x2x8xbf16>, tensor<1x1x2x8xbf16>, tensor<1x1x2x8xbf16>
  return %0 : tensor<1x4x2x8xbf16>
}

// The VJP's op: P recomputed from Q and K (grouped as [B, Hkv, G * Tq, D],
// no repeated heads), the causal mask on a [B, Hkv, G, Tq, Tk] view, then
// dV = P^T dO, dP = dO V^T, dS = P (dP - rowsum(dP P)) scale, dQ = dS K,
// dK = dS^T Q.
// CHECK-LABEL: func.func @grad
// CHECK-SAME:    (%[[Q:.+]]: tensor<1x4x3x8xf32>, %[[K:.+]]: tensor<1x2x5x8xf32>, %[[V:.+]]: tensor<1x2x5x8xf32>, %[[O:.+]]: tensor<1x4x3x8xf32>, %[[G:.+]]: tensor<1x4x3x8xf32>)
// CHECK-DAG:     %[[QR:.+]] = lcc.reshape %[[Q]] : tensor<1x4x3x8xf32> -> tensor<1x2x6x8xf32>
// CHECK-DAG:     %[[GR:.+]] = lcc.reshape %[[G]] : tensor<1x4x3x8xf32> -> tensor<1x2x6x8xf32>
// CHECK-DAG:     %[[SCALE:.+]] = lcc.fill {value = 0.35355339059327373 : f64} : tensor<f32>
// CHECK:         %[[S:.+]] = lcc.matmul %[[QR]], %[[K]] {transpose_rhs = true} : tensor<1x2x6x8xf32>, tensor<1x2x5x8xf32> -> tensor<1x2x6x5xf32>
// CHECK:         %[[SS:.+]] = lcc.mul %[[S]], %[[SCALE]]
// CHECK:         %[[S5:.+]] = lcc.reshape %[[SS]] : tensor<1x2x6x5xf32> -> tensor<1x2x2x3x5xf32>
// CHECK:         %[[M5:.+]] = lcc.causal_mask %[[S5]] : tensor<1x2x2x3x5xf32>
// CHECK:         %[[P5:.+]] = lcc.softmax %[[M5]] : tensor<1x2x2x3x5xf32>
// CHECK:         %[[P:.+]] = lcc.reshape %[[P5]] : tensor<1x2x2x3x5xf32> -> tensor<1x2x6x5xf32>
// CHECK:         %[[DV:.+]] = lcc.matmul %[[P]], %[[GR]] {transpose_lhs = true} : tensor<1x2x6x5xf32>, tensor<1x2x6x8xf32> -> tensor<1x2x5x8xf32>
// CHECK:         %[[DP:.+]] = lcc.matmul %[[GR]], %[[V]] {transpose_rhs = true}
// CHECK:         lcc.reduce_sum
// CHECK:         %[[DQ:.+]] = lcc.matmul %{{.+}}, %[[K]] : tensor<1x2x6x5xf32>, tensor<1x2x5x8xf32> -> tensor<1x2x6x8xf32>
// CHECK:         %[[DQR:.+]] = lcc.reshape %[[DQ]] : tensor<1x2x6x8xf32> -> tensor<1x4x3x8xf32>
// CHECK:         %[[DK:.+]] = lcc.matmul %{{.+}}, %[[QR]] {transpose_lhs = true} : tensor<1x2x6x5xf32>, tensor<1x2x6x8xf32> -> tensor<1x2x5x8xf32>
// CHECK:         return %[[DQR]], %[[DK]], %[[DV]]
// CHECK-NOT:     lcc.attention_grad
// With keep-attention both ops stay for the fused kernels.
// KEEP-LABEL: func.func @mha
// KEEP: lcc.attention %{{.*}} {causal = true}
// KEEP-LABEL: func.func @grad
// KEEP: lcc.attention_grad %{{.*}} {causal = true}
// KEEP-NOT: lcc.matmul
func.func @grad(%q: tensor<1x4x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x8xf32>,
                %o: tensor<1x4x3x8xf32>, %g: tensor<1x4x3x8xf32>)
    -> (tensor<1x4x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>) {
  %r:3 = lcc.attention_grad %q, %k, %v, %o, %g {causal = true} : tensor<1x4x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>, tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32> -> tensor<1x4x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>
  return %r#0, %r#1, %r#2 : tensor<1x4x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>
}
