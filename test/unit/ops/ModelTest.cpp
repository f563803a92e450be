//===- ModelTest.cpp - ops composed as in a model module ------------------===//
//
// Single-op tests cannot see bugs that only appear when ops feed each other
// (buffer reuse after bufferization, views of views, layouts between ops), nor
// modules with several public functions and private helpers. This runs a small
// pre-norm transformer block with a loss, as the DSL frontend would emit it.
//
//===----------------------------------------------------------------------===//
#include "OpTestUtil.h"

using namespace lcc;
using namespace lcc::test;

namespace {

// B=2, T=4, C=8, heads=2 (head dim 4), V=11.
std::string blockModule(const std::string &f) {
  auto t = [&](const std::string &shape) { return "tensor<" + shape + "x" + f + ">"; };
  std::string x = t("2x4x8"), w = t("8"), wqkv = t("8x24"), wo = t("8x8"), w1 = t("8x16"),
              w2 = t("16x8"), wv = t("8x11"), heads = t("2x2x4x4"), split = t("2x4x2x4"),
              s = "tensor<" + f + ">";
  std::string src;
  src += "func.func @forward(%x: " + x + ", %ln1w: " + w + ", %ln1b: " + w + ", %wqkv: " + wqkv +
         ", %wo: " + wo + ", %ln2w: " + w + ", %w1: " + w1 + ", %w2: " + w2 + ", %wv: " + wv +
         ", %targets: tensor<2x4xi32>) -> (" + s + ", " + x + ") {\n";
  src += "  %h = lcc.layer_norm %x, %ln1w, %ln1b : " + x + ", " + w + ", " + w + "\n";
  src += "  %qkv = lcc.matmul %h, %wqkv : " + x + ", " + wqkv + " -> " + t("2x4x24") + "\n";
  const char *names[] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    std::string n = names[i];
    src += "  %" + n + "0 = lcc.slice %qkv {start = array<i64: 0, 0, " + std::to_string(8 * i) +
           ">, limit = array<i64: 2, 4, " + std::to_string(8 * i + 8) + ">} : " + t("2x4x24") +
           " -> " + x + "\n";
    src += "  %" + n + "1 = lcc.reshape %" + n + "0 : " + x + " -> " + split + "\n";
    src += "  %" + n + "2 = lcc.transpose %" + n + "1 {perm = array<i64: 0, 2, 1, 3>} : " + split +
           " -> " + heads + "\n";
  }
  src += "  %q3 = lcc.rope %q2 : " + heads + "\n";
  src += "  %k3 = lcc.rope %k2 : " + heads + "\n";
  src += "  %att = lcc.attention %q3, %k3, %v2 {causal = true} : " + heads + ", " + heads + ", " +
         heads + "\n";
  src += "  %att1 = lcc.transpose %att {perm = array<i64: 0, 2, 1, 3>} : " + heads + " -> " +
         split + "\n";
  src += "  %att2 = lcc.reshape %att1 : " + split + " -> " + x + "\n";
  src += "  %proj = lcc.matmul %att2, %wo : " + x + ", " + wo + " -> " + x + "\n";
  src += "  %r1 = lcc.add %x, %proj : " + x + ", " + x + " -> " + x + "\n";
  src += "  %h2 = lcc.rms_norm %r1, %ln2w : " + x + ", " + w + "\n";
  src += "  %u = lcc.matmul %h2, %w1 : " + x + ", " + w1 + " -> " + t("2x4x16") + "\n";
  src += "  %g = call @act(%u) : (" + t("2x4x16") + ") -> " + t("2x4x16") + "\n";
  src += "  %d = lcc.matmul %g, %w2 : " + t("2x4x16") + ", " + w2 + " -> " + x + "\n";
  src += "  %r2 = lcc.add %r1, %d : " + x + ", " + x + " -> " + x + "\n";
  src += "  %logits = lcc.matmul %r2, %wv : " + x + ", " + wv + " -> " + t("2x4x11") + "\n";
  src += "  %loss = lcc.cross_entropy %logits, %targets : " + t("2x4x11") +
         ", tensor<2x4xi32> -> " + s + "\n";
  src += "  return %loss, %r2 : " + s + ", " + x + "\n}\n";
  // A private helper (no C interface) and a second public function.
  src += "func.func private @act(%a: " + t("2x4x16") + ") -> " + t("2x4x16") + " {\n";
  src += "  %r = lcc.gelu %a {approximate = \"tanh\"} : " + t("2x4x16") + "\n";
  src += "  return %r : " + t("2x4x16") + "\n}\n";
  src += "func.func @init() -> " + wqkv + " {\n";
  src += "  %seed = arith.constant 3 : i64\n";
  src += "  %r = lcc.random_normal %seed {std = 2.0e-02 : f64} : " + wqkv + "\n";
  src += "  return %r : " + wqkv + "\n}\n";
  return src;
}

