// Walks N operands of one shape with their own strides, NumPy-iterator style,
// over the axes common::collapse leaves (size-1 axes dropped, contiguous
// neighbours merged), so most calls end up as one long inner run that a SIMD
// kernel can take whole. Kernels receive (pointers, run length,
// per-operand inner strides in elements).
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "nascent/backends/common/geometry.h"
#include "nascent/backends/cpu/thread_pool.h"
#include "nascent/core/shape.h"

namespace nascent::cpu {

template <int N>
class StridedLoop {
 public:
  // strides[k] are operand k's strides over `shape`, in elements.
  StridedLoop(const Shape& shape, const std::array<Strides, N>& strides)
      : StridedLoop(common::collapse<N>(shape, pointers(strides))) {}
  explicit StridedLoop(common::Collapsed<N> c)
      : shape_(std::move(c.shape)), strides_(std::move(c.strides)) {
    numel_ = 1;
    for (int64_t d : shape_) numel_ *= d;
  }

  int64_t numel() const { return numel_; }
  int64_t inner_size() const { return shape_.back(); }
  int64_t inner_stride(int k) const { return strides_[k].back(); }

  // Calls fn(offsets, n, inner_strides) on the runs that cover elements
  // [begin, end) in row-major order; offsets are in elements from each
  // operand's base pointer.
  template <class Fn>
  void for_range(int64_t begin, int64_t end, Fn&& fn) const {
    const int nd = int(shape_.size());
    const int64_t inner = shape_.back();
    std::array<int64_t, N> inner_strides;
    for (int k = 0; k < N; ++k) inner_strides[k] = strides_[k].back();
    // Decompose `begin` into an index over the outer axes.
    std::vector<int64_t> idx(size_t(nd), 0);
    int64_t rem = begin;
    for (int d = nd - 1; d >= 0; --d) {
      idx[size_t(d)] = rem % shape_[size_t(d)];
      rem /= shape_[size_t(d)];
    }
    std::array<int64_t, N> off{};
    for (int k = 0; k < N; ++k) {
      for (int d = 0; d < nd; ++d)
        off[k] += idx[size_t(d)] * strides_[k][size_t(d)];
    }
    int64_t pos = begin;
    while (pos < end) {
      int64_t col = idx[size_t(nd - 1)];
      int64_t n = std::min(inner - col, end - pos);
      fn(off, n, inner_strides);
      pos += n;
      // Advance to the start of the next run.
      for (int k = 0; k < N; ++k) off[k] += n * inner_strides[k];
      idx[size_t(nd - 1)] += n;
      for (int d = nd - 1; d > 0 && idx[size_t(d)] == shape_[size_t(d)]; --d) {
        for (int k = 0; k < N; ++k) {
          off[k] -= shape_[size_t(d)] * strides_[k][size_t(d)];
          off[k] += strides_[k][size_t(d - 1)];
        }
        idx[size_t(d)] = 0;
        ++idx[size_t(d - 1)];
      }
    }
  }

  // Splits the elements across the thread pool in chunks of at least
  // `grain` elements.
  template <class Fn>
  void parallel(int64_t grain, Fn&& fn) const {
    parallel_for(numel_, grain,
                 [&](int64_t b, int64_t e) { for_range(b, e, fn); });
  }

 private:
  static std::array<const Strides*, N> pointers(
      const std::array<Strides, N>& strides) {
    std::array<const Strides*, N> p;
    for (int k = 0; k < N; ++k) p[size_t(k)] = &strides[size_t(k)];
    return p;
  }

  Shape shape_;
  std::array<Strides, N> strides_;
  int64_t numel_ = 1;
};

// Elements per task below which splitting across threads costs more than it
// saves (waking a worker costs a few microseconds; see bench/NOTES.md).
inline constexpr int64_t kElementwiseGrain = 32768;
// The same for ops of tens of instructions per element (exp, erf, sin).
inline constexpr int64_t kTranscendentalGrain = 8192;

}  // namespace nascent::cpu
