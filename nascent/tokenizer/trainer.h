// Learns a BPE vocabulary from text and returns it as the tokenizer.ggml.*
// keys of a GGUF file, so that Tokenizer::from_gguf and llama.cpp load it and
// tokenize alike:
//   spm_bpe:  tokenizer.ggml.model "llama": <unk> <s> </s>, the 256 byte
//             tokens <0x00>..<0xFF> (byte fallback), the corpus' characters,
//             then the learned pieces, scored so that llama.cpp's greedy
//             merge by score replays the learned merges. Spaces are "▁" and
//             the text gets a space prefix, as the encoder sees it.
//   byte_bpe: tokenizer.ggml.model "gpt2": <|endoftext|>, GPT-2's 256
//             byte-level characters, then the learned tokens, with the ranked
//             merges, after a pre-tokenizer nascent and llama.cpp both know.
//
// Training counts the distinct words of the corpus (merges never cross a
// word), then repeatedly merges the most frequent adjacent pair, updating
// the pair counts of only the words that hold it. Deterministic: among pairs
// of equal count the one whose left token id is smallest wins, then the
// smallest right id; characters are numbered by falling count, then code
// point.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "nascent/io/gguf.h"

namespace nascent::tokenizer {

enum class TrainerKind { spm_bpe, byte_bpe };

// "spm-bpe" or "byte-bpe"; ValueError naming the choices otherwise.
TrainerKind parse_trainer_kind(std::string_view name);
std::string_view trainer_kind_name(TrainerKind kind);

struct TrainerOptions {
  TrainerKind kind = TrainerKind::spm_bpe;
  // Every token: specials, the 256 byte tokens, (spm) characters, pieces.
  int64_t vocab_size = 4096;
  // A pair seen fewer times than this is never merged; ValueError when the
  // vocabulary cannot be filled without such merges.
  int64_t min_pair_count = 2;
  // spm: the most frequent characters that cover this share of the corpus'
  // characters become tokens; rarer ones are spelled in byte tokens.
  double character_coverage = 0.9995;
  // byte_bpe: the tokenizer.ggml.pre value ("gpt-2", "llama-bpe", "qwen2"
  // or an alias nascent knows). gpt-2's decoder tidies " ," and " 's" as
  // llama.cpp's does; qwen2's gives the text back byte for byte.
  std::string pre_tokenizer = "gpt-2";
  // tokenizer.ggml.add_bos_token / add_eos_token.
  bool add_bos = true;
  bool add_eos = false;
};

// The tokenizer.* keys of the vocabulary learned from `texts` (each text is
// encoded on its own, as a document). ValueError for an empty corpus, a
// vocab_size below the specials and bytes, options out of range, or a corpus
// that cannot fill vocab_size tokens.
gguf::Metadata train_tokenizer(std::span<const std::string_view> texts,
                               const TrainerOptions& options);

}  // namespace nascent::tokenizer
