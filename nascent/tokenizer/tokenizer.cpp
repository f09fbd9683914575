#include "nascent/tokenizer/tokenizer.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "nascent/io/gguf_reader.h"
#include "nascent/tokenizer/unicode.h"
#include "nascent/tokenizer/vocab.h"

namespace nascent::tokenizer {
namespace {

constexpr std::string_view kSpace = "\xe2\x96\x81";  // "▁"

// Texts llama.cpp recognises as ending a turn or a generation when the file
// does not name them (the first also becomes the EOT token).
constexpr std::string_view kEotTexts[] = {
    "<|eot_id|>",    "<|im_end|>",    "<|end|>",
    "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
    "<EOT>",         "_<EOT>",        "<end_of_utterance>"};
constexpr std::string_view kEogTexts[] = {
    "<|eot_id|>",      "<|im_end|>",        "<|end|>", "<end_of_turn>",
    "<|endoftext|>",   "<|eom_id|>",        "<EOT>",   "_<EOT>",
    "<|end_of_text|>", "<end_of_utterance>"};

struct PreTokenizerName {
  std::string_view name;
  PreTokenizer kind;
};
// tokenizer.ggml.pre values and the split each means (llama-vocab.cpp).
constexpr PreTokenizerName kPreTokenizers[] = {
    {"gpt-2", PreTokenizer::gpt2},
    {"phi-2", PreTokenizer::gpt2},
    {"mpt", PreTokenizer::gpt2},
    {"olmo", PreTokenizer::gpt2},
    {"jais", PreTokenizer::gpt2},
    {"llama3", PreTokenizer::llama3},
    {"llama-v3", PreTokenizer::llama3},
    {"llama-bpe", PreTokenizer::llama3},
    {"falcon3", PreTokenizer::llama3},
    {"qwen2", PreTokenizer::qwen2},
    {"deepseek-r1-qwen", PreTokenizer::qwen2},
};

[[noreturn]] void fail(const gguf::Metadata& m, const std::string& what) {
  throw FormatError(fmt::format(
      "{}: {}", m.origin().empty() ? std::string("gguf") : m.origin(), what));
}

std::string replace_all(std::string_view s, std::string_view from,
                        std::string_view to) {
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t hit = s.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(s, pos, hit - pos);
    out.append(to);
    pos = hit + from.size();
  }
  out.append(s, pos);
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// Control characters and spaces are removed around punctuation as the
// Hugging Face decoders' clean_up_tokenization_spaces does (llama.cpp's
// three passes).
std::string clean_spaces(const std::string& s) {
  if (s.empty()) return s;
  // " ?", " !", " .", " ," lose the space.
  std::string a(1, s[0]);
  for (size_t i = 1; i < s.size(); ++i) {
    char x = s[i];
    if (s[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) {
      a.pop_back();
    }
    a += x;
  }
  // " ' " becomes "'".
  std::string b(1, a[0]);
  size_t skipped = std::string::npos;
  for (size_t i = 1; i < a.size(); ++i) {
    char x = a[i];
    char prev = i - 1 == skipped ? '\0' : a[i - 1];
    if (x == '\'' && i + 1 < a.size() && prev == ' ' && a[i + 1] == ' ') {
      b.pop_back();
      b += x;
      skipped = ++i;
      continue;
    }
    b += x;
  }
  // " 's", " 'm", " 're", " 've" lose the space.
  std::string c(1, b[0]);
  for (size_t i = 1; i < b.size(); ++i) {
    char x = b[i];
    if (b[i - 1] == ' ' && x == '\'' && i + 1 < b.size()) {
      char x1 = b[i + 1];
      if (x1 == 's' || x1 == 'm') {
        c.pop_back();
      } else if (i + 2 < b.size()) {
        char x2 = b[i + 2];
        if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) c.pop_back();
      }
    }
    c += x;
  }
  return c;
}

// A piece of the input: raw text, or a special token found in it.
struct Fragment {
  TokenId token;  // kNoToken for text.
  size_t begin;
  size_t size;
};

}  // namespace

std::optional<PreTokenizer> pre_tokenizer_from_name(std::string_view name) {
  for (const auto& p : kPreTokenizers) {
    if (p.name == name) return p.kind;
  }
  return std::nullopt;
}

Tokenizer Tokenizer::from_gguf_file(const std::string& path) {
  return from_gguf(gguf::Reader(path).metadata());
}

Tokenizer Tokenizer::from_gguf(const gguf::Metadata& m) {
  auto v = std::make_shared<Vocab>();
  const std::string& model = m.get_string("tokenizer.ggml.model");
  if (model == "llama") {
    v->model = TokenizerModel::spm;
  } else if (model == "gpt2") {
    v->model = TokenizerModel::bpe;
  } else {
    fail(m, fmt::format("tokenizer.ggml.model '{}' is not supported (llama "
                        "and gpt2 are)",
                        model));
  }
  bool spm = v->model == TokenizerModel::spm;

  const auto& tokens = m.get_array<std::string>("tokenizer.ggml.tokens");
  size_t n = tokens.size();
  if (n == 0 || n > size_t(std::numeric_limits<TokenId>::max())) {
    fail(m, fmt::format("tokenizer.ggml.tokens holds {} tokens", n));
  }
  auto same_length = [&](const char* key, size_t count) {
    if (count != n) {
      fail(m, fmt::format("{} has {} entries for {} tokens", key, count, n));
    }
  };
  v->text.resize(n);
  v->score.assign(n, 0.0f);
  v->type.assign(n, TokenType::normal);
  if (m.contains("tokenizer.ggml.scores")) {
    const auto& scores = m.get_array<float>("tokenizer.ggml.scores");
    same_length("tokenizer.ggml.scores", scores.size());
    v->score = scores;
  }
  if (m.contains("tokenizer.ggml.token_type")) {
    const auto& types = m.get_array<int32_t>("tokenizer.ggml.token_type");
    same_length("tokenizer.ggml.token_type", types.size());
    for (size_t i = 0; i < n; ++i) {
      int32_t t = types[i];
      v->type[i] = t >= 0 && t <= 6 ? TokenType(t) : TokenType::undefined;
    }
  }
  v->ids.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    // As llama.cpp: empty texts get a placeholder, and a repeated text
    // finds its last id.
    v->text[i] = tokens[i].empty() ? fmt::format("[EMPTY_{}]", i) : tokens[i];
    v->ids[v->text[i]] = TokenId(i);
  }

