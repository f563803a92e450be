// RUN: lcc-opt %s --lcc-outline-layers="explain=true" -mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s
// RUN: lcc-opt %s --lcc-outline-layers="explain=true min-repeats=4" -mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=MIN
// Tests passes/tensor/OutlineLayers.cpp's `explain`: every run left inline says why, against
// the structure most runs of its layer kind share (h.0, h.1, h.3 here); runs outlined (also
// h.6 and h.7, a second structure) say nothing. The layers' ops carry
// only their names (NameLoc), so the remarks have no file position.

// Remarks come per layer kind (pattern) in name order, then in program order.
// CHECK: remark: loc("blocks.0."): layer 'blocks.0' (phase 0) stays inline: only 1 run(s) of this structure, min-repeats is 2
// CHECK-NOT: remark: loc("h.0.")
// CHECK-NOT: remark: loc("h.1.
// CHECK: remark: loc("h.2."): layer 'h.2' (phase 0) stays inline: it differs from 'h.0' (3 runs): it has 3 ops, 'h.0' has 2
// CHECK-NOT: remark: loc("h.3.")
// CHECK: remark: loc("h.4."): layer 'h.4' (phase 0) stays inline: it differs from 'h.0' (3 runs): the same ops with other operands, attributes or types
// CHECK: remark: loc("h.5."): layer 'h.5' (phase 0) stays inline: it differs from 'h.0' (3 runs): op 1 is 'lcc.sub', there 'lcc.add'
// h.6 and h.7 share another structure, twice: a function of their own, no remark.
// CHECK-NOT: remark

// With min-repeats above the common structure's 3 runs, those stay inline too.
// MIN-DAG: remark: loc("h.0."): layer 'h.0' (phase 0) stays inline: only 3 run(s) of this structure, min-repeats is 4
// MIN-DAG: remark: loc("h.1.mlp."): layer 'h.1' (phase 0) stays inline: only 3 run(s) of this structure, min-repeats is 4
// MIN-DAG: remark: loc("h.3."): layer 'h.3' (phase 0) stays inline: only 3 run(s) of this structure, min-repeats is 4
// MIN-DAG: remark: loc("h.2."): layer 'h.2' (phase 0) stays inline: it differs from 'h.0'
func.func @forward(%x: tensor<4xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>, %w2: tensor<4xf32>,
                   %w3: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %a0 = lcc.mul %x, %w0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.0.")
  %r0 = lcc.add %a0, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.0.")
  %a1 = lcc.mul %r0, %w1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.1.mlp.")
  %r1 = lcc.add %a1, %r0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.1.")
  %a2 = lcc.mul %r1, %w2 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.2.")
  %c2 = lcc.add %a2, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.2.")
  %r2 = lcc.add %c2, %r1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.2.")
  %a3 = lcc.mul %r2, %w3 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.3.")
  %r3 = lcc.add %a3, %r2 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.3.")
  %a4 = lcc.mul %r3, %w0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.4.")
  %r4 = lcc.add %a4, %a4 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.4.")
  %a5 = lcc.mul %r4, %w1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.5.")
  %r5 = lcc.sub %a5, %r4 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.5.")
  %a6 = lcc.mul %r5, %w2 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.6.")
  %r6 = lcc.mul %a6, %r5 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.6.")
  %a7 = lcc.mul %r6, %w3 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.7.")
  %r7 = lcc.mul %a7, %r6 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.7.")
  %o = lcc.mul %r7, %r7 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("blocks.0.")
  return %o : tensor<4xf32>
}
