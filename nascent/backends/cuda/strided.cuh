// Strided iteration for kernels over N operands of one shape, each with its
// own strides (0 for broadcast axes, any sign).
//
// The host drops size-1 axes and merges neighbouring axes that are
// contiguous for every operand (common::collapse, as the CPU does), so a contiguous or
// broadcast-scalar call becomes one axis. Each launch covers fewer than 2^31
// elements with at most kMaxDims axes, so a kernel turns its 32-bit linear
// index into per-operand offsets with one fast division per axis; larger or
// deeper problems are split into several launches.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "nascent/backends/common/geometry.h"
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

// The host side's axis merging is the one every backend shares.
using common::Collapsed;
using common::collapse;

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
