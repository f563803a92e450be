//===- DslExamplesTest.cpp - the example models import as documented -----===//
#include "DslTestUtil.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"
#include <gtest/gtest.h>
#include <set>

using namespace mlir;
using namespace lcc::dsl;
using namespace lcc::dsl::test;

namespace {

/// @init's initializer ops, in parameter order (without their seeds).
std::vector<Operation *> initializers(func::FuncOp init) {
  std::vector<Operation *> ops;
  for (Operation &op : init.getBody().front().without_terminator())
    if (!llvm::isa<arith::ConstantOp>(op))
      ops.push_back(&op);
  return ops;
}

/// A random initializer's seed (a constant operand), if it is one.
std::optional<int64_t> seedOf(Operation *op) {
  if (op->getNumOperands() != 1)
    return std::nullopt;
  auto c = op->getOperand(0).getDefiningOp<arith::ConstantOp>();
  if (!c)
    return std::nullopt;
  return llvm::cast<IntegerAttr>(c.getValue()).getInt();
}

struct Imported {
  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
  std::string error;

  Imported(const std::string &file, const ImportOptions &options = {}) {
    ctx.loadDialect<lcc::LccDialect>();
    auto m = importDsl(readExample(file), file, ctx, options);
    if (m)
      module = std::move(*m);
    else
      error = llvm::toString(m.takeError());
  }
  func::FuncOp fn(llvm::StringRef name) { return module->lookupSymbol<func::FuncOp>(name); }

  std::vector<std::string> paramNames() {
    std::vector<std::string> names;
    func::FuncOp f = fn("forward");
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      if (auto a = f.getArgAttrOfType<StringAttr>(i, "lcc.param"))
        names.push_back(a.str());
    return names;
  }
  int64_t paramElements() {
    int64_t n = 0;
    func::FuncOp f = fn("forward");
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      if (f.getArgAttr(i, "lcc.param"))
        n += llvm::cast<RankedTensorType>(f.getArgument(i).getType()).getNumElements();
    return n;
  }
  int64_t config(llvm::StringRef key) {
    auto dict = module->getOperation()->getAttrOfType<DictionaryAttr>("lcc.config");
    return llvm::cast<IntegerAttr>(dict.get(key)).getInt();
  }
};

/// The contract of docs/architecture.md: @init results match @forward's
/// parameter arguments one to one, inputs follow with lcc.input, loss is tensor<f32>.
void checkModelModule(Imported &m, llvm::StringRef name) {
  ASSERT_EQ(m.error, "");
  ASSERT_TRUE(succeeded(verify(*m.module)));
  EXPECT_EQ(m.module->getOperation()->getAttrOfType<StringAttr>("lcc.model").str(), name.str());
  ASSERT_TRUE(m.module->getOperation()->getAttrOfType<DictionaryAttr>("lcc.config"));
  func::FuncOp init = m.fn("init"), forward = m.fn("forward");
  ASSERT_TRUE(init && forward);
  unsigned nparams = init.getFunctionType().getNumResults();
  ASSERT_EQ(nparams, m.paramNames().size());
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    bool isParam = i < nparams;
    EXPECT_EQ(bool(forward.getArgAttr(i, "lcc.param")), isParam) << "argument " << i;
    EXPECT_EQ(bool(forward.getArgAttr(i, "lcc.input")), !isParam) << "argument " << i;
    if (isParam)
      EXPECT_EQ(forward.getArgument(i).getType(), init.getFunctionType().getResult(i));
  }
  ASSERT_EQ(forward.getFunctionType().getNumResults(), 1u);
  EXPECT_EQ(forward.getFunctionType().getResult(0),
            RankedTensorType::get({}, Float32Type::get(&m.ctx)));
  // One initializer op per parameter, in parameter order (after its seed),
  // named after the parameter.
  std::vector<Operation *> initOps = initializers(init);
  ASSERT_EQ(initOps.size(), nparams);
  for (auto [i, op] : llvm::enumerate(initOps)) {
    EXPECT_TRUE(op->getName().getStringRef() == "lcc.random_normal" ||
                op->getName().getStringRef() == "lcc.fill" ||
                op->getName().getStringRef() == "lcc.random_uniform");
    auto name = llvm::dyn_cast<NameLoc>(op->getLoc());
    ASSERT_TRUE(name) << "initializer " << i;
    EXPECT_EQ(name.getName().getValue(), m.paramNames()[i]);
  }
  // Every op points back at its DSL expression; one made inside a loop is
  // named by its iteration ("h.3.") around that position, an initializer
  // (and its seed) by its parameter.
  m.module->walk([&](Operation *op) {
    Location at = op->getLoc();
    if (auto name = llvm::dyn_cast<NameLoc>(at)) {
      llvm::StringRef iteration = name.getName().getValue();
      if (op->getParentOfType<func::FuncOp>() != init)
        EXPECT_TRUE(iteration.ends_with(".") && iteration.contains('.'))
            << op->getName().getStringRef().str() << " named " << iteration.str();
      at = name.getChildLoc();
    }
    auto loc = llvm::dyn_cast<FileLineColLoc>(at);
    EXPECT_TRUE(loc) << op->getName().getStringRef().str();
    if (loc)
      EXPECT_GE(loc.getLine(), 1u);
  });
}

