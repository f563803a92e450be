// Every lcc op round-trips through the custom and the generic printer.
// RUN: lcc-opt %s | lcc-opt | FileCheck %s
// RUN: lcc-opt --mlir-print-op-generic %s | lcc-opt | FileCheck %s

// CHECK-LABEL: func.func @initializers
func.func @initializers() -> (tensor<2x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<5xi32>, tensor<2xf64>) {
  // CHECK: lcc.constant dense<{{\[}}[1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>
  %0 = lcc.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  // CHECK: lcc.fill {value = 1.000000e+00 : f64} : tensor<4xf32>
  %1 = lcc.fill {value = 1.0} : tensor<4xf32>
  // The seed is a value (lcc-outline-layers passes differing ones to a layer).
  // CHECK: %[[S7:.*]] = arith.constant 7 : i64
  // CHECK: lcc.random_normal %[[S7]] {std = 2.000000e-02 : f64} : tensor<4xf32>
  %s7 = arith.constant 7 : i64
  %2 = lcc.random_normal %s7 {std = 0.02} : tensor<4xf32>
  // CHECK: %[[S3:.*]] = arith.constant 3 : i64
  // CHECK: lcc.random_uniform %[[S3]] {high = 1.000000e-01 : f64, low = -1.000000e-01 : f64} : tensor<8xf32>
  %s3 = arith.constant 3 : i64
  %3 = lcc.random_uniform %s3 {low = -0.1, high = 0.1} : tensor<8xf32>
  // CHECK: lcc.iota : tensor<5xi32>
  %4 = lcc.iota : tensor<5xi32>
  // CHECK: lcc.fill {value = 0.000000e+00 : f64} : tensor<2xf64>
  %5 = lcc.fill {value = 0.0} : tensor<2xf64>
  return %0, %1, %2, %3, %4, %5 : tensor<2x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<5xi32>, tensor<2xf64>
}