  v->token_byte.assign(n, -1);
  v->byte_token.fill(kNoToken);
  if (spm) {
    for (size_t i = 0; i < n; ++i) {
      if (v->type[i] != TokenType::byte) continue;
      const std::string& t = v->text[i];
      int hi = t.size() == 6 ? hex_digit(t[3]) : -1;
      int lo = t.size() == 6 ? hex_digit(t[4]) : -1;
      if (t.compare(0, 3, "<0x") != 0 || t.back() != '>' || hi < 0 || lo < 0) {
        fail(m, fmt::format("byte token {} is '{}', not <0xXX>", i, t));
      }
      v->token_byte[i] = int16_t(hi * 16 + lo);
    }
    for (int b = 0; b < 256; ++b) {
      TokenId id = v->find(fmt::format("<0x{:02X}>", b));
      if (id == kNoToken) id = v->find(std::string(1, char(b)));
      v->byte_token[size_t(b)] = id;
    }
  }

  std::string pre;
  if (!spm) {
    pre = m.find_string("tokenizer.ggml.pre").value_or("");
    std::optional<PreTokenizer> kind = pre_tokenizer_from_name(pre);
    if (!kind) {
      fail(m, fmt::format("tokenizer.ggml.pre '{}' is not supported (gpt-2, "
                          "llama-bpe, qwen2 and their aliases are)",
                          pre));
    }
    v->pre = *kind;
    const auto& merges = m.get_array<std::string>("tokenizer.ggml.merges");
    v->merge_rank.reserve(merges.size());
    for (size_t i = 0; i < merges.size(); ++i) {
      // Split at the first space after the first byte; the first rank of a
      // repeated merge wins (both as llama.cpp).
      const std::string& s = merges[i];
      size_t space = s.find(' ', 1);
      std::string key = space == std::string::npos ? " " : s;
      v->merge_rank.try_emplace(std::move(key), int32_t(i));
    }
  }

  // Defaults, then the file's settings (llama-vocab.cpp).
  v->add_space_prefix = spm;
  v->add_bos = spm || v->pre == PreTokenizer::llama3;
  v->ignore_merges = !spm && v->pre == PreTokenizer::llama3;
  v->clean_spaces = !spm && v->pre != PreTokenizer::qwen2;
  if (auto b = m.find_bool("tokenizer.ggml.add_space_prefix")) {
    v->add_space_prefix = *b;
  }
  if (auto b = m.find_bool("tokenizer.ggml.add_bos_token")) v->add_bos = *b;
  if (auto b = m.find_bool("tokenizer.ggml.add_eos_token")) v->add_eos = *b;