TEST(DslExamples, GptTiny) {
  Imported m("gpt-tiny.lcc");
  checkModelModule(m, "gpt_tiny");
  // vocab 256, ctx 64, dim 64, 2 layers; per layer: ln_1 2*64, c_attn 64*192+192,
  // attn c_proj 64*64+64, ln_2 2*64, c_fc 64*256+256, mlp c_proj 256*64+64.
  int64_t layer = 128 + (64 * 192 + 192) + (64 * 64 + 64) + 128 + (64 * 256 + 256) +
                  (256 * 64 + 64);
  EXPECT_EQ(m.paramElements(), 256 * 64 + 64 * 64 + 2 * layer + 128);
  EXPECT_EQ(m.paramElements(), 120576);
  std::vector<std::string> expected = {"wte", "wpe"};
  for (int h = 0; h < 2; ++h)
    for (const char *p : {"ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
                          "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
                          "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight",
                          "mlp.c_proj.bias"})
      expected.push_back("h." + std::to_string(h) + "." + p);
  expected.push_back("ln_f.weight");
  expected.push_back("ln_f.bias");
  EXPECT_EQ(m.paramNames(), expected);
  EXPECT_EQ(m.config("batch"), 4);
}

TEST(DslExamples, Gpt2Small) {
  Imported m("gpt2-124m.lcc");
  checkModelModule(m, "gpt2_124m");
  EXPECT_EQ(m.paramElements(), 124439808);
  EXPECT_EQ(m.paramNames().size(), 2u + 12 * 12 + 2);
  EXPECT_EQ(m.paramNames()[2], "h.0.ln_1.weight");
  EXPECT_EQ(m.paramNames().back(), "ln_f.bias");
}

TEST(DslExamples, LlamaTiny) {
  Imported m("llama-tiny.lcc");
  checkModelModule(m, "llama_tiny");
  // per layer: two RMSNorm weights 64, q/o 64*64, k/v 64*32, gate/up/down 64*176.
  int64_t layer = 2 * 64 + 2 * 64 * 64 + 2 * 64 * 32 + 3 * 64 * 176;
  EXPECT_EQ(m.paramElements(), 256 * 64 + 2 * layer + 64 + 64 * 256);
  EXPECT_EQ(m.paramElements(), 125248);
  std::vector<std::string> expected = {"embed_tokens"};
  for (int l = 0; l < 2; ++l)
    for (const char *p : {"input_layernorm.weight", "self_attn.q_proj.weight",
                          "self_attn.k_proj.weight", "self_attn.v_proj.weight",
                          "self_attn.o_proj.weight", "post_attention_layernorm.weight",
                          "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"})
      expected.push_back("layers." + std::to_string(l) + "." + p);
  expected.push_back("norm.weight");
  expected.push_back("lm_head.weight");
  EXPECT_EQ(m.paramNames(), expected);
  // Grouped-query attention: 4 query heads over 2 key/value heads.
  bool sawGqa = false;
  m.module->walk([&](Operation *op) {
    if (op->getName().getStringRef() != "lcc.attention")
      return;
    auto q = llvm::cast<RankedTensorType>(op->getOperand(0).getType());
    auto k = llvm::cast<RankedTensorType>(op->getOperand(1).getType());
    sawGqa = q.getDimSize(1) == 4 && k.getDimSize(1) == 2;
  });
  EXPECT_TRUE(sawGqa);
}