// CHECK-LABEL: func.func @unary
func.func @unary(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: lcc.neg %{{.*}} : tensor<4x8xf32>
  %0 = lcc.neg %x : tensor<4x8xf32>
  // CHECK: lcc.exp
  %1 = lcc.exp %0 : tensor<4x8xf32>
  // CHECK: lcc.log
  %2 = lcc.log %1 : tensor<4x8xf32>
  // CHECK: lcc.tanh
  %3 = lcc.tanh %2 : tensor<4x8xf32>
  // CHECK: lcc.erf
  %4 = lcc.erf %3 : tensor<4x8xf32>
  // CHECK: lcc.sqrt
  %5 = lcc.sqrt %4 : tensor<4x8xf32>
  // CHECK: lcc.rsqrt
  %6 = lcc.rsqrt %5 : tensor<4x8xf32>
  // CHECK: lcc.relu
  %7 = lcc.relu %6 : tensor<4x8xf32>
  // CHECK: lcc.sigmoid
  %8 = lcc.sigmoid %7 : tensor<4x8xf32>
  // CHECK: lcc.silu
  %9 = lcc.silu %8 : tensor<4x8xf32>
  // CHECK: lcc.gelu %{{.*}} : tensor<4x8xf32>
  %10 = lcc.gelu %9 : tensor<4x8xf32>
  // CHECK: lcc.gelu %{{.*}} {approximate = "tanh"} : tensor<4x8xf32>
  %11 = lcc.gelu %10 {approximate = "tanh"} : tensor<4x8xf32>
  return %11 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @binary
func.func @binary(%a: tensor<2x4x8xf32>, %b: tensor<8xf32>, %c: tensor<4x1xf32>, %s: tensor<f32>) -> tensor<2x4x8xf32> {
  // CHECK: lcc.add %{{.*}}, %{{.*}} : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
  %0 = lcc.add %a, %b : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
  // CHECK: lcc.sub %{{.*}}, %{{.*}} : tensor<2x4x8xf32>, tensor<4x1xf32> -> tensor<2x4x8xf32>
  %1 = lcc.sub %0, %c : tensor<2x4x8xf32>, tensor<4x1xf32> -> tensor<2x4x8xf32>
  // CHECK: lcc.mul %{{.*}}, %{{.*}} : tensor<2x4x8xf32>, tensor<f32> -> tensor<2x4x8xf32>
  %2 = lcc.mul %1, %s : tensor<2x4x8xf32>, tensor<f32> -> tensor<2x4x8xf32>
  // CHECK: lcc.div
  %3 = lcc.div %2, %b : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
  // CHECK: lcc.pow
  %4 = lcc.pow %3, %s : tensor<2x4x8xf32>, tensor<f32> -> tensor<2x4x8xf32>
  // CHECK: lcc.maximum
  %5 = lcc.maximum %4, %b : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
  // CHECK: lcc.minimum
  %6 = lcc.minimum %c, %5 : tensor<4x1xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  // CHECK: lcc.cmp "lt", %{{.*}}, %{{.*}} : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xi1>
  %7 = lcc.cmp "lt", %6, %b : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xi1>
  // CHECK: lcc.where %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x4x8xi1>, tensor<2x4x8xf32>, tensor<f32> -> tensor<2x4x8xf32>
  %8 = lcc.where %7, %6, %s : tensor<2x4x8xi1>, tensor<2x4x8xf32>, tensor<f32> -> tensor<2x4x8xf32>
  return %8 : tensor<2x4x8xf32>
}

// CHECK-LABEL: func.func @convert
func.func @convert(%x: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xbf16>, tensor<4xf32>) {
  // CHECK: lcc.convert %{{.*}} : tensor<4xf32> -> tensor<4xbf16>
  %0 = lcc.convert %x : tensor<4xf32> -> tensor<4xbf16>
  // CHECK: lcc.convert %{{.*}} : tensor<4xi32> -> tensor<4xf32>
  %1 = lcc.convert %i : tensor<4xi32> -> tensor<4xf32>
  return %0, %1 : tensor<4xbf16>, tensor<4xf32>
}

// CHECK-LABEL: func.func @stop_gradient
func.func @stop_gradient(%x: tensor<2x1xf32>, %i: tensor<3xi32>) -> (tensor<2x1xf32>, tensor<3xi32>) {
  // CHECK: lcc.stop_gradient %{{.*}} : tensor<2x1xf32>
  %0 = lcc.stop_gradient %x : tensor<2x1xf32>
  // CHECK: lcc.stop_gradient %{{.*}} : tensor<3xi32>
  %1 = lcc.stop_gradient %i : tensor<3xi32>
  return %0, %1 : tensor<2x1xf32>, tensor<3xi32>
}

// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<2x3x4xf32>) -> (tensor<2xf32>, tensor<2x3x1xf32>, tensor<3xf32>) {
  // CHECK: lcc.reduce_sum %{{.*}} {axes = array<i64: 1, 2>} : tensor<2x3x4xf32> -> tensor<2xf32>
  %0 = lcc.reduce_sum %x {axes = array<i64: 1, 2>} : tensor<2x3x4xf32> -> tensor<2xf32>
  // CHECK: lcc.reduce_mean %{{.*}} {axes = array<i64: -1>, keepdim = true} : tensor<2x3x4xf32> -> tensor<2x3x1xf32>
  %1 = lcc.reduce_mean %x {axes = array<i64: -1>, keepdim = true} : tensor<2x3x4xf32> -> tensor<2x3x1xf32>
  // CHECK: lcc.reduce_max %{{.*}} {axes = array<i64: 0, 2>} : tensor<2x3x4xf32> -> tensor<3xf32>
  %2 = lcc.reduce_max %x {axes = array<i64: 0, 2>} : tensor<2x3x4xf32> -> tensor<3xf32>
  return %0, %1, %2 : tensor<2xf32>, tensor<2x3x1xf32>, tensor<3xf32>
}

