#include "nascent/generate/stream.h"

#include <algorithm>

#include "nascent/core/error.h"
#include "nascent/tokenizer/unicode.h"

namespace nascent::generate {

std::string sanitize_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t pos = 0;
  while (pos < bytes.size()) {
    uint32_t cp;
    size_t n = tokenizer::unicode::decode_utf8(bytes, pos, &cp);
    if (n == 0) {
      tokenizer::unicode::append_utf8(out, tokenizer::unicode::kReplacement);
      pos += 1;
    } else {
      out.append(bytes, pos, n);
      pos += n;
    }
  }
  return out;
}

std::string StreamingDetokenizer::push(tokenizer::TokenId id) {
  pending_ += tokenizer_.token_to_piece(id, special_);
  size_t ready = tokenizer::unicode::complete_utf8_prefix(pending_);
  std::string out = sanitize_utf8(std::string_view(pending_).substr(0, ready));
  pending_.erase(0, ready);
  return out;
}

std::string StreamingDetokenizer::flush() {
  std::string out = sanitize_utf8(pending_);
  pending_.clear();
  return out;
}

StopStrings::StopStrings(std::vector<std::string> stops)
    : stops_(std::move(stops)) {
  for (const std::string& s : stops_) {
    if (s.empty()) throw ValueError("stop strings: an empty stop string");
  }
}

std::string StopStrings::push(std::string_view text) {
  if (stopped_) return std::string();
  pending_.append(text);
  // The earliest stop string in the pending text wins.
  size_t first = std::string::npos;
  for (const std::string& s : stops_) {
    size_t at = pending_.find(s);
    if (at < first || (at == first && at != std::string::npos &&
                       s.size() > matched_.size())) {
      first = at;
      matched_ = s;
    }
  }
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = pending_.substr(0, first);
    pending_.clear();
    return out;
  }
  // Hold back the longest tail that is a prefix of some stop string.
  size_t hold = 0;
  for (const std::string& s : stops_) {
    size_t max = std::min(s.size() - 1, pending_.size());
    for (size_t n = max; n > hold; --n) {
      if (pending_.compare(pending_.size() - n, n, s, 0, n) == 0) {
        hold = n;
        break;
      }
    }
  }
  std::string out = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return out;
}

std::string StopStrings::flush() {
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace nascent::generate
