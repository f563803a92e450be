//===- SentencePieceBridge.cpp - libsentencepiece behind a C interface ----===//
//
// Debian's libsentencepiece carries its own copy of protobuf-lite and exports
// its symbols: linked into lcc-run, which also uses the system libprotobuf
// (--export-onnx, --tensorboard), one copy's functions run on the other's
// data and lcc-run crashes before main. So the library is loaded only when
// --tokenizer is given, inside this small shared object, opened with
// RTLD_LOCAL | RTLD_DEEPBIND (tools/lcc-run/Tokenizer.cpp): its references
// resolve within itself, and nothing of it reaches lcc-run's symbols.
//
//===----------------------------------------------------------------------===//
#include <sentencepiece_processor.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {
char *copy(const std::string &s) {
  char *out = static_cast<char *>(std::malloc(s.size() + 1));
  std::memcpy(out, s.data(), s.size() + 1);
  return out;
}
} // namespace

extern "C" {

/// A loaded model, or null with *error set (free with lcc_spm_free).
__attribute__((visibility("default"))) void *lcc_spm_load(const char *path, char **error) {
  auto *sp = new sentencepiece::SentencePieceProcessor();
  if (auto st = sp->Load(path); !st.ok()) {
    *error = copy(st.ToString());
    delete sp;
    return nullptr;
  }
  return sp;
}

__attribute__((visibility("default"))) int64_t lcc_spm_size(void *sp) {
  return static_cast<sentencepiece::SentencePieceProcessor *>(sp)->GetPieceSize();
}

/// Ids of `text` into a malloc'ed array (*ids, *count).
__attribute__((visibility("default"))) void
lcc_spm_encode(void *sp, const char *text, size_t length, int32_t **ids, size_t *count) {
  std::vector<int> out;
  (void)static_cast<sentencepiece::SentencePieceProcessor *>(sp)->Encode(std::string(text, length),
                                                                         &out);
  *ids = static_cast<int32_t *>(std::malloc(sizeof(int32_t) * (out.size() + 1)));
  for (size_t i = 0; i < out.size(); ++i)
    (*ids)[i] = out[i];
  *count = out.size();
}

/// The text of `ids`, malloc'ed (its length in *length).
__attribute__((visibility("default"))) char *lcc_spm_decode(void *sp, const int32_t *ids,
                                                            size_t count, size_t *length) {
  std::string text;
  (void)static_cast<sentencepiece::SentencePieceProcessor *>(sp)->Decode(
      std::vector<int>(ids, ids + count), &text);
  *length = text.size();
  return copy(text);
}

__attribute__((visibility("default"))) void lcc_spm_free(void *p) { std::free(p); }
}
