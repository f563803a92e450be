//===- Generate.cpp - lcc-run --generate ----------------------------------===//
#include "tools/lcc-run/Generate.h"

#include "runtime/train/Generator.h"
#include "tools/lcc-run/Tokenizer.h"

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
  if (Status st = gen.init(trainer); !st)
    return fail("lcc-run: error: --generate: " + opt.program + ": " + st.message());
  // Byte-level models take the prompt's bytes; others its pieces with a
  // tokenizer, or token ids.
  const bool bytes = gen.vocab() == 256 && opt.tokenizer.empty();
  Tokenizer tokenizer;
  std::vector<int32_t> prompt;
  if (!opt.tokenizer.empty()) {
    if (Status st = Tokenizer::load(opt.tokenizer, tokenizer); !st)
      return fail("lcc-run: error: --tokenizer: " + st.message());
    if (tokenizer.size() > gen.vocab())
      return fail("lcc-run: error: --tokenizer: " + opt.tokenizer + " has " +
                  std::to_string(tokenizer.size()) + " pieces, more than the model's " +
                  std::to_string(gen.vocab()) + " tokens");
    prompt = tokenizer.encode(*opt.prompt);
  } else if (bytes) {
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
                    "spaces, or --tokenizer)");
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

  // With a tokenizer, the text of prompt + continuation so far is decoded
  // again after each token and what it adds printed (a piece's text can
  // depend on its neighbours: the leading space of the first one goes).
  std::vector<int32_t> all = prompt;
  std::string shown;
  if (bytes) {
    std::fwrite(opt.prompt->data(), 1, opt.prompt->size(), stdout);
  } else if (!opt.tokenizer.empty()) {
    shown = tokenizer.decode(all);
    std::fwrite(shown.data(), 1, shown.size(), stdout);
  } else {
    for (size_t i = 0; i < prompt.size(); ++i)
      std::printf("%s%d", i ? " " : "", prompt[i]);
  }
  std::fflush(stdout);
  int64_t made = 0, steps = 0;
  double decodeSeconds = 0;
  bool full = false;
  while (made < opt.maxTokens) {
    int32_t token = sampleToken(logits, sampling, rng);
    all.push_back(token);
    if (bytes) {
      std::fputc(token, stdout);
    } else if (!opt.tokenizer.empty()) {
      std::string text = tokenizer.decode(all);
      if (text.size() > shown.size() && text.compare(0, shown.size(), shown) == 0)
        std::fwrite(text.data() + shown.size(), 1, text.size() - shown.size(), stdout);
      shown = std::move(text);
    } else {
      std::printf(" %d", token);
    }
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
                 "ms (%.1f tokens/s)%s\n",
                 prompt.size(), prefillSeconds * 1e3, double(prompt.size()) / prefillSeconds,
                 static_cast<long long>(steps), decodeSeconds * 1e3,
                 steps && decodeSeconds > 0 ? double(steps) / decodeSeconds : 0.0,
                 gen.cached() ? "" : " without KV cache: each token runs the whole context");
  return 0;
}

} // namespace lcc::run
