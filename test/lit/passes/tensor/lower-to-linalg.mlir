// RUN: lcc-opt %s --lcc-lower-to-linalg | FileCheck %s

// Indexing maps are printed as aliases at the top of the module.
// CHECK-DAG: #[[ID3:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[BC:.+]] = affine_map<(d0, d1, d2) -> (d1, 0)>
// CHECK-DAG: #[[MML:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[MMR:.+]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
// CHECK-DAG: #[[MMO:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[RED:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>

// Broadcasting reads size-1 dims at index 0 and drops missing leading dims.
// CHECK-LABEL: func.func @add_broadcast
// CHECK:         %[[E:.+]] = tensor.empty() : tensor<2x3x4xf32>
// CHECK:         linalg.generic {indexing_maps = [#[[ID3]], #[[BC]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME:      ins(%arg0, %arg1 : tensor<2x3x4xf32>, tensor<3x1xf32>) outs(%[[E]] : tensor<2x3x4xf32>)
// CHECK:           arith.addf
// CHECK-NOT:     lcc.
func.func @add_broadcast(%a: tensor<2x3x4xf32>, %b: tensor<3x1xf32>) -> tensor<2x3x4xf32> {
  %0 = lcc.add %a, %b : tensor<2x3x4xf32>, tensor<3x1xf32> -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// A rank-2 weight (transposed) against a rank-3 lhs: one contraction, no copies.
// CHECK-LABEL: func.func @matmul_weight_transposed
// CHECK:         %[[Z:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<2x3x5xf32>)
// CHECK:         linalg.generic {indexing_maps = [#[[MML]], #[[MMR]], #[[MMO]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME:      outs(%[[Z]] : tensor<2x3x5xf32>)
// CHECK:           arith.mulf
// CHECK:           arith.addf
func.func @matmul_weight_transposed(%a: tensor<2x3x4xf32>, %w: tensor<5x4xf32>) -> tensor<2x3x5xf32> {
  %0 = lcc.matmul %a, %w {transpose_rhs = true} : tensor<2x3x4xf32>, tensor<5x4xf32> -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// keepdim reduces into the dropped shape and re-inserts the dim as a view.
// CHECK-LABEL: func.func @reduce_sum_keepdim_f64
// CHECK:         linalg.generic {indexing_maps = [#[[ID3]], #[[RED]]], iterator_types = ["parallel", "reduction", "parallel"]}
// CHECK:           arith.addf %{{.+}}, %{{.+}} : f64
// CHECK:         tensor.expand_shape %{{.+}} {{\[\[}}0], [1, 2]] output_shape [2, 1, 4] : tensor<2x4xf64> into tensor<2x1x4xf64>
func.func @reduce_sum_keepdim_f64(%a: tensor<2x3x4xf64>) -> tensor<2x1x4xf64> {
  %0 = lcc.reduce_sum %a {axes = array<i64: 1>, keepdim = true} : tensor<2x3x4xf64> -> tensor<2x1x4xf64>
  return %0 : tensor<2x1x4xf64>
}

// Softmax subtracts the row max before exponentiating.
// CHECK-LABEL: func.func @softmax
// CHECK:         %[[NINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK:         %[[MAXINIT:.+]] = linalg.fill ins(%[[NINF]] : f32)
// CHECK:         %[[MAX:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "reduction"]{{.+}} outs(%[[MAXINIT]] : tensor<4xf32>)
// CHECK:           arith.maximumf
// CHECK:         %[[SUM:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "reduction"]{{.+}} ins(%arg0, %[[MAX]] :
// CHECK:           arith.subf
// CHECK:           math.exp
// CHECK:           arith.addf
// CHECK:         linalg.generic {{.+}} iterator_types = ["parallel", "parallel"]{{.+}} ins(%arg0, %[[MAX]], %[[SUM]] :
// CHECK:           arith.subf
// CHECK:           math.exp
// CHECK:           arith.divf
func.func @softmax(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = lcc.softmax %a : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// Half precision computes transcendental math in f32.
// CHECK-LABEL: func.func @exp_bf16
// CHECK:         arith.extf %{{.+}} : bf16 to f32
// CHECK-NEXT:    math.exp %{{.+}} : f32
// CHECK-NEXT:    arith.truncf %{{.+}} : f32 to bf16
func.func @exp_bf16(%a: tensor<2x3xbf16>) -> tensor<2x3xbf16> {
  %0 = lcc.exp %a : tensor<2x3xbf16>
  return %0 : tensor<2x3xbf16>
}

// Gather clamps indices into [0, size - 1] and reads with tensor.extract.
// CHECK-LABEL: func.func @gather_axis1
// CHECK-DAG:     %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG:     %[[C9:.+]] = arith.constant 9 : index
// CHECK:         linalg.generic {{.+}} ins(%arg1 : tensor<2xi32>) outs(%{{.+}} : tensor<3x2x4xf32>)
// CHECK:           %[[I:.+]] = arith.index_cast %{{.+}} : i32 to index
// CHECK:           %[[LO:.+]] = arith.maxsi %[[I]], %[[C0]] : index
// CHECK:           %[[HI:.+]] = arith.minsi %[[LO]], %[[C9]] : index
// CHECK:           %[[D0:.+]] = linalg.index 0 : index
// CHECK:           %[[D2:.+]] = linalg.index 2 : index
// CHECK:           tensor.extract %arg0[%[[D0]], %[[HI]], %[[D2]]] : tensor<3x10x4xf32>
func.func @gather_axis1(%t: tensor<3x10x4xf32>, %i: tensor<2xi32>) -> tensor<3x2x4xf32> {
  %0 = lcc.gather %t, %i {axis = 1 : i64} : tensor<3x10x4xf32>, tensor<2xi32> -> tensor<3x2x4xf32>
  return %0 : tensor<3x2x4xf32>
}

// Cross-entropy: row max, sum of exp, then the losses of targets !=
// ignore_index summed and those targets counted, each a single-output
// reduction (the GPU runs those as blocks of threads), then their quotient.
// CHECK-LABEL: func.func @cross_entropy
// CHECK:         %[[IGN:.+]] = arith.constant -100 : i64
// CHECK:         %[[S:.+]] = linalg.generic {{.+}} iterator_types = ["reduction"]{{.+}} outs(%{{.+}} : tensor<f32>)
// CHECK:           tensor.extract %arg0
// CHECK:           math.log
// CHECK:           arith.cmpi ne, %{{.+}}, %[[IGN]] : i64
// CHECK:         %[[C:.+]] = linalg.generic {{.+}} iterator_types = ["reduction"]{{.+}} ins(%arg1 : tensor<2xi64>) outs(%{{.+}} : tensor<f32>)
// CHECK:           arith.cmpi ne, %{{.+}}, %[[IGN]] : i64
// CHECK:         linalg.generic {{.+}} ins(%[[S]], %[[C]] : tensor<f32>, tensor<f32>)
// CHECK:           arith.divf
func.func @cross_entropy(%l: tensor<2x8xf32>, %t: tensor<2xi64>) -> tensor<f32> {
  %0 = lcc.cross_entropy %l, %t : tensor<2x8xf32>, tensor<2xi64> -> tensor<f32>
  return %0 : tensor<f32>
}

// The counter-based generator: splitmix64 constants, f64 math, one truncation.
// CHECK-LABEL: func.func @random_normal
// CHECK-DAG:     arith.constant -7046029254386353131 : i64
// CHECK-DAG:     arith.constant -4658895280553007687 : i64
// CHECK-DAG:     arith.constant -7723592293110705685 : i64
// CHECK-DAG:     arith.constant 1099511628211 : i64
// CHECK:         linalg.generic
// CHECK:           linalg.index 0
// CHECK:           arith.shrui
// CHECK:           math.log %{{.+}} : f64
// CHECK:           math.cos %{{.+}} : f64
// CHECK:           arith.truncf %{{.+}} : f64 to f32
func.func @random_normal() -> tensor<4xf32> {
  %seed = arith.constant 1 : i64
  %0 = lcc.random_normal %seed {std = 0.02 : f64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// A seed that is no constant (a layer function's argument) is multiplied by
// the hash's prime once, outside the loop nest, and the body mixes that in.
// CHECK-LABEL: func.func @random_normal_seed_argument
// CHECK-SAME:    (%[[SEED:.+]]: i64)
// CHECK:         %[[PRIME:.+]] = arith.constant 1099511628211 : i64
// CHECK:         %[[MUL:.+]] = arith.muli %[[SEED]], %[[PRIME]] : i64
// CHECK:         linalg.generic
// CHECK:           arith.xori %[[MUL]], %{{.+}} : i64
// CHECK:           arith.xori %[[MUL]], %{{.+}} : i64
// CHECK:           math.cos %{{.+}} : f64
func.func @random_normal_seed_argument(%seed: i64) -> tensor<4xf32> {
  %0 = lcc.random_normal %seed {std = 0.02 : f64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Masked when j > i + (Tk - Tq) = i + 2.
// CHECK-LABEL: func.func @causal_mask
// CHECK-DAG:     %[[FILL:.+]] = arith.constant 0xFFF0000000000000 : f64
// CHECK-DAG:     %[[SHIFT:.+]] = arith.constant 2 : i64
// CHECK:           %[[LIM:.+]] = arith.addi %{{.+}}, %[[SHIFT]] : i64
// CHECK:           %[[M:.+]] = arith.cmpi sgt, %{{.+}}, %[[LIM]] : i64
// CHECK:           arith.select %[[M]], %[[FILL]], %{{.+}} : f64
func.func @causal_mask(%a: tensor<3x5xf64>) -> tensor<3x5xf64> {
  %0 = lcc.causal_mask %a : tensor<3x5xf64>
  return %0 : tensor<3x5xf64>
}

// Shape ops on integer tensors: views where possible.
// CHECK-LABEL: func.func @shape_ops_i32
// CHECK:         linalg.transpose ins(%arg0 : tensor<2x3xi32>) outs(%{{.+}} : tensor<3x2xi32>) permutation = [1, 0]
// CHECK:         %[[E:.+]] = tensor.empty() : tensor<2x4xi32>
// CHECK:         %[[S0:.+]] = tensor.insert_slice %arg0 into %[[E]][0, 0] [2, 3] [1, 1]
// CHECK:         tensor.insert_slice %arg1 into %[[S0]][0, 3] [2, 1] [1, 1]
// CHECK:         tensor.extract_slice %arg0[1, 0] [1, 2] [1, 2] : tensor<2x3xi32> to tensor<1x2xi32>
// CHECK:         tensor.collapse_shape %arg0 {{\[\[}}0, 1]] : tensor<2x3xi32> into tensor<6xi32>
func.func @shape_ops_i32(%a: tensor<2x3xi32>, %b: tensor<2x1xi32>) -> (tensor<3x2xi32>, tensor<2x4xi32>, tensor<1x2xi32>, tensor<6xi32>) {
  %0 = lcc.transpose %a {perm = array<i64: 1, 0>} : tensor<2x3xi32> -> tensor<3x2xi32>
  %1 = lcc.concat %a, %b {axis = 1 : i64} : tensor<2x3xi32>, tensor<2x1xi32> -> tensor<2x4xi32>
  %2 = lcc.slice %a {start = array<i64: 1, 0>, limit = array<i64: 2, 3>, step = array<i64: 1, 2>} : tensor<2x3xi32> -> tensor<1x2xi32>
  %3 = lcc.reshape %a : tensor<2x3xi32> -> tensor<6xi32>
  return %0, %1, %2, %3 : tensor<3x2xi32>, tensor<2x4xi32>, tensor<1x2xi32>, tensor<6xi32>
}

// CHECK-LABEL: func.func @init_and_convert
// CHECK:         arith.constant dense<[1, 2]> : tensor<2xi64>
// CHECK:         linalg.fill ins(%{{.+}} : f64) outs(%{{.+}} : tensor<2xf64>)
// CHECK:         linalg.generic
// CHECK:           %[[IX:.+]] = linalg.index 0 : index
// CHECK:           arith.index_cast %[[IX]] : index to i64
// CHECK:         linalg.generic
// CHECK:           arith.sitofp %{{.+}} : i64 to f32
func.func @init_and_convert() -> (tensor<2xi64>, tensor<2xf64>, tensor<2xf32>) {
  %c = lcc.constant dense<[1, 2]> : tensor<2xi64>
  %f = lcc.fill {value = 0.5 : f64} : tensor<2xf64>
  %i = lcc.iota : tensor<2xi64>
  %v = lcc.convert %i : tensor<2xi64> -> tensor<2xf32>
  return %c, %f, %v : tensor<2xi64>, tensor<2xf64>, tensor<2xf32>
}
