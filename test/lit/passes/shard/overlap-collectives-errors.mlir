// RUN: lcc-opt %s --split-input-file --lcc-overlap-collectives -verify-diagnostics
// Tests passes/shard/OverlapCollectives.cpp: what it cannot schedule.

module attributes {lcc.process_groups = {dp = 2 : i64}} {
  // expected-error @+1 {{lcc-overlap-collectives: @branchy has control flow; collectives are scheduled on one straight-line block}}
  func.func @branchy(%x: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
    cf.cond_br %c, ^a, ^b
  ^a:
    %r = lcc.all_reduce %x {group = "dp"} : tensor<4xf32>
    return %r : tensor<4xf32>
  ^b:
    return %x : tensor<4xf32>
  }
}
