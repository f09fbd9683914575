// The tokenizer's tables (private to nascent/tokenizer/).
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "nascent/tokenizer/tokenizer.h"

namespace nascent::tokenizer {

struct Tokenizer::Vocab {
  TokenizerModel model = TokenizerModel::spm;
  PreTokenizer pre = PreTokenizer::gpt2;
  std::vector<std::string> text;
  std::vector<float> score;
  std::vector<TokenType> type;
  std::unordered_map<std::string, TokenId> ids;
  // BPE merges: "left right" to rank (lower merges first).
  std::unordered_map<std::string, int32_t> merge_rank;
  // SPM byte fallback: the token of each byte, and the byte of each token.
  std::array<TokenId, 256> byte_token;
  std::vector<int16_t> token_byte;

  TokenId bos = kNoToken, eos = kNoToken, eot = kNoToken, eom = kNoToken;
  TokenId unk = kNoToken, pad = kNoToken;
  bool add_bos = false, add_eos = false, add_space_prefix = false;
  // llama3: a word that is a token is taken whole, without merging.
  bool ignore_merges = false;
  // Decoding tidies " ," and " 's" like the HF tokenizers do.
  bool clean_spaces = false;
  std::vector<TokenId> eog;
  // Control, user-defined and unknown tokens, longest text first: the order
  // in which they are cut out of the text.
  std::vector<TokenId> specials;
  std::string chat_template;

  TokenId find(std::string_view s) const {
    auto it = ids.find(std::string(s));
    return it == ids.end() ? kNoToken : it->second;
  }
};

namespace detail {
// SentencePiece-style merging of one fragment (spaces already "▁").
void spm_encode(const Tokenizer::Vocab& v, std::string_view text,
                std::vector<TokenId>& out);
// Byte-level BPE merging of one pre-tokenized word.
void bpe_encode_word(const Tokenizer::Vocab& v, const std::string& word,
                     std::vector<TokenId>& out);
}  // namespace detail

}  // namespace nascent::tokenizer
