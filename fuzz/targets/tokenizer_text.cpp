// Fuzzed text through the tokenizers of real vocabularies (llama.cpp's
// vocab files: gpt-2, llama-spm, llama-bpe (llama3), qwen2, those present in
// $NASCENT_FUZZ_VOCAB_DIR, default the test data's tokenizer folder). The
// first byte picks the vocabulary and the flags, the rest is the text.
// Checked: every id is in range, and the pieces of byte-level BPE tokens
// give well-formed UTF-8 text back exactly.
#include <memory>
#include <string_view>

#include "fuzz/fuzz_target.h"
#include "nascent/tokenizer/tokenizer.h"
#include "nascent/tokenizer/unicode.h"

#ifndef NASCENT_FUZZ_VOCAB_DIR
#define NASCENT_FUZZ_VOCAB_DIR "../shared/data/tokenizer"
#endif

namespace {

std::vector<nascent::tokenizer::Tokenizer>& vocabularies() {
  static std::vector<nascent::tokenizer::Tokenizer> v;
  return v;
}

bool well_formed_utf8(std::string_view s) {
  uint32_t cp;
  for (size_t i = 0; i < s.size();) {
    size_t n = nascent::tokenizer::unicode::decode_utf8(s, i, &cp);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* env = std::getenv("NASCENT_FUZZ_VOCAB_DIR");
  std::string dir = env && *env ? env : NASCENT_FUZZ_VOCAB_DIR;
  for (const char* name : {"gpt-2", "llama-spm", "llama-bpe", "qwen2"}) {
    std::string path = dir + "/ggml-vocab-" + name + ".gguf";
    if (::access(path.c_str(), R_OK) != 0) {
      std::fprintf(stderr, "tokenizer_text: no %s, fuzzing without it\n",
                   path.c_str());
      continue;
    }
    vocabularies().push_back(
        nascent::tokenizer::Tokenizer::from_gguf_file(path));
  }
  if (vocabularies().empty()) {
    std::fprintf(stderr,
                 "tokenizer_text: no vocabulary in %s (set "
                 "NASCENT_FUZZ_VOCAB_DIR): skipped\n",
                 dir.c_str());
    std::exit(77);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nascent;
  if (size == 0) return 0;
  const std::vector<tokenizer::Tokenizer>& vocabs = vocabularies();
  const tokenizer::Tokenizer& tok = vocabs[data[0] % vocabs.size()];
  const bool special = data[0] & 0x80;
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    std::vector<tokenizer::TokenId> ids = tok.encode(text, special, special);
    for (tokenizer::TokenId id : ids) {
      if (id < 0 || size_t(id) >= tok.size()) fuzz::fail("id out of range");
    }
    (void)tok.decode(ids, special, special);
    // decode may clean spaces (" ." becomes "."); the pieces may not.
    if (!special && tok.model() == tokenizer::TokenizerModel::bpe &&
        well_formed_utf8(text)) {
      std::string back;
      for (tokenizer::TokenId id : ids) back += tok.token_to_piece(id, true);
      if (back != text) {
        fuzz::fail("byte-level BPE pieces do not give the text back: \"" +
                   std::string(text) + "\" became \"" + back + "\"");
      }
    }
  } catch (const Error&) {
  }
  return 0;
}
