// RUN: lcc-opt %s --lcc-lower-to-linalg | FileCheck %s --check-prefix=LINALG
// RUN: lcc-opt %s --lcc-cpu-pipeline | FileCheck %s --check-prefix=CPU
// RUN: sed -e 's/xf32>/xf64>/g' %s | lcc-opt --lcc-cpu-pipeline | FileCheck %s --check-prefix=CPU
// RUN: sed -e 's/xf32>/xbf16>/g' %s | lcc-opt --lcc-cpu-pipeline | FileCheck %s --check-prefix=CPU

// scatter_add is one scf.for over the index positions: clamp the id as
// gather does, then add a [P, 1, Q] slice of the updates into that row of a
// zero-filled accumulator carried by the loop (in place after bufferization).
// LINALG-LABEL: func.func @scatter_axis1
// LINALG-DAG:     %[[C0:.+]] = arith.constant 0 : index
// LINALG-DAG:     %[[C9:.+]] = arith.constant 9 : index
// LINALG-DAG:     %[[C2:.+]] = arith.constant 2 : index
// LINALG:         %[[Z:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<3x10x4xf32>)
// LINALG:         scf.for %[[J:.+]] = %[[C0]] to %[[C2]] step %{{.+}} iter_args(%[[ACC:.+]] = %[[Z]]) -> (tensor<3x10x4xf32>)
// LINALG:           %[[ID:.+]] = tensor.extract %arg1[%[[J]]] : tensor<2xi32>
// LINALG:           %[[I:.+]] = arith.index_cast %[[ID]] : i32 to index
// LINALG:           %[[LO:.+]] = arith.maxsi %[[I]], %[[C0]] : index
// LINALG:           %[[HI:.+]] = arith.minsi %[[LO]], %[[C9]] : index
// LINALG:           %[[U:.+]] = tensor.extract_slice %arg0[0, %[[J]], 0] [3, 1, 4] [1, 1, 1]
// LINALG:           %[[R:.+]] = tensor.extract_slice %[[ACC]][0, %[[HI]], 0] [3, 1, 4] [1, 1, 1]
// LINALG:           %[[S:.+]] = linalg.generic {{.+}} ins(%[[U]] : tensor<3x1x4xf32>) outs(%[[R]] : tensor<3x1x4xf32>)
// LINALG:             arith.addf
// LINALG:           tensor.insert_slice %[[S]] into %[[ACC]][0, %[[HI]], 0] [3, 1, 4] [1, 1, 1]
// LINALG:           scf.yield
func.func @scatter_axis1(%u: tensor<3x2x4xf32>, %i: tensor<2xi32>) -> tensor<3x10x4xf32> {
  %0 = lcc.scatter_add %u, %i {axis = 1 : i64} : tensor<3x2x4xf32>, tensor<2xi32> -> tensor<3x10x4xf32>
  return %0 : tensor<3x10x4xf32>
}

// Multi-dimensional ids (an embedding gradient) collapse to one loop.
// LINALG-LABEL: func.func @embedding_grad
// LINALG:         tensor.collapse_shape %arg1 {{\[\[}}0, 1]] : tensor<2x3xi64> into tensor<6xi64>
// LINALG:         scf.for
// LINALG-NOT:     lcc.
func.func @embedding_grad(%g: tensor<2x3x4xf32>, %ids: tensor<2x3xi64>) -> tensor<5x4xf32> {
  %0 = lcc.scatter_add %g, %ids : tensor<2x3x4xf32>, tensor<2x3xi64> -> tensor<5x4xf32>
  return %0 : tensor<5x4xf32>
}

// The whole CPU pipeline takes it to the LLVM dialect (f32, f64, bf16).
// CPU-NOT: {{^ *(%[^ ]+ = )?lcc\.}}
// CPU-NOT: scf.
// CPU-NOT: tensor.
// CPU:     llvm.func @scatter_axis1(
// CPU:     llvm.func @embedding_grad(
// CPU-NOT: {{^ *(%[^ ]+ = )?lcc\.}}
// CPU-NOT: scf.
// CPU-NOT: tensor.
