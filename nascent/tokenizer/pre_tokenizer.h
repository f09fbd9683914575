// Pre-tokenizers of byte-level BPE vocabularies: they split text into words
// that BPE merges never cross, as the regular expressions of the original
// tokenizers do. Each is written by hand over Unicode classes (no regex
// engine), following the patterns match for match:
//   gpt2:   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+
//           |\s+(?!\S)|\s+
//   llama3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+
//           |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   qwen2:  llama3 with \p{N} (single digits) for \p{N}{1,3}.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nascent::tokenizer {

enum class PreTokenizer { gpt2, llama3, qwen2 };

// The pre-tokenizer a tokenizer.ggml.pre value names ("gpt-2", "llama-bpe",
// "qwen2" and their aliases, as llama.cpp reads them), or nothing.
std::optional<PreTokenizer> pre_tokenizer_from_name(std::string_view name);

// Splits code points into words: each is a [begin, end) range of indices.
std::vector<std::pair<size_t, size_t>> split_words(
    const std::vector<uint32_t>& cps, PreTokenizer kind);

// The words of `text` in GPT-2's byte-level alphabet, ready for merging.
// Bytes that are not well-formed UTF-8 become U+FFFD first (llama.cpp does
// the same).
std::vector<std::string> pre_tokenize(std::string_view text, PreTokenizer kind);

}  // namespace nascent::tokenizer
