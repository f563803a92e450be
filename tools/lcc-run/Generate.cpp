//===- Generate.cpp - lcc-run --generate ----------------------------------===//
#include "tools/lcc-run/Generate.h"

#include "runtime/train/Generator.h"

#include <chrono>
#include <cstdio>
#include <sstream>

namespace lcc::run {

static int fail(const std::string &message) {
  std::fprintf(stderr, "%s\n", message.c_str());
  return 2;
}

int generateText(Trainer &trainer, const Options &opt) {
  Generator gen;
  if (Status st = Generator::create(trainer, gen); !st)
    return fail("lcc-run: error: --generate: " + opt.program + ": " + st.message());
  // Byte-level models take the prompt's bytes; others token ids.
  const bool bytes = gen.vocab() == 256;
  std::vector<int32_t> prompt;
  if (bytes) {
    for (unsigned char c : *opt.prompt)
      prompt.push_back(int32_t(c));
  } else {
    std::istringstream in(*opt.prompt);
    std::string word;
    while (in >> word) {
      char *end = nullptr;
      long id = std::strtol(word.c_str(), &end, 10);
      if (*end || id < 0 || id >= gen.vocab())
        return fail("lcc-run: error: --prompt: '" + word + "' is no token id in [0, " +
                    std::to_string(gen.vocab()) +
                    ") (the model's vocabulary is not bytes: give token ids separated by "
                    "spaces)");
      prompt.push_back(int32_t(id));
    }
  }
  SamplingOptions sampling{opt.temperature, opt.topK, opt.topP};
  std::mt19937_64 rng(opt.seed.value_or(1337));
  using Clock = std::chrono::steady_clock;
  std::vector<float> logits;
  auto t0 = Clock::now();
  if (Status st = gen.prefill(prompt, logits); !st)
    return fail("lcc-run: error: --prompt: " + st.message());
  double prefillSeconds = std::chrono::duration<double>(Clock::now() - t0).count();

  if (bytes)
    std::fwrite(opt.prompt->data(), 1, opt.prompt->size(), stdout);
  else
    for (size_t i = 0; i < prompt.size(); ++i)
      std::printf("%s%d", i ? " " : "", prompt[i]);
  std::fflush(stdout);
  int64_t made = 0, steps = 0;
  double decodeSeconds = 0;
  bool full = false;
  while (made < opt.maxTokens) {
    int32_t token = sampleToken(logits, sampling, rng);
    if (bytes)
      std::fputc(token, stdout);
    else
      std::printf(" %d", token);
    std::fflush(stdout);
    ++made;
    if (made == opt.maxTokens)
      break;
    if (gen.length() >= gen.context()) {
      full = true;
      break;
    }
    auto t = Clock::now();
    if (Status st = gen.decode(token, logits); !st)
      return fail("\nlcc-run: error: --generate: " + st.message());
    decodeSeconds += std::chrono::duration<double>(Clock::now() - t).count();
    ++steps;
  }
  std::printf("\n");
  std::fflush(stdout);
  if (full)
    std::fprintf(stderr, "generation stopped: the context of %lld tokens is full\n",
                 static_cast<long long>(gen.context()));
  if (!opt.quiet)
    std::fprintf(stderr,
                 "prefill: %zu tokens in %.1f ms (%.0f tokens/s); decode: %lld tokens in %.1f "
                 "ms (%.1f tokens/s)\n",
                 prompt.size(), prefillSeconds * 1e3, double(prompt.size()) / prefillSeconds,
                 static_cast<long long>(steps), decodeSeconds * 1e3,
                 steps && decodeSeconds > 0 ? double(steps) / decodeSeconds : 0.0);
  return 0;
}

} // namespace lcc::run
