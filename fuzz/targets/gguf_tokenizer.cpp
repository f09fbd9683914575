// A tokenizer built from a fuzzed GGUF's tokenizer.ggml.* keys, then used:
// encode (plain and parsing special tokens), every id in range, decode and
// the pieces of the first ids.
#include <string_view>

#include "fuzz/fuzz_target.h"
#include "nascent/io/gguf_reader.h"
#include "nascent/tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nascent;
  constexpr std::string_view kTexts[] = {
      "Hello world", " \n\tA  b'c",
      "caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 12345", "<s>x</s><|im_start|>",
      "\xff\xfe invalid \xc3"};
  try {
    auto file =
        io::MappedFile::from_bytes(fuzz::to_bytes(data, size), "fuzz.gguf");
    gguf::Reader reader(file);
    tokenizer::Tokenizer tok =
        tokenizer::Tokenizer::from_gguf(reader.metadata());
    const auto n = tokenizer::TokenId(tok.size());
    for (std::string_view text : kTexts) {
      for (bool special : {false, true}) {
        std::vector<tokenizer::TokenId> ids =
            tok.encode(text, special, special);
        for (tokenizer::TokenId id : ids) {
          if (id < 0 || id >= n) fuzz::fail("token id out of range");
        }
        (void)tok.decode(ids, special, special);
      }
    }
    for (tokenizer::TokenId id = 0; id < std::min<tokenizer::TokenId>(n, 64);
         ++id) {
      (void)tok.token_to_piece(id, true);
    }
  } catch (const Error&) {
  }
  return 0;
}
