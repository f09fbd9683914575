// Tokenizers built from GGUF metadata (the tokenizer.ggml.* keys), giving
// the same token ids as llama.cpp:
//   tokenizer.ggml.model = "llama": SentencePiece-style BPE over scores, with
//     byte fallback (<0xXX> tokens) and a space prefix;
//   tokenizer.ggml.model = "gpt2": byte-level BPE over ranked merges, after a
//     pre-tokenizer chosen by tokenizer.ggml.pre (gpt-2, llama3, qwen2).
// Control, user-defined and unknown tokens are matched in the text before
// the model runs (control and unknown ones only when parse_special is set).
//
// A Tokenizer is a cheap handle: copies share the (immutable) vocabulary.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "nascent/io/gguf.h"
#include "nascent/tokenizer/pre_tokenizer.h"

namespace nascent::tokenizer {

using TokenId = int32_t;
inline constexpr TokenId kNoToken = -1;

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class TokenType : int32_t {
  undefined = 0,
  normal = 1,
  unknown = 2,
  control = 3,
  user_defined = 4,
  unused = 5,
  byte = 6,
};

enum class TokenizerModel { spm, bpe };

class Tokenizer {
 public:
  // FormatError (naming metadata.origin() and the key) when a key the model
  // needs is missing or malformed, or the model or pre-tokenizer is one this
  // library does not implement.
  static Tokenizer from_gguf(const gguf::Metadata& metadata);
  static Tokenizer from_gguf_file(const std::string& path);

  TokenizerModel model() const;
  // The pre-tokenizer of a BPE vocabulary (meaningless for spm).
  PreTokenizer pre_tokenizer() const;
  size_t size() const;

  const std::string& token_text(TokenId id) const;
  float token_score(TokenId id) const;
  TokenType token_type(TokenId id) const;
  // The id of the token with exactly this text, or kNoToken.
  TokenId find_token(std::string_view text) const;

  // Special tokens; kNoToken when the vocabulary has none.
  TokenId bos() const;
  TokenId eos() const;
  TokenId eot() const;  // End of turn (chat models).
  TokenId unk() const;
  TokenId pad() const;
  bool add_bos() const;
  bool add_eos() const;
  bool add_space_prefix() const;
  // End of generation: eos, eot and the other tokens that end a reply.
  bool is_eog(TokenId id) const;
  const std::vector<TokenId>& eog_tokens() const;

  // Text to ids. add_special: add BOS/EOS as the vocabulary asks;
  // parse_special: turn control tokens written in the text ("<s>",
  // "<|im_start|>") into their ids instead of spelling them out.
  std::vector<TokenId> encode(std::string_view text, bool add_special = true,
                              bool parse_special = false) const;

  // The bytes a token stands for (not always whole UTF-8 characters).
  // Control and unknown tokens give "" unless `special` is set.
  std::string token_to_piece(TokenId id, bool special = false) const;
  // Ids to text, as llama.cpp's detokenize: the space prefix the encoder
  // added is removed, remove_special drops the BOS/EOS the encoder added,
  // unparse_special renders control tokens as their text.
  std::string decode(std::span<const TokenId> ids, bool remove_special = false,
                     bool unparse_special = false) const;

  // tokenizer.chat_template, or "" when the file has none.
  const std::string& chat_template() const;

  struct Vocab;  // Defined in tokenizer.cpp.

 private:
  explicit Tokenizer(std::shared_ptr<const Vocab> vocab)
      : v_(std::move(vocab)) {}
  void check_id(TokenId id) const;

  std::shared_ptr<const Vocab> v_;
};

}  // namespace nascent::tokenizer
