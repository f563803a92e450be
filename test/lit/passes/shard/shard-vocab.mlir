// RUN: lcc-opt %s --split-input-file --lcc-shard-vocab="tp=2" | FileCheck %s
// RUN: lcc-opt %s --split-input-file --lcc-shard-vocab="tp=2" --lcc-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: lcc-opt %s --split-input-file --lcc-shard-vocab="tp=1" | FileCheck %s --check-prefix=ONE
// Tests passes/shard/ShardVocabParallel.cpp.

// GPT-2's tied embeddings: wte [8, 4] is the token embedding and the LM head;
// over 2 ranks each holds 4 vocabulary rows. The position table is gathered
// by an iota, not by token ids: it stays whole.
// CHECK: module attributes {lcc.process_groups = {tp = 2 : i64}}
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[WTE:arg[0-9]+]]: tensor<4x4xf32> {lcc.param = "wte", lcc.shard = {blocks = 1 : i64, dim = 0 : i64, group = "tp", parts = 2 : i64, shape = array<i64: 8, 4>}}
// CHECK-SAME: %[[WPE:arg[0-9]+]]: tensor<4x4xf32> {lcc.param = "wpe"}
// CHECK-SAME: %[[TOK:arg[0-9]+]]: tensor<2x3xi32> {lcc.input = "tokens"}, %[[TGT:arg[0-9]+]]: tensor<2x3xi32> {lcc.input = "targets"}
// This rank's token ids: its part of 0..7.
// CHECK:      %[[ALL:.*]] = lcc.iota : tensor<8xf32>
// CHECK-NEXT: %[[IDS:.*]] = lcc.shard_slice %[[ALL]] {group = "tp"} : tensor<8xf32> -> tensor<4xf32>
// The embedding: the token's local row (clamped into 0..3), a lookup, zeros
// for tokens another rank holds, summed over the ranks.
// CHECK:      %[[T0:.*]] = lcc.convert %[[TOK]] : tensor<2x3xi32> -> tensor<2x3xf32>
// The token clamped into 0..7 first, as lcc.gather clamps it.
// CHECK:      lcc.maximum %[[T0]]
// CHECK:      lcc.fill {value = 7.000000e+00 : f64} : tensor<f32>
// CHECK-NEXT: %[[T:.*]] = lcc.minimum
// CHECK-NEXT: %[[FIRST:.*]] = lcc.slice %[[IDS]] {limit = array<i64: 1>, start = array<i64: 0>}
// CHECK-NEXT: %[[LOCAL:.*]] = lcc.sub %[[T]], %[[FIRST]]
// CHECK:      %[[LO:.*]] = lcc.maximum %[[LOCAL]]
// CHECK:      lcc.fill {value = 3.000000e+00 : f64} : tensor<f32>
// CHECK-NEXT: %[[ROW:.*]] = lcc.minimum %[[LO]]
// CHECK-NEXT: %[[MINE:.*]] = lcc.cmp "eq", %[[ROW]], %[[LOCAL]]
// CHECK-NEXT: %[[IDX:.*]] = lcc.convert %[[ROW]] : tensor<2x3xf32> -> tensor<2x3xi32>
// CHECK-NEXT: %[[G:.*]] = lcc.gather %[[WTE]], %[[IDX]] : tensor<4x4xf32>, tensor<2x3xi32> -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[M:.*]] = lcc.reshape %[[MINE]] : tensor<2x3xi1> -> tensor<2x3x1xi1>
// CHECK:      %[[MASKED:.*]] = lcc.where %[[M]], %[[G]]
// CHECK-NEXT: %[[EMB:.*]] = lcc.all_reduce %[[MASKED]] {group = "tp"} : tensor<2x3x4xf32>
// CHECK:      %[[P:.*]] = lcc.gather %[[WPE]], %{{.*}} : tensor<4x4xf32>, tensor<2x3xi32> -> tensor<2x3x4xf32>
// CHECK-NEXT: lcc.add %[[EMB]], %[[P]]
// The head: Megatron's f on its input, this rank's 4 logits per token.
// CHECK:      %[[H:.*]] = lcc.mul
// CHECK-NEXT: %[[IN:.*]] = lcc.parallel_copy %[[H]] {group = "tp"} : tensor<2x3x4xf32>
// CHECK-NEXT: %[[L:.*]] = lcc.matmul %[[IN]], %[[WTE]] {transpose_rhs = true} : tensor<2x3x4xf32>, tensor<4x4xf32> -> tensor<2x3x4xf32>
// The loss from per-token values: the maximum (a constant shift), the sum of
// exponentials, the target's shifted logit; the logits are never gathered.
// CHECK-NEXT: %[[MX:.*]] = lcc.reduce_max %[[L]] {axes = array<i64: 2>, keepdim = true} : tensor<2x3x4xf32> -> tensor<2x3x1xf32>
// CHECK-NEXT: %[[GMX:.*]] = lcc.all_reduce %[[MX]] {group = "tp", reduction = "max"} : tensor<2x3x1xf32>
// CHECK-NEXT: %[[SHIFT:.*]] = lcc.stop_gradient %[[GMX]] : tensor<2x3x1xf32>
// CHECK-NEXT: %[[Z:.*]] = lcc.sub %[[L]], %[[SHIFT]]
// CHECK-NEXT: %[[E:.*]] = lcc.exp %[[Z]]
// CHECK-NEXT: %[[SL:.*]] = lcc.reduce_sum %[[E]] {axes = array<i64: 2>} : tensor<2x3x4xf32> -> tensor<2x3xf32>
// CHECK-NEXT: %[[S:.*]] = lcc.all_reduce %[[SL]] {group = "tp"} : tensor<2x3xf32>
// Targets clamped into 0..7 as lcc.cross_entropy does, matched with this
// rank's ids.
// CHECK-NEXT: %[[TF:.*]] = lcc.convert %[[TGT]] : tensor<2x3xi32> -> tensor<2x3xf32>
// CHECK:      lcc.fill {value = 7.000000e+00 : f64} : tensor<f32>
// CHECK-NEXT: %[[TC:.*]] = lcc.minimum
// CHECK-NEXT: %[[TC3:.*]] = lcc.reshape %[[TC]] : tensor<2x3xf32> -> tensor<2x3x1xf32>
// CHECK-NEXT: %[[HIT:.*]] = lcc.cmp "eq", %[[TC3]], %[[IDS]] : tensor<2x3x1xf32>, tensor<4xf32> -> tensor<2x3x4xi1>
// CHECK:      %[[PICK:.*]] = lcc.where %[[HIT]], %[[Z]]
// CHECK-NEXT: %[[PL:.*]] = lcc.reduce_sum %[[PICK]] {axes = array<i64: 2>}
// CHECK-NEXT: %[[PT:.*]] = lcc.all_reduce %[[PL]] {group = "tp"} : tensor<2x3xf32>
// CHECK-NEXT: %[[LOG:.*]] = lcc.log %[[S]]
// CHECK-NEXT: %[[NLL:.*]] = lcc.sub %[[LOG]], %[[PT]]
// The mean over targets other than ignore_index (-100).
// CHECK-NEXT: %[[IGN:.*]] = lcc.fill {value = -1.000000e+02 : f64} : tensor<f32>
// CHECK-NEXT: %[[COUNTED:.*]] = lcc.cmp "ne", %[[TF]], %[[IGN]]
// CHECK:      %[[TOTAL:.*]] = lcc.where %[[COUNTED]], %[[NLL]]
// CHECK:      %[[ONES:.*]] = lcc.where %[[COUNTED]]
// CHECK-NEXT: %[[NUM:.*]] = lcc.reduce_sum %[[TOTAL]] {axes = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<f32>
// CHECK-NEXT: %[[DEN:.*]] = lcc.reduce_sum %[[ONES]] {axes = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<f32>
// CHECK-NEXT: %[[LOSS:.*]] = lcc.div %[[NUM]], %[[DEN]]
// CHECK-NEXT: return %[[LOSS]]
// CHECK-NOT:  lcc.cross_entropy

