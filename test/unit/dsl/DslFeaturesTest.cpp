//===- DslFeaturesTest.cpp - every builtin imports into verifying IR ------===//
//
// Ops are built generically by name from Sema's attributes, so a model that
// uses every builtin and operator is the check that names and attribute types
// match the ODS definitions.
//
//===----------------------------------------------------------------------===//
#include "DslTestUtil.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include <gtest/gtest.h>
#include <map>
#include <set>

using namespace mlir;
using namespace lcc::dsl;
using namespace lcc::dsl::test;

namespace {

const char *kEverything = R"(
config {
  b = 2
  t = 8
  d = 16
  h = 2
  hd = d / h
  v = 32
  use_bias = true
  scale = 1.0 / sqrt(hd)
  ratio = 7 // 2 + 7 % 3 - 1    # 3 + 1 - 1 = 3
}

input tokens: i32[b, t]
input targets: i64[b, t]
input weights: f32[b, t]

block Dense(x, n_out, n_in = x.shape[-1], bias = use_bias) {
  param w: [n_in, n_out] = uniform(-0.1, 0.1)
  y = x @ w
  if bias {
    param bias: [n_out] = full(0.5)
    y = y + bias
  } else if n_out > 100 {
    y = y * 2
  }
  return y
}

model everything {
  param emb: [v, d] = normal(std=0.02)
  param g: [d] = ones
  param beta: [d] = zeros
  x = embedding(emb, tokens) + gather(emb, arange(t), axis=0)
  x = layer_norm(x, g, beta, eps=1e-5) + rms_norm(x, g)
  x = x + Dense(x, d) as first
  x = x - Dense(x, d, bias=false) as second
  y = exp(x) + log(sigmoid(x)) + tanh(x) * erf(x) / sqrt(exp(x)) + rsqrt(exp(x))
  y = relu(y) + silu(y) + gelu(y) + gelu(y, approximate="tanh") - -y
  y = pow(y, 2.0) + maximum(y, 0) + minimum(0.5, y)
  y = where(y > 0, y, 0.0) + where(y <= x, 1, y) + reshape(float(tokens == 3), [b, t, 1])[:, :, 0:1]
  q = transpose(reshape(y, [b, t, h, (y * 2).rank + hd - 3]), [0, 2, 1, 3])
  kv = q[:, 0:1]
  a = attention(rope(q, theta=500.0), rope(kv), kv, causal=true, scale=scale)
  s = softmax(causal_mask(q @ q.T, fill=-inf) * scale, axis=-1) @ q
  s = s + log_softmax(causal_mask(matmul(q, q, transpose_b=true)), axis=3) @ a
  y = reshape(transpose(s, [0, 2, 1, 3]), [b, t, -1])
  z = concat([y, y[:, :, ::2], slice(y, 2, 0, d // 2)], axis=-1)
  z = z[:, -1] + broadcast_to(zeros([1, 2 * d]), [b, 2 * d]) + ones([2 * d]) + full([1], 3)
  p = iota([b, t], dim=1, dtype="f32") + float(iota([t], dtype="i64")) + z.rank + z.shape[1]
  r = sum(z, 1) + mean(z, [0, 1], keepdim=true) + max(p) + sum(p, axes=[-1]) * weights[0, 0]
  logits = Dense(y, v, bias=false) as head
  return cross_entropy(logits, targets, ignore_index=-1) + mean(r) * 0 + sum(weights) * 0
}
)";

TEST(DslFeatures, EveryBuiltinVerifies) {
  MLIRContext ctx;
  ctx.loadDialect<lcc::LccDialect>();
  auto module = importDsl(kEverything, "all.lcc", ctx, {});
  ASSERT_TRUE(bool(module)) << llvm::toString(module.takeError());
  ASSERT_TRUE(succeeded(verify(**module)));
  std::set<std::string> ops;
  (*module)->walk([&](Operation *op) { ops.insert(op->getName().getStringRef().str()); });
  for (const char *op :
       {"lcc.gather", "lcc.iota", "lcc.slice", "lcc.layer_norm", "lcc.rms_norm", "lcc.matmul",
        "lcc.add", "lcc.sub", "lcc.mul", "lcc.div", "lcc.neg", "lcc.exp", "lcc.log",
        "lcc.sigmoid", "lcc.tanh", "lcc.erf", "lcc.sqrt", "lcc.rsqrt", "lcc.relu", "lcc.silu",
        "lcc.gelu", "lcc.pow", "lcc.maximum", "lcc.minimum", "lcc.cmp", "lcc.where",
        "lcc.convert", "lcc.reshape", "lcc.transpose", "lcc.attention", "lcc.rope",
        "lcc.causal_mask", "lcc.softmax", "lcc.log_softmax", "lcc.concat", "lcc.broadcast_to",
        "lcc.fill", "lcc.constant", "lcc.reduce_sum", "lcc.reduce_mean", "lcc.reduce_max",
        "lcc.cross_entropy", "lcc.random_normal", "lcc.random_uniform"})
    EXPECT_TRUE(ops.count(op)) << op;
  auto forward = (*module)->lookupSymbol<func::FuncOp>("forward");
  std::vector<std::string> params;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    if (auto a = forward.getArgAttrOfType<StringAttr>(i, "lcc.param"))
      params.push_back(a.str());
  EXPECT_EQ(params, (std::vector<std::string>{"emb", "g", "beta", "first.w", "first.bias",
                                              "second.w", "head.w"}));
}

TEST(DslFeatures, ConfigArithmeticAndOverrideKinds) {
  MLIRContext ctx;
  ctx.loadDialect<lcc::LccDialect>();
  ImportOptions options;
  options.overrides = {{"use_bias", 0}, {"d", 32}};
  auto module = importDsl(kEverything, "all.lcc", ctx, options);
  ASSERT_TRUE(bool(module)) << llvm::toString(module.takeError());
  auto config = (*module)->getOperation()->getAttrOfType<DictionaryAttr>("lcc.config");
  EXPECT_EQ(llvm::cast<IntegerAttr>(config.get("ratio")).getInt(), 3);
  EXPECT_EQ(llvm::cast<IntegerAttr>(config.get("hd")).getInt(), 16);
  EXPECT_FALSE(llvm::cast<BoolAttr>(config.get("use_bias")).getValue());
  EXPECT_DOUBLE_EQ(llvm::cast<FloatAttr>(config.get("scale")).getValueAsDouble(), 0.25);
  auto forward = (*module)->lookupSymbol<func::FuncOp>("forward");
  unsigned biases = 0;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    if (auto a = forward.getArgAttrOfType<StringAttr>(i, "lcc.param"))
      biases += a.getValue().ends_with("bias");
  EXPECT_EQ(biases, 0u);
}

TEST(DslFeatures, BracesAndElseMayStartALine) {
  EXPECT_EQ(importError("config\n{\n  n = 2; big = false\n}\nmodel m\n{\n"
                        "  param w: [n] = zeros\n  for i in 0..n\n  {\n    if big\n    {\n"
                        "      w = w * 2\n    }\n    else\n    {\n      w = w + 1\n    }\n"
                        "  }\n  return sum(w)\n}\n"),
            "<imported>");
}

TEST(DslFeatures, LocationsPointAtExpressions) {
  MLIRContext ctx;
  ctx.loadDialect<lcc::LccDialect>();
  auto module = importDsl("input t: i32[2]\nmodel m {\n  param w: [4, 3] = zeros\n"
                          "  return cross_entropy(gather(w, t) * 2.0, t)\n}\n",
                          "loc.lcc", ctx, {});
  ASSERT_TRUE(bool(module)) << llvm::toString(module.takeError());
  std::map<std::string, std::string> where, named;
  (*module)->walk([&](Operation *op) {
    Location at = op->getLoc();
    if (auto name = llvm::dyn_cast<NameLoc>(at)) {
      named[op->getName().getStringRef().str()] = name.getName().str();
      at = name.getChildLoc();
    }
    auto l = llvm::cast<FileLineColLoc>(at);
    where[op->getName().getStringRef().str()] = l.getFilename().str() + ":" +
                                                std::to_string(l.getLine()) + ":" +
                                                std::to_string(l.getColumn());
  });
  EXPECT_EQ(where["lcc.cross_entropy"], "loc.lcc:4:10");
  EXPECT_EQ(where["lcc.gather"], "loc.lcc:4:24");
  EXPECT_EQ(where["lcc.mul"], "loc.lcc:4:37");
  EXPECT_EQ(where["lcc.constant"], "loc.lcc:4:37");
  EXPECT_EQ(where["lcc.fill"], "loc.lcc:3:9");
  // An initializer is named after its parameter too (lcc-outline-layers).
  EXPECT_EQ(named["lcc.fill"], "w");
  EXPECT_EQ(named.count("lcc.mul"), 0u);
}

} // namespace

namespace {

/// name -> the lcc.* unit attributes on its @forward argument ("frozen", "no_decay", ...).
std::map<std::string, std::set<std::string>> paramFlags(ModuleOp module) {
  std::map<std::string, std::set<std::string>> out;
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    auto name = forward.getArgAttrOfType<StringAttr>(i, "lcc.param");
    if (!name)
      continue;
    auto &flags = out[name.str()];
    for (const char *f : {"lcc.frozen", "lcc.no_decay", "lcc.decay"})
      if (forward.getArgAttr(i, f))
        flags.insert(f + 4);
  }
  return out;
}

} // namespace

// Flags on declarations and glob patterns in the train section reach the
// parameters' @forward arguments, which the passes read.
TEST(DslFeatures, TrainSectionMarksParameters) {
  const char *src = R"(
input x: f32[2, 4]
block Dense(x) {
  param w: [4, 4] = normal(0, 0.02)
  param b: [4] = zeros decay
  return x @ w + b
}
model m {
  param scale: [4] = ones no_decay frozen
  y = x
  for h in 0..3 {
    y = Dense(y) as fc
  }
  return mean(y * scale)
}
train {
  frozen = ["h.{0,2}.fc.w"]
  no_decay = "h.1.*.w"
}
)";
  MLIRContext ctx;
  ctx.loadDialect<lcc::LccDialect>();
  auto module = importDsl(src, "t.lcc", ctx, {});
  ASSERT_TRUE(bool(module)) << llvm::toString(module.takeError());
  using S = std::set<std::string>;
  std::map<std::string, S> want = {
      {"scale", S{"frozen", "no_decay"}}, {"h.0.fc.w", S{"frozen"}}, {"h.0.fc.b", S{"decay"}},
      {"h.1.fc.w", S{"no_decay"}},        {"h.1.fc.b", S{"decay"}},  {"h.2.fc.w", S{"frozen"}},
      {"h.2.fc.b", S{"decay"}}};
  EXPECT_EQ(paramFlags(**module), want);
}

