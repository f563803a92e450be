//===- LccOps.td - operations of the lcc dialect ----------*- tablegen -*-===//
//
// Every op verifies its shapes and says what it expected; every op has a cost.
// Composite ops (attention, layer_norm, cross_entropy, ...) stay whole here so
// autodiff can use their numerically stable VJPs and fusion can pick kernels;
// `lcc-decompose` splits those that lowering does not handle directly.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_OPS_TD
#define LCC_OPS_TD

include "dialects/lcc/LccDialect.td"
include "dialects/lcc/LccInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// Constants and initializers
//===----------------------------------------------------------------------===//

def Lcc_ConstantOp : Lcc_Op<"constant", [ConstantLike, Pure, Lcc_CostOpInterface,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "A tensor constant";
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Lcc_AnyTensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Lcc_FillOp : Lcc_Op<"fill", [Pure, Lcc_CostOpInterface]> {
  let summary = "A tensor with every element equal to `value` (zeros, ones)";
  let arguments = (ins F64Attr:$value);
  let results = (outs Lcc_AnyTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Lcc_RandomNormalOp : Lcc_Op<"random_normal", [Pure, Lcc_CostOpInterface]> {
  let summary = "Seeded normal initializer";
  let description = [{
    Element i is a pure function of (seed, i): a counter-based generator, so the
    values do not depend on the target, the thread count or the op's position.
    The seed is a value, not an attribute: the initializers of repeated layers
    differ only in their seeds, so lcc-outline-layers can make them calls of
    one function that takes the seeds as arguments.
  }];
  let arguments = (ins I64:$seed,
                       DefaultValuedAttr<F64Attr, "0.0">:$mean,
                       DefaultValuedAttr<F64Attr, "1.0">:$std);
  let results = (outs Lcc_FloatTensor:$result);
  let assemblyFormat = "$seed attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Lcc_RandomUniformOp : Lcc_Op<"random_uniform", [Pure, Lcc_CostOpInterface]> {
  let summary = "Seeded uniform initializer on [low, high) (seed as in random_normal)";
  let arguments = (ins I64:$seed,
                       DefaultValuedAttr<F64Attr, "0.0">:$low,
                       DefaultValuedAttr<F64Attr, "1.0">:$high);
  let results = (outs Lcc_FloatTensor:$result);
  let assemblyFormat = "$seed attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Lcc_IotaOp : Lcc_Op<"iota", [Pure, Lcc_CostOpInterface]> {
  let summary = "Element value = its index along `dim` (positions, ranges)";
  let arguments = (ins DefaultValuedAttr<I64Attr, "0">:$dim);
  let results = (outs Lcc_AnyTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class Lcc_UnaryOp<string mnemonic, string sum, list<Trait> traits = []>
    : Lcc_Op<mnemonic, !listconcat([Pure, SameOperandsAndResultType,
                                    Lcc_CostOpInterface, DeclareOpInterfaceMethods<Lcc_VjpOpInterface, ["buildVjp"]>], traits)> {
  let summary = sum;
  let arguments = (ins Lcc_FloatTensor:$input);
  let results = (outs Lcc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Lcc_NegOp : Lcc_UnaryOp<"neg", "-x">;
def Lcc_ExpOp : Lcc_UnaryOp<"exp", "e^x">;
def Lcc_LogOp : Lcc_UnaryOp<"log", "natural logarithm">;
def Lcc_TanhOp : Lcc_UnaryOp<"tanh", "hyperbolic tangent">;
def Lcc_ErfOp : Lcc_UnaryOp<"erf", "error function">;
def Lcc_SqrtOp : Lcc_UnaryOp<"sqrt", "square root">;
def Lcc_RsqrtOp : Lcc_UnaryOp<"rsqrt", "1 / sqrt(x)">;
def Lcc_ReluOp : Lcc_UnaryOp<"relu", "max(x, 0)">;
def Lcc_SigmoidOp : Lcc_UnaryOp<"sigmoid", "1 / (1 + e^-x)">;
def Lcc_SiluOp : Lcc_UnaryOp<"silu", "x * sigmoid(x) (SwiGLU's gate)">;

def Lcc_GeluOp : Lcc_Op<"gelu", [DeclareOpInterfaceMethods<Lcc_VjpOpInterface, ["buildVjp"]>, Pure, SameOperandsAndResultType, Lcc_CostOpInterface]> {
  let summary = "GELU, exact (erf) or with GPT-2's tanh approximation";
  let arguments = (ins Lcc_FloatTensor:$input,
                       DefaultValuedAttr<StrAttr, "\"none\"">:$approximate);
  let results = (outs Lcc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

class Lcc_BinaryOp<string mnemonic, string sum, list<Trait> traits = []>
    : Lcc_Op<mnemonic, !listconcat([Pure, Lcc_CostOpInterface, DeclareOpInterfaceMethods<Lcc_VjpOpInterface, ["buildVjp"]>], traits)> {
  let summary = sum;
  let description = [{ Operands broadcast as in NumPy; the result has the broadcast shape. }];
  let arguments = (ins Lcc_FloatTensor:$lhs, Lcc_FloatTensor:$rhs);
  let results = (outs Lcc_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
  let hasVerifier = 1;
}

def Lcc_AddOp : Lcc_BinaryOp<"add", "lhs + rhs", [Commutative]>;
def Lcc_SubOp : Lcc_BinaryOp<"sub", "lhs - rhs">;
def Lcc_MulOp : Lcc_BinaryOp<"mul", "lhs * rhs", [Commutative]>;
def Lcc_DivOp : Lcc_BinaryOp<"div", "lhs / rhs">;
def Lcc_PowOp : Lcc_BinaryOp<"pow", "lhs ^ rhs">;
def Lcc_MaximumOp : Lcc_BinaryOp<"maximum", "elementwise max(lhs, rhs)", [Commutative]>;
def Lcc_MinimumOp : Lcc_BinaryOp<"minimum", "elementwise min(lhs, rhs)", [Commutative]>;

def Lcc_CmpOp : Lcc_Op<"cmp", [Pure, Lcc_CostOpInterface]> {
  let summary = "Elementwise comparison (eq, ne, lt, le, gt, ge) with broadcasting";
  let arguments = (ins Lcc_AnyTensor:$lhs, Lcc_AnyTensor:$rhs, StrAttr:$predicate);
  let results = (outs Lcc_BoolTensor:$result);
  let assemblyFormat = "$predicate `,` $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
  let hasVerifier = 1;
}

def Lcc_WhereOp : Lcc_Op<"where", [DeclareOpInterfaceMethods<Lcc_VjpOpInterface, ["buildVjp"]>, Pure, Lcc_CostOpInterface]> {
  let summary = "cond ? lhs : rhs, with broadcasting";
  let arguments = (ins Lcc_BoolTensor:$cond, Lcc_FloatTensor:$lhs, Lcc_FloatTensor:$rhs);
  let results = (outs Lcc_FloatTensor:$result);
  let assemblyFormat = "$cond `,` $lhs `,` $rhs attr-dict `:` type($cond) `,` type($lhs) `,` type($rhs) `->` type($result)";
  let hasVerifier = 1;
}

def Lcc_ConvertOp : Lcc_Op<"convert", [DeclareOpInterfaceMethods<Lcc_VjpOpInterface, ["buildVjp"]>, Pure, Lcc_CostOpInterface]> {
  let summary = "Element type conversion (f32 <-> bf16/f16/f64, int -> float)";
  let arguments = (ins Lcc_AnyTensor:$input);
  let results = (outs Lcc_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Lcc_StopGradientOp : Lcc_Op<"stop_gradient", [Pure, AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<Lcc_VjpOpInterface, ["buildVjp", "isDifferentiableOperand"]>,
    Lcc_CostOpInterface]> {
  let summary = "Identity whose input gets no gradient (jax.lax.stop_gradient, torch's detach)";
  let description = [{
    For values that change what is computed but not the function's value,
    such as the shift that keeps a log-sum-exp finite (vocab-parallel
    cross-entropy subtracts the all-reduced maximum, which has no VJP):
    autodiff treats the result as a constant. No folder, since it must
    survive until autodiff; it lowers to its input.
  }];
  let arguments = (ins Lcc_AnyTensor:$input);
  let results = (outs Lcc_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

class Lcc_ReduceOp<string mnemonic, string sum>
    : Lcc_Op<mnemonic, [Pure, DeclareOpInterfaceMethods<Lcc_CostOpInterface, ["getFlops"]>,
                        DeclareOpInterfaceMethods<Lcc_VjpOpInterface, ["buildVjp"]>]> {
  let summary = sum;
  let description = [{
    Reduces over `axes` (negative values count from the end); `keepdim`
    keeps reduced dimensions with size 1.
  }];
  let arguments = (ins Lcc_FloatTensor:$input, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "false">:$keepdim);
  let results = (outs Lcc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Lcc_ReduceSumOp : Lcc_ReduceOp<"reduce_sum", "Sum over axes">;
def Lcc_ReduceMeanOp : Lcc_ReduceOp<"reduce_mean", "Mean over axes">;
def Lcc_ReduceMaxOp : Lcc_ReduceOp<"reduce_max", "Maximum over axes">;

class Lcc_SoftmaxLikeOp<string mnemonic, string sum>
    : Lcc_Op<mnemonic, [Pure, SameOperandsAndResultType,
                        DeclareOpInterfaceMethods<Lcc_CostOpInterface, ["getFlops"]>,
                        DeclareOpInterfaceMethods<Lcc_VjpOpInterface, ["buildVjp"]>]> {
  let summary = sum;
  let arguments = (ins Lcc_FloatTensor:$input, DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Lcc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Lcc_SoftmaxOp : Lcc_SoftmaxLikeOp<"softmax", "Numerically stable softmax along axis">;
def Lcc_LogSoftmaxOp : Lcc_SoftmaxLikeOp<"log_softmax", "Numerically stable log-softmax along axis">;

def Lcc_LayerNormOp : Lcc_Op<"layer_norm", [DeclareOpInterfaceMethods<Lcc_VjpOpInterface, ["buildVjp"]>, Pure, AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<Lcc_CostOpInterface, ["getFlops"]>]> {
  let summary = "Layer normalization over the last dimension: (x - mean) / sqrt(var + eps) * weight + bias";
  let arguments = (ins Lcc_FloatTensor:$input, Lcc_FloatTensor:$weight,
                       Lcc_FloatTensor:$bias, DefaultValuedAttr<F64Attr, "1e-5">:$eps);
  let results = (outs Lcc_FloatTensor:$result);
  let assemblyFormat = "$input `,` $weight `,` $bias attr-dict `:` type($input) `,` type($weight) `,` type($bias)";
  let hasVerifier = 1;
}

def Lcc_RmsNormOp : Lcc_Op<"rms_norm", [DeclareOpInterfaceMethods<Lcc_VjpOpInterface, ["buildVjp"]>, Pure, AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<Lcc_CostOpInterface, ["getFlops"]>]> {
  let summary = "RMS normalization over the last dimension: x / sqrt(mean(x^2) + eps) * weight";
  let arguments = (ins Lcc_FloatTensor:$input, Lcc_FloatTensor:$weight,
                       DefaultValuedAttr<F64Attr, "1e-6">:$eps);
  let results = (outs Lcc_FloatTensor:$result);
  let assemblyFormat = "$input `,` $weight attr-dict `:` type($input) `,` type($weight)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Linear algebra and attention
//===----------------------------------------------------------------------===//

def Lcc_MatmulOp : Lcc_Op<"matmul", [DeclareOpInterfaceMethods<Lcc_VjpOpInterface, ["buildVjp"]>, Pure,
    DeclareOpInterfaceMethods<Lcc_CostOpInterface, ["getFlops"]>]> {
  let summary = "Batched matrix product with optional transposes";
  let description = [{
    lhs is [..., M, K] (or [..., K, M] with transpose_lhs), rhs is [..., K, N]
    (or [..., N, K] with transpose_rhs). Batch dimensions broadcast; a rank-2
    rhs (a weight) applies to every batch element.
  }];
  let arguments = (ins Lcc_FloatTensor:$lhs, Lcc_FloatTensor:$rhs,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_lhs,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_rhs);
  let results = (outs Lcc_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
  let hasVerifier = 1;
}

def Lcc_RopeOp : Lcc_Op<"rope", [DeclareOpInterfaceMethods<Lcc_VjpOpInterface, ["buildVjp"]>, Pure, SameOperandsAndResultType, Lcc_CostOpInterface]> {
  let summary = "Rotary position embedding (rotate-half form, as LLaMA/GPT-NeoX)";
  let description = [{
    input is [..., T, D] with even D; the position of a row is its index along
    dim -2 plus `offset`. Pair (i, i + D/2) is rotated by pos * theta^(-2i/D).
  }];
  let arguments = (ins Lcc_FloatTensor:$input,
                       DefaultValuedAttr<F64Attr, "10000.0">:$theta,
                       DefaultValuedAttr<I64Attr, "0">:$offset);
  let results = (outs Lcc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Lcc_CausalMaskOp : Lcc_Op<"causal_mask", [DeclareOpInterfaceMethods<Lcc_VjpOpInterface, ["buildVjp"]>, Pure, SameOperandsAndResultType, Lcc_CostOpInterface]> {
  let summary = "Sets future positions of [..., Tq, Tk] scores to `fill`";
  let description = [{
    Element (i, j) of the last two dims is replaced by `fill` when
    j > i + (Tk - Tq): query i sees keys up to its own position.
  }];
  let arguments = (ins Lcc_FloatTensor:$input,
                       DefaultValuedAttr<F64Attr, "-std::numeric_limits<double>::infinity()">:$fill);
  let results = (outs Lcc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Lcc_AttentionOp : Lcc_Op<"attention", [DeclareOpInterfaceMethods<Lcc_VjpOpInterface, ["buildVjp"]>, Pure, AllTypesMatch<["query", "result"]>,
    DeclareOpInterfaceMethods<Lcc_CostOpInterface, ["getFlops"]>]> {
  let summary = "Scaled dot-product attention with grouped-query heads";
  let description = [{
    query [B, H, Tq, D], key and value [B, Hkv, Tk, D] with H a multiple of Hkv
    (query head h uses key/value head h / (H / Hkv)). Result [B, H, Tq, D] =
    softmax(q k^T * scale [causally masked]) v; scale defaults to 1/sqrt(D).
    `lcc-decompose` rewrites it into matmul, causal_mask and softmax; with
    `keep-attention` it stays whole and becomes one runtime call after
    bufferization (`lcc_attention_fwd`, a fused kernel). Its VJP is
    lcc.attention_grad.
  }];
  let arguments = (ins Lcc_FloatTensor:$query, Lcc_FloatTensor:$key, Lcc_FloatTensor:$value,
                       DefaultValuedAttr<BoolAttr, "false">:$causal,
                       OptionalAttr<F64Attr>:$scale);
  let results = (outs Lcc_FloatTensor:$result);
  let assemblyFormat = "$query `,` $key `,` $value attr-dict `:` type($query) `,` type($key) `,` type($value)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The softmax scale: the attribute, or 1/sqrt(head dim).
    double getScaleOrDefault();
  }];
}

def Lcc_AttentionGradOp : Lcc_Op<"attention_grad", [Pure,
    DeclareOpInterfaceMethods<Lcc_CostOpInterface, ["getFlops"]>]> {
  let summary = "The gradients of lcc.attention with respect to query, key and value";
  let description = [{
    What lcc.attention's VJP emits: given the attention's operands, its
    result `out` and the result's gradient, the gradients of query, key and
    value (grouped-query heads summed into their key/value head). `causal`
    and `scale` are the forward's. `lcc-decompose` spells it out as matmuls
    and softmax (recomputing the probabilities); with `keep-attention` it
    stays whole and becomes one runtime call after bufferization
    (`lcc_attention_bwd`, a fused kernel that recomputes the probabilities
    row by row and never materializes the [Tq, Tk] scores).
  }];
  let arguments = (ins Lcc_FloatTensor:$query, Lcc_FloatTensor:$key, Lcc_FloatTensor:$value,
                       Lcc_FloatTensor:$out, Lcc_FloatTensor:$grad_out,
                       DefaultValuedAttr<BoolAttr, "false">:$causal,
                       OptionalAttr<F64Attr>:$scale);
  let results = (outs Lcc_FloatTensor:$grad_query, Lcc_FloatTensor:$grad_key,
                      Lcc_FloatTensor:$grad_value);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $out `,` $grad_out attr-dict `:` type($query) `,` type($key)
    `,` type($value) `,` type($out) `,` type($grad_out) `->` type(results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The softmax scale: the attribute, or 1/sqrt(head dim).
    double getScaleOrDefault();
  }];
}

def Lcc_CrossEntropyOp : Lcc_Op<"cross_entropy", [DeclareOpInterfaceMethods<Lcc_VjpOpInterface, ["buildVjp"]>, Pure,
    DeclareOpInterfaceMethods<Lcc_CostOpInterface, ["getFlops"]>]> {
  let summary = "Mean softmax cross-entropy of logits [..., V] against integer targets [...]";
  let description = [{
    Targets equal to `ignore_index` contribute nothing and are not counted in
    the mean (as PyTorch's default reduction does). If every target is ignored
    the result is 0 / 0 = NaN, as in PyTorch.
  }];
  let arguments = (ins Lcc_FloatTensor:$logits, Lcc_IndexTensor:$targets,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs Lcc_ScalarFloatTensor:$result);
  let assemblyFormat = "$logits `,` $targets attr-dict `:` type($logits) `,` type($targets) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

def Lcc_ReshapeOp : Lcc_Op<"reshape", [DeclareOpInterfaceMethods<Lcc_VjpOpInterface, ["buildVjp"]>, Pure, Lcc_CostOpInterface]> {
  let summary = "Same elements in row-major order, new static shape";
  let arguments = (ins Lcc_AnyTensor:$input);
  let results = (outs Lcc_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Lcc_TransposeOp : Lcc_Op<"transpose", [DeclareOpInterfaceMethods<Lcc_VjpOpInterface, ["buildVjp"]>, Pure, Lcc_CostOpInterface]> {
  let summary = "Permute dimensions: result dim i is input dim perm[i]";
  let arguments = (ins Lcc_AnyTensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Lcc_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Lcc_SliceOp : Lcc_Op<"slice", [DeclareOpInterfaceMethods<Lcc_VjpOpInterface, ["buildVjp"]>, Pure, Lcc_CostOpInterface]> {
  let summary = "Elements start[d] <= i < limit[d] with step[d], per dimension";
  let arguments = (ins Lcc_AnyTensor:$input, DenseI64ArrayAttr:$start,
                       DenseI64ArrayAttr:$limit, OptionalAttr<DenseI64ArrayAttr>:$step);
  let results = (outs Lcc_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Lcc_ConcatOp : Lcc_Op<"concat", [DeclareOpInterfaceMethods<Lcc_VjpOpInterface, ["buildVjp"]>, Pure, Lcc_CostOpInterface]> {
  let summary = "Concatenate along `axis`";
  let arguments = (ins Variadic<Lcc_AnyTensor>:$inputs, I64Attr:$axis);
  let results = (outs Lcc_AnyTensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs) `->` type($result)";
  let hasVerifier = 1;
}

def Lcc_BroadcastToOp : Lcc_Op<"broadcast_to", [DeclareOpInterfaceMethods<Lcc_VjpOpInterface, ["buildVjp"]>, Pure, Lcc_CostOpInterface]> {
  let summary = "Broadcast to the result shape (NumPy rules)";
  let arguments = (ins Lcc_AnyTensor:$input);
  let results = (outs Lcc_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Lcc_GatherOp : Lcc_Op<"gather", [DeclareOpInterfaceMethods<Lcc_VjpOpInterface, ["buildVjp"]>, Pure, Lcc_CostOpInterface]> {
  let summary = "Take slices of input along `axis` at integer indices (embedding lookup)";
  let description = [{
    Result shape is input.shape[:axis] + indices.shape + input.shape[axis+1:],
    as ONNX Gather. An embedding lookup is gather of table [V, D] on axis 0.
    Indices out of range are clamped at run time (they cannot fault).
  }];
  let arguments = (ins Lcc_AnyTensor:$input, Lcc_IndexTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Lcc_AnyTensor:$result);
  let assemblyFormat = "$input `,` $indices attr-dict `:` type($input) `,` type($indices) `->` type($result)";
  let hasVerifier = 1;
}

def Lcc_ScatterAddOp : Lcc_Op<"scatter_add", [Pure,
    DeclareOpInterfaceMethods<Lcc_CostOpInterface, ["getFlops"]>,
    DeclareOpInterfaceMethods<Lcc_VjpOpInterface, ["buildVjp"]>]> {
  let summary = "Sum slices of updates into zeros at integer indices along `axis` (gather's adjoint)";
  let description = [{
    The transpose of `lcc.gather`: the result has the shape of the tensor that
    was gathered from, updates.shape[:axis] + [N] + updates.shape[axis+k:]
    (k = indices rank, N the result's size along axis), starts at zero, and
    result[pre..., clamp(indices[j...]), post...] += updates[pre..., j..., post...].
    Indices are clamped into [0, N) exactly as gather clamps them, so
    scatter_add(g, indices) is gather's VJP; repeated indices accumulate.
  }];
  let arguments = (ins Lcc_FloatTensor:$updates, Lcc_IndexTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Lcc_FloatTensor:$result);
  let assemblyFormat = "$updates `,` $indices attr-dict `:` type($updates) `,` type($indices) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Collectives (distributed training)
//===----------------------------------------------------------------------===//
//
// Every collective names a process group declared on an enclosing module:
//   module attributes {lcc.process_groups = {dp = 4 : i64, tp = 2 : i64}}
// The group's size fixes the shapes of all_gather and reduce_scatter, and
// bounds root and peer ranks. Collectives communicate, so they are not Pure:
// no pass may drop, duplicate or reorder them (every rank must issue the
// same collectives in the same order).
//
// all_reduce, all_gather and reduce_scatter may be asynchronous: with a
// `ticket` (lcc-overlap-collectives sets one) the op only issues the
// collective, its result's one use is the `lcc.wait` with the same ticket,
// and the step computes in between while the runtime's communication thread
// moves the bytes.

class Lcc_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Lcc_Op<mnemonic, !listconcat([Lcc_CostOpInterface, MemoryEffects<[MemRead, MemWrite]>],
                                   traits)>;

def Lcc_AllReduceOp : Lcc_CollectiveOp<"all_reduce", [AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<Lcc_VjpOpInterface, ["buildVjp"]>]> {
  let summary = "Elementwise sum/mean/max/min of `input` over the ranks of `group`, on every rank";
  let description = [{
    Its VJP (sum: identity; mean: 1/N) assumes what tensor parallelism
    differentiates: one loss that every rank of the group computes alike, so
    the gradient of the replicated result is itself replicated (Megatron's
    "g" operator). max and min have no VJP.
  }];
  let arguments = (ins Lcc_FloatTensor:$input, StrAttr:$group,
                       DefaultValuedAttr<StrAttr, "\"sum\"">:$reduction,
                       OptionalAttr<I64Attr>:$ticket);
  let results = (outs Lcc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  // Synchronous (no ticket): what the sharding passes build.
  let builders = [OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$input,
                                 "::llvm::StringRef":$group, "::llvm::StringRef":$reduction), [{
    build($_builder, $_state, result, input, group, reduction, ::mlir::IntegerAttr());
  }]>];
  let hasVerifier = 1;
}

def Lcc_AllGatherOp : Lcc_CollectiveOp<"all_gather",
    [DeclareOpInterfaceMethods<Lcc_VjpOpInterface, ["buildVjp"]>]> {
  let summary = "Concatenate every rank's `input` along `axis`, in rank order, on every rank";
  let arguments = (ins Lcc_AnyTensor:$input, StrAttr:$group,
                       DefaultValuedAttr<I64Attr, "0">:$axis,
                       OptionalAttr<I64Attr>:$ticket);
  let results = (outs Lcc_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let builders = [OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$input,
                                 "::llvm::StringRef":$group, "uint64_t":$axis), [{
    build($_builder, $_state, result, input, group, axis, ::mlir::IntegerAttr());
  }]>];
  let hasVerifier = 1;
}

def Lcc_ReduceScatterOp : Lcc_CollectiveOp<"reduce_scatter",
    [DeclareOpInterfaceMethods<Lcc_VjpOpInterface, ["buildVjp"]>]> {
  let summary = "Reduce over the ranks of `group`, then rank r keeps part r of the result along `axis`";
  let description = [{
    The input's size along `axis` is N * k for a group of N ranks; rank r
    receives elements [r * k, (r + 1) * k) of the sum (or mean, max, min).
    ZeRO's gradient path: all_reduce = reduce_scatter + all_gather.
  }];
  let arguments = (ins Lcc_FloatTensor:$input, StrAttr:$group,
                       DefaultValuedAttr<I64Attr, "0">:$axis,
                       DefaultValuedAttr<StrAttr, "\"sum\"">:$reduction,
                       OptionalAttr<I64Attr>:$ticket);
  let results = (outs Lcc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let builders = [OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$input,
                                 "::llvm::StringRef":$group, "uint64_t":$axis,
                                 "::llvm::StringRef":$reduction), [{
    build($_builder, $_state, result, input, group, axis, reduction, ::mlir::IntegerAttr());
  }]>];
  let hasVerifier = 1;
}

def Lcc_WaitOp : Lcc_CollectiveOp<"wait", [AllTypesMatch<["value", "result"]>]> {
  let summary = "The result of the asynchronous collective with the same `ticket`, once it is complete";
  let description = [{
    `value` is the result of an all_reduce, all_gather or reduce_scatter with
    this `ticket`, and this op is its only use; the op returns it unchanged
    once the collective has finished. `keep` is the collective's input when
    the collective is not in place (all_gather, reduce_scatter): the runtime
    reads it until the wait, so nothing may overwrite it before, and the
    memory plan keeps it alive until here.
  }];
  let arguments = (ins Lcc_AnyTensor:$value, Variadic<Lcc_AnyTensor>:$keep, I64Attr:$ticket);
  let results = (outs Lcc_AnyTensor:$result);
  let assemblyFormat = "$value `:` type($value) (`after` $keep^ `:` type($keep))? attr-dict";
  let hasVerifier = 1;
}

def Lcc_BroadcastOp : Lcc_CollectiveOp<"broadcast", [AllTypesMatch<["input", "result"]>]> {
  let summary = "Every rank of `group` gets rank `root`'s `input`";
  let arguments = (ins Lcc_AnyTensor:$input, StrAttr:$group,
                       DefaultValuedAttr<I64Attr, "0">:$root);
  let results = (outs Lcc_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Lcc_SendOp : Lcc_CollectiveOp<"send"> {
  let summary = "Send `input` to rank `peer` of `group` (pipeline stages)";
  let arguments = (ins Lcc_AnyTensor:$input, StrAttr:$group, I64Attr:$peer);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Lcc_RecvOp : Lcc_CollectiveOp<"recv"> {
  let summary = "Receive a tensor of the result type from rank `peer` of `group`";
  let arguments = (ins StrAttr:$group, I64Attr:$peer);
  let results = (outs Lcc_AnyTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Lcc_ExchangeOp : Lcc_CollectiveOp<"exchange"> {
  let summary = "Sends and receives posted together, as one group (pipeline stages)";
  let description = [{
    Sends `inputs[i]` to rank `send_peers[i]` of `group` and receives
    result j from rank `recv_peers[j]`, all posted at once and complete when
    every one is (NCCL's ncclGroupStart/End; Gloo posts every buffer before
    waiting for any): two neighbouring pipeline stages that each send to
    and receive from the other in one exchange cannot wait on each other,
    where two blocking sends would. Between two ranks, the k-th send matches
    the k-th receive in posting order, over all exchanges. A `posted`
    exchange (sends only) returns once its sends are posted, their data
    copied: they complete while the rank computes on, before its next
    synchronous collective or exchange (a schedule's started group: ZB-H1
    sends an input gradient, then computes weight gradients).

    ```mlir
    %g = lcc.exchange %y {group = "pp", send_peers = array<i64: 1>,
                          recv_peers = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Variadic<Lcc_AnyTensor>:$inputs, StrAttr:$group,
                       DenseI64ArrayAttr:$send_peers, DenseI64ArrayAttr:$recv_peers,
                       UnitAttr:$posted);
  let results = (outs Variadic<Lcc_AnyTensor>:$results);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, $results)";
  let hasVerifier = 1;
}

def Lcc_ShardSliceOp : Lcc_Op<"shard_slice", [Pure, Lcc_CostOpInterface,
    DeclareOpInterfaceMethods<Lcc_VjpOpInterface, ["buildVjp"]>]> {
  let summary = "This rank's part of a tensor every rank of `group` holds (no communication)";
  let description = [{
    The input's size along `axis` is N * k for a group of N ranks; rank r
    gets elements [r * k, (r + 1) * k). The local inverse of all_gather:
    all_gather(shard_slice(x)) = x when every rank holds the same x (ZeRO
    takes its part of replicated parameters and gradients this way).
  }];
  let arguments = (ins Lcc_AnyTensor:$input, StrAttr:$group,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Lcc_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Lcc_ParallelCopyOp : Lcc_Op<"parallel_copy", [Pure, AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<Lcc_VjpOpInterface, ["buildVjp"]>, Lcc_CostOpInterface]> {
  let summary = "Identity whose gradient is summed over the ranks of `group` (Megatron's f)";
  let description = [{
    Where a value every rank of a tensor-parallel group holds alike enters
    work split over the group (the input of a column-parallel matmul), each
    rank's backward yields only its share of the value's gradient; the VJP
    all-reduces (sums) them. Lowers to its input.
  }];
  let arguments = (ins Lcc_FloatTensor:$input, StrAttr:$group);
  let results = (outs Lcc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Lcc_GradientOp : Lcc_Op<"gradient", [Pure, AllTypesMatch<["input", "result"]>,
                                         Lcc_CostOpInterface]> {
  let summary = "Marks the gradient of parameter `param` where the optimizer receives it";
  let description = [{
    An identity. lcc-build-train-step wraps each parameter's final gradient
    (averaged over micro-batches) in one, so the sharding passes know where
    gradients meet the optimizer: data parallelism all-reduces them there,
    ZeRO reduce-scatters them. It folds away (canonicalize) and lowers to
    its input.
  }];
  let arguments = (ins Lcc_FloatTensor:$input, StrAttr:$param);
  let results = (outs Lcc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasFolder = 1;
}

#endif // LCC_OPS_TD
