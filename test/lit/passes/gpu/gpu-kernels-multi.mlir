// RUN: lcc-opt %s --lcc-outline-kernels=gpu=true --lcc-gpu-kernels | FileCheck %s
// RUN: lcc-opt %s --lcc-outline-kernels=gpu=true --lcc-gpu-kernels=max-fused-args=2 | FileCheck %s --check-prefix=CAP
// RUN: lcc-opt %s --lcc-outline-kernels=gpu=true --lcc-gpu-kernels=max-fused-args=0 | FileCheck %s --check-prefix=CAP
// Horizontal fusion in lcc-gpu-kernels (passes/gpu/GpuMultiTensor.cpp): runs of
// independent one-thread-per-point kernels become one launch per dependence
// level; neighbours that depend on each other only element for element run
// as a chain inside the same threads.

#id1 = affine_map<(i) -> (i)>

// CHECK: module attributes {gpu.container_module, lcc.gpu_kernels = [[[KERNELS:.*]]], lcc.gpu_mappings = {multi = 3 : i64, rows = 1 : i64, threads = 3 : i64}}

// Two parameters' AdamW-like updates in program order: m_i = g_i * 0.5,
// then p_i -= m_i (reading m_i element for element), then a small unrelated
// kernel. One launch: each parameter's two kernels are a chain (a thread
// updates its elements of m_i, then the elements of p_i that read them), and
// the two chains and the small kernel are independent parts. 1024 elements
// in 4 lanes: one 256-thread block per chain; 24 elements: one block.
// CHECK-LABEL: func.func @adam(
// CHECK:     call @lcc_cuda_launch(%c{{[0-9]}}_i64, %c3_i64{{.*}}, %c256_i64{{.*}}, %{{.*}}, %c8_i64{{.*}})
// CHECK-NOT: call @lcc_cuda_launch
// CHECK:     return

// Views of one arena: the second write overlaps the first's bytes and waits
// for it; the third is disjoint from both and joins the second's launch.
// CHECK-LABEL: func.func @views(
// CHECK:     call @lcc_cuda_launch(%c{{[0-9]}}_i64, %c1_i64{{.*}}, %c256_i64{{.*}}, %{{.*}}, %c2_i64{{.*}})
// CHECK:     call @lcc_cuda_launch(%c{{[0-9]}}_i64{{.*}}, %c2_i64{{.*}}, %c256_i64{{.*}}, %{{.*}}, %c3_i64{{.*}})
// CHECK-NOT: call @lcc_cuda_launch
// CHECK:     return

// A non-kernel call between two kernels ends the run: no fusion across it.
// CHECK-LABEL: func.func @barrier(
// CHECK:     call @lcc_cuda_launch(%c{{[0-9]}}_i64, %c1_i64{{.*}}, %c256_i64{{.*}}, %{{.*}}, %c2_i64{{.*}})
// CHECK:     call @external()
// CHECK:     call @lcc_cuda_launch(%c{{[0-9]}}_i64{{.*}}, %c1_i64{{.*}}, %c256_i64{{.*}}, %{{.*}}, %c2_i64{{.*}})

// A kernel that cannot be a part (a row reduction) but shares nothing with
// the run so far is launched where it stands, and the run goes on: the two
// elementwise kernels around it are one launch after it. One that reads what
// the run wrote ends the run.
// CHECK-LABEL: func.func @hoist(
// CHECK:     call @lcc_cuda_launch(%c{{[0-9]}}_i64, %c4_i64{{.*}}, %c256_i64{{.*}}, %{{.*}}, %c2_i64{{.*}})
// CHECK:     call @lcc_cuda_launch(%c{{[0-9]}}_i64{{.*}}, %c2_i64{{.*}}, %c256_i64{{.*}}, %{{.*}}, %c4_i64{{.*}})
// CHECK-NOT: call @lcc_cuda_launch
// CHECK:     return
// CHECK-LABEL: func.func @nohoist(
// CHECK-COUNT-3: call @lcc_cuda_launch
// CHECK-NOT: call @lcc_cuda_launch
// CHECK:     return

