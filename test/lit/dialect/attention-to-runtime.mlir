// RUN: lcc-opt %s --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" | FileCheck %s
// Tests dialects/lcc/lowering/Attention.cpp: lcc.attention and
// lcc.attention_grad (kept whole by lcc-decompose{keep-attention}) become one
// call each of the runtime's fused kernels (runtime/cpu/Attention.h): dtype,
// B, H, Hkv, Tq, Tk, D, causal, the bits of the f64 scale, then the
// operands' addresses and new buffers for the results.

// CHECK-DAG: func.func private @lcc_attention_fwd(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64)
// CHECK-DAG: func.func private @lcc_attention_bwd(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64)

// f32 (code 0), grouped heads (H 4, Hkv 2), causal, the default scale
// 1/sqrt(8) (bits 0x3FD6A09E667F3BCC = 4600040671590431692): read in place,
// the result a new buffer.
// CHECK-LABEL: func.func @fwd
// CHECK-SAME: (%[[Q:.*]]: memref<2x4x3x8xf32>, %[[KV:.*]]: memref<2x2x5x8xf32>)
// CHECK-DAG: %[[F32:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[B:.*]] = arith.constant 2 : i64
// CHECK-DAG: %[[H:.*]] = arith.constant 4 : i64
// CHECK-DAG: %[[TQ:.*]] = arith.constant 3 : i64
// CHECK-DAG: %[[TK:.*]] = arith.constant 5 : i64
// CHECK-DAG: %[[D:.*]] = arith.constant 8 : i64
// CHECK-DAG: %[[CAUSAL:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[SCALE:.*]] = arith.constant 4600040671590431692 : i64
// CHECK-NOT: memref.copy
// CHECK: memref.extract_aligned_pointer_as_index %[[Q]]
// CHECK: memref.extract_aligned_pointer_as_index %[[KV]]
// CHECK: memref.extract_aligned_pointer_as_index %[[KV]]
// CHECK: %[[O:.*]] = memref.alloc() {{.*}}: memref<2x4x3x8xf32>
// CHECK: call @lcc_attention_fwd(%[[F32]], %[[B]], %[[H]], %{{.*}}, %[[TQ]], %[[TK]], %[[D]], %[[CAUSAL]], %[[SCALE]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// CHECK: return %[[O]]
func.func @fwd(%q: tensor<2x4x3x8xf32>, %kv: tensor<2x2x5x8xf32>) -> tensor<2x4x3x8xf32> {
  %o = lcc.attention %q, %kv, %kv {causal = true} : tensor<2x4x3x8xf32>, tensor<2x2x5x8xf32>, tensor<2x2x5x8xf32>
  return %o : tensor<2x4x3x8xf32>
}

// bf16 (code 2), not causal, an explicit scale 0.5 (bits 4602678819172646912);
// the gradient call reads five operands and writes three new buffers.
// CHECK-LABEL: func.func @bwd
// CHECK-DAG: %[[BF16:.*]] = arith.constant 2 : i64
// CHECK-DAG: %[[NOTCAUSAL:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[HALF:.*]] = arith.constant 4602678819172646912 : i64
// CHECK: %[[DQ:.*]] = memref.alloc() {{.*}}: memref<1x2x4x8xbf16>
// CHECK: %[[DK:.*]] = memref.alloc() {{.*}}: memref<1x2x4x8xbf16>
// CHECK: %[[DV:.*]] = memref.alloc() {{.*}}: memref<1x2x4x8xbf16>
// CHECK: call @lcc_attention_bwd(%[[BF16]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[NOTCAUSAL]], %[[HALF]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// CHECK: return %[[DQ]], %[[DK]], %[[DV]]
func.func @bwd(%q: tensor<1x2x4x8xbf16>, %k: tensor<1x2x4x8xbf16>, %v: tensor<1x2x4x8xbf16>,
               %o: tensor<1x2x4x8xbf16>, %g: tensor<1x2x4x8xbf16>)
    -> (tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>) {
  %r:3 = lcc.attention_grad %q, %k, %v, %o, %g {scale = 0.5 : f64} : tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16> -> tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>
  return %r#0, %r#1, %r#2 : tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>
}
