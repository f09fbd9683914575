#include "nascent/tokenizer/trainer.h"

#include <algorithm>
#include <limits>
#include <queue>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "nascent/core/error.h"
#include "nascent/tokenizer/pre_tokenizer.h"
#include "nascent/tokenizer/tokenizer.h"
#include "nascent/tokenizer/unicode.h"

namespace nascent::tokenizer {
namespace {

constexpr uint32_t kSpace = 0x2581;  // "▁", SentencePiece's space.
constexpr const char* kSpmSpecials[] = {"<unk>", "<s>", "</s>"};
constexpr const char* kBpeSpecial = "<|endoftext|>";

// A distinct word of the corpus as token ids, and how often it occurs.
struct Word {
  std::vector<int32_t> symbols;
  int64_t count;
};

// The tokens so far: their texts and the id of each text.
struct Tokens {
  std::vector<std::string> text;
  std::unordered_map<std::string, int32_t> ids;

  int32_t add(std::string t) {
    auto id = int32_t(text.size());
    ids.emplace(t, id);
    text.push_back(std::move(t));
    return id;
  }
  size_t size() const { return text.size(); }
};

struct Merge {
  int32_t left;
  int32_t right;
};

uint64_t pair_key(int32_t left, int32_t right) {
  return uint64_t(uint32_t(left)) << 32 | uint32_t(right);
}

// A pair's count when it was queued. The queue holds stale entries (counts
// that have fallen since); they are re-queued with the true count when they
// come out on top, so the top is always the true best pair.
struct Candidate {
  int64_t count;
  int32_t left;
  int32_t right;
};
struct WorseCandidate {
  bool operator()(const Candidate& a, const Candidate& b) const {
    if (a.count != b.count) return a.count < b.count;
    if (a.left != b.left) return a.left > b.left;
    return a.right > b.right;
  }
};

// Merges the most frequent adjacent pair until `tokens` holds `target`
// tokens; returns the merges in order. A merge whose text is already a token
// (ab + c after a + bc) is recorded but adds no token.
std::vector<Merge> learn_merges(std::vector<Word>& words, Tokens& tokens,
                                size_t target, int64_t min_count) {
  std::unordered_map<uint64_t, int64_t> count;
  // The words a pair may occur in (with repeats; checked when used).
  std::unordered_map<uint64_t, std::vector<int32_t>> where;
  for (size_t w = 0; w < words.size(); ++w) {
    const auto& s = words[w].symbols;
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      uint64_t key = pair_key(s[i], s[i + 1]);
      count[key] += words[w].count;
      where[key].push_back(int32_t(w));
    }
  }
  std::priority_queue<Candidate, std::vector<Candidate>, WorseCandidate> queue;
  for (const auto& [key, n] : count) {
    queue.push({n, int32_t(key >> 32), int32_t(key & 0xFFFFFFFF)});
  }

  std::vector<Merge> merges;
  std::vector<int64_t> seen(words.size(), -1);  // Merge that last saw a word.
  std::vector<uint64_t> grown;                  // Pairs whose count rose.
  auto add = [&](int32_t l, int32_t r, int64_t n, int32_t w) {
    uint64_t key = pair_key(l, r);
    count[key] += n;
    if (n > 0) {
      where[key].push_back(w);
      grown.push_back(key);
    }
  };
  while (tokens.size() < target) {
    if (queue.empty() || queue.top().count < min_count) {
      throw ValueError(fmt::format(
          "train_tokenizer: the corpus fills only {} of the {} tokens asked "
          "for (no pair left occurs {} times or more); give more text, a "
          "smaller vocab_size or a lower min_pair_count",
          tokens.size(), target, min_count));
    }
    Candidate best = queue.top();
    queue.pop();
    uint64_t key = pair_key(best.left, best.right);
    int64_t now = count[key];
    if (now != best.count) {
      if (now > 0) queue.push({now, best.left, best.right});
      continue;
    }
    int32_t a = best.left, b = best.right;
    std::string merged = tokens.text[size_t(a)] + tokens.text[size_t(b)];
    auto found = tokens.ids.find(merged);
    int32_t ab = found != tokens.ids.end() ? found->second
                                           : tokens.add(std::move(merged));
    auto index = int64_t(merges.size());
    merges.push_back({a, b});

    std::vector<int32_t> holders = std::move(where[key]);
    where.erase(key);
    grown.clear();
    for (int32_t w : holders) {
      if (seen[size_t(w)] == index) continue;
      seen[size_t(w)] = index;
      auto& s = words[size_t(w)].symbols;
      int64_t n = words[size_t(w)].count;
      // Left to right, in place: s[out - 1] is already the merged left
      // neighbour when two merges touch ("a b a b" -> "ab ab").
      size_t out = 0;
      for (size_t i = 0; i < s.size();) {
        if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) {
          if (out > 0) {
            add(s[out - 1], a, -n, w);
            add(s[out - 1], ab, n, w);
          }
          if (i + 2 < s.size()) {
            add(b, s[i + 2], -n, w);
            add(ab, s[i + 2], n, w);
          }
          s[out++] = ab;
          i += 2;
        } else {
          s[out++] = s[i++];
        }
      }
      s.resize(out);
    }
    count.erase(key);
    std::sort(grown.begin(), grown.end());
    grown.erase(std::unique(grown.begin(), grown.end()), grown.end());
    for (uint64_t g : grown) {
      int64_t n = count[g];
      if (n > 0) queue.push({n, int32_t(g >> 32), int32_t(g & 0xFFFFFFFF)});
    }
  }
  return merges;
}

