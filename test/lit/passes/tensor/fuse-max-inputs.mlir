// RUN: lcc-opt %s --lcc-fuse | FileCheck %s --check-prefix=ONE
// RUN: lcc-opt %s --lcc-fuse="max-inputs=4" | FileCheck %s --check-prefix=CAP
// RUN: lcc-opt %s --lcc-fuse="max-inputs=4 explain=true" -verify-diagnostics -o /dev/null
// Tests passes/tensor/Fuse.cpp: a fused kernel reads at most max-inputs tensors.
// A running sum (the global gradient norm's, one add per parameter) is one
// kernel while it fits, and continues in a new kernel past the bound; either
// way the adds keep their order: ((((x0 + x1) + x2) + x3) + x4) + x5.

// ONE: lcc.fusion = {kernels_after = 1 : i64, kernels_before = 5 : i64}
// ONE:      linalg.generic {{.*}} ins(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5 :
// ONE-NEXT: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[C:.*]]: f32, %[[D:.*]]: f32, %[[E:.*]]: f32, %[[F:.*]]: f32, %{{.*}}: f32):
// ONE-NEXT:   %[[S1:.*]] = arith.addf %[[A]], %[[B]]
// ONE-NEXT:   %[[S2:.*]] = arith.addf %[[S1]], %[[C]]
// ONE-NEXT:   %[[S3:.*]] = arith.addf %[[S2]], %[[D]]
// ONE-NEXT:   %[[S4:.*]] = arith.addf %[[S3]], %[[E]]
// ONE-NEXT:   %[[S5:.*]] = arith.addf %[[S4]], %[[F]]
// ONE-NEXT:   linalg.yield %[[S5]]
// ONE-NOT:  linalg.generic

// CAP: lcc.fusion = {kernels_after = 2 : i64, kernels_before = 5 : i64}
// CAP:      %[[K1:.*]] = linalg.generic {{.*}} ins(%arg0, %arg1, %arg2, %arg3 :
// CAP-NEXT: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[C:.*]]: f32, %[[D:.*]]: f32, %{{.*}}: f32):
// CAP-NEXT:   %[[S1:.*]] = arith.addf %[[A]], %[[B]]
// CAP-NEXT:   %[[S2:.*]] = arith.addf %[[S1]], %[[C]]
// CAP-NEXT:   %[[S3:.*]] = arith.addf %[[S2]], %[[D]]
// CAP-NEXT:   linalg.yield %[[S3]]
// CAP:      linalg.generic {{.*}} ins(%[[K1]], %arg4, %arg5 :
// CAP-NEXT: ^bb0(%[[P:.*]]: f32, %[[E:.*]]: f32, %[[F:.*]]: f32, %{{.*}}: f32):
// CAP-NEXT:   %[[S4:.*]] = arith.addf %[[P]], %[[E]]
// CAP-NEXT:   %[[S5:.*]] = arith.addf %[[S4]], %[[F]]
// CAP-NEXT:   linalg.yield %[[S5]]
// CAP-NOT:  linalg.generic
#s = affine_map<() -> ()>
func.func @norm_chain(%x0: tensor<f32>, %x1: tensor<f32>, %x2: tensor<f32>, %x3: tensor<f32>, %x4: tensor<f32>, %x5: tensor<f32>) -> tensor<f32> {
  %e = tensor.empty() : tensor<f32>
  %a0 = linalg.generic {indexing_maps = [#s, #s, #s], iterator_types = []} ins(%x0, %x1 : tensor<f32>, tensor<f32>) outs(%e : tensor<f32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %r = arith.addf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %a1 = linalg.generic {indexing_maps = [#s, #s, #s], iterator_types = []} ins(%a0, %x2 : tensor<f32>, tensor<f32>) outs(%e : tensor<f32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %r = arith.addf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %a2 = linalg.generic {indexing_maps = [#s, #s, #s], iterator_types = []} ins(%a1, %x3 : tensor<f32>, tensor<f32>) outs(%e : tensor<f32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %r = arith.addf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %a3 = linalg.generic {indexing_maps = [#s, #s, #s], iterator_types = []} ins(%a2, %x4 : tensor<f32>, tensor<f32>) outs(%e : tensor<f32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %r = arith.addf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  // With max-inputs=4 and `explain`, the op where the chain breaks says why.
  // expected-remark @below {{the fused kernel would read more than max-inputs (4) tensors}}
  %a4 = linalg.generic {indexing_maps = [#s, #s, #s], iterator_types = []} ins(%a3, %x5 : tensor<f32>, tensor<f32>) outs(%e : tensor<f32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %r = arith.addf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %a4 : tensor<f32>
}
