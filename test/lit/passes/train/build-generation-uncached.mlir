// RUN: lcc-opt %s --split-input-file --lcc-build-generation="entry=prefill cache=false" | FileCheck %s
// RUN: lcc-opt %s --split-input-file --verify-diagnostics --lcc-build-generation="entry=decode_step context=4 cache=false"
// Tests passes/train/BuildGeneration.cpp with cache=false: a prefill for a
// model whose attention is separate ops (an ONNX export's), returning only
// the logits at `position` (lcc-run runs it again for every token).

// CHECK-LABEL: func.func @prefill(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<16x8xf32> {lcc.param = "wte"}
// CHECK-SAME: %[[TOK:[a-z0-9]+]]: tensor<1x4xi32> {lcc.input = "tokens"}
// CHECK-SAME: %[[POS:[a-z0-9]+]]: tensor<1xi32> {lcc.input = "position"}
// CHECK-SAME: -> (tensor<1x1x16xf32> {lcc.output = "logits"})
// CHECK: %[[X:.*]] = lcc.softmax
// CHECK: %[[ROW:.*]] = lcc.gather %[[X]], %[[POS]] {axis = 1 : i64} : tensor<1x4x8xf32>, tensor<1xi32> -> tensor<1x1x8xf32>
// CHECK: %[[L:.*]] = lcc.matmul %[[ROW]], %[[W]] {transpose_rhs = true} : tensor<1x1x8xf32>, tensor<16x8xf32> -> tensor<1x1x16xf32>
// CHECK: return %[[L]]

func.func @forward(%wte: tensor<16x8xf32> {lcc.param = "wte"},
                   %tok: tensor<1x4xi32> {lcc.input = "tokens"}, %t: tensor<1x4xi32> {lcc.input = "targets"}) -> tensor<f32> {
  %e = lcc.gather %wte, %tok : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
  %x = lcc.softmax %e {axis = 2} : tensor<1x4x8xf32>
  %l = lcc.matmul %x, %wte {transpose_rhs = true} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
  // expected-error @+1 {{lcc-build-generation: decode_step needs @forward at sequence length 1, not 4}}
  %loss = lcc.cross_entropy %l, %t : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A decode step needs the cache that cache=false leaves out.
// expected-error @+1 {{lcc-build-generation: decode_step reads the KV cache: it cannot be made with cache=false}}
func.func @forward(%wte: tensor<16x8xf32> {lcc.param = "wte"},
                   %tok: tensor<1x1xi32> {lcc.input = "tokens"}, %t: tensor<1x1xi32> {lcc.input = "targets"}) -> tensor<f32> {
  %e = lcc.gather %wte, %tok : tensor<16x8xf32>, tensor<1x1xi32> -> tensor<1x1x8xf32>
  %x = lcc.softmax %e {axis = 2} : tensor<1x1x8xf32>
  %l = lcc.matmul %x, %wte {transpose_rhs = true} : tensor<1x1x8xf32>, tensor<16x8xf32> -> tensor<1x1x16xf32>
  %loss = lcc.cross_entropy %l, %t : tensor<1x1x16xf32>, tensor<1x1xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
