// One conv2d call as the CPU kernels see it, and the index helpers the
// conv files share (conv.cpp, conv/direct_simd.cpp, conv/winograd_simd.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace nascent::cpu::conv {

struct Geometry {
  int64_t n, c, h, w;  // Input.
  int64_t o, kh, kw;   // Weight [O, C / groups, KH, KW].
  int64_t oh, ow;      // Output.
  int64_t sh, sw, ph, pw, dh, dw, groups;

  int64_t cg() const { return c / groups; }
  int64_t og() const { return o / groups; }
  int64_t k() const { return cg() * kh * kw; }
  int64_t hw() const { return h * w; }
  int64_t ohw() const { return oh * ow; }
  bool pointwise() const {
    return kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0;
  }
};

// ceil(a / b) for b > 0 and any a.
inline int64_t div_up(int64_t a, int64_t b) {
  return a <= 0 ? -(-a / b) : (a + b - 1) / b;
}

// Output columns [lo, hi) whose input column ow*stride - pad + tap lies in
// [0, size), for a kernel tap offset `tap` (= j * dilation).
struct Range {
  int64_t lo, hi;
};
inline Range valid_outputs(int64_t size, int64_t out, int64_t stride,
                           int64_t pad, int64_t tap) {
  int64_t lo = std::clamp<int64_t>(div_up(pad - tap, stride), 0, out);
  int64_t hi = std::clamp<int64_t>(div_up(size + pad - tap, stride), lo, out);
  return {lo, hi};
}

// Per-thread scratch reused across calls, so that the column and padded
// plane buffers fault in their pages once, not on every call. One buffer
// per element type and slot; a caller uses a slot for one thing at a time.
template <class T>
T* scratch(int slot, size_t n) {
  thread_local std::vector<T> buffers[3];
  std::vector<T>& b = buffers[slot];
  if (b.size() < n) b.resize(n);
  return b.data();
}

}  // namespace nascent::cpu::conv
