// RUN: lcc-opt %s --split-input-file --lcc-out-params -verify-diagnostics
// Tests passes/buffer/OutParams.cpp.
// expected-error @+1 {{lcc-out-params: result #0 of @dyn has type 'tensor<?xf32>'; out-params need statically shaped ranked tensors}}
func.func @dyn(%x: tensor<?xf32>) -> tensor<?xf32> {
  return %x : tensor<?xf32>
}

// -----

// A function called inside the module would need its call sites rewritten.
// expected-error @+1 {{lcc-out-params: @callee is called inside the module; only entry points are supported}}
func.func @callee(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
func.func private @caller(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = func.call @callee(%x) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// A layer function's results are stored into out-params too.
// expected-error @+1 {{lcc-out-params: result #0 of layer @step_layer0 has type 'tensor<?xf32>'; out-params need statically shaped ranked tensors}}
func.func private @step_layer0(%x: tensor<?xf32>) -> tensor<?xf32> attributes {lcc.layer = "h.*"} {
  return %x : tensor<?xf32>
}

// -----

func.func private @step_layer0(%x: tensor<2xf32>) -> tensor<2xf32> attributes {lcc.layer = "h.*"} {
  return %x : tensor<2xf32>
}
// A layer is only ever called: any other use would miss its out-params.
func.func @step() {
  // expected-error @+1 {{lcc-out-params: layer @step_layer0 is used other than by a call}}
  %f = func.constant @step_layer0 : (tensor<2xf32>) -> tensor<2xf32>
  return
}
