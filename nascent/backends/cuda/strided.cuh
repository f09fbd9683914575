// Strided iteration for kernels over N operands of one shape, each with its
// own strides (0 for broadcast axes, any sign).
//
// The host drops size-1 axes and merges neighbouring axes that are
// contiguous for every operand (as cpu::StridedLoop), so a contiguous or
// broadcast-scalar call becomes one axis. Each launch covers fewer than 2^31
// elements with at most kMaxDims axes, so a kernel turns its 32-bit linear
// index into per-operand offsets with one fast division per axis; larger or
// deeper problems are split into several launches.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "nascent/backends/cuda/device.cuh"
#include "nascent/core/shape.h"

namespace nascent::cuda {

inline constexpr int kMaxDims = 8;
inline constexpr int64_t kMaxLaunchElements = (int64_t(1) << 31) - 1;

template <int N>
struct StridedParams {
  int ndim = 0;
  IntDivider size[kMaxDims];  // Innermost axis first.
  int64_t stride[N][kMaxDims];
};

// Element offsets of linear index i (row-major over the launch's shape).
template <int N>
NASCENT_D void strided_offsets(const StridedParams<N>& p, uint32_t i,
                               int64_t (&off)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k) off[k] = 0;
#pragma unroll
  for (int d = 0; d < kMaxDims; ++d) {
    if (d == p.ndim) break;
    const uint32_t q = p.size[d].div(i);
    const uint32_t r = i - q * p.size[d].divisor;
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] += int64_t(r) * p.stride[k][d];
    i = q;
  }
}

// Axes after dropping size-1 ones and merging, outermost first.
template <int N>
struct Collapsed {
  Shape shape;
  std::array<Strides, N> strides;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return n;
  }
  // One axis, inner stride 1 for every operand whose flag is false and 0
  // for those allowed to broadcast: the vectorised kernels' case.
  bool flat(std::array<bool, N> may_broadcast) const {
    if (shape.size() != 1) return false;
    for (int k = 0; k < N; ++k) {
      const int64_t s = strides[size_t(k)][0];
      if (s != 1 && !(may_broadcast[size_t(k)] && s == 0)) return false;
    }
    return true;
  }
};

template <int N>
Collapsed<N> collapse(const Shape& shape,
                      const std::array<const Strides*, N>& strides) {
  Collapsed<N> c;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !c.shape.empty();
    for (int k = 0; k < N && merge; ++k) {
      merge =
          c.strides[size_t(k)].back() == (*strides[size_t(k)])[d] * shape[d];
    }
    if (merge) {
      c.shape.back() *= shape[d];
      for (int k = 0; k < N; ++k) {
        c.strides[size_t(k)].back() = (*strides[size_t(k)])[d];
      }
    } else {
      c.shape.push_back(shape[d]);
      for (int k = 0; k < N; ++k) {
        c.strides[size_t(k)].push_back((*strides[size_t(k)])[d]);
      }
    }
  }
  if (c.shape.empty()) {
    c.shape.push_back(1);
    for (int k = 0; k < N; ++k) c.strides[size_t(k)].push_back(0);
  }
  return c;
}

// Calls launch(params, base offsets, count) for launches that together cover
// every element of `c` (nothing for an empty shape).
template <int N, class Launch>
void for_each_launch(const Collapsed<N>& c, std::array<int64_t, N> base,
                     const Launch& launch) {
  const int64_t total = c.numel();
  if (total == 0) return;
  const int nd = int(c.shape.size());
  if (nd <= kMaxDims && total <= kMaxLaunchElements) {
    StridedParams<N> p;
    p.ndim = nd;
    for (int d = 0; d < nd; ++d) {
      const size_t src = size_t(nd - 1 - d);
      p.size[d] = IntDivider(uint32_t(c.shape[src]));
      for (int k = 0; k < N; ++k) p.stride[k][d] = c.strides[size_t(k)][src];
    }
    launch(p, base, total);
    return;
  }
  // Split along the outermost axis: chunks of it when the rest fits one
  // launch, else one index at a time.
  const int64_t outer = c.shape[0];
  const int64_t rest = total / outer;
  Collapsed<N> sub;
  if (nd == 1) {
    const int64_t piece = int64_t(1) << 30;
    for (int64_t s = 0; s < outer; s += piece) {
      sub.shape = {std::min(piece, outer - s)};
      std::array<int64_t, N> b = base;
      for (int k = 0; k < N; ++k) {
        sub.strides[size_t(k)] = c.strides[size_t(k)];
        b[size_t(k)] += s * c.strides[size_t(k)][0];
      }
      for_each_launch<N>(sub, b, launch);
    }
    return;
  }
  if (nd - 1 < kMaxDims && rest <= kMaxLaunchElements) {
    const int64_t step = std::max<int64_t>(1, kMaxLaunchElements / rest);
    for (int64_t s = 0; s < outer; s += step) {
      sub.shape = c.shape;
      sub.shape[0] = std::min(step, outer - s);
      std::array<int64_t, N> b = base;
      for (int k = 0; k < N; ++k) {
        sub.strides[size_t(k)] = c.strides[size_t(k)];
        b[size_t(k)] += s * c.strides[size_t(k)][0];
      }
      for_each_launch<N>(sub, b, launch);
    }
    return;
  }
  sub.shape.assign(c.shape.begin() + 1, c.shape.end());
  for (int64_t s = 0; s < outer; ++s) {
    std::array<int64_t, N> b = base;
    for (int k = 0; k < N; ++k) {
      sub.strides[size_t(k)].assign(c.strides[size_t(k)].begin() + 1,
                                    c.strides[size_t(k)].end());
      b[size_t(k)] += s * c.strides[size_t(k)][0];
    }
    for_each_launch<N>(sub, b, launch);
  }
}

}  // namespace nascent::cuda
