// One verifier error per case of the collective ops.
// RUN: lcc-opt %s -split-input-file -verify-diagnostics

func.func @no_groups(%g: tensor<8xf32>) {
  // expected-error @+1 {{names process group 'dp', but no enclosing module declares lcc.process_groups}}
  %0 = lcc.all_reduce %g {group = "dp"} : tensor<8xf32>
  return
}

// -----

module attributes {lcc.process_groups = {dp = 4 : i64}} {
  func.func @unknown_group(%g: tensor<8xf32>) {
    // expected-error @+1 {{process group 'tp' is not declared in the module's lcc.process_groups}}
    %0 = lcc.all_reduce %g {group = "tp"} : tensor<8xf32>
    return
  }
}

// -----

module attributes {lcc.process_groups = {dp = 4 : i64}} {
  func.func @reduction(%g: tensor<8xf32>) {
    // expected-error @+1 {{reduction 'prod' is not one of sum, mean, max, min}}
    %0 = lcc.all_reduce %g {group = "dp", reduction = "prod"} : tensor<8xf32>
    return
  }
}

// -----

module attributes {lcc.process_groups = {dp = 4 : i64}} {
  func.func @gather_shape(%p: tensor<2x3xf32>) {
    // expected-error @+1 {{dimension 0 is 6 on the gathered side; expected 8 (group size 4 along axis 0)}}
    %0 = lcc.all_gather %p {group = "dp"} : tensor<2x3xf32> -> tensor<6x3xf32>
    return
  }
}

// -----

module attributes {lcc.process_groups = {dp = 4 : i64}} {
  func.func @scatter_divisible(%g: tensor<6x3xf32>) {
    // expected-error @+1 {{dimension 0 of the input (6) is not divisible by the group size 4}}
    %0 = lcc.reduce_scatter %g {group = "dp"} : tensor<6x3xf32> -> tensor<1x3xf32>
    return
  }
}

// -----

module attributes {lcc.process_groups = {dp = 4 : i64}} {
  func.func @axis(%p: tensor<2x3xf32>) {
    // expected-error @+1 {{axis 2 is out of range for rank 2}}
    %0 = lcc.all_gather %p {group = "dp", axis = 2} : tensor<2x3xf32> -> tensor<2x3xf32>
    return
  }
}

// -----

module attributes {lcc.process_groups = {tp = 2 : i64}} {
  func.func @root(%p: tensor<2xf32>) {
    // expected-error @+1 {{root 2 is not a rank of the group (0..1)}}
    %0 = lcc.broadcast %p {group = "tp", root = 2} : tensor<2xf32>
    return
  }
}

// -----

module attributes {lcc.process_groups = {tp = 2 : i64}} {
  func.func @peer(%p: tensor<2xf32>) {
    // expected-error @+1 {{peer -1 is not a rank of the group (0..1)}}
    lcc.send %p {group = "tp", peer = -1} : tensor<2xf32>
    return
  }
}

// -----

module attributes {lcc.process_groups = {dp = 0 : i64}} {
  func.func @empty_group() {
    // expected-error @+1 {{process group 'dp' has size 0; expected at least 1}}
    %0 = lcc.recv {group = "dp", peer = 0} : tensor<2xf32>
    return
  }
}

// -----

module attributes {lcc.process_groups = {dp = 4 : i64}} {
  func.func @shard_slice_divisible(%g: tensor<6x3xf32>) {
    // expected-error @+1 {{dimension 0 of the input (6) is not divisible by the group size 4}}
    %0 = lcc.shard_slice %g {group = "dp"} : tensor<6x3xf32> -> tensor<1x3xf32>
    return
  }
}

// -----

module attributes {lcc.process_groups = {dp = 4 : i64}} {
  func.func @shard_slice_shape(%g: tensor<8x3xf32>) {
    // expected-error @+1 {{dimension 0 is 8 on the gathered side; expected 12 (group size 4 along axis 0)}}
    %0 = lcc.shard_slice %g {group = "dp"} : tensor<8x3xf32> -> tensor<3x3xf32>
    return
  }
}

// -----

module attributes {lcc.process_groups = {dp = 4 : i64}} {
  func.func @copy_group(%x: tensor<8xf32>) {
    // expected-error @+1 {{process group 'tp' is not declared in the module's lcc.process_groups}}
    %0 = lcc.parallel_copy %x {group = "tp"} : tensor<8xf32>
    return
  }
}

// -----

module attributes {lcc.process_groups = {dp = 4 : i64}} {
  func.func @ticket_without_wait(%g: tensor<8xf32>) -> tensor<8xf32> {
    // expected-error @+1 {{with ticket 0 must have one use, the lcc.wait of that ticket}}
    %0 = lcc.all_reduce %g {group = "dp", ticket = 0} : tensor<8xf32>
    return %0 : tensor<8xf32>
  }
}

// -----

module attributes {lcc.process_groups = {dp = 4 : i64}} {
  func.func @wait_other_ticket(%g: tensor<8xf32>) -> tensor<8xf32> {
    // expected-error @+1 {{with ticket 0 is waited for by ticket 1}}
    %0 = lcc.all_reduce %g {group = "dp", ticket = 0} : tensor<8xf32>
    %1 = lcc.wait %0 : tensor<8xf32> {ticket = 1}
    return %1 : tensor<8xf32>
  }
}

// -----

module attributes {lcc.process_groups = {dp = 4 : i64}} {
  func.func @wait_keeps_input(%p: tensor<2xf32>) -> tensor<8xf32> {
    %0 = lcc.all_gather %p {group = "dp", ticket = 0} : tensor<2xf32> -> tensor<8xf32>
    // expected-error @+1 {{must keep exactly the collective's input alive until the wait}}
    %1 = lcc.wait %0 : tensor<8xf32> {ticket = 0}
    return %1 : tensor<8xf32>
  }
}

// -----

func.func @wait_for_nothing(%g: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{waits for a value that is not the result of an all_reduce, all_gather or reduce_scatter with a ticket}}
  %0 = lcc.wait %g : tensor<8xf32> {ticket = 0}
  return %0 : tensor<8xf32>
}

// -----

module attributes {lcc.process_groups = {pp = 2 : i64}} {
  func.func @exchange_peers(%p: tensor<2xf32>) {
    // expected-error @+1 {{has 1 inputs but 2 send_peers}}
    lcc.exchange %p {group = "pp", send_peers = array<i64: 1, 1>, recv_peers = array<i64>} : (tensor<2xf32>) -> ()
    return
  }
}

// -----

module attributes {lcc.process_groups = {pp = 2 : i64}} {
  func.func @exchange_peer(%p: tensor<2xf32>) {
    // expected-error @+1 {{peer 2 is not a rank of the group (0..1)}}
    %0 = lcc.exchange %p {group = "pp", send_peers = array<i64: 1>, recv_peers = array<i64: 2>} : (tensor<2xf32>) -> tensor<2xf32>
    return
  }
}

// -----

module attributes {lcc.process_groups = {pp = 2 : i64}} {
  func.func @posted_receives(%p: tensor<2xf32>) {
    // expected-error @+1 {{is posted but receives: only sends complete after it returns}}
    %0 = lcc.exchange %p {group = "pp", posted, send_peers = array<i64: 1>, recv_peers = array<i64: 1>} : (tensor<2xf32>) -> tensor<2xf32>
    return
  }
}
