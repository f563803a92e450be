// RUN: lcc-opt %s --lcc-split-reductions | FileCheck %s
// RUN: lcc-opt %s --lcc-split-reductions="min-elements=100000" | FileCheck %s --check-prefix=BIG
// RUN: lcc-opt %s --lcc-split-reductions="min-partials=2" | FileCheck %s --check-prefix=SHALLOW
// Tests passes/tensor/SplitReductions.cpp: whole-tensor reductions become partials
// (leading loops parallel) plus their combination; the rest is left alone.

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#s2 = affine_map<(d0, d1) -> ()>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#s3 = affine_map<(d0, d1, d2) -> ()>
#row = affine_map<(d0, d1) -> (d0)>

// A parameter's squared norm: 300 partials of 128 contiguous elements, then
// their sum into the original init (which may hold a running total).
// CHECK: module attributes {lcc.split_reductions = 3 : i64}
// CHECK-LABEL: func.func @sumsq
// CHECK-SAME: (%[[G:.*]]: tensor<300x128xf32>, %[[RUNNING:.*]]: tensor<f32>)
// CHECK: %[[EMPTY:.*]] = tensor.empty() : tensor<300xf32>
// CHECK: %[[ZERO:.*]] = arith.constant 0.0{{0*}}e+00 : f32
// CHECK: %[[FILL:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[EMPTY]] : tensor<300xf32>)
// CHECK: %[[PART:.*]] = linalg.generic {indexing_maps = [#[[ID:.*]], #[[LEAD:.*]]], iterator_types = ["parallel", "reduction"]} ins(%[[G]] : tensor<300x128xf32>) outs(%[[FILL]] : tensor<300xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: %[[SUM:.*]] = linalg.generic {{{.*}}iterator_types = ["reduction"]} ins(%[[PART]] : tensor<300xf32>) outs(%[[RUNNING]] : tensor<f32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %[[OUT:.*]]: f32):
// CHECK-NEXT: %[[ADD:.*]] = arith.addf %[[IN]], %[[OUT]] : f32
// CHECK-NEXT: linalg.yield %[[ADD]]
// CHECK: return %[[SUM]]
// BIG-LABEL: func.func @sumsq
// BIG: iterator_types = ["reduction", "reduction"]
// BIG-NOT: iterator_types = ["parallel"
func.func @sumsq(%g: tensor<300x128xf32>, %running: tensor<f32>) -> tensor<f32> {
  %r = linalg.generic {indexing_maps = [#id2, #s2], iterator_types = ["reduction", "reduction"]}
      ins(%g : tensor<300x128xf32>) outs(%running : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %sq = arith.mulf %in, %in : f32
    %acc = arith.addf %sq, %out : f32
    linalg.yield %acc : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

// 4 leading points are too few partials: the first two loops go parallel
// (64 partials); with min-partials=2 the first one is enough.
// A max keeps its combiner, its fastmath flags and its operand order; its
// partials start at maxnumf's neutral element (NaN: maxnum(NaN, x) = x).
// CHECK-LABEL: func.func @max3
// CHECK: %[[NEUTRAL:.*]] = arith.constant 0xFFC00000 : f32
// CHECK: linalg.fill ins(%[[NEUTRAL]] : f32) outs(%{{.*}} : tensor<4x16xf32>)
// CHECK: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: iterator_types = ["reduction", "reduction"]} ins(%{{.*}} : tensor<4x16xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %[[OUT:.*]]: f32):
// CHECK-NEXT: arith.maxnumf %[[OUT]], %[[IN]] fastmath<nnan> : f32
// BIG-LABEL: func.func @max3
// SHALLOW-LABEL: func.func @max3
// SHALLOW: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4xf32>)
// SHALLOW: iterator_types = ["parallel", "reduction", "reduction"]
func.func @max3(%x: tensor<4x16x512xf32>) -> tensor<f32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%ninf : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {indexing_maps = [#id3, #s3], iterator_types = ["reduction", "reduction", "reduction"]}
      ins(%x : tensor<4x16x512xf32>) outs(%init : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maxnumf %out, %in fastmath<nnan> : f32
    linalg.yield %m : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

// Cross-entropy's loss sum and count: two outputs, a body that reads
// linalg.index and another tensor. The body moves over unchanged (the
// iteration space is the same), each output gets its own partials.
// CHECK-LABEL: func.func @loss_and_count
// CHECK: %[[P:.*]]:2 = linalg.generic {{{.*}}iterator_types = ["parallel", "reduction"]}
// CHECK-SAME: outs(%{{.*}}, %{{.*}} : tensor<64xf32>, tensor<64xf32>)
// CHECK: linalg.index 0
// CHECK: linalg.index 1
// CHECK: tensor.extract
// CHECK: %{{.*}}:2 = linalg.generic {{{.*}}iterator_types = ["reduction"]} ins(%[[P]]#0, %[[P]]#1 : tensor<64xf32>, tensor<64xf32>)
// CHECK-NEXT: ^bb0(%[[L:.*]]: f32, %[[C:.*]]: f32, %[[LO:.*]]: f32, %[[CO:.*]]: f32):
// CHECK-NEXT: %[[LS:.*]] = arith.addf %[[LO]], %[[L]] : f32
// CHECK-NEXT: %[[CS:.*]] = arith.addf %[[CO]], %[[C]] : f32
// CHECK-NEXT: linalg.yield %[[LS]], %[[CS]]
func.func @loss_and_count(%t: tensor<64x512xi32>, %lse: tensor<64x512xf32>,
                          %logits: tensor<64x512x8xf32>) -> (tensor<f32>, tensor<f32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %ignore = arith.constant -100 : i32
  %e = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r:2 = linalg.generic {indexing_maps = [#id2, #id2, #s2, #s2], iterator_types = ["reduction", "reduction"]}
      ins(%t, %lse : tensor<64x512xi32>, tensor<64x512xf32>) outs(%init, %init : tensor<f32>, tensor<f32>) {
  ^bb0(%tok: i32, %l: f32, %sum: f32, %count: f32):
    %keep = arith.cmpi ne, %tok, %ignore : i32
    %c = arith.index_cast %tok : i32 to index
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %x = tensor.extract %logits[%i, %j, %c] : tensor<64x512x8xf32>
    %nll = arith.subf %l, %x : f32
    %v = arith.select %keep, %nll, %zero : f32
    %w = arith.select %keep, %one, %zero : f32
    %s = arith.addf %sum, %v : f32
    %n = arith.addf %count, %w : f32
    linalg.yield %s, %n : f32, f32
  } -> (tensor<f32>, tensor<f32>)
  return %r#0, %r#1 : tensor<f32>, tensor<f32>
}

// Left alone: too small (below min-elements), an online softmax's coupled
// accumulators (the sum reads the max), a row reduction (the output keeps a
// dimension: already parallel), and a rank-1 tensor (nothing to split at).
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: "parallel", "reduction"]} ins(%{{.*}} : tensor<8x8xf32>)
// CHECK: iterator_types = ["reduction", "reduction"]} ins(%{{.*}} : tensor<8x8xf32>)
// CHECK: iterator_types = ["reduction", "reduction"]} ins(%{{.*}} : tensor<300x128xf32>) outs(%{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>)
// CHECK: iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<300x128xf32>) outs(%{{.*}} : tensor<300xf32>)
// CHECK: iterator_types = ["reduction"]} ins(%{{.*}} : tensor<40000xf32>)
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @left_alone(%small: tensor<8x8xf32>, %x: tensor<300x128xf32>, %flat: tensor<40000xf32>,
                      %init: tensor<f32>, %rows: tensor<300xf32>)
    -> (tensor<f32>, tensor<f32>, tensor<f32>, tensor<300xf32>, tensor<f32>) {
  %a = linalg.generic {indexing_maps = [#id2, #s2], iterator_types = ["reduction", "reduction"]}
      ins(%small : tensor<8x8xf32>) outs(%init : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %b:2 = linalg.generic {indexing_maps = [#id2, #s2, #s2], iterator_types = ["reduction", "reduction"]}
      ins(%x : tensor<300x128xf32>) outs(%init, %init : tensor<f32>, tensor<f32>) {
  ^bb0(%in: f32, %m: f32, %s: f32):
    %nm = arith.maxnumf %m, %in : f32
    %d = arith.subf %m, %nm : f32
    %scale = math.exp %d : f32
    %ss = arith.mulf %s, %scale : f32
    %e = arith.subf %in, %nm : f32
    %p = math.exp %e : f32
    %ns = arith.addf %ss, %p : f32
    linalg.yield %nm, %ns : f32, f32
  } -> (tensor<f32>, tensor<f32>)
  %c = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<300x128xf32>) outs(%rows : tensor<300xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<300xf32>
  %d = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%flat : tensor<40000xf32>) outs(%init : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %a, %b#0, %b#1, %c, %d : tensor<f32>, tensor<f32>, tensor<f32>, tensor<300xf32>, tensor<f32>
}
