// RUN: lcc-opt %s --lcc-outline-kernels=gpu=true --lcc-gpu-kernels | FileCheck %s
// Kernels of a layer function (lcc-outline-layers: private, called by the
// step; its temporaries are views of the arena at offsets each call passes,
// lcc-plan-memory): what lcc-gpu-kernels proves about their buffers
// (passes/gpu/HostBuffers.h) is what holds at every call: pointer alignment
// (the least of the calls') and independence for horizontal fusion (disjoint
// at every call).

#id1 = affine_map<(i) -> (i)>

// Disjoint at both calls: the two kernels are one launch.
// CHECK-LABEL: func.func private @disjoint(
// CHECK:     call @lcc_cuda_launch(%c{{[0-9]+}}_i64{{[_0-9]*}}, %c2_i64{{.*}}, %c256_i64{{.*}}, %{{.*}}, %c3_i64{{.*}})
// CHECK-NOT: call @lcc_cuda_launch
// CHECK:     return
func.func private @disjoint(%arena: memref<?xi8>, %in: memref<1024xf32>, %o1: index, %o2: index)
    attributes {lcc.layer = "h.*"} {
  %a = memref.view %arena[%o1][] : memref<?xi8> to memref<1024xf32>
  %b = memref.view %arena[%o2][] : memref<?xi8> to memref<1024xf32>
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%in : memref<1024xf32>) outs(%a : memref<1024xf32>) {
  ^bb0(%v: f32, %o: f32):
    %0 = arith.negf %v : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%in : memref<1024xf32>) outs(%b : memref<1024xf32>) {
  ^bb0(%v: f32, %o: f32):
    %0 = arith.addf %v, %v : f32
    linalg.yield %0 : f32
  }
  return
}

// The same function body, but its second call puts the two outputs 2048
// bytes apart (overlapping): the second kernel waits for the first.
// CHECK-LABEL: func.func private @overlapping(
// CHECK-COUNT-2: call @lcc_cuda_launch(%c{{[0-9]+}}_i64{{[_0-9]*}}, %c1_i64{{.*}}, %c256_i64{{.*}}, %{{.*}}, %c2_i64{{.*}})
// CHECK-NOT: call @lcc_cuda_launch
// CHECK:     return
func.func private @overlapping(%arena: memref<?xi8>, %in: memref<1024xf32>, %o1: index, %o2: index)
    attributes {lcc.layer = "h.*"} {
  %a = memref.view %arena[%o1][] : memref<?xi8> to memref<1024xf32>
  %b = memref.view %arena[%o2][] : memref<?xi8> to memref<1024xf32>
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%in : memref<1024xf32>) outs(%a : memref<1024xf32>) {
  ^bb0(%v: f32, %o: f32):
    %0 = arith.mulf %v, %v : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%in : memref<1024xf32>) outs(%b : memref<1024xf32>) {
  ^bb0(%v: f32, %o: f32):
    %0 = arith.subf %v, %v : f32
    linalg.yield %0 : f32
  }
  return
}

// Two buffer arguments that are the same buffer at one call: not
// independent either.
// CHECK-LABEL: func.func private @aliased(
// CHECK-COUNT-2: call @lcc_cuda_launch(%c{{[0-9]+}}_i64{{[_0-9]*}}, %c1_i64{{.*}}, %c256_i64{{.*}}, %{{.*}}, %c2_i64{{.*}})
// CHECK-NOT: call @lcc_cuda_launch
// CHECK:     return
func.func private @aliased(%in: memref<1024xf32>, %a: memref<1024xf32>, %b: memref<1024xf32>)
    attributes {lcc.layer = "h.*"} {
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%in : memref<1024xf32>) outs(%a : memref<1024xf32>) {
  ^bb0(%v: f32, %o: f32):
    %0 = arith.maximumf %v, %v : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%in : memref<1024xf32>) outs(%b : memref<1024xf32>) {
  ^bb0(%v: f32, %o: f32):
    %0 = arith.minimumf %v, %v : f32
    linalg.yield %0 : f32
  }
  return
}

