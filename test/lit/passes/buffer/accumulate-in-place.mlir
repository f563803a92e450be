// RUN: lcc-opt %s --lcc-accumulate-in-place --lcc-clone-fills | FileCheck %s
// Tests passes/buffer/AccumulateInPlace.cpp, and lcc-clone-fills after it (as in
// the pipelines) on the carried sums' zero fills.

#id = affine_map<(d0) -> (d0)>

// Both sums start from one (CSE-merged) zero fill: each gets a fill of its
// own. The first sum's next value reads the carried value with the identity
// map and never its init: it becomes the init (one buffer for the whole
// loop). The second reads its init (out += g): left alone, as is the loop
// that is not over micro-batches.
// CHECK-LABEL: func.func @sums(
// CHECK:         %[[E0:.*]] = tensor.empty() : tensor<8xf32>
// CHECK:         %[[Z:.*]] = linalg.fill {{.*}} outs(%[[E0]]
// CHECK:         %[[E1:.*]] = tensor.empty() : tensor<8xf32>
// CHECK-NEXT:    %[[Z1:.*]] = linalg.fill {{.*}} outs(%[[E1]]
// CHECK-NEXT:    %[[E2:.*]] = tensor.empty() : tensor<8xf32>
// CHECK-NEXT:    %[[Z2:.*]] = linalg.fill {{.*}} outs(%[[E2]]
// CHECK-NEXT:    scf.for {{.*}} iter_args(%[[A:.*]] = %[[Z2]], %[[B:.*]] = %[[Z1]])
// CHECK:           %[[S:.*]] = linalg.generic {{.*}} ins(%[[A]], %{{.*}} : tensor<8xf32>, tensor<8xf32>) outs(%[[A]] : tensor<8xf32>)
// CHECK:           %[[T:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<8xf32>) outs(%[[B]] : tensor<8xf32>)
// CHECK:           scf.yield %[[S]], %[[T]]
// CHECK:         } {lcc.micro_batches}
// CHECK:         scf.for {{.*}} iter_args(%[[C:.*]] = %[[Z]])
// CHECK:           linalg.generic {{.*}} ins(%[[C]], %{{.*}} : tensor<8xf32>, tensor<8xf32>) outs(%{{.*}} : tensor<8xf32>)
// CHECK-NOT:       outs(%[[C]]
// CHECK:           scf.yield
func.func @sums(%g: tensor<4x8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %r:2 = scf.for %k = %c0 to %c4 step %c1 iter_args(%a = %z, %b = %z) -> (tensor<8xf32>, tensor<8xf32>) {
    %row = tensor.extract_slice %g[%k, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<8xf32>
    %fresh = tensor.empty() : tensor<8xf32>
    %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
        ins(%a, %row : tensor<8xf32>, tensor<8xf32>) outs(%fresh : tensor<8xf32>) {
    ^bb0(%x: f32, %y: f32, %o: f32):
      %sum = arith.addf %x, %y : f32
      linalg.yield %sum : f32
    } -> tensor<8xf32>
    %t = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%row : tensor<8xf32>) outs(%b : tensor<8xf32>) {
    ^bb0(%y: f32, %o: f32):
      %sum = arith.addf %o, %y : f32
      linalg.yield %sum : f32
    } -> tensor<8xf32>
    scf.yield %s, %t : tensor<8xf32>, tensor<8xf32>
  } {lcc.micro_batches}
  %other = scf.for %k = %c0 to %c4 step %c1 iter_args(%c = %z) -> (tensor<8xf32>) {
    %row = tensor.extract_slice %g[%k, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<8xf32>
    %fresh = tensor.empty() : tensor<8xf32>
    %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
        ins(%c, %row : tensor<8xf32>, tensor<8xf32>) outs(%fresh : tensor<8xf32>) {
    ^bb0(%x: f32, %y: f32, %o: f32):
      %sum = arith.addf %x, %y : f32
      linalg.yield %sum : f32
    } -> tensor<8xf32>
    scf.yield %s : tensor<8xf32>
  }
  return %r#0, %r#1, %other : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// A layer's gradient (lcc-out-params' form: the call's out-param is a
// tensor.empty) summed over micro-batches: the sum moves into the layer,
// which adds what it computed to its out-param in place; each call passes
// its carried sum as that out-param and the loop yields the call's result.
// CHECK-LABEL: func.func private @grad(
// CHECK-SAME:      %[[X:.*]]: tensor<8xf32> {bufferization.writable = false}, %[[OUT:.*]]: tensor<8xf32> {lcc.result = 0 : i64})
// CHECK:         %[[V:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<8xf32>)
// CHECK:         %[[S:.*]] = linalg.generic {{.*}} ins(%[[OUT]], %[[V]] : tensor<8xf32>, tensor<8xf32>) outs(%[[OUT]] : tensor<8xf32>)
// CHECK:           arith.addf
// CHECK:         bufferization.materialize_in_destination %[[S]] in %[[OUT]]
// CHECK-LABEL: func.func @layer_sums(
// CHECK:         scf.for {{.*}} iter_args(%[[A:.*]] = %{{.*}}, %[[B:.*]] = %{{.*}})
// CHECK-NOT:       linalg.generic
// CHECK:           %[[GA:.*]] = func.call @grad(%{{.*}}, %[[A]])
// CHECK-NOT:       linalg.generic
// CHECK:           %[[GB:.*]] = func.call @grad(%{{.*}}, %[[B]])
// CHECK-NOT:       linalg.generic
// CHECK:           scf.yield %[[GA]], %[[GB]]
func.func private @grad(%x: tensor<8xf32> {bufferization.writable = false},
                        %out: tensor<8xf32> {lcc.result = 0 : i64}) -> tensor<8xf32>
    attributes {lcc.layer = "h.*"} {
  %e = tensor.empty() : tensor<8xf32>
  %v = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<8xf32>
  %r = bufferization.materialize_in_destination %v in %out : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}
func.func @layer_sums(%g: tensor<4x8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %r:2 = scf.for %k = %c0 to %c4 step %c1 iter_args(%a = %z, %b = %z) -> (tensor<8xf32>, tensor<8xf32>) {
    %row = tensor.extract_slice %g[%k, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<8xf32>
    %o1 = tensor.empty() : tensor<8xf32>
    %g1 = func.call @grad(%row, %o1) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %f1 = tensor.empty() : tensor<8xf32>
    %s1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
        ins(%a, %g1 : tensor<8xf32>, tensor<8xf32>) outs(%f1 : tensor<8xf32>) {
    ^bb0(%x: f32, %y: f32, %o: f32):
      %sum = arith.addf %x, %y : f32
      linalg.yield %sum : f32
    } -> tensor<8xf32>
    %o2 = tensor.empty() : tensor<8xf32>
    %g2 = func.call @grad(%s1, %o2) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %f2 = tensor.empty() : tensor<8xf32>
    %s2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
        ins(%b, %g2 : tensor<8xf32>, tensor<8xf32>) outs(%f2 : tensor<8xf32>) {
    ^bb0(%x: f32, %y: f32, %o: f32):
      %sum = arith.addf %x, %y : f32
      linalg.yield %sum : f32
    } -> tensor<8xf32>
    scf.yield %s1, %s2 : tensor<8xf32>, tensor<8xf32>
  } {lcc.micro_batches}
  return %r#0, %r#1 : tensor<8xf32>, tensor<8xf32>
}

// A layer also called elsewhere (its result not summed there) keeps its
// result as it is: the sum stays in the loop, updated in its own buffer.
// CHECK-LABEL: func.func private @once(
// CHECK-NOT:     ins(%{{.*}}, %{{.*}} : tensor<8xf32>, tensor<8xf32>)
// CHECK:         bufferization.materialize_in_destination
// CHECK-LABEL: func.func @not_every_call(
// CHECK:         scf.for {{.*}} iter_args(%[[A:.*]] = %{{.*}})
// CHECK:           %[[G:.*]] = func.call @once(%{{.*}}, %{{.*}})
// CHECK:           %[[S:.*]] = linalg.generic {{.*}} ins(%[[A]], %[[G]] : tensor<8xf32>, tensor<8xf32>) outs(%[[A]] : tensor<8xf32>)
// CHECK:           scf.yield %[[S]]
// CHECK:         {{^ *}}%{{.*}} = call @once(
func.func private @once(%x: tensor<8xf32> {bufferization.writable = false},
                        %out: tensor<8xf32> {lcc.result = 0 : i64}) -> tensor<8xf32>
    attributes {lcc.layer = "h.*"} {
  %r = bufferization.materialize_in_destination %x in %out : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}
func.func @not_every_call(%g: tensor<4x8xf32>, %h: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %r = scf.for %k = %c0 to %c4 step %c1 iter_args(%a = %z) -> (tensor<8xf32>) {
    %row = tensor.extract_slice %g[%k, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<8xf32>
    %o1 = tensor.empty() : tensor<8xf32>
    %g1 = func.call @once(%row, %o1) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %f1 = tensor.empty() : tensor<8xf32>
    %s1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
        ins(%a, %g1 : tensor<8xf32>, tensor<8xf32>) outs(%f1 : tensor<8xf32>) {
    ^bb0(%x: f32, %y: f32, %o: f32):
      %sum = arith.addf %x, %y : f32
      linalg.yield %sum : f32
    } -> tensor<8xf32>
    scf.yield %s1 : tensor<8xf32>
  } {lcc.micro_batches}
  %o = tensor.empty() : tensor<8xf32>
  %last = func.call @once(%h, %o) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %r, %last : tensor<8xf32>, tensor<8xf32>
}

// A sum whose payload uses a value of the step (here a weight) cannot be
// cloned into the layer: it stays in the loop, in its carried buffer.
// CHECK-LABEL: func.func @captured(
// CHECK:         scf.for {{.*}} iter_args(%[[A:.*]] = %{{.*}})
// CHECK:           %[[G:.*]] = func.call @kept(%{{.*}}, %{{.*}})
// CHECK:           %[[S:.*]] = linalg.generic {{.*}} ins(%[[A]], %[[G]] : tensor<8xf32>, tensor<8xf32>) outs(%[[A]] : tensor<8xf32>)
// CHECK:           scf.yield %[[S]]
func.func private @kept(%x: tensor<8xf32> {bufferization.writable = false},
                        %out: tensor<8xf32> {lcc.result = 0 : i64}) -> tensor<8xf32>
    attributes {lcc.layer = "h.*"} {
  %r = bufferization.materialize_in_destination %x in %out : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}
func.func @captured(%g: tensor<4x8xf32>, %w: f32) -> tensor<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %r = scf.for %k = %c0 to %c4 step %c1 iter_args(%a = %z) -> (tensor<8xf32>) {
    %row = tensor.extract_slice %g[%k, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<8xf32>
    %o1 = tensor.empty() : tensor<8xf32>
    %g1 = func.call @kept(%row, %o1) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %f1 = tensor.empty() : tensor<8xf32>
    %s1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
        ins(%a, %g1 : tensor<8xf32>, tensor<8xf32>) outs(%f1 : tensor<8xf32>) {
    ^bb0(%x: f32, %y: f32, %o: f32):
      %m = arith.mulf %y, %w : f32
      %sum = arith.addf %x, %m : f32
      linalg.yield %sum : f32
    } -> tensor<8xf32>
    scf.yield %s1 : tensor<8xf32>
  } {lcc.micro_batches}
  return %r : tensor<8xf32>
}

// A running sum carried from call to call without a loop (the gradient sums
// of a pipeline stage's part, lcc-build-train-step): the function adds to
// its out-param in place and drops the argument; each call passes the sum
// as the out-param, the first its own copy of a zero fill read elsewhere.
// CHECK-LABEL: func.func private @part(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<8xf32> {bufferization.writable = false}, %[[OUT:[^:]*]]: tensor<8xf32> {lcc.result = 0 : i64})
// CHECK:         %[[V:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<8xf32>)
// CHECK:         %[[S:.*]] = linalg.generic {{.*}} ins(%[[OUT]], %[[V]] : tensor<8xf32>, tensor<8xf32>) outs(%[[OUT]] : tensor<8xf32>)
// CHECK:         bufferization.materialize_in_destination %[[S]] in %[[OUT]]
// CHECK-LABEL: func.func @carried(
// CHECK:         linalg.fill
// CHECK:         %[[Z:.*]] = linalg.fill
// CHECK-NEXT:    %[[S1:.*]] = call @part(%arg0, %[[Z]]) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT:    %[[S2:.*]] = call @part(%arg1, %[[S1]])
// CHECK-NEXT:    return %[[S2]], %{{.*}}
func.func private @part(%x: tensor<8xf32> {bufferization.writable = false},
                        %acc: tensor<8xf32> {bufferization.writable = false},
                        %out: tensor<8xf32> {lcc.result = 0 : i64}) -> tensor<8xf32>
    attributes {lcc.layer = "pipeline.pp_backward"} {
  %e = tensor.empty() : tensor<8xf32>
  %v = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%acc, %v : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %sum = arith.addf %a, %b : f32
    linalg.yield %sum : f32
  } -> tensor<8xf32>
  %r = bufferization.materialize_in_destination %s in %out : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}
func.func @carried(%a: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %o1 = tensor.empty() : tensor<8xf32>
  %s1 = func.call @part(%a, %z, %o1) : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %o2 = tensor.empty() : tensor<8xf32>
  %s2 = func.call @part(%b, %s1, %o2) : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %s2, %z : tensor<8xf32>, tensor<8xf32>
}

// A sum a call passes that is also read after it cannot be overwritten:
// the function and its calls stay as they are (bufferization keeps both).
// CHECK-LABEL: func.func private @part_kept(
// CHECK-SAME:      %{{[^:]*}}: tensor<8xf32> {bufferization.writable = false}, %{{[^:]*}}: tensor<8xf32> {bufferization.writable = false}, %{{[^:]*}}: tensor<8xf32> {lcc.result = 0 : i64})
// CHECK-LABEL: func.func @read_after(
// CHECK:         call @part_kept(%arg0, %arg1, %{{.*}})
func.func private @part_kept(%x: tensor<8xf32> {bufferization.writable = false},
                             %acc: tensor<8xf32> {bufferization.writable = false},
                             %out: tensor<8xf32> {lcc.result = 0 : i64}) -> tensor<8xf32>
    attributes {lcc.layer = "pipeline.pp_backward"} {
  %e = tensor.empty() : tensor<8xf32>
  %v = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%acc, %v : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %sum = arith.addf %a, %b : f32
    linalg.yield %sum : f32
  } -> tensor<8xf32>
  %r = bufferization.materialize_in_destination %s in %out : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}
func.func @read_after(%a: tensor<8xf32>, %acc: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %o = tensor.empty() : tensor<8xf32>
  %s = func.call @part_kept(%a, %acc, %o) : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %s, %acc : tensor<8xf32>, tensor<8xf32>
}
