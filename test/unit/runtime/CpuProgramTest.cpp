// What the runtime reads of a train.bin's manifest without its code
// (runtime/cpu/CpuProgram.h): Program::loadManifest and the memory plan, on
// manifests lcc writes and on hostile ones (test/fuzz/TrainBinFuzz.cpp).
#include "runtime/cpu/CpuProgram.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace lcc;

namespace {

json::Value parsed(const std::string &text) {
  json::Value v;
  EXPECT_TRUE(json::parse(text, v)) << text;
  return v;
}

TrainBin containerOf(const std::string &manifest) {
  TrainBinWriter w;
  EXPECT_TRUE(
      w.addSection("manifest", "any", -1, std::vector<uint8_t>(manifest.begin(), manifest.end())));
  std::vector<uint8_t> bytes;
  EXPECT_TRUE(w.serialize(bytes));
  TrainBin bin;
  EXPECT_TRUE(TrainBin::parse(bytes.data(), bytes.size(), bin));
  return bin;
}

TEST(CpuProgram, LoadManifestReadsTheSlotsAndNoCode) {
  TrainBin bin = containerOf(
      R"({"format": "lcc-train-bin", "version": 1, "functions": {"forward": [
           {"role": "param", "name": "w", "out": false, "dtype": "f32", "shape": [4, 2]},
           {"role": "output", "name": "loss", "out": true, "dtype": "f32", "shape": []}]}})");
  Program program;
  ASSERT_TRUE(Program::loadManifest(bin, "m.bin", program));
  const EntryPoint *forward = program.entry("forward");
  ASSERT_NE(forward, nullptr);
  ASSERT_EQ(forward->slots.size(), 2u);
  EXPECT_EQ(forward->slots[0].bytes(), 32u);
  EXPECT_EQ(forward->fn, nullptr);
  EXPECT_TRUE(program.target().empty());
  // Without code, load itself says so after the same checks.
  Status st = Program::load(bin, "m.bin", program);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.message().rfind("m.bin: no code this CPU can run", 0), 0u) << st.message();
}

TEST(CpuProgram, MemoryPlanOfAManifest) {
  json::Value m = parsed(R"({"params": [{"dtype": "f32", "shape": [2, 3]}], "state": [],
      "functions": {"train_step": [{"role": "workspace", "dtype": "i8", "shape": [100]},
                                   {"role": "output", "dtype": "f32", "shape": []}]}})");
  MemoryPlanLines lines;
  ASSERT_TRUE(memoryPlanLines(m, lines));
  EXPECT_EQ(lines.params, 24);
  EXPECT_EQ(lines.io, 4);
  EXPECT_EQ(lines.total, 2 * 24 + 4 + 128);
  EXPECT_EQ(memoryPlanBytes(m), lines.total);
}

// Sizes from a hostile file: no plan rather than a signed overflow.
TEST(CpuProgram, MemoryPlanOfOverflowingSizesIsNone) {
  for (const char *params : {R"([{"dtype": "f32", "shape": [4294967296, 4294967296]}])",
                             R"([{"dtype": "f64", "shape": [4611686018427387904]},
                                 {"dtype": "f64", "shape": [4611686018427387904]}])",
                             R"([{"dtype": "f32", "shape": [-4611686018427387904, 4]}])"}) {
    json::Value m =
        parsed(std::string(R"({"state": [], "functions": {}, "params": )") + params + "}");
    MemoryPlanLines lines;
    EXPECT_FALSE(memoryPlanLines(m, lines)) << params;
    EXPECT_EQ(memoryPlanReport(m), "");
    EXPECT_EQ(memoryPlanBytes(m), 0);
  }
}

} // namespace