// Distinct words in order of first appearance, with their counts.
struct WordCounts {
  std::vector<std::string> words;
  std::vector<int64_t> counts;
  std::unordered_map<std::string, size_t> index;

  void add(std::string_view word) {
    auto [it, fresh] = index.try_emplace(std::string(word), words.size());
    if (fresh) {
      words.emplace_back(word);
      counts.push_back(0);
    }
    ++counts[it->second];
  }
};

// What a piece of a SentencePiece word may hold: letters, digits or other
// characters (punctuation, symbols, marks), never a mix.
enum class CharClass { letter, number, other, space };
CharClass char_class(uint32_t cp) {
  if (unicode::is_whitespace(cp)) return CharClass::space;
  if (unicode::is_letter(cp)) return CharClass::letter;
  if (unicode::is_number(cp)) return CharClass::number;
  return CharClass::other;
}

// Splits one text as the spm encoder sees it (space prefix, spaces as "▁")
// into the words merges stay inside: "▁" followed by a run of one class
// ("▁the", "▁--", "▁42"), a run of the same white-space character ("\n\n"),
// and before a word, a run of "▁" minus the one the word takes ("▁▁" of
// "▁▁▁x"), as GPT-2's \s+(?!\S) does.
void spm_words(std::string_view text, WordCounts& out) {
  std::vector<uint32_t> cps = unicode::to_code_points(text);
  cps.insert(cps.begin(), ' ');
  for (uint32_t& c : cps) {
    if (c == ' ') c = kSpace;
  }
  std::string word;
  auto emit = [&](size_t begin, size_t end) {
    word.clear();
    for (size_t k = begin; k < end; ++k) unicode::append_utf8(word, cps[k]);
    out.add(word);
  };
  size_t n = cps.size();
  auto run_of_class = [&](size_t k) {
    CharClass c = char_class(cps[k]);
    while (k < n && cps[k] != kSpace && char_class(cps[k]) == c) ++k;
    return k;
  };
  for (size_t i = 0; i < n;) {
    if (cps[i] == kSpace) {
      size_t j = i;
      while (j < n && cps[j] == kSpace) ++j;
      if (j < n && char_class(cps[j]) != CharClass::space) {
        if (j - 1 > i) emit(i, j - 1);
        size_t end = run_of_class(j);
        emit(j - 1, end);
        i = end;
      } else {
        emit(i, j);
        i = j;
      }
    } else if (char_class(cps[i]) == CharClass::space) {
      size_t j = i;
      while (j < n && cps[j] == cps[i]) ++j;
      emit(i, j);
      i = j;
    } else {
      size_t end = run_of_class(i);
      emit(i, end);
      i = end;
    }
  }
}

