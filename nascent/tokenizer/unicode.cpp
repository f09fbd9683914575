#include "nascent/tokenizer/unicode.h"

#include <algorithm>
#include <array>

namespace nascent::tokenizer::unicode {
namespace detail {
extern const uint32_t kRanges[];
extern const size_t kNumRanges;
extern const char kUnicodeVersion[];
}  // namespace detail

namespace {

constexpr uint32_t kStartMask = 0x1FFFFF;

struct ByteMap {
  std::array<std::string, 256> to_utf8;
  std::array<int16_t, 512> from_cp;  // The mapping only reaches U+0143.

  ByteMap() {
    from_cp.fill(-1);
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) ||
                       (b >= 0xAE && b <= 0xFF);
      uint32_t cp = printable ? uint32_t(b) : uint32_t(next++);
      append_utf8(to_utf8[size_t(b)], cp);
      from_cp[cp] = int16_t(b);
    }
  }
};

// The flags of the range holding cp (ranges start at 0, so one exists).
uint8_t lookup(uint32_t cp) {
  const uint32_t* end = detail::kRanges + detail::kNumRanges;
  const uint32_t* it = std::upper_bound(
      detail::kRanges, end, cp,
      [](uint32_t v, uint32_t r) { return v < (r & kStartMask); });
  return uint8_t(it[-1] >> 24);
}

const ByteMap& byte_map() {
  static const ByteMap map;
  return map;
}

}  // namespace

uint8_t classes(uint32_t cp) {
  static const auto ascii = [] {
    std::array<uint8_t, 128> t{};
    for (uint32_t c = 0; c < 128; ++c) t[c] = lookup(c);
    return t;
  }();
  if (cp < 128) return ascii[cp];
  return cp > 0x10FFFF ? 0 : lookup(cp);
}

const char* data_version() {
  return detail::kUnicodeVersion;
}

size_t decode_utf8(std::string_view s, size_t pos, uint32_t* cp) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  unsigned char b0 = byte(pos);
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  }
  size_t n;
  uint32_t v, min;
  if ((b0 & 0xE0) == 0xC0) {
    n = 2, v = b0 & 0x1Fu, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    n = 3, v = b0 & 0x0Fu, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    n = 4, v = b0 & 0x07u, min = 0x10000;
  } else {
    return 0;
  }
  if (s.size() - pos < n) return 0;
  for (size_t i = 1; i < n; ++i) {
    unsigned char b = byte(pos + i);
    if ((b & 0xC0) != 0x80) return 0;
    v = (v << 6) | (b & 0x3Fu);
  }
  if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  *cp = v;
  return n;
}

std::vector<uint32_t> to_code_points(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) {
    uint32_t cp;
    size_t n = decode_utf8(s, pos, &cp);
    if (n == 0) {
      out.push_back(kReplacement);
      pos += 1;
    } else {
      out.push_back(cp);
      pos += n;
    }
  }
  return out;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

size_t complete_utf8_prefix(std::string_view s) {
  // Only the last three bytes can belong to an unfinished sequence.
  size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    unsigned char b = static_cast<unsigned char>(s[n - back]);
    if ((b & 0xC0) == 0x80) continue;  // A continuation byte: look further.
    size_t need = (b & 0xE0) == 0xC0   ? 2
                  : (b & 0xF0) == 0xE0 ? 3
                  : (b & 0xF8) == 0xF0 ? 4
                                       : 1;
    // A lead byte whose sequence is not complete yet is held back, unless
    // what follows it already makes it invalid (then no byte can fix it).
    if (need > back) {
      for (size_t i = n - back + 1; i < n; ++i) {
        if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) return n;
      }
      return n - back;
    }
    return n;
  }
  return n;
}

const std::string& byte_to_utf8(uint8_t b) {
  return byte_map().to_utf8[b];
}

int code_point_to_byte(uint32_t cp) {
  return cp < 512 ? byte_map().from_cp[cp] : -1;
}

}  // namespace nascent::tokenizer::unicode