// The loss choices: a returned scalar, logits against an input named
// `targets`, next-token on the only integer input, or an explicit expression
// over `output` and the model's variables.
TEST(DslFeatures, TrainSectionChoosesTheLoss) {
  auto lossOp = [](const std::string &src) -> std::string {
    MLIRContext ctx;
    ctx.loadDialect<lcc::LccDialect>();
    auto module = importDsl(src, "t.lcc", ctx, {});
    if (!module)
      return llvm::toString(module.takeError());
    auto forward = (*module)->lookupSymbol<func::FuncOp>("forward");
    Operation *def = forward.getBody().front().getTerminator()->getOperand(0).getDefiningOp();
    std::string text;
    llvm::raw_string_ostream os(text);
    os << def->getName().getStringRef();
    for (Value v : def->getOperands())
      if (Operation *p = v.getDefiningOp())
        os << " " << p->getName().getStringRef();
      else
        os << " arg" << llvm::cast<BlockArgument>(v).getArgNumber();
    return text;
  };
  const std::string body = "model m {\n  param w: [8, 16] = normal(0, 1)\n"
                           "  logits = embedding(w, tokens)\n  return logits\n}\n";
  // `targets` present: compared directly (arg 0 is w, 1 tokens, 2 targets).
  EXPECT_EQ(lossOp("input tokens: i32[2, 5]\ninput targets: i32[2, 5]\n" + body),
            "lcc.cross_entropy lcc.gather arg2");
  // Only tokens: logits[:, :-1] against tokens[:, 1:].
  EXPECT_EQ(lossOp("input tokens: i32[2, 5]\n" + body), "lcc.cross_entropy lcc.slice lcc.slice");
  // An explicit loss over the model's variables and `output`.
  EXPECT_EQ(lossOp("input tokens: i32[2, 5]\n" + body +
                   "train {\n  loss = mean(logits * logits) + mean(output)\n}\n"),
            "lcc.add lcc.reduce_mean lcc.reduce_mean");
}
