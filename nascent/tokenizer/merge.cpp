// The two merge loops. Both start from single characters and repeatedly
// merge the best adjacent pair: SentencePiece by the score of the merged
// token, byte-level BPE by the rank of the merge. Ties go to the leftmost
// pair, which is what makes the result match llama.cpp id for id.
#include <queue>

#include "nascent/tokenizer/unicode.h"
#include "nascent/tokenizer/vocab.h"

namespace nascent::tokenizer::detail {
namespace {

// A piece of the text in a doubly linked list; n == 0 once merged away.
struct Symbol {
  int prev;
  int next;
  size_t start;
  size_t n;
};

std::vector<Symbol> split_chars(std::string_view text) {
  std::vector<Symbol> symbols;
  size_t offset = 0;
  int index = 0;
  while (offset < text.size()) {
    size_t len = unicode::utf8_length_from_lead(
        static_cast<unsigned char>(text[offset]));
    len = std::min(len, text.size() - offset);
    symbols.push_back(
        {index - 1, offset + len == text.size() ? -1 : index + 1, offset, len});
    offset += len;
    ++index;
  }
  return symbols;
}

// Merges symbols[right] into symbols[left].
void merge(std::vector<Symbol>& symbols, int left, int right) {
  Symbol& l = symbols[size_t(left)];
  Symbol& r = symbols[size_t(right)];
  l.n += r.n;
  r.n = 0;
  l.next = r.next;
  if (r.next >= 0) symbols[size_t(r.next)].prev = left;
}

struct SpmPair {
  int left;
  int right;
  float score;
  size_t size;
};
struct SpmOrder {
  bool operator()(const SpmPair& a, const SpmPair& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

struct BpePair {
  int left;
  int right;
  int32_t rank;
  std::string text;
};
struct BpeOrder {
  bool operator()(const BpePair& a, const BpePair& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

void spm_encode(const Tokenizer::Vocab& v, std::string_view text,
                std::vector<TokenId>& out) {
  std::vector<Symbol> symbols = split_chars(text);
  std::priority_queue<SpmPair, std::vector<SpmPair>, SpmOrder> queue;
  auto try_pair = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[size_t(left)];
    const Symbol& r = symbols[size_t(right)];
    std::string_view merged = text.substr(l.start, l.n + r.n);
    TokenId id = v.find(merged);
    if (id == kNoToken) return;
    queue.push({left, right, v.score[size_t(id)], merged.size()});
  };
  for (int i = 1; i < int(symbols.size()); ++i) try_pair(i - 1, i);
  while (!queue.empty()) {
    SpmPair p = queue.top();
    queue.pop();
    const Symbol& l = symbols[size_t(p.left)];
    const Symbol& r = symbols[size_t(p.right)];
    // Stale: one side has changed since the pair was queued.
    if (l.n == 0 || r.n == 0 || l.n + r.n != p.size) continue;
    merge(symbols, p.left, p.right);
    try_pair(symbols[size_t(p.left)].prev, p.left);
    try_pair(p.left, symbols[size_t(p.left)].next);
  }
  for (int i = symbols.empty() ? -1 : 0; i != -1; i = symbols[size_t(i)].next) {
    const Symbol& s = symbols[size_t(i)];
    std::string_view piece = text.substr(s.start, s.n);
    TokenId id = v.find(piece);
    if (id != kNoToken) {
      out.push_back(id);
      continue;
    }
    // Every merged piece is a token, so this is one character that is
    // not: spell it in byte tokens.
    for (char c : piece) {
      TokenId b = v.byte_token[static_cast<unsigned char>(c)];
      out.push_back(b != kNoToken ? b : v.unk);
    }
  }
}

void bpe_encode_word(const Tokenizer::Vocab& v, const std::string& word,
                     std::vector<TokenId>& out) {
  if (v.ignore_merges) {
    if (TokenId id = v.find(word); id != kNoToken) {
      out.push_back(id);
      return;
    }
  }
  std::vector<Symbol> symbols = split_chars(word);
  std::priority_queue<BpePair, std::vector<BpePair>, BpeOrder> queue;
  std::string key;
  auto try_pair = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[size_t(left)];
    const Symbol& r = symbols[size_t(right)];
    key.assign(word, l.start, l.n);
    key += ' ';
    key.append(word, r.start, r.n);
    auto it = v.merge_rank.find(key);
    if (it == v.merge_rank.end()) return;
    queue.push({left, right, it->second, word.substr(l.start, l.n + r.n)});
  };
  for (int i = 1; i < int(symbols.size()); ++i) try_pair(i - 1, i);
  while (!queue.empty()) {
    BpePair p = queue.top();
    queue.pop();
    const Symbol& l = symbols[size_t(p.left)];
    const Symbol& r = symbols[size_t(p.right)];
    if (l.n == 0 || r.n == 0 || l.n + r.n != p.text.size() ||
        word.compare(l.start, p.text.size(), p.text) != 0) {
      continue;
    }
    merge(symbols, p.left, p.right);
    try_pair(symbols[size_t(p.left)].prev, p.left);
    try_pair(p.left, symbols[size_t(p.left)].next);
  }
  for (const Symbol& s : symbols) {
    if (s.n == 0) continue;
    std::string_view piece(word.data() + s.start, s.n);
    TokenId id = v.find(piece);
    if (id != kNoToken) {
      out.push_back(id);
      continue;
    }
    // A piece the vocabulary lacks: its single bytes, where they are
    // tokens (llama.cpp drops the rest).
    for (char c : piece) {
      if (TokenId b = v.find(std::string_view(&c, 1)); b != kNoToken) {
        out.push_back(b);
      }
    }
  }
}

}  // namespace nascent::tokenizer::detail
