//===- Tokenizer.cpp - lcc-run --tokenizer: SentencePiece models ----------===//
//
// libsentencepiece is reached through liblcc-sentencepiece.so beside lcc-run
// (SentencePieceBridge.cpp says why it is not linked in).
//
//===----------------------------------------------------------------------===//
#include "tools/lcc-run/Tokenizer.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

namespace lcc::run {

struct Tokenizer::Impl {
  void *library = nullptr, *model = nullptr;
  int64_t (*size)(void *) = nullptr;
  void (*encode)(void *, const char *, size_t, int32_t **, size_t *) = nullptr;
  char *(*decode)(void *, const int32_t *, size_t, size_t *) = nullptr;
  void (*release)(void *) = nullptr;
};

Status Tokenizer::load(const std::string &path, Tokenizer &out) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  std::string dir = n > 0 ? std::string(self, size_t(n)) : std::string();
  dir = dir.substr(0, dir.find_last_of('/') + 1);
  std::string bridge = dir + "liblcc-sentencepiece.so";
  auto impl = std::make_shared<Impl>();
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  return Status::failure("SentencePiece models are not available in a sanitizer build of "
                         "lcc-run: " +
                         bridge +
                         " must be opened with RTLD_DEEPBIND, which the sanitizers' "
                         "runtime refuses");
#endif
#endif
  impl->library = dlopen(bridge.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (!impl->library)
    return Status::failure("SentencePiece models need " + bridge +
                           ", which is built only where Debian's libsentencepiece-dev is "
                           "installed (" +
                           std::string(dlerror()) + ")");
  auto *loadFn =
      reinterpret_cast<void *(*)(const char *, char **)>(dlsym(impl->library, "lcc_spm_load"));
  impl->size = reinterpret_cast<int64_t (*)(void *)>(dlsym(impl->library, "lcc_spm_size"));
  impl->encode = reinterpret_cast<void (*)(void *, const char *, size_t, int32_t **, size_t *)>(
      dlsym(impl->library, "lcc_spm_encode"));
  impl->decode = reinterpret_cast<char *(*)(void *, const int32_t *, size_t, size_t *)>(
      dlsym(impl->library, "lcc_spm_decode"));
  impl->release = reinterpret_cast<void (*)(void *)>(dlsym(impl->library, "lcc_spm_free"));
  if (!loadFn || !impl->size || !impl->encode || !impl->decode || !impl->release)
    return Status::failure(bridge + " lacks the lcc_spm_ functions");
  char *error = nullptr;
  impl->model = loadFn(path.c_str(), &error);
  if (!impl->model) {
    std::string why = error ? error : "unknown error";
    impl->release(error);
    return Status::failure(path + ": not a SentencePiece model: " + why);
  }
  out.impl_ = std::move(impl); // (the model lives as long as the process)
  return {};
}

int64_t Tokenizer::size() const { return impl_->size(impl_->model); }

std::vector<int32_t> Tokenizer::encode(const std::string &text) const {
  int32_t *ids = nullptr;
  size_t count = 0;
  impl_->encode(impl_->model, text.data(), text.size(), &ids, &count);
  std::vector<int32_t> out(ids, ids + count);
  impl_->release(ids);
  return out;
}

std::string Tokenizer::decode(const std::vector<int32_t> &ids) const {
  size_t length = 0;
  char *text = impl_->decode(impl_->model, ids.data(), ids.size(), &length);
  std::string out(text, length);
  impl_->release(text);
  return out;
}

} // namespace lcc::run
