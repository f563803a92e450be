//===- HfNamesTest.cpp - a model's layers as Hugging Face numbers them ----===//
//
// hfSection counts a model's layers from its parameters' names (h.N.*,
// layers.N.*). Those names are input (an ONNX export's initializers), so a
// layer number out of range or a missing layer is an error naming it, not
// an exception (the hf fuzzer found std::stoll's out_of_range here).
//
//===----------------------------------------------------------------------===//
#include "compiler/package/HfNames.h"

#include "gtest/gtest.h"

#include <string>
#include <vector>

using namespace lcc;

namespace {

constexpr int64_t kDim = 4, kVocab = 8, kPositions = 4;

HfParameter param(std::string name, std::vector<int64_t> shape) {
  HfParameter p;
  p.name = std::move(name);
  p.shape = std::move(shape);
  return p;
}

/// A GPT-2 whose blocks are named h.N.* for each N in `layers`.
std::vector<HfParameter> gpt2(const std::vector<std::string> &layers) {
  std::vector<HfParameter> params = {param("wte", {kVocab, kDim}),
                                     param("wpe", {kPositions, kDim})};
  for (const std::string &n : layers) {
    const std::string h = "h." + n + ".";
    for (const char *ln : {"ln_1", "ln_2"}) {
      params.push_back(param(h + ln + ".weight", {kDim}));
      params.push_back(param(h + ln + ".bias", {kDim}));
    }
    params.push_back(param(h + "attn.c_attn.weight", {kDim, 3 * kDim}));
    params.push_back(param(h + "attn.c_attn.bias", {3 * kDim}));
    params.push_back(param(h + "attn.c_proj.weight", {kDim, kDim}));
    params.push_back(param(h + "attn.c_proj.bias", {kDim}));
    params.push_back(param(h + "mlp.c_fc.weight", {kDim, 4 * kDim}));
    params.push_back(param(h + "mlp.c_fc.bias", {4 * kDim}));
    params.push_back(param(h + "mlp.c_proj.weight", {4 * kDim, kDim}));
    params.push_back(param(h + "mlp.c_proj.bias", {kDim}));
  }
  params.push_back(param("ln_f.weight", {kDim}));
  params.push_back(param("ln_f.bias", {kDim}));
  return params;
}

Status section(const std::vector<HfParameter> &params, json::Value &out) {
  json::Value declared = json::Value::object({{"n_head", 2}, {"layer_norm_epsilon", 1e-5}});
  return hfSection("GPT2LMHeadModel", declared, params, out);
}

TEST(HfNames, CountsTheLayersItNames) {
  json::Value out;
  Status st = section(gpt2({"0", "1", "2"}), out);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(out.get("config")->get("n_layer")->asInt(), 3);
  // 2 embeddings, 12 tensors a block, the final norm's 2.
  EXPECT_EQ(out.get("tensors")->size(), 2u + 3 * 12 + 2);
}

TEST(HfNames, ALayerNumberOutOfRangeIsAnError) {
  for (std::string n : {"92233720368547758070", "9223372036854775807", "40"}) {
    json::Value out;
    Status st = section(gpt2({"0", n}), out);
    ASSERT_FALSE(st.ok()) << n;
    EXPECT_NE(st.message().find("names layer " + n), std::string::npos) << st.message();
  }
}

TEST(HfNames, AMissingLayerIsNamed) {
  json::Value out;
  Status st = section(gpt2({"0", "2"}), out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("none is named h.1.*"), std::string::npos) << st.message();
}

TEST(HfNames, LlamaLayersAreCheckedToo) {
  std::vector<HfParameter> params = {
      param("embed_tokens", {kVocab, kDim}),
      param("layers.18446744073709551616.input_layernorm.weight", {kDim}),
      param("norm.weight", {kDim})};
  json::Value out;
  Status st = hfSection("LlamaForCausalLM", json::Value::object(), params, out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("names layer 18446744073709551616"), std::string::npos)
      << st.message();
}

} // namespace