// The fused kernels: comparisons of the block id pick the part; each part is
// the plain kernels' bodies on their own arguments (a chain's one after the
// other with the same ids), the small kernel's 32-thread blocks renumbered
// from the 256-thread ones.
// CHECK: gpu.func @adam_mt0(%[[G1:[a-z0-9]+]]: memref<1024xf32>, %[[M1:[a-z0-9]+]]: memref<1024xf32>, %[[P1:[a-z0-9]+]]: memref<1024xf32>, %[[G2:[a-z0-9]+]]: memref<1024xf32>, %[[M2:[a-z0-9]+]]: memref<1024xf32>, %[[P2:[a-z0-9]+]]: memref<1024xf32>, %[[S:[a-z0-9]+]]: memref<24xf32>, %[[T:[a-z0-9]+]]: memref<24xf32>) kernel
// CHECK-SAME:  known_block_size = array<i32: 256, 1, 1>, lcc.mapping = "multi", lcc.parts = 3 : i64
// CHECK:       %[[B:.*]] = gpu.block_id x
// CHECK:       %[[TID:.*]] = gpu.thread_id x
// CHECK:       arith.cmpi ult, %[[B]], %c1
// CHECK:       scf.if
// CHECK:         %[[MW:.*]] = memref.assume_alignment %[[M1]], 256
// CHECK:         arith.mulf
// CHECK:         memref.store %{{.*}}, %[[MW]]
// CHECK:         %[[MR:.*]] = memref.assume_alignment %[[M1]], 256
// CHECK:         %[[PW:.*]] = memref.assume_alignment %[[P1]], 256
// CHECK:         memref.load %[[MR]]
// CHECK:         arith.subf
// CHECK:         memref.store %{{.*}}, %[[PW]]
// CHECK:       } else {
// CHECK:         arith.cmpi ult, %[[B]], %c2
// CHECK:         memref.assume_alignment %[[M2]], 256
// CHECK:         } else {
// CHECK:           %[[LOCAL:.*]] = arith.subi %[[B]], %c2
// CHECK:           %[[FLAT0:.*]] = arith.muli %[[LOCAL]], %c256
// CHECK:           %[[FLAT:.*]] = arith.addi %[[FLAT0]], %[[TID]]
// CHECK:           %[[PB:.*]] = arith.divui %[[FLAT]], %c32
// CHECK:           %[[PT:.*]] = arith.remui %[[FLAT]], %c32
// CHECK:           memref.assume_alignment %[[S]], 256
// CHECK:           %[[G:.*]] = arith.muli %[[PB]], %c32
// CHECK:           arith.addi %[[G]], %[[PT]]
// CHECK:       gpu.return

// Capped at 2 buffers per launch (any two parts need 3 or more), or
// off: every call is its own launch, no multi kernel.
// CAP-NOT: multi
// CAP-LABEL: func.func @adam(
// CAP-COUNT-5: call @lcc_cuda_launch
// CAP-NOT: call @lcc_cuda_launch
// CAP: return

func.func private @external()
func.func @adam(%g1: memref<1024xf32>, %m1: memref<1024xf32>, %p1: memref<1024xf32>,
                %g2: memref<1024xf32>, %m2: memref<1024xf32>, %p2: memref<1024xf32>,
                %s: memref<24xf32>, %t: memref<24xf32>) {
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%g1 : memref<1024xf32>) outs(%m1 : memref<1024xf32>) {
  ^bb0(%a: f32, %o: f32):
    %h = arith.constant 0.5 : f32
    %0 = arith.mulf %a, %h : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%m1 : memref<1024xf32>) outs(%p1 : memref<1024xf32>) {
  ^bb0(%a: f32, %o: f32):
    %0 = arith.subf %o, %a : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%g2 : memref<1024xf32>) outs(%m2 : memref<1024xf32>) {
  ^bb0(%a: f32, %o: f32):
    %h = arith.constant 0.5 : f32
    %0 = arith.mulf %a, %h : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%m2 : memref<1024xf32>) outs(%p2 : memref<1024xf32>) {
  ^bb0(%a: f32, %o: f32):
    %0 = arith.subf %o, %a : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%s : memref<24xf32>) outs(%t : memref<24xf32>) {
  ^bb0(%a: f32, %o: f32):
    %0 = arith.addf %a, %a : f32
    linalg.yield %0 : f32
  }
  return
}