// Alignment: @aligned's view sits at bytes 64 and 128 of the arena (64-byte
// aligned at both), @unaligned's at 64 and 8 (8 proves nothing for 128-bit
// accesses); its input is a step argument at one call and an unlocated
// buffer (an iter_arg of a micro-batch loop) at the other.
// CHECK-LABEL: func.func private @aligned(
// CHECK-LABEL: func.func private @unaligned(
// CHECK: gpu.func @aligned_k0(%[[IN:[a-z0-9]+]]: memref<1024xf32>, %[[OUT:[a-z0-9]+]]: memref<1024xf32>) kernel
// CHECK:     memref.assume_alignment %[[IN]], 256
// CHECK:     memref.assume_alignment %[[OUT]], 64
// CHECK:     gpu.return
// CHECK: gpu.func @unaligned_k0(
// CHECK-NOT: memref.assume_alignment
// CHECK:     gpu.return
func.func private @aligned(%arena: memref<?xi8>, %in: memref<1024xf32>, %o: index)
    attributes {lcc.layer = "h.*"} {
  %a = memref.view %arena[%o][] : memref<?xi8> to memref<1024xf32>
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%in : memref<1024xf32>) outs(%a : memref<1024xf32>) {
  ^bb0(%v: f32, %x: f32):
    %0 = math.exp %v : f32
    linalg.yield %0 : f32
  }
  return
}
func.func private @unaligned(%arena: memref<?xi8>, %in: memref<1024xf32>, %o: index)
    attributes {lcc.layer = "h.*"} {
  %a = memref.view %arena[%o][] : memref<?xi8> to memref<1024xf32>
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%in : memref<1024xf32>) outs(%a : memref<1024xf32>) {
  ^bb0(%v: f32, %x: f32):
    %0 = math.log %v : f32
    linalg.yield %0 : f32
  }
  return
}

func.func @step(%arena: memref<65536xi8>, %x: memref<1024xf32>, %y: memref<1024xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c10240 = arith.constant 10240 : index
  %c4096 = arith.constant 4096 : index
  %c8192 = arith.constant 8192 : index
  %c12288 = arith.constant 12288 : index
  %any = memref.cast %arena : memref<65536xi8> to memref<?xi8>
  call @disjoint(%any, %x, %c0, %c4096) : (memref<?xi8>, memref<1024xf32>, index, index) -> ()
  call @disjoint(%any, %y, %c8192, %c12288) : (memref<?xi8>, memref<1024xf32>, index, index) -> ()
  call @overlapping(%any, %x, %c0, %c4096) : (memref<?xi8>, memref<1024xf32>, index, index) -> ()
  call @overlapping(%any, %y, %c8192, %c10240) : (memref<?xi8>, memref<1024xf32>, index, index) -> ()
  %v = memref.view %arena[%c8192][] : memref<65536xi8> to memref<1024xf32>
  call @aliased(%x, %v, %y) : (memref<1024xf32>, memref<1024xf32>, memref<1024xf32>) -> ()
  call @aliased(%x, %y, %y) : (memref<1024xf32>, memref<1024xf32>, memref<1024xf32>) -> ()
  call @aligned(%any, %x, %c64) : (memref<?xi8>, memref<1024xf32>, index) -> ()
  call @aligned(%any, %y, %c128) : (memref<?xi8>, memref<1024xf32>, index) -> ()
  call @unaligned(%any, %x, %c64) : (memref<?xi8>, memref<1024xf32>, index) -> ()
  %r = scf.for %i = %c0 to %c1 step %c1 iter_args(%acc = %y) -> (memref<1024xf32>) {
    func.call @unaligned(%any, %acc, %c8) : (memref<?xi8>, memref<1024xf32>, index) -> ()
    scf.yield %acc : memref<1024xf32>
  } {lcc.micro_batches}
  return
}
