// RUN: lcc-opt %s --split-input-file --lcc-shard-zero="dp=2 stage=2" -verify-diagnostics
// RUN: sh -c 'lcc-opt %s --split-input-file --lcc-shard-zero="dp=2 stage=4"; test $? -ne 0' 2>&1 | FileCheck %s --check-prefix=STAGE
// STAGE: error: lcc-shard-zero: stage must be 1, 2 or 3, got 4

// The optimizer may only be elementwise per parameter (plus whole-tensor
// sums): a softmax over a gradient needs the whole tensor on one rank.
module {
  func.func @train_step(%w: tensor<4xf32> {lcc.param = "w"}, %m: tensor<4xf32> {lcc.opt_state = "m:w"},
                        %x: tensor<4xf32> {lcc.input = "x"})
      -> (tensor<4xf32> {lcc.param = "w"}, tensor<4xf32> {lcc.opt_state = "m:w"}) {
    %g0 = lcc.mul %w, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %g = lcc.gradient %g0 {param = "w"} : tensor<4xf32>
    %m2 = lcc.add %m, %g : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    // expected-error @+1 {{lcc-shard-zero: 'lcc.softmax' on the optimizer path cannot be partitioned (only elementwise ops and whole-tensor sums can)}}
    %s = lcc.softmax %m2 : tensor<4xf32>
    %w2 = lcc.sub %w, %s : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    return %w2, %m2 : tensor<4xf32>, tensor<4xf32>
  }
}

// -----

// A reduction over part of a partitioned gradient (a row norm, say) has no
// flat partitioning.
module {
  func.func @train_step(%w: tensor<2x4xf32> {lcc.param = "w"}, %x: tensor<2x4xf32> {lcc.input = "x"})
      -> (tensor<2x4xf32> {lcc.param = "w"}, tensor<2xf32> {lcc.output = "rows"}) {
    %g0 = lcc.mul %w, %x : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
    %g = lcc.gradient %g0 {param = "w"} : tensor<2x4xf32>
    // expected-error @+1 {{lcc-shard-zero: a partial reduction of a partitioned gradient or state cannot be partitioned (only whole-tensor sums, as in clipping's norm)}}
    %r = lcc.reduce_sum %g {axes = array<i64: 1>} : tensor<2x4xf32> -> tensor<2xf32>
    %w2 = lcc.sub %w, %g : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
    return %w2, %r : tensor<2x4xf32>, tensor<2xf32>
  }
}

// -----

// A marker must name a trainable parameter of the step.
module {
  func.func @train_step(%w: tensor<4xf32> {lcc.param = "w"}, %x: tensor<4xf32> {lcc.input = "x"})
      -> (tensor<4xf32> {lcc.param = "w"}) {
    %g0 = lcc.mul %w, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    // expected-error @+1 {{lcc-shard-zero: the gradient of 'v' has no parameter argument}}
    %g = lcc.gradient %g0 {param = "v"} : tensor<4xf32>
    %w2 = lcc.sub %w, %g : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    return %w2 : tensor<4xf32>
  }
}

// -----

// A part ZeRO already made is not partitioned again (a tensor-parallel
// piece, group "tp", is: shard-zero-tp.mlir).
module {
  // expected-error @+1 {{lcc-shard-zero: argument #0 is already partitioned over data-parallel ranks}}
  func.func @train_step(%w: tensor<2xf32> {lcc.param = "w", lcc.shard = {group = "dp", parts = 2 : i64, shape = array<i64: 4>}},
                        %x: tensor<2xf32> {lcc.input = "x"}) -> (tensor<2xf32> {lcc.param = "w"}) {
    %g0 = lcc.mul %w, %x : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
    %g = lcc.gradient %g0 {param = "w"} : tensor<2xf32>
    %w2 = lcc.sub %w, %g : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
    return %w2 : tensor<2xf32>
  }
}