  auto special = [&](const char* key, TokenId fallback) {
    // An id outside the vocabulary is ignored, as llama.cpp does (some
    // converted files carry one), and the default kept if it is valid.
    std::optional<int64_t> id = m.find_int(key);
    if (id && *id >= 0 && *id < int64_t(n)) return TokenId(*id);
    return fallback >= 0 && fallback < TokenId(n) ? fallback : kNoToken;
  };
  v->bos = special("tokenizer.ggml.bos_token_id", spm ? 1 : 11);
  v->eos = special("tokenizer.ggml.eos_token_id", spm ? 2 : 11);
  v->unk = special("tokenizer.ggml.unknown_token_id", spm ? 0 : kNoToken);
  v->eot = special("tokenizer.ggml.eot_token_id", kNoToken);
  v->eom = special("tokenizer.ggml.eom_token_id", kNoToken);
  v->pad = special("tokenizer.ggml.padding_token_id", kNoToken);
  if (v->add_bos && v->bos == kNoToken) {
    fail(m, "the vocabulary adds a BOS token but has none");
  }
  if (v->add_eos && v->eos == kNoToken) {
    fail(m, "the vocabulary adds an EOS token but has none");
  }

  // End-of-turn and end-of-generation tokens found by their text, made
  // control tokens so they never print.
  auto by_text = [&](std::string_view text) {
    TokenId id = v->find(text);
    if (id != kNoToken) v->type[size_t(id)] = TokenType::control;
    return id;
  };
  if (v->eot == kNoToken) {
    for (std::string_view t : kEotTexts) {
      if (TokenId id = by_text(t); id != kNoToken) {
        v->eot = id;
        break;
      }
    }
  }
  if (v->eom == kNoToken) v->eom = by_text("<|eom_id|>");
  for (std::string_view t : kEogTexts) {
    if (TokenId id = by_text(t); id != kNoToken) v->eog.push_back(id);
  }
  for (TokenId id : {v->eos, v->eot, v->eom}) {
    if (id != kNoToken) v->eog.push_back(id);
  }
  std::sort(v->eog.begin(), v->eog.end());
  v->eog.erase(std::unique(v->eog.begin(), v->eog.end()), v->eog.end());

  for (size_t i = 0; i < n; ++i) {
    TokenType t = v->type[i];
    if (t == TokenType::control || t == TokenType::user_defined ||
        t == TokenType::unknown) {
      v->specials.push_back(TokenId(i));
    }
  }
  std::stable_sort(
      v->specials.begin(), v->specials.end(), [&](TokenId a, TokenId b) {
        return v->text[size_t(a)].size() > v->text[size_t(b)].size();
      });
  v->chat_template = m.find_string("tokenizer.chat_template").value_or("");
  return Tokenizer(std::move(v));
}

TokenizerModel Tokenizer::model() const {
  return v_->model;
}
PreTokenizer Tokenizer::pre_tokenizer() const {
  return v_->pre;
}
size_t Tokenizer::size() const {
  return v_->text.size();
}

void Tokenizer::check_id(TokenId id) const {
  if (id < 0 || size_t(id) >= v_->text.size()) {
    throw ValueError(
        fmt::format("tokenizer: token id {} is outside the "
                    "vocabulary of {} tokens",
                    id, v_->text.size()));
  }
}

const std::string& Tokenizer::token_text(TokenId id) const {
  check_id(id);
  return v_->text[size_t(id)];
}
float Tokenizer::token_score(TokenId id) const {
  check_id(id);
  return v_->score[size_t(id)];
}
TokenType Tokenizer::token_type(TokenId id) const {
  check_id(id);
  return v_->type[size_t(id)];
}
TokenId Tokenizer::find_token(std::string_view text) const {
  return v_->find(text);
}