// CHECK-LABEL: func.func @nn
func.func @nn(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf32> {
  // CHECK: lcc.softmax %{{.*}} : tensor<2x4x8xf32>
  %0 = lcc.softmax %x : tensor<2x4x8xf32>
  // CHECK: lcc.log_softmax %{{.*}} {axis = 1 : i64} : tensor<2x4x8xf32>
  %1 = lcc.log_softmax %0 {axis = 1} : tensor<2x4x8xf32>
  // CHECK: lcc.layer_norm %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  %2 = lcc.layer_norm %1, %w, %b : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  // CHECK: lcc.rms_norm %{{.*}}, %{{.*}} {eps = 1.000000e-05 : f64} : tensor<2x4x8xf32>, tensor<8xf32>
  %3 = lcc.rms_norm %2, %w {eps = 1.0e-5} : tensor<2x4x8xf32>, tensor<8xf32>
  // CHECK: lcc.rope %{{.*}} {theta = 5.000000e+05 : f64} : tensor<2x4x8xf32>
  %4 = lcc.rope %3 {theta = 500000.0} : tensor<2x4x8xf32>
  // CHECK: lcc.causal_mask %{{.*}} : tensor<2x4x8xf32>
  %5 = lcc.causal_mask %4 : tensor<2x4x8xf32>
  // CHECK: lcc.causal_mask %{{.*}} {fill = -1.000000e+09 : f64} : tensor<2x4x8xf32>
  %6 = lcc.causal_mask %5 {fill = -1.0e9} : tensor<2x4x8xf32>
  return %6 : tensor<2x4x8xf32>
}

// CHECK-LABEL: func.func @linalg
func.func @linalg(%x: tensor<2x4x8xf32>, %w: tensor<16x8xf32>, %q: tensor<2x4x6x8xf32>, %kv: tensor<2x2x6x8xf32>) -> (tensor<2x4x16xf32>, tensor<2x4x6x8xf32>) {
  // CHECK: lcc.matmul %{{.*}}, %{{.*}} {transpose_rhs = true} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
  %0 = lcc.matmul %x, %w {transpose_rhs = true} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
  // CHECK: lcc.attention %{{.*}}, %{{.*}}, %{{.*}} {causal = true} : tensor<2x4x6x8xf32>, tensor<2x2x6x8xf32>, tensor<2x2x6x8xf32>
  %1 = lcc.attention %q, %kv, %kv {causal = true} : tensor<2x4x6x8xf32>, tensor<2x2x6x8xf32>, tensor<2x2x6x8xf32>
  return %0, %1 : tensor<2x4x16xf32>, tensor<2x4x6x8xf32>
}

// CHECK-LABEL: func.func @attention_grad
func.func @attention_grad(%q: tensor<2x4x6x8xf32>, %kv: tensor<2x2x6x8xf32>, %o: tensor<2x4x6x8xf32>, %g: tensor<2x4x6x8xf32>) -> tensor<2x2x6x8xf32> {
  // CHECK: %{{.*}}, %{{.*}}, %{{.*}} = lcc.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {causal = true, scale = 5.000000e-01 : f64} : tensor<2x4x6x8xf32>, tensor<2x2x6x8xf32>, tensor<2x2x6x8xf32>, tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32> -> tensor<2x4x6x8xf32>, tensor<2x2x6x8xf32>, tensor<2x2x6x8xf32>
  %0:3 = lcc.attention_grad %q, %kv, %kv, %o, %g {causal = true, scale = 0.5 : f64} : tensor<2x4x6x8xf32>, tensor<2x2x6x8xf32>, tensor<2x2x6x8xf32>, tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32> -> tensor<2x4x6x8xf32>, tensor<2x2x6x8xf32>, tensor<2x2x6x8xf32>
  return %0#1 : tensor<2x2x6x8xf32>
}

// CHECK-LABEL: func.func @loss
func.func @loss(%logits: tensor<4x5x256xf32>, %t: tensor<4x5xi64>) -> tensor<f32> {
  // CHECK: lcc.cross_entropy %{{.*}}, %{{.*}} {ignore_index = 0 : i64} : tensor<4x5x256xf32>, tensor<4x5xi64> -> tensor<f32>
  %0 = lcc.cross_entropy %logits, %t {ignore_index = 0} : tensor<4x5x256xf32>, tensor<4x5xi64> -> tensor<f32>
  return %0 : tensor<f32>
}

// CHECK-LABEL: func.func @shapes
func.func @shapes(%x: tensor<2x6xf32>, %t: tensor<10x4xf32>, %ids: tensor<3xi32>) -> (tensor<3x4xf32>, tensor<6x2xf32>, tensor<2x2xf32>, tensor<2x12xf32>, tensor<3x2x6xf32>, tensor<3x4xf32>) {
  // CHECK: lcc.reshape %{{.*}} : tensor<2x6xf32> -> tensor<3x4xf32>
  %0 = lcc.reshape %x : tensor<2x6xf32> -> tensor<3x4xf32>
  // CHECK: lcc.transpose %{{.*}} {perm = array<i64: 1, 0>} : tensor<2x6xf32> -> tensor<6x2xf32>
  %1 = lcc.transpose %x {perm = array<i64: 1, 0>} : tensor<2x6xf32> -> tensor<6x2xf32>
  // CHECK: lcc.slice %{{.*}} {limit = array<i64: 2, 5>, start = array<i64: 0, 1>, step = array<i64: 1, 2>} : tensor<2x6xf32> -> tensor<2x2xf32>
  %2 = lcc.slice %x {start = array<i64: 0, 1>, limit = array<i64: 2, 5>, step = array<i64: 1, 2>} : tensor<2x6xf32> -> tensor<2x2xf32>
  // CHECK: lcc.concat %{{.*}}, %{{.*}} {axis = 1 : i64} : tensor<2x6xf32>, tensor<2x6xf32> -> tensor<2x12xf32>
  %3 = lcc.concat %x, %x {axis = 1} : tensor<2x6xf32>, tensor<2x6xf32> -> tensor<2x12xf32>
  // CHECK: lcc.broadcast_to %{{.*}} : tensor<2x6xf32> -> tensor<3x2x6xf32>
  %4 = lcc.broadcast_to %x : tensor<2x6xf32> -> tensor<3x2x6xf32>
  // CHECK: lcc.gather %{{.*}}, %{{.*}} : tensor<10x4xf32>, tensor<3xi32> -> tensor<3x4xf32>
  %5 = lcc.gather %t, %ids : tensor<10x4xf32>, tensor<3xi32> -> tensor<3x4xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<3x4xf32>, tensor<6x2xf32>, tensor<2x2xf32>, tensor<2x12xf32>, tensor<3x2x6xf32>, tensor<3x4xf32>
}

// CHECK-LABEL: func.func @scatter_add
func.func @scatter_add(%g: tensor<2x3x4xf32>, %ids: tensor<2x3xi32>, %h: tensor<5x2x4xbf16>, %j: tensor<2xi64>) -> (tensor<10x4xf32>, tensor<5x3x4xbf16>) {
  // CHECK: lcc.scatter_add %{{.*}}, %{{.*}} : tensor<2x3x4xf32>, tensor<2x3xi32> -> tensor<10x4xf32>
  %0 = lcc.scatter_add %g, %ids : tensor<2x3x4xf32>, tensor<2x3xi32> -> tensor<10x4xf32>
  // CHECK: lcc.scatter_add %{{.*}}, %{{.*}} {axis = -2 : i64} : tensor<5x2x4xbf16>, tensor<2xi64> -> tensor<5x3x4xbf16>
  %1 = lcc.scatter_add %h, %j {axis = -2} : tensor<5x2x4xbf16>, tensor<2xi64> -> tensor<5x3x4xbf16>
  return %0, %1 : tensor<10x4xf32>, tensor<5x3x4xbf16>
}
