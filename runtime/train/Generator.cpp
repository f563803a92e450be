//===- Generator.cpp - text generation with a train.bin's KV cache --------===//
#include "runtime/train/Generator.h"

#include "runtime/support/Entries.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace lcc {

int32_t sampleToken(const std::vector<float> &logits, const SamplingOptions &o,
                    std::mt19937_64 &rng) {
  const int64_t n = int64_t(logits.size());
  // Likeliest first; equal logits by id, so the order (and greedy's pick)
  // does not depend on the sort's implementation.
  std::vector<int32_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  auto likelier = [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  if (o.temperature <= 0)
    return *std::min_element(order.begin(), order.end(), likelier);
  int64_t keep = o.topK > 0 ? std::min<int64_t>(o.topK, n) : n;
  std::partial_sort(order.begin(), order.begin() + keep, order.end(), likelier);
  order.resize(size_t(keep));
  std::vector<double> p(order.size());
  double top = double(logits[order[0]]) / o.temperature, sum = 0;
  for (size_t i = 0; i < order.size(); ++i)
    sum += p[i] = std::exp(double(logits[order[i]]) / o.temperature - top);
  // The nucleus: the fewest likeliest tokens whose probabilities reach top-p.
  double mass = 0;
  size_t cut = 0;
  while (cut < p.size() && (cut == 0 || mass < o.topP * sum))
    mass += p[cut++];
  // A uniform draw in [0, 1) from the generator's 53 high bits.
  double u = double(rng() >> 11) * 0x1.0p-53 * mass;
  for (size_t i = 0; i < cut; ++i) {
    if (u < p[i])
      return order[i];
    u -= p[i];
  }
  return order[cut - 1];
}

Generator::~Generator() { release(); }

void Generator::release() {
  if (!trainer_)
    return;
  Device &dev = trainer_->device();
  for (uint64_t b : {tokens_, token_, position_, logits_})
    if (b)
      dev.release(b);
  for (auto &set : cache_)
    for (uint64_t b : set)
      if (b)
        dev.release(b);
  cache_[0].clear();
  cache_[1].clear();
  tokens_ = token_ = position_ = logits_ = 0;
  warm_[0] = warm_[1] = false;
  cacheNames_.clear();
  prefills_.clear();
  text_.clear();
  tokensName_.clear();
  length_ = context_ = vocab_ = 0;
  cacheBytes_ = 0;
  trainer_ = nullptr;
}

Status Generator::init(Trainer &trainer) {
  release();
  const Program &program = trainer.program();
  prefill_ = program.entry("prefill");
  decode_ = program.entry("decode_step");
  if (!prefill_) {
    const json::Value *why = program.manifest().get("no_generation");
    return Status::failure("it has no text-generation entries: " +
                           (why && why->isString() ? why->asString()
                                                   : std::string("it was compiled with "
                                                                 "--no-generate or by an older "
                                                                 "lcc")));
  }
  trainer_ = &trainer;
  // Each prefill's slots say the sizes: tokens [1, its length], logits [1,
  // 1, vocab], each cache [1, kv heads, context, head dim]; @prefill's
  // length is the context, the others' shorter.
  std::vector<std::pair<std::string, const EntryPoint *>> prefills = {{"prefill", prefill_}};
  if (const json::Value *functions = program.manifest().get("functions");
      functions && functions->isObject())
    for (const auto &[name, slots] : functions->members())
      if (name != "prefill" && isPrefillEntry(name))
        if (const EntryPoint *e = program.entry(name))
          prefills.push_back({name, e});
  for (const auto &[name, entry] : prefills) {
    std::string tokens;
    int64_t length = 0;
    std::vector<std::string> caches;
    for (const Slot &s : entry->slots) {
      if (s.role == Slot::Input && s.name != "position") {
        if (s.dtype != ElementType::I32 || s.shape.size() != 2 || s.shape[0] != 1 ||
            !tokens.empty())
          return Status::failure("@" + name + " takes an unexpected input '" + s.name + "'");
        tokens = s.name;
        length = s.shape[1];
      } else if (s.role == Slot::Output && s.name == "logits") {
        if (s.shape.size() != 3 || s.dtype != ElementType::F32 || (vocab_ && s.shape[2] != vocab_))
          return Status::failure("@" + name + "'s logits are not [1, 1, vocab] f32");
        vocab_ = s.shape[2];
      } else if (s.role == Slot::Output) {
        if (cacheBytes_ && s.bytes() != cacheBytes_)
          return Status::failure("@" + name + "'s cache '" + s.name + "' differs from the others");
        cacheBytes_ = s.bytes();
        caches.push_back(s.name);
      }
    }
    // @prefill comes first and sets what the shorter ones must match.
    if (name == "prefill") {
      tokensName_ = tokens;
      context_ = length;
      cacheNames_ = caches;
    }
    if (tokens.empty() || tokens != tokensName_ || caches != cacheNames_ ||
        (name != "prefill" && length >= context_))
      return Status::failure("@" + name + "'s inputs or outputs are not @prefill's");
    prefills_.push_back({length, entry});
  }
  std::sort(prefills_.begin(), prefills_.end(),
            [](const auto &a, const auto &b) { return a.first < b.first; });
  if (!vocab_ || cacheNames_.empty() != (decode_ == nullptr))
    return Status::failure("@prefill lacks its logits or cache");
  if (decode_)
    for (const Slot &s : decode_->slots)
      if (s.role == Slot::Input && s.name == tokensName_ && s.shape != std::vector<int64_t>{1, 1})
        return Status::failure("@decode_step's tokens are not [1, 1]");
  Device &dev = trainer.device();
  auto allocate = [&](size_t bytes, uint64_t &at) {
    if (!(at = dev.allocate(bytes)))
      return Status::failure("cannot allocate " + std::to_string(bytes) + " bytes on " +
                             dev.where() + " for text generation");
    return Status();
  };
  for (auto [at, bytes] : {std::pair<uint64_t *, size_t>{&tokens_, size_t(context_) * 4},
                           {&token_, 4},
                           {&position_, 4},
                           {&logits_, size_t(vocab_) * 4}})
    if (Status st = allocate(bytes, *at); !st)
      return st;
  for (auto &set : cache_)
    for (size_t i = 0; i < cacheNames_.size(); ++i)
      if (Status st = allocate(cacheBytes_, set.emplace_back()); !st)
        return st;
  return {};
}

Status Generator::readLogits(std::vector<float> &logits) {
  logits.resize(size_t(vocab_));
  trainer_->device().download(logits.data(), logits_, logits.size() * sizeof(float));
  return trainer_->device().synchronize();
}

Status Generator::prefill(const std::vector<int32_t> &prompt, std::vector<float> &logits) {
  if (prompt.empty())
    return Status::failure("the prompt is empty");
  if (int64_t(prompt.size()) > context_)
    return Status::failure("the prompt has " + std::to_string(prompt.size()) +
                           " tokens, more than the model's context of " + std::to_string(context_) +
                           " (lcc --context=N sets it)");
  for (int32_t t : prompt)
    if (t < 0 || t >= vocab_)
      return Status::failure("token " + std::to_string(t) +
                             " of the prompt is outside the "
                             "vocabulary [0, " +
                             std::to_string(vocab_) + ")");
  // Padding after the prompt: the causal mask keeps it out of the prompt's
  // rows, and decode steps overwrite its cache rows before reading them.
  text_.assign(size_t(context_), 0);
  std::copy(prompt.begin(), prompt.end(), text_.begin());
  length_ = int64_t(prompt.size());
  current_ = 0;
  return runPrefill(int32_t(prompt.size()) - 1, logits);
}

Status Generator::runPrefill(int32_t last, std::vector<float> &logits) {
  // The shortest prefill that holds the text (@prefill, the context, does).
  auto [length, entry] = *std::find_if(prefills_.begin(), prefills_.end(),
                                       [&](const auto &p) { return p.first > last; });
  Device &dev = trainer_->device();
  dev.upload(tokens_, text_.data(), size_t(length) * 4);
  dev.upload(position_, &last, 4);
  std::map<std::string, uint64_t> outputs = {{"logits", logits_}};
  for (size_t i = 0; i < cacheNames_.size(); ++i)
    outputs[cacheNames_[i]] = cache_[0][i];
  if (Status st =
          trainer_->callEntry(*entry, {{tokensName_, tokens_}, {"position", position_}}, outputs);
      !st)
    return st;
  return readLogits(logits);
}

Status Generator::decode(int32_t token, std::vector<float> &logits) {
  if (length_ < 1)
    return Status::failure("decode before prefill");
  if (length_ >= context_)
    return Status::failure("the context of " + std::to_string(context_) + " tokens is full");
  if (token < 0 || token >= vocab_)
    return Status::failure("token " + std::to_string(token) + " is outside the vocabulary");
  int32_t position = int32_t(length_);
  if (!decode_) {
    text_[size_t(position)] = token;
    ++length_;
    return runPrefill(position, logits);
  }
  Device &dev = trainer_->device();
  dev.upload(token_, &token, 4);
  dev.upload(position_, &position, 4);
  std::map<std::string, uint64_t> inputs = {{tokensName_, token_}, {"position", position_}},
                                  outputs = {{"logits", logits_}};
  int from = current_, to = 1 - current_;
  for (size_t i = 0; i < cacheNames_.size(); ++i) {
    inputs[cacheNames_[i]] = cache_[from][i];
    outputs[cacheNames_[i]] = cache_[to][i];
  }
  // The first step from each set runs eagerly (plans, buffers), later ones
  // replay that set's graph where the device captures.
  if (Status st = trainer_->callEntry(*decode_, inputs, outputs, warm_[from] ? from : -1); !st)
    return st;
  warm_[from] = true;
  current_ = to;
  ++length_;
  return readLogits(logits);
}

} // namespace lcc