TokenId Tokenizer::bos() const {
  return v_->bos;
}
TokenId Tokenizer::eos() const {
  return v_->eos;
}
TokenId Tokenizer::eot() const {
  return v_->eot;
}
TokenId Tokenizer::unk() const {
  return v_->unk;
}
TokenId Tokenizer::pad() const {
  return v_->pad;
}
bool Tokenizer::add_bos() const {
  return v_->add_bos;
}
bool Tokenizer::add_eos() const {
  return v_->add_eos;
}
bool Tokenizer::add_space_prefix() const {
  return v_->add_space_prefix;
}
bool Tokenizer::is_eog(TokenId id) const {
  return std::binary_search(v_->eog.begin(), v_->eog.end(), id);
}
const std::vector<TokenId>& Tokenizer::eog_tokens() const {
  return v_->eog;
}
const std::string& Tokenizer::chat_template() const {
  return v_->chat_template;
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  const Vocab& v = *v_;
  // Cut special tokens out of the text, longest first (llama.cpp's
  // tokenizer_st_partition). Without parse_special only user-defined
  // tokens are cut, as Hugging Face tokenizers do.
  std::vector<Fragment> frags;
  if (!text.empty()) frags.push_back({kNoToken, 0, text.size()});
  std::vector<Fragment> next;
  for (TokenId id : v.specials) {
    TokenType t = v.type[size_t(id)];
    if (!parse_special && t != TokenType::user_defined) continue;
    const std::string& needle = v.text[size_t(id)];
    next.clear();
    for (const Fragment& f : frags) {
      if (f.token != kNoToken) {
        next.push_back(f);
        continue;
      }
      std::string_view s = text.substr(f.begin, f.size);
      size_t pos = 0;
      while (true) {
        size_t hit = s.find(needle, pos);
        if (hit == std::string_view::npos) break;
        if (hit > pos) next.push_back({kNoToken, f.begin + pos, hit - pos});
        next.push_back({id, 0, 0});
        pos = hit + needle.size();
      }
      if (pos < s.size())
        next.push_back({kNoToken, f.begin + pos, s.size() - pos});
    }
    frags.swap(next);
  }

  std::vector<TokenId> out;
  if (add_special && v.add_bos) out.push_back(v.bos);
  if (v.model == TokenizerModel::spm) {
    bool prev_special = true;  // The first text gets the space prefix.
    for (const Fragment& f : frags) {
      if (f.token != kNoToken) {
        out.push_back(f.token);
        prev_special = true;
        continue;
      }
      std::string s = v.add_space_prefix && prev_special ? " " : "";
      s.append(text.substr(f.begin, f.size));
      detail::spm_encode(v, replace_all(s, " ", kSpace), out);
      prev_special = false;
    }
  } else {
    for (const Fragment& f : frags) {
      if (f.token != kNoToken) {
        out.push_back(f.token);
        continue;
      }
      for (const std::string& word :
           pre_tokenize(text.substr(f.begin, f.size), v.pre)) {
        detail::bpe_encode_word(v, word, out);
      }
    }
  }
  if (add_special && v.add_eos) out.push_back(v.eos);
  return out;
}

std::string Tokenizer::token_to_piece(TokenId id, bool special) const {
  check_id(id);
  const Vocab& v = *v_;
  TokenType t = v.type[size_t(id)];
  const std::string& text = v.text[size_t(id)];
  if (t == TokenType::control || t == TokenType::unknown) {
    return special ? text : std::string();
  }
  if (t == TokenType::user_defined) return text;
  if (v.model == TokenizerModel::spm) {
    if (t == TokenType::normal) return replace_all(text, kSpace, " ");
    if (t == TokenType::byte)
      return std::string(1, char(v.token_byte[size_t(id)]));
    return std::string();
  }
  if (t != TokenType::normal) return std::string();
  // Byte-level text back to bytes; a character outside GPT-2's alphabet
  // (a hand-made vocabulary) passes through as its UTF-8.
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    uint32_t cp;
    size_t len = unicode::decode_utf8(text, pos, &cp);
    if (len == 0) {
      out += text[pos++];
      continue;
    }
    int b = unicode::code_point_to_byte(cp);
    if (b >= 0) {
      out += char(b);
    } else {
      out.append(text, pos, len);
    }
    pos += len;
  }
  return out;
}

std::string Tokenizer::decode(std::span<const TokenId> ids, bool remove_special,
                              bool unparse_special) const {
  const Vocab& v = *v_;
  bool remove_space = v.add_space_prefix;
  if (remove_special && v.add_bos && !ids.empty() && ids.front() == v.bos) {
    remove_space = false;
    ids = ids.subspan(1);
  }
  if (remove_special && v.add_eos && !ids.empty() && ids.back() == v.eos) {
    ids = ids.first(ids.size() - 1);
  }
  std::string out;
  for (TokenId id : ids) {
    std::string piece = token_to_piece(id, unparse_special);
    size_t skip = remove_space && !piece.empty() && piece[0] == ' ' ? 1 : 0;
    out.append(piece, skip);
    remove_space = false;
  }
  return v.clean_spaces ? clean_spaces(out) : out;
}

}  // namespace nascent::tokenizer
