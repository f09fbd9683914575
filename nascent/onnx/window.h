// Internal to nascent/onnx: the window attributes (kernel, strides,
// dilations, pads, auto_pad, ceil_mode) that Conv, ConvTranspose and the
// pools share, and the padding helpers around nascent's 2-D ops.
#pragma once

#include <string>
#include <vector>

#include <fmt/format.h>

#include "nascent/onnx/node.h"

namespace nascent::onnx {

// The spatial attributes of Conv, ConvTranspose and the pools; padding is
// resolved per input size (auto_pad).
struct Window {
  int rank = 0;  // Spatial axes: 1 or 2 (pools: up to 8).
  std::vector<int64_t> kernel, strides, dilations, pads, output_padding;
  std::string auto_pad = "NOTSET";
  bool ceil_mode = false;

  static Window read(const Node& n, bool conv) {
    Window w;
    w.kernel = n.ints("kernel_shape");
    w.strides = n.ints("strides");
    w.dilations = n.ints("dilations");
    w.pads = n.ints("pads");
    w.output_padding = n.ints("output_padding");
    w.auto_pad = n.s("auto_pad", "NOTSET");
    w.ceil_mode = n.i("ceil_mode", 0) != 0;
    if (w.auto_pad != "NOTSET" && w.auto_pad != "VALID" &&
        w.auto_pad != "SAME_UPPER" && w.auto_pad != "SAME_LOWER") {
      n.fail("auto_pad must be NOTSET, VALID, SAME_UPPER or SAME_LOWER, got '" +
             w.auto_pad + "'");
    }
    if (!conv && w.kernel.empty()) n.fail("kernel_shape is required");
    for (int64_t v : w.strides) {
      if (v < 1) n.fail(fmt::format("stride {} must be positive", v));
    }
    for (int64_t v : w.dilations) {
      if (v < 1) n.fail(fmt::format("dilation {} must be positive", v));
    }
    for (int64_t v : w.pads) {
      if (v < 0) n.fail(fmt::format("pad {} must not be negative", v));
    }
    for (int64_t v : w.kernel) {
      if (v < 1) n.fail(fmt::format("kernel size {} must be positive", v));
    }
    return w;
  }

  // Fills the defaults for `r` spatial axes of sizes `in` with kernel `k`
  // (from the weight when kernel_shape is absent).
  void resolve(const char* op, const std::vector<int64_t>& in,
               const std::vector<int64_t>& k, bool transposed,
               int max_rank = 2) {
    rank = int(in.size());
    if (rank < 1 || rank > max_rank) {
      throw UnsupportedError(
          fmt::format("{}: {} spatial axes (only 1 to {} are supported)", op,
                      rank, max_rank));
    }
    if (kernel.empty()) kernel = k;
    auto fill = [&](std::vector<int64_t>& v, size_t n, int64_t value,
                    const char* what) {
      if (v.empty()) v.assign(n, value);
      if (v.size() != n) {
        throw ValueError(fmt::format("{}: {} has {} values, expected {}", op,
                                     what, v.size(), n));
      }
    };
    fill(kernel, size_t(rank), 1, "kernel_shape");
    fill(strides, size_t(rank), 1, "strides");
    fill(dilations, size_t(rank), 1, "dilations");
    fill(output_padding, size_t(rank), 0, "output_padding");
    if (auto_pad == "VALID") {
      pads.assign(size_t(2 * rank), 0);
    } else if (auto_pad != "NOTSET") {
      pads.assign(size_t(2 * rank), 0);
      for (int i = 0; i < rank; ++i) {
        int64_t keff = (kernel[i] - 1) * dilations[i] + 1, total;
        if (transposed) {
          total = std::max<int64_t>(0, strides[i] * (in[i] - 1) +
                                           output_padding[i] + keff -
                                           in[i] * strides[i]);
        } else {
          int64_t out = (in[i] + strides[i] - 1) / strides[i];
          total = std::max<int64_t>(0, (out - 1) * strides[i] + keff - in[i]);
        }
        int64_t small = total / 2;
        bool upper = auto_pad == "SAME_UPPER";
        pads[size_t(i)] = upper ? small : total - small;
        pads[size_t(i + rank)] = upper ? total - small : small;
      }
    }
    fill(pads, size_t(2 * rank), 0, "pads");
  }
  int64_t begin(int i) const { return pads[size_t(i)]; }
  int64_t end(int i) const { return pads[size_t(i + rank)]; }
};

inline std::vector<int64_t> spatial(const Tensor& x) {
  return {x.shape().begin() + 2, x.shape().end()};
}

// Pads come from the file: the padded input is bounded as every tensor
// whose size the graph gives (check_created).
inline void check_padded(const Tensor& x, const Window& w, const char* op) {
  double n = double(x.shape(0)) * double(x.shape(1));
  for (int i = 0; i < w.rank; ++i) {
    n *= double(x.shape(2 + i)) + double(w.begin(i)) + double(w.end(i));
  }
  check_created(n, op);
}

// 1-D inputs become 2-D with a height of 1.
inline Tensor as_2d(const Tensor& x, int rank) {
  return rank == 1 ? x.unsqueeze(2) : x;
}
inline Tensor from_2d(const Tensor& y, int rank) {
  return rank == 1 ? y.squeeze(2) : y;
}
inline std::vector<int64_t> pad_list(const Window& w, int64_t extra_h = 0,
                                     int64_t extra_w = 0) {
  // nascent's pad: (before, after) pairs from the last axis backwards.
  if (w.rank == 1) return {w.begin(0), w.end(0) + extra_w};
  return {w.begin(1), w.end(1) + extra_w, w.begin(0), w.end(0) + extra_h};
}

// pad() unless there is nothing to pad (it would copy).
inline Tensor pad_if(const Tensor& x, const std::vector<int64_t>& pads,
                     Scalar value = 0.0) {
  for (int64_t p : pads) {
    if (p != 0) return pad(x, pads, value);
  }
  return x;
}

}  // namespace nascent::onnx
