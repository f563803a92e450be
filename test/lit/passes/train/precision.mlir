// RUN: lcc-opt %s --lcc-precision | FileCheck %s
// RUN: lcc-opt %s --lcc-precision=precision=fp16 | FileCheck %s --check-prefix=FP16
// RUN: lcc-opt %s --lcc-precision=precision=fp32 | FileCheck %s --check-prefix=FP32
// RUN: lcc-opt %s --lcc-precision --lcc-autodiff | FileCheck %s --check-prefix=GRAD
// Tests passes/train/Precision.cpp: autocast's policy on @forward.

// Matmul and attention take bf16 copies of their operands and give a bf16
// result, converted back to f32; layer norm, the loss and everything else
// stay f32.
// CHECK: module attributes {lcc.precision = "bf16"}
// CHECK-LABEL: func.func @forward(
// CHECK-SAME:    %[[W:[a-z0-9]+]]: tensor<8x8xf32> {lcc.param = "w"}, %[[X:[a-z0-9]+]]: tensor<1x4x8xf32>
// CHECK:   %[[N:.*]] = lcc.layer_norm %[[X]], %{{.*}}, %{{.*}} : tensor<1x4x8xf32>
// CHECK:   %[[NL:.*]] = lcc.convert %[[N]] : tensor<1x4x8xf32> -> tensor<1x4x8xbf16>
// CHECK:   %[[WL:.*]] = lcc.convert %[[W]] : tensor<8x8xf32> -> tensor<8x8xbf16>
// CHECK:   %[[M:.*]] = lcc.matmul %[[NL]], %[[WL]] : tensor<1x4x8xbf16>, tensor<8x8xbf16> -> tensor<1x4x8xbf16>
// CHECK:   %[[MW:.*]] = lcc.convert %[[M]] : tensor<1x4x8xbf16> -> tensor<1x4x8xf32>
// CHECK:   %[[Q:.*]] = lcc.reshape %[[MW]]
// CHECK:   %[[QL:.*]] = lcc.convert %[[Q]] : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xbf16>
// CHECK-COUNT-2: lcc.convert %[[Q]] : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xbf16>
// CHECK:   %[[A:.*]] = lcc.attention %[[QL]], %{{.*}}, %{{.*}} {causal = true} : tensor<1x2x4x4xbf16>
// CHECK:   %[[AW:.*]] = lcc.convert %[[A]] : tensor<1x2x4x4xbf16> -> tensor<1x2x4x4xf32>
// CHECK:   lcc.reshape %[[AW]]
// CHECK:   lcc.cross_entropy %{{.*}}, %{{.*}} : tensor<1x4x8xf32>, tensor<1x4xi32> -> tensor<f32>
// The f64 matmul is left exact.
// CHECK:   lcc.matmul %{{.*}}, %{{.*}} : tensor<2x2xf64>, tensor<2x2xf64> -> tensor<2x2xf64>

// FP16: lcc.precision = "fp16"
// FP16: lcc.matmul %{{.*}}, %{{.*}} : tensor<1x4x8xf16>, tensor<8x8xf16> -> tensor<1x4x8xf16>
// FP32-NOT: lcc.precision
// FP32-NOT: bf16

// The backward's matmuls are bf16 too, and the weight's gradient arrives in f32.
// GRAD-LABEL: func.func @forward_grad(
// GRAD-DAG: lcc.matmul {{.*}} : tensor<{{.*}}xbf16>, tensor<{{.*}}xbf16> -> tensor<8x8xbf16>
// GRAD-DAG: lcc.convert %{{.*}} : tensor<8x8xbf16> -> tensor<8x8xf32>
// GRAD: return {{.*}} : tensor<f32>, tensor<8x8xf32>

func.func @forward(%w: tensor<8x8xf32> {lcc.param = "w"}, %x: tensor<1x4x8xf32> {lcc.input = "x"},
                   %t: tensor<1x4xi32> {lcc.input = "t"}, %d: tensor<2x2xf64> {lcc.input = "d"}) -> tensor<f32> {
  %one = lcc.fill {value = 1.0 : f64} : tensor<8xf32>
  %zero = lcc.fill {value = 0.0 : f64} : tensor<8xf32>
  %n = lcc.layer_norm %x, %one, %zero : tensor<1x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  %m = lcc.matmul %n, %w : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
  %q = lcc.reshape %m : tensor<1x4x8xf32> -> tensor<1x2x4x4xf32>
  %a = lcc.attention %q, %q, %q {causal = true} : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
  %r = lcc.reshape %a : tensor<1x2x4x4xf32> -> tensor<1x4x8xf32>
  %l = lcc.cross_entropy %r, %t : tensor<1x4x8xf32>, tensor<1x4xi32> -> tensor<f32>
  %e = lcc.matmul %d, %d : tensor<2x2xf64>, tensor<2x2xf64> -> tensor<2x2xf64>
  return %l : tensor<f32>
}