TEST(DslExamples, OverridesChangeShapes) {
  ImportOptions options;
  options.overrides = {{"batch", 8}, {"seq", 16}, {"layers", 3}};
  Imported m("gpt-tiny.lcc", options);
  checkModelModule(m, "gpt_tiny");
  func::FuncOp forward = m.fn("forward");
  auto tokens = llvm::cast<RankedTensorType>(
      forward.getArgument(forward.getNumArguments() - 2).getType());
  EXPECT_EQ(tokens.getShape(), llvm::ArrayRef<int64_t>({8, 16}));
  EXPECT_EQ(m.config("batch"), 8);
  EXPECT_EQ(m.config("seq"), 16);
  EXPECT_EQ(m.paramElements(), 120576 + 49984); // one more layer
  EXPECT_EQ(m.paramNames().size(), 2u + 3 * 12 + 2);
}

TEST(DslExamples, OverrideBeyondContextFailsAtCompileTime) {
  ImportOptions options;
  options.overrides = {{"seq", 128}};
  EXPECT_EQ(importError(readExample("gpt-tiny.lcc"), options),
            "t.lcc:60:36: error: slice 0:128 is out of range for dimension 0 of size 64, a slice "
            "must be a non-empty range inside the tensor");
}

TEST(DslExamples, OverrideUnknownConstant) {
  ImportOptions options;
  options.overrides = {{"batchsize", 8}};
  EXPECT_EQ(importError(readExample("gpt-tiny.lcc"), options),
            "t.lcc:1:1: error: unknown config constant 'batchsize' in the overrides, the "
            "model's config defines: vocab, ctx, dim, heads, layers, batch, seq, head_dim, eps");
}

TEST(DslExamples, SeedsDependOnlyOnGlobalSeedAndName) {
  Imported a("gpt-tiny.lcc");
  ASSERT_EQ(a.error, "");
  std::vector<int64_t> seeds;
  for (Operation *op : initializers(a.fn("init")))
    if (std::optional<int64_t> s = seedOf(op))
      seeds.push_back(*s);
  ASSERT_FALSE(seeds.empty());
  std::set<int64_t> distinct(seeds.begin(), seeds.end());
  EXPECT_EQ(distinct.size(), seeds.size());
  EXPECT_EQ(seeds[0], paramSeed(1337, "wte"));
  EXPECT_NE(paramSeed(1337, "wte"), paramSeed(1338, "wte"));
  EXPECT_GE(paramSeed(~0ull, "x"), 0);
  ImportOptions other;
  other.seed = 7;
  Imported b("gpt-tiny.lcc", other);
  ASSERT_EQ(b.error, "");
  EXPECT_EQ(seedOf(initializers(b.fn("init")).front()), paramSeed(7, "wte"));
}

TEST(DslExamples, InitializersAndGptInitStd) {
  Imported m("gpt-tiny.lcc");
  ASSERT_EQ(m.error, "");
  std::vector<std::string> names = m.paramNames();
  size_t i = 0;
  for (Operation *opPtr : initializers(m.fn("init"))) {
    Operation &op = *opPtr;
    const std::string &n = names[i++];
    bool isBias = llvm::StringRef(n).ends_with("bias");
    bool isLnWeight = llvm::StringRef(n).contains("ln_") && llvm::StringRef(n).ends_with("weight");
    if (isBias || isLnWeight) {
      ASSERT_EQ(op.getName().getStringRef(), "lcc.fill") << n;
      EXPECT_EQ(op.getAttrOfType<FloatAttr>("value").getValueAsDouble(), isBias ? 0.0 : 1.0) << n;
    } else {
      ASSERT_EQ(op.getName().getStringRef(), "lcc.random_normal") << n;
      EXPECT_EQ(op.getAttrOfType<FloatAttr>("std").getValueAsDouble(), 0.02) << n;
    }
  }
}

} // namespace