ref::Tensor referenceBlock(const std::vector<ref::Tensor> &a, ref::Tensor *residualOut) {
  const ref::Tensor &x = a[0];
  ref::Tensor h = ref::layerNorm(x, a[1], a[2], 1e-5);
  ref::Tensor qkv = ref::matmul(h, a[3], false, false);
  ref::Tensor parts[3];
  for (int i = 0; i < 3; ++i) {
    ref::Tensor s = ref::slice(qkv, {0, 0, 8 * i}, {2, 4, 8 * i + 8}, {1, 1, 1});
    parts[i] = ref::transpose(ref::reshape(s, {2, 4, 2, 4}), {0, 2, 1, 3});
  }
  ref::Tensor q = ref::rope(parts[0], 10000.0, 0), k = ref::rope(parts[1], 10000.0, 0);
  ref::Tensor att = ref::attention(q, k, parts[2], true, std::nullopt);
  ref::Tensor merged = ref::reshape(ref::transpose(att, {0, 2, 1, 3}), {2, 4, 8});
  ref::Tensor r1 = ref::binary("add", x, ref::matmul(merged, a[4], false, false));
  ref::Tensor h2 = ref::rmsNorm(r1, a[5], 1e-6);
  ref::Tensor g = ref::unary("gelu_tanh", ref::matmul(h2, a[6], false, false));
  ref::Tensor r2 = ref::binary("add", r1, ref::matmul(g, a[7], false, false));
  *residualOut = r2;
  return ref::crossEntropy(ref::matmul(r2, a[8], false, false), a[9], -100);
}

class ModelTest : public ::testing::TestWithParam<ElementType> {};

TEST_P(ModelTest, TransformerBlockWithLoss) {
  ElementType type = GetParam();
  std::mt19937 rng(2024);
  std::vector<HostTensor> args = {
      randomTensor(type, {2, 4, 8}, rng),         randomTensor(type, {8}, rng, 0.5, 1.5),
      randomTensor(type, {8}, rng, -0.5, 0.5),    randomTensor(type, {8, 24}, rng, -0.5, 0.5),
      randomTensor(type, {8, 8}, rng, -0.5, 0.5), randomTensor(type, {8}, rng, 0.5, 1.5),
      randomTensor(type, {8, 16}, rng, -0.5, 0.5), randomTensor(type, {16, 8}, rng, -0.5, 0.5),
      randomTensor(type, {8, 11}, rng, -0.5, 0.5), randomInts(ElementType::I32, {2, 4}, rng, 0, 11)};
  std::vector<ref::Tensor> refs;
  for (const HostTensor &h : args)
    refs.push_back(toRef(h));
  ref::Tensor residual;
  ref::Tensor loss = referenceBlock(refs, &residual);

  auto jit = compile(blockModule(elementTypeName(type)));
  ASSERT_TRUE(jit);
  auto out = jit->call("forward", args);
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  ASSERT_EQ(out->size(), 2u);
  EXPECT_TRUE(closeTo((*out)[0], loss, tolFor(type))) << "loss";
  EXPECT_TRUE(closeTo((*out)[1], residual, tolFor(type))) << "residual stream";

  auto init = jit->call("init", {});
  ASSERT_TRUE(bool(init)) << llvm::toString(init.takeError());
  EXPECT_TRUE(closeTo((*init)[0], ref::randomNormal({8, 24}, 0.0, 0.02, 3),
                      type == ElementType::F64 ? 1e-14 : 1e-7));
  EXPECT_FALSE(bool(jit->call("act", {}))) << "private functions are not callable";
}

INSTANTIATE_TEST_SUITE_P(Ops, ModelTest, ::testing::Values(ElementType::F32, ElementType::F64),
                         [](const auto &info) { return std::string(elementTypeName(info.param)); });

} // namespace