func.func @views(%arena: memref<65536xi8>, %x: memref<1024xf32>) {
  %c0 = arith.constant 0 : index
  %c2048 = arith.constant 2048 : index
  %c4096 = arith.constant 4096 : index
  %c8192 = arith.constant 8192 : index
  %a = memref.view %arena[%c0][] : memref<65536xi8> to memref<1024xf32>
  %b = memref.view %arena[%c2048][] : memref<65536xi8> to memref<1024xf32>
  %c = memref.view %arena[%c8192][] : memref<65536xi8> to memref<1024xf32>
  // writes bytes [0, 4096)
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%x : memref<1024xf32>) outs(%a : memref<1024xf32>) {
  ^bb0(%v: f32, %o: f32):
    %0 = arith.negf %v : f32
    linalg.yield %0 : f32
  }
  // writes bytes [2048, 6144): overlaps the first, so it waits for it
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%x : memref<1024xf32>) outs(%b : memref<1024xf32>) {
  ^bb0(%v: f32, %o: f32):
    %0 = arith.addf %v, %v : f32
    linalg.yield %0 : f32
  }
  // writes bytes [8192, 12288): independent of the second, fused with it
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%x : memref<1024xf32>) outs(%c : memref<1024xf32>) {
  ^bb0(%v: f32, %o: f32):
    %0 = arith.mulf %v, %v : f32
    linalg.yield %0 : f32
  }
  return
}

func.func @barrier(%x: memref<1024xf32>, %y: memref<1024xf32>, %z: memref<1024xf32>) {
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%x : memref<1024xf32>) outs(%y : memref<1024xf32>) {
  ^bb0(%v: f32, %o: f32):
    %0 = arith.negf %v : f32
    linalg.yield %0 : f32
  }
  func.call @external() : () -> ()
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%x : memref<1024xf32>) outs(%z : memref<1024xf32>) {
  ^bb0(%v: f32, %o: f32):
    %0 = arith.addf %v, %v : f32
    linalg.yield %0 : f32
  }
  return
}

#row2 = affine_map<(i, j) -> (i)>
#id2 = affine_map<(i, j) -> (i, j)>
func.func @hoist(%x: memref<1024xf32>, %a: memref<1024xf32>, %r: memref<4x512xf32>,
                 %rs: memref<4xf32>, %y: memref<1024xf32>, %b: memref<1024xf32>) {
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%x : memref<1024xf32>) outs(%a : memref<1024xf32>) {
  ^bb0(%v: f32, %o: f32):
    %0 = arith.negf %v : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#id2, #row2], iterator_types = ["parallel", "reduction"]}
      ins(%r : memref<4x512xf32>) outs(%rs : memref<4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %0 = arith.addf %o, %v : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%y : memref<1024xf32>) outs(%b : memref<1024xf32>) {
  ^bb0(%v: f32, %o: f32):
    %0 = arith.addf %v, %v : f32
    linalg.yield %0 : f32
  }
  return
}

func.func @nohoist(%x: memref<2048xf32>, %a: memref<2048xf32>, %rs: memref<4xf32>,
                   %y: memref<1024xf32>, %b: memref<1024xf32>) {
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%x : memref<2048xf32>) outs(%a : memref<2048xf32>) {
  ^bb0(%v: f32, %o: f32):
    %0 = arith.negf %v : f32
    linalg.yield %0 : f32
  }
  %view = memref.expand_shape %a [[0, 1]] output_shape [4, 512] : memref<2048xf32> into memref<4x512xf32>
  linalg.generic {indexing_maps = [#id2, #row2], iterator_types = ["parallel", "reduction"]}
      ins(%view : memref<4x512xf32>) outs(%rs : memref<4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %0 = arith.addf %o, %v : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%y : memref<1024xf32>) outs(%b : memref<1024xf32>) {
  ^bb0(%v: f32, %o: f32):
    %0 = arith.addf %v, %v : f32
    linalg.yield %0 : f32
  }
  return
}