void check_options(std::span<const std::string_view> texts,
                   const TrainerOptions& o, size_t n_fixed) {
  bool empty = std::all_of(texts.begin(), texts.end(),
                           [](std::string_view t) { return t.empty(); });
  if (empty) {
    throw ValueError(fmt::format(
        "train_tokenizer: the corpus is empty ({} texts, no characters)",
        texts.size()));
  }
  if (o.vocab_size < int64_t(n_fixed) ||
      o.vocab_size > std::numeric_limits<int32_t>::max()) {
    throw ValueError(fmt::format(
        "train_tokenizer: vocab_size {} is outside [{}, {}]: a {} vocabulary "
        "holds {} special and byte tokens before any learned one",
        o.vocab_size, n_fixed, std::numeric_limits<int32_t>::max(),
        trainer_kind_name(o.kind), n_fixed));
  }
  if (o.min_pair_count < 1) {
    throw ValueError(fmt::format(
        "train_tokenizer: min_pair_count {} is below 1", o.min_pair_count));
  }
  if (!(o.character_coverage > 0.0 && o.character_coverage <= 1.0)) {
    throw ValueError(
        fmt::format("train_tokenizer: character_coverage {} is outside (0, 1]",
                    o.character_coverage));
  }
}

void set_common(gguf::Metadata& m, const Tokens& tokens,
                const std::vector<int32_t>& types, const TrainerOptions& o,
                uint32_t bos, uint32_t eos, uint32_t pad) {
  m.set("tokenizer.ggml.tokens", gguf::Value::array(tokens.text));
  m.set("tokenizer.ggml.token_type", gguf::Value::array(types));
  m.set("tokenizer.ggml.bos_token_id", gguf::Value(bos));
  m.set("tokenizer.ggml.eos_token_id", gguf::Value(eos));
  m.set("tokenizer.ggml.padding_token_id", gguf::Value(pad));
  m.set("tokenizer.ggml.add_bos_token", gguf::Value(o.add_bos));
  m.set("tokenizer.ggml.add_eos_token", gguf::Value(o.add_eos));
}

gguf::Metadata train_spm(std::span<const std::string_view> texts,
                         const TrainerOptions& o) {
  size_t n_fixed = std::size(kSpmSpecials) + 256;
  check_options(texts, o, n_fixed);
  WordCounts counts;
  for (std::string_view t : texts) {
    if (!t.empty()) spm_words(t, counts);
  }

  // Characters by falling count, then code point; those that cover the
  // asked share of the corpus (and fit) become tokens.
  std::unordered_map<uint32_t, int64_t> char_count;
  std::vector<std::vector<uint32_t>> word_cps(counts.words.size());
  int64_t total = 0;
  for (size_t w = 0; w < counts.words.size(); ++w) {
    word_cps[w] = unicode::to_code_points(counts.words[w]);
    for (uint32_t c : word_cps[w]) char_count[c] += counts.counts[w];
    total += int64_t(word_cps[w].size()) * counts.counts[w];
  }
  std::vector<std::pair<uint32_t, int64_t>> chars(char_count.begin(),
                                                  char_count.end());
  std::sort(chars.begin(), chars.end(), [](const auto& x, const auto& y) {
    return x.second != y.second ? x.second > y.second : x.first < y.first;
  });
  size_t room = size_t(o.vocab_size) - n_fixed;
  size_t kept = 0;
  int64_t covered = 0;
  while (kept < chars.size() && kept < room &&
         double(covered) < o.character_coverage * double(total)) {
    covered += chars[kept++].second;
  }

  Tokens tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  auto push = [&](std::string text, float score, TokenType type) {
    tokens.add(std::move(text));
    scores.push_back(score);
    types.push_back(int32_t(type));
  };
  push(kSpmSpecials[0], 0.0f, TokenType::unknown);
  push(kSpmSpecials[1], 0.0f, TokenType::control);
  push(kSpmSpecials[2], 0.0f, TokenType::control);
  for (int b = 0; b < 256; ++b) {
    push(fmt::format("<0x{:02X}>", b), 0.0f, TokenType::byte);
  }
  // Scores fall with the id: llama.cpp merges the pair whose piece scores
  // highest, so earlier merges win as they did in training. (A character
  // is never a merge, so its score only keeps the order.)
  std::unordered_map<uint32_t, int32_t> char_id;
  for (size_t k = 0; k < kept; ++k) {
    std::string text;
    unicode::append_utf8(text, chars[k].first);
    char_id[chars[k].first] = int32_t(tokens.size());
    push(std::move(text), -float(k), TokenType::normal);
  }

  // A character that is no token (it becomes byte tokens) ends a word.
  std::vector<Word> words;
  for (size_t w = 0; w < word_cps.size(); ++w) {
    Word piece{{}, counts.counts[w]};
    for (uint32_t c : word_cps[w]) {
      auto it = char_id.find(c);
      if (it != char_id.end()) {
        piece.symbols.push_back(it->second);
        continue;
      }
      if (piece.symbols.size() > 1) words.push_back(piece);
      piece.symbols.clear();
    }
    if (piece.symbols.size() > 1) words.push_back(std::move(piece));
  }
  size_t before = tokens.size();
  learn_merges(words, tokens, size_t(o.vocab_size), o.min_pair_count);
  for (size_t k = before; k < tokens.size(); ++k) {
    scores.push_back(-float(kept + (k - before)));
    types.push_back(int32_t(TokenType::normal));
  }

  gguf::Metadata m;
  m.set("tokenizer.ggml.model", gguf::Value("llama"));
  set_common(m, tokens, types, o, 1, 2, 0);
  m.set("tokenizer.ggml.scores", gguf::Value::array(std::move(scores)));
  m.set("tokenizer.ggml.unknown_token_id", gguf::Value(uint32_t(0)));
  m.set("tokenizer.ggml.add_space_prefix", gguf::Value(true));
  return m;
}