// Autodiff's backward communicates once: the gradient of the head's input
// (the copy's VJP); the embedding's and the loss's all_reduces pass their
// gradients through, and the shift gets none. wte's gradient gathers both
// uses of this rank's rows.
// GRAD-LABEL: func.func @forward_grad(
// GRAD-COUNT-4: lcc.all_reduce
// GRAD:       lcc.all_reduce %{{.*}} {group = "tp"} : tensor<2x3x4xf32>
// GRAD-NOT:   lcc.all_reduce
// GRAD:       lcc.scatter_add %{{.*}} : tensor<2x3x4xf32>, tensor<2x3xi32> -> tensor<4x4xf32>
// GRAD:       return

// ONE-NOT: lcc.process_groups
// ONE-NOT: lcc.shard
// ONE:     lcc.cross_entropy
func.func @forward(%wte: tensor<8x4xf32> {lcc.param = "wte"}, %wpe: tensor<4x4xf32> {lcc.param = "wpe"},
                   %g: tensor<4xf32> {lcc.param = "g"},
                   %tok: tensor<2x3xi32> {lcc.input = "tokens"}, %tgt: tensor<2x3xi32> {lcc.input = "targets"}) -> tensor<f32> {
  %e = lcc.gather %wte, %tok : tensor<8x4xf32>, tensor<2x3xi32> -> tensor<2x3x4xf32>
  %pos = lcc.iota {dim = 1} : tensor<2x3xi32>
  %p = lcc.gather %wpe, %pos : tensor<4x4xf32>, tensor<2x3xi32> -> tensor<2x3x4xf32>
  %x = lcc.add %e, %p : tensor<2x3x4xf32>, tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %h = lcc.mul %x, %g : tensor<2x3x4xf32>, tensor<4xf32> -> tensor<2x3x4xf32>
  %l = lcc.matmul %h, %wte {transpose_rhs = true} : tensor<2x3x4xf32>, tensor<8x4xf32> -> tensor<2x3x8xf32>
  %loss = lcc.cross_entropy %l, %tgt : tensor<2x3x8xf32>, tensor<2x3xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// LLaMA's untied head [D, V] splits its columns, the embedding its rows (the
// token ids reach it through a reshape and an i64 -> i32 convert, as ONNX
// frontends pass them); both share one vector of ids. A table whose
// logits feed something besides the loss stays whole.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: tensor<4x4xf32> {lcc.param = "embed", lcc.shard = {blocks = 1 : i64, dim = 0 : i64, group = "tp", parts = 2 : i64, shape = array<i64: 8, 4>}}
// CHECK-SAME: tensor<4x4xf32> {lcc.param = "head", lcc.shard = {blocks = 1 : i64, dim = 1 : i64, group = "tp", parts = 2 : i64, shape = array<i64: 4, 8>}}
// CHECK-SAME: tensor<8x4xf32> {lcc.param = "other"}
// CHECK:      lcc.iota : tensor<8xf32>
// CHECK-NOT:  lcc.iota : tensor<8xf32>
// CHECK:      lcc.gather %{{.*}} : tensor<4x4xf32>, tensor<6xi32> -> tensor<6x4xf32>
// CHECK:      lcc.all_reduce %{{.*}} {group = "tp"} : tensor<6x4xf32>
// CHECK:      lcc.gather %{{.*}} : tensor<8x4xf32>, tensor<6xi32> -> tensor<6x4xf32>
// CHECK:      lcc.parallel_copy
// CHECK-NEXT: lcc.matmul %{{.*}}, %{{.*}} : tensor<6x4xf32>, tensor<4x4xf32> -> tensor<6x4xf32>
// CHECK:      lcc.all_reduce %{{.*}} {group = "tp", reduction = "max"} : tensor<6x1xf32>
// CHECK:      lcc.div
// ONE-NOT:    lcc.shard
// ONE:        lcc.cross_entropy
func.func @forward(%embed: tensor<8x4xf32> {lcc.param = "embed"}, %head: tensor<4x8xf32> {lcc.param = "head"},
                   %other: tensor<8x4xf32> {lcc.param = "other"},
                   %tok: tensor<2x3xi64> {lcc.input = "tokens"}, %tgt: tensor<6xi64> {lcc.input = "targets"}) -> tensor<f32> {
  %t = lcc.reshape %tok : tensor<2x3xi64> -> tensor<6xi64>
  %t32 = lcc.convert %t : tensor<6xi64> -> tensor<6xi32>
  %e = lcc.gather %embed, %t32 : tensor<8x4xf32>, tensor<6xi32> -> tensor<6x4xf32>
  %o = lcc.gather %other, %t32 : tensor<8x4xf32>, tensor<6xi32> -> tensor<6x4xf32>
  %x = lcc.add %e, %o : tensor<6x4xf32>, tensor<6x4xf32> -> tensor<6x4xf32>
  %l = lcc.matmul %x, %head : tensor<6x4xf32>, tensor<4x8xf32> -> tensor<6x8xf32>
  %l2 = lcc.matmul %x, %other {transpose_rhs = true} : tensor<6x4xf32>, tensor<8x4xf32> -> tensor<6x8xf32>
  %loss = lcc.cross_entropy %l, %tgt : tensor<6x8xf32>, tensor<6xi64> -> tensor<f32>
  %r = lcc.reduce_sum %l2 {axes = array<i64: 0, 1>} : tensor<6x8xf32> -> tensor<f32>
  %out = lcc.add %loss, %r : tensor<f32>, tensor<f32> -> tensor<f32>
  return %out : tensor<f32>
}

// -----

// GPT-2's 50257 tokens do not divide over 2 ranks; here 5 over 2: each rank
// holds 3 rows (rank 1's last a zero row the runtime pads), ids 0..5, and the
// padding logit (id 5) is masked before the loss.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: tensor<3x4xf32> {lcc.param = "wte", lcc.shard = {blocks = 1 : i64, dim = 0 : i64, group = "tp", parts = 2 : i64, shape = array<i64: 5, 4>}}
// CHECK:      %[[ALL:.*]] = lcc.iota : tensor<6xf32>
// CHECK-NEXT: %[[IDS:.*]] = lcc.shard_slice %[[ALL]] {group = "tp"} : tensor<6xf32> -> tensor<3xf32>
// CHECK:      lcc.fill {value = 2.000000e+00 : f64} : tensor<f32>
// CHECK:      lcc.gather %{{.*}} : tensor<3x4xf32>, tensor<3xi32> -> tensor<3x4xf32>
// CHECK:      %[[L:.*]] = lcc.matmul %{{.*}} {transpose_rhs = true} : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x3xf32>
// CHECK-NEXT: %[[V:.*]] = lcc.fill {value = 5.000000e+00 : f64} : tensor<f32>
// CHECK-NEXT: %[[REAL:.*]] = lcc.cmp "lt", %[[IDS]], %[[V]] : tensor<3xf32>, tensor<f32> -> tensor<3xi1>
// CHECK-NEXT: %[[LOW:.*]] = lcc.fill {value = -3.4028234663852886E+38 : f64} : tensor<f32>
// CHECK-NEXT: %[[MASKED:.*]] = lcc.where %[[REAL]], %[[L]], %[[LOW]] : tensor<3xi1>, tensor<3x3xf32>, tensor<f32> -> tensor<3x3xf32>
// CHECK-NEXT: lcc.reduce_max %[[MASKED]]
// Targets clamp to the real vocabulary, 0..4.
// CHECK:      lcc.fill {value = 4.000000e+00 : f64} : tensor<f32>
// CHECK-NEXT: lcc.minimum
func.func @forward(%wte: tensor<5x4xf32> {lcc.param = "wte"}, %tok: tensor<3xi32> {lcc.input = "tokens"},
                   %tgt: tensor<3xi32> {lcc.input = "targets"}) -> tensor<f32> {
  %e = lcc.gather %wte, %tok : tensor<5x4xf32>, tensor<3xi32> -> tensor<3x4xf32>
  %l = lcc.matmul %e, %wte {transpose_rhs = true} : tensor<3x4xf32>, tensor<5x4xf32> -> tensor<3x5xf32>
  %loss = lcc.cross_entropy %l, %tgt : tensor<3x5xf32>, tensor<3xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// The tied head as PyTorch's ONNX export writes it: x @ transpose(wte); the
// transpose's result becomes this rank's [D, V/tp] slice.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: tensor<4x4xf32> {lcc.param = "wte.weight", lcc.shard = {blocks = 1 : i64, dim = 0 : i64, group = "tp", parts = 2 : i64, shape = array<i64: 8, 4>}}
// CHECK:      %[[WT:.*]] = lcc.transpose %arg0 {perm = array<i64: 1, 0>} : tensor<4x4xf32> -> tensor<4x4xf32>
// CHECK:      lcc.gather %arg0, %{{.*}} : tensor<4x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
// CHECK:      %[[IN:.*]] = lcc.parallel_copy
// CHECK-NEXT: lcc.matmul %[[IN]], %[[WT]] : tensor<3x4xf32>, tensor<4x4xf32> -> tensor<3x4xf32>
// CHECK:      lcc.all_reduce %{{.*}} {group = "tp", reduction = "max"} : tensor<3x1xf32>
func.func @forward(%wte: tensor<8x4xf32> {lcc.param = "wte.weight"}, %tok: tensor<3xi32> {lcc.input = "tokens"},
                   %tgt: tensor<3xi32> {lcc.input = "targets"}) -> tensor<f32> {
  %t64 = lcc.convert %tok : tensor<3xi32> -> tensor<3xi64>
  %wt = lcc.transpose %wte {perm = array<i64: 1, 0>} : tensor<8x4xf32> -> tensor<4x8xf32>
  %e = lcc.gather %wte, %t64 : tensor<8x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
  %l = lcc.matmul %e, %wt : tensor<3x4xf32>, tensor<4x8xf32> -> tensor<3x8xf32>
  %loss = lcc.cross_entropy %l, %tgt : tensor<3x8xf32>, tensor<3xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
