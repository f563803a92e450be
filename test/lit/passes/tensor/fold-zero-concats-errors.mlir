// RUN: lcc-opt %s --lcc-fold-zero-concats -verify-diagnostics
// Tests passes/tensor/FoldZeroConcats.cpp: an add whose parts with values straddle
// the other side's boundaries stays a full-size add, and says why.
func.func @straddle(%a: tensor<3x6xf32>, %b: tensor<3x2xf32>) -> tensor<3x8xf32> {
  %z2 = lcc.fill {value = 0.0 : f64} : tensor<3x2xf32>
  %z6 = lcc.fill {value = 0.0 : f64} : tensor<3x6xf32>
  %x = lcc.concat %a, %z2 {axis = 1 : i64} : tensor<3x6xf32>, tensor<3x2xf32> -> tensor<3x8xf32>
  %y = lcc.concat %z2, %b, %z2, %z2 {axis = 1 : i64} : tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32> -> tensor<3x8xf32>
  // expected-remark @+1 {{lcc-fold-zero-concats: left as an add: a part with values spans a boundary of the other concat}}
  %s = lcc.add %x, %y : tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %s : tensor<3x8xf32>
}