gguf::Metadata train_byte_bpe(std::span<const std::string_view> texts,
                              const TrainerOptions& o) {
  size_t n_fixed = 1 + 256;
  check_options(texts, o, n_fixed);
  std::optional<PreTokenizer> pre = pre_tokenizer_from_name(o.pre_tokenizer);
  if (!pre) {
    throw ValueError(fmt::format(
        "train_tokenizer: pre-tokenizer '{}' is unknown (gpt-2, llama-bpe, "
        "qwen2 and their aliases are known)",
        o.pre_tokenizer));
  }
  WordCounts counts;
  for (std::string_view t : texts) {
    for (const std::string& w : pre_tokenize(t, *pre)) counts.add(w);
  }

  Tokens tokens;
  tokens.add(kBpeSpecial);
  for (int b = 0; b < 256; ++b) tokens.add(unicode::byte_to_utf8(uint8_t(b)));
  std::vector<Word> words;
  for (size_t w = 0; w < counts.words.size(); ++w) {
    Word word{{}, counts.counts[w]};
    for (uint32_t c : unicode::to_code_points(counts.words[w])) {
      // pre_tokenize spells every byte in GPT-2's alphabet.
      word.symbols.push_back(1 + unicode::code_point_to_byte(c));
    }
    if (word.symbols.size() > 1) words.push_back(std::move(word));
  }
  std::vector<Merge> merges =
      learn_merges(words, tokens, size_t(o.vocab_size), o.min_pair_count);

  std::vector<int32_t> types(tokens.size(), int32_t(TokenType::normal));
  types[0] = int32_t(TokenType::control);
  std::vector<std::string> merge_text;
  merge_text.reserve(merges.size());
  for (const Merge& g : merges) {
    merge_text.push_back(tokens.text[size_t(g.left)] + " " +
                         tokens.text[size_t(g.right)]);
  }
  gguf::Metadata m;
  m.set("tokenizer.ggml.model", gguf::Value("gpt2"));
  m.set("tokenizer.ggml.pre", gguf::Value(o.pre_tokenizer));
  set_common(m, tokens, types, o, 0, 0, 0);
  m.set("tokenizer.ggml.merges", gguf::Value::array(std::move(merge_text)));
  m.set("tokenizer.ggml.add_space_prefix", gguf::Value(false));
  return m;
}

}  // namespace

TrainerKind parse_trainer_kind(std::string_view kind) {
  if (kind == "spm-bpe") return TrainerKind::spm_bpe;
  if (kind == "byte-bpe") return TrainerKind::byte_bpe;
  throw ValueError(fmt::format(
      "tokenizer trainer '{}' is unknown (spm-bpe and byte-bpe are)", kind));
}

std::string_view trainer_kind_name(TrainerKind kind) {
  return kind == TrainerKind::spm_bpe ? "spm-bpe" : "byte-bpe";
}

gguf::Metadata train_tokenizer(std::span<const std::string_view> texts,
                               const TrainerOptions& options) {
  return options.kind == TrainerKind::spm_bpe ? train_spm(texts, options)
                                              : train_byte_bpe(texts, options);
}

}  // namespace nascent::tokenizer
