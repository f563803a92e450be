// RUN: lcc-opt %s --split-input-file --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" -verify-diagnostics

// Each rank's part must be one contiguous block: gathering along an inner
// axis of a tensor with more than one row is not lowered.
module attributes {lcc.process_groups = {tp = 2 : i64}} {
  func.func @inner_axis(%x: tensor<2x4xf32>) -> tensor<2x8xf32> {
    // expected-error @+2 {{failed to bufferize op}}
    // expected-error @+1 {{'lcc.all_gather' op along axis 1 is not lowered yet: only the outermost non-unit axis, where each rank's part is contiguous}}
    %0 = lcc.all_gather %x {group = "tp", axis = 1} : tensor<2x4xf32> -> tensor<2x8xf32>
    return %0 : tensor<2x8xf32>
  }
}

// -----

// The runtime moves f32, f64, i32, i64 and i1 elements.
module attributes {lcc.process_groups = {dp = 2 : i64}} {
  func.func @bf16(%x: tensor<4xbf16>) -> tensor<4xbf16> {
    // expected-error @+2 {{failed to bufferize op}}
    // expected-error @+1 {{'lcc.all_reduce' op cannot communicate elements of type 'bf16' (the runtime has f32, f64, i32, i64, i1)}}
    %0 = lcc.all_reduce %x {group = "dp"} : tensor<4xbf16>
    return %0 : tensor<4xbf16>
  }
}
