// Network layers: MatMul, Gemm, Conv, ConvTranspose, pooling, the norms,
// Softmax and Einsum. Convolution and pooling run nascent's 2-D ops; 1-D
// inputs gain a height of 1, and padding that the 2-D op cannot express
// (asymmetric, SAME_*) is applied with pad() first.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "nascent/onnx/node.h"

namespace nascent::onnx {

namespace {

// The spatial attributes of Conv, ConvTranspose and the pools, for 1 or 2
// spatial axes; padding is resolved per input size (auto_pad).
struct Window {
  int rank = 0;  // Spatial axes: 1 or 2.
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

std::vector<int64_t> spatial(const Tensor& x) {
  return {x.shape().begin() + 2, x.shape().end()};
}

// Pads come from the file: the padded input is bounded as every tensor
// whose size the graph gives (check_created).
void check_padded(const Tensor& x, const Window& w, const char* op) {
  double n = double(x.shape(0)) * double(x.shape(1));
  for (int i = 0; i < w.rank; ++i) {
    n *= double(x.shape(2 + i)) + double(w.begin(i)) + double(w.end(i));
  }
  check_created(n, op);
}

// 1-D inputs become 2-D with a height of 1.
Tensor as_2d(const Tensor& x, int rank) {
  return rank == 1 ? x.unsqueeze(2) : x;
}
Tensor from_2d(const Tensor& y, int rank) {
  return rank == 1 ? y.squeeze(2) : y;
}
std::vector<int64_t> pad_list(const Window& w, int64_t extra_h = 0,
                              int64_t extra_w = 0) {
  // nascent's pad: (before, after) pairs from the last axis backwards.
  if (w.rank == 1) return {w.begin(0), w.end(0) + extra_w};
  return {w.begin(1), w.end(1) + extra_w, w.begin(0), w.end(0) + extra_h};
}

// pad() unless there is nothing to pad (it would copy).
Tensor pad_if(const Tensor& x, const std::vector<int64_t>& pads,
              Scalar value = 0.0) {
  for (int64_t p : pads) {
    if (p != 0) return pad(x, pads, value);
  }
  return x;
}

Conv2dParams conv_params(const Window& w, int64_t groups, bool padded) {
  Conv2dParams p;
  p.groups = groups;
  for (int i = 0; i < 2; ++i) {
    int j = w.rank == 1 ? 0 : i;
    bool real = w.rank == 2 || i == 1;
    p.stride[i] = real ? w.strides[size_t(j)] : 1;
    p.dilation[i] = real ? w.dilations[size_t(j)] : 1;
    p.padding[i] = real && padded ? w.begin(j) : 0;
  }
  return p;
}

bool symmetric(const Window& w) {
  for (int i = 0; i < w.rank; ++i) {
    if (w.begin(i) != w.end(i)) return false;
  }
  return true;
}

Kernel conv(const Node& n) {
  Window w0 = Window::read(n, true);
  int64_t groups = n.i("group", 1);
  if (groups < 1) n.fail("group must be positive");
  return [w0, groups](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    const Tensor& weight = in[1];
    if (x.ndim() < 3 || weight.ndim() != x.ndim()) {
      throw ShapeError(fmt::format("Conv: input {} and weight {} do not fit",
                                   x.to_string(), weight.to_string()));
    }
    Window w = w0;
    w.resolve("Conv", spatial(x), spatial(weight), false);
    check_padded(x, w, "Conv");
    Tensor x2 = as_2d(x, w.rank), w2 = as_2d(weight, w.rank);
    bool sym = symmetric(w);
    if (!sym) x2 = pad(x2, pad_list(w));
    Tensor y =
        conv2d(x2, w2, in.size() > 2 && in[2].defined() ? &in[2] : nullptr,
               conv_params(w, groups, sym));
    return std::vector<Tensor>{from_2d(y, w.rank)};
  };
}

// The transpose of a convolution is its input gradient; the output is made
// whole (no padding) and then cropped by the pads.
Kernel conv_transpose(const Node& n) {
  Window w0 = Window::read(n, true);
  int64_t groups = n.i("group", 1);
  std::vector<int64_t> output_shape = n.ints("output_shape");
  if (groups < 1) n.fail("group must be positive");
  return [w0, groups, output_shape](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    const Tensor& weight = in[1];
    if (x.ndim() < 3 || weight.ndim() != x.ndim() ||
        weight.shape(0) != x.shape(1)) {
      throw ShapeError(
          fmt::format("ConvTranspose: input {} and weight {} do not fit",
                      x.to_string(), weight.to_string()));
    }
    Window w = w0;
    std::vector<int64_t> sp = spatial(x);
    w.resolve("ConvTranspose", sp, spatial(weight), true);
    std::vector<int64_t> full(sp.size());
    for (size_t i = 0; i < sp.size(); ++i) {
      int64_t keff = (w.kernel[i] - 1) * w.dilations[i] + 1;
      full[i] = (sp[i] - 1) * w.strides[i] + keff + w.output_padding[i];
    }
    if (!output_shape.empty()) {  // Pads follow from the asked size.
      if (output_shape.size() != sp.size()) {
        throw ValueError("ConvTranspose: output_shape has the wrong rank");
      }
      // A larger output than the full one grows at the end (as
      // output_padding would); a smaller one is cropped by pads.
      for (int i = 0; i < w.rank; ++i) {
        int64_t total = full[size_t(i)] - output_shape[size_t(i)];
        bool upper = w.auto_pad != "SAME_LOWER";
        int64_t small = total > 0 ? total / 2 : 0;
        w.pads[size_t(i)] = upper ? small : std::max<int64_t>(total, 0) - small;
        w.pads[size_t(i + w.rank)] = total - w.pads[size_t(i)];
      }
    }
    Tensor x2 = as_2d(x, w.rank), w2 = as_2d(weight, w.rank);
    Shape shape = {x.shape(0), weight.shape(1) * groups,
                   w.rank == 1 ? 1 : full[0], full.back()};
    Tensor y = conv2d_backward_input(x2, w2.cast(x2.dtype()), shape,
                                     conv_params(w, groups, false));
    for (int i = 0; i < w.rank; ++i) {
      int axis = 2 + (w.rank == 1 ? 1 : i);
      y = y.slice(axis, w.begin(i),
                  full[size_t(i)] - std::max<int64_t>(w.end(i), 0));
      if (w.end(i) < 0) {
        std::vector<int64_t> grow(size_t(2 * (4 - axis)), 0);
        grow.back() = -w.end(i);
        y = pad(y, grow);
      }
    }
    if (in.size() > 2 && in[2].defined()) {
      y = y + in[2].reshape({1, in[2].numel(), 1, 1});
    }
    return std::vector<Tensor>{from_2d(y.contiguous(), w.rank)};
  };
}

Pool2dParams pool_params(const Window& w, bool padded, bool include_pad) {
  Pool2dParams p;
  p.count_include_pad = include_pad;
  for (int i = 0; i < 2; ++i) {
    int j = w.rank == 1 ? 0 : i;
    bool real = w.rank == 2 || i == 1;
    p.kernel[i] = real ? w.kernel[size_t(j)] : 1;
    p.stride[i] = real ? w.strides[size_t(j)] : 1;
    p.padding[i] = real && padded ? w.begin(j) : 0;
  }
  return p;
}

// Extra end padding that turns floor into ceil (ceil_mode), dropping a
// last window that would start in the padding, as ONNX does.
int64_t ceil_extra(const Window& w, int i, int64_t in) {
  if (!w.ceil_mode) return 0;
  int64_t keff = (w.kernel[size_t(i)] - 1) * w.dilations[size_t(i)] + 1;
  int64_t span = in + w.begin(i) + w.end(i) - keff;
  int64_t s = w.strides[size_t(i)];
  int64_t out = (span + s - 1) / s + 1;
  if ((out - 1) * s >= in + w.begin(i)) --out;
  return std::max<int64_t>(0,
                           (out - 1) * s + keff - (in + w.begin(i) + w.end(i)));
}

// Pooling that core's 2-D pools do not cover (dilated windows, 3 or more
// spatial axes): one strided slice of the padded input per kernel offset,
// combined by max or sum. `lp_norm` > 0: Lp pooling; else average when not
// `is_max`, divided by the entries that count (the input, and the pads
// where `include_pad`, and the ceil_mode overhang too where
// `count_overhang`).
Tensor pool_by_slices(const Tensor& x0, const Window& w, bool is_max,
                      bool include_pad, bool count_overhang, double lp_norm,
                      const char* op) {
  const int rank = w.rank;
  const std::vector<int64_t> sp = spatial(x0);
  std::vector<int64_t> extra(static_cast<size_t>(rank)),
      out(static_cast<size_t>(rank));
  double offsets = 1;
  for (int i = 0; i < rank; ++i) {
    extra[size_t(i)] = ceil_extra(w, i, sp[size_t(i)]);
    const int64_t keff = (w.kernel[size_t(i)] - 1) * w.dilations[size_t(i)] + 1;
    const int64_t padded =
        sp[size_t(i)] + w.begin(i) + w.end(i) + extra[size_t(i)];
    if (padded < keff) {
      throw ShapeError(
          fmt::format("{}: a window of {} over {} entries", op, keff, padded));
    }
    out[size_t(i)] = (padded - keff) / w.strides[size_t(i)] + 1;
    offsets *= double(w.kernel[size_t(i)]);
  }
  if (offsets > 4096) {  // Each offset is an op: bound the work.
    throw UnsupportedError(
        fmt::format("{}: a dilated or 3-D window of {} entries (at most 4096)",
                    op, offsets));
  }
  // nascent's pad: (before, after) pairs from the last axis backwards.
  std::vector<int64_t> pads, overhang;
  for (int i = rank - 1; i >= 0; --i) {
    pads.insert(pads.end(), {w.begin(i), w.end(i) + extra[size_t(i)]});
    overhang.insert(overhang.end(), {0, extra[size_t(i)]});
  }
  const double inf = std::numeric_limits<double>::infinity();
  DType dt = x0.dtype();
  Tensor x = is_floating(dt) ? x0 : x0.cast(DType::f64);
  if (lp_norm > 0) x = pow(abs(x), lp_norm);
  x = pad_if(x, pads, Scalar(is_max ? -inf : 0.0));
  Tensor mask;  // For the average: 1 where an entry counts.
  if (!is_max && lp_norm == 0) {
    Shape plane(size_t(x0.ndim()), 1);
    for (int i = 0; i < rank; ++i) plane[size_t(2 + i)] = sp[size_t(i)];
    mask = ones(plane, x.backend(), x.dtype());
    if (include_pad) {
      std::vector<int64_t> core;
      for (int i = rank - 1; i >= 0; --i) {
        core.insert(core.end(), {w.begin(i), w.end(i)});
      }
      mask = pad_if(pad_if(mask, core, Scalar(1.0)), overhang,
                    Scalar(count_overhang ? 1.0 : 0.0));
    } else {
      mask = pad_if(mask, pads);
    }
  }
  auto window = [&](const Tensor& t, const std::vector<int64_t>& at) {
    Tensor v = t;
    for (int i = 0; i < rank; ++i) {
      const int64_t start = at[size_t(i)] * w.dilations[size_t(i)];
      const int64_t s = w.strides[size_t(i)];
      v = v.slice(2 + i, start, start + (out[size_t(i)] - 1) * s + 1, s);
    }
    return v;
  };
  Tensor acc, count;
  std::vector<int64_t> at(size_t(rank), 0);
  for (;;) {
    Tensor v = window(x, at);
    acc = !acc.defined() ? v : is_max ? maximum(acc, v) : acc + v;
    if (mask.defined()) {
      Tensor m = window(mask, at);
      count = count.defined() ? count + m : m;
    }
    int i = rank - 1;  // Next offset, the last axis fastest.
    while (i >= 0 && ++at[size_t(i)] == w.kernel[size_t(i)])
      at[size_t(i--)] = 0;
    if (i < 0) break;
  }
  Tensor y = lp_norm > 0 ? pow(acc, 1.0 / lp_norm) : is_max ? acc : acc / count;
  return y.contiguous().cast(dt);
}

// Max, average or Lp pooling (`lp_norm` > 0).
Kernel pool(const Node& n, bool is_max, double lp_norm = 0) {
  Window w0 = Window::read(n, false);
  bool include_pad = n.i("count_include_pad", 0) != 0;
  // With count_include_pad, ONNX's reference divides by the whole window,
  // ceil_mode's overhang included (PyTorch leaves the overhang out, and
  // exports its ceil_mode pools so that they need no overhang).
  bool count_overhang = include_pad;
  if (n.output_count() > 1 && !n.proto().outputs[1].empty()) {
    n.unsupported("MaxPool's Indices output is not supported");
  }
  if (n.i("storage_order", 0) != 0) n.unsupported("storage_order 1");
  const char* op = is_max ? "MaxPool" : lp_norm > 0 ? "LpPool" : "AveragePool";
  return [w0, include_pad, count_overhang, is_max, op,
          lp_norm](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    if (x.ndim() < 3) {
      throw ShapeError(
          fmt::format("{}: input {} needs spatial axes", op, x.to_string()));
    }
    Window w = w0;
    std::vector<int64_t> sp = spatial(x);
    w.resolve(op, sp, {}, false, 8);
    check_padded(x, w, op);
    bool dilated = false;
    for (int64_t d : w.dilations) dilated = dilated || d != 1;
    if (dilated || w.rank > 2) {
      return std::vector<Tensor>{pool_by_slices(x, w, is_max, include_pad,
                                                count_overhang, lp_norm, op)};
    }
    int64_t eh = w.rank == 2 ? ceil_extra(w, 0, sp[0]) : 0;
    int64_t ew = ceil_extra(w, w.rank - 1, sp.back());
    Tensor x2 = as_2d(x, w.rank);
    const Pool2dParams p = pool_params(w, false, true);
    Tensor y;
    if (lp_norm > 0) {  // (sum |x|^p)^(1/p) = (mean * area)^(1/p).
      Tensor xp = pow(abs(x2), lp_norm);
      double area = double(p.kernel[0] * p.kernel[1]);
      y = pow(avg_pool2d(pad_if(xp, pad_list(w, eh, ew)), p) * area,
              1.0 / lp_norm);
    } else if (is_max) {  // The pads hold -inf; integers go through f64.
      DType dt = x.dtype();
      if (!is_floating(dt)) x2 = x2.cast(DType::f64);
      x2 = pad_if(x2, pad_list(w, eh, ew),
                  Scalar(-std::numeric_limits<double>::infinity()));
      y = max_pool2d(x2, p).cast(dt);
    } else {
      // A zero-padded mean over the whole window, divided by the share of
      // the window that counts: the input, plus the pads where
      // count_include_pad (and the ceil_mode overhang where
      // count_overhang).
      Tensor sum = avg_pool2d(pad_if(x2, pad_list(w, eh, ew)), p);
      if (include_pad && (count_overhang || (eh == 0 && ew == 0))) {
        y = sum;
      } else {
        Shape plane = {1, 1, x2.shape(2), x2.shape(3)};
        Tensor mask = ones(plane, x.backend(), x.dtype());
        if (include_pad) {
          mask = pad(pad(mask, pad_list(w), Scalar(1.0)),
                     w.rank == 1 ? std::vector<int64_t>{0, ew}
                                 : std::vector<int64_t>{0, ew, 0, eh});
        } else {
          mask = pad(mask, pad_list(w, eh, ew));
        }
        y = sum / avg_pool2d(mask, p);
      }
    }
    return std::vector<Tensor>{from_2d(y, w.rank)};
  };
}

Axes spatial_axes(const Tensor& x) {
  Axes a;
  for (int64_t i = 2; i < x.ndim(); ++i) a.push_back(i);
  return a;
}

// [C] parameters broadcast over axis 1 of an [N, C, ...] input.
Tensor per_channel(const Tensor& p, const Tensor& x) {
  Shape s(size_t(x.ndim()), 1);
  s[1] = p.numel();
  return p.reshape(s).cast(x.dtype());
}

Kernel layer_norm_kernel(const Node& n) {
  int64_t axis0 = n.i("axis", -1);
  double eps = n.f("epsilon", 1e-5f);
  return [axis0, eps](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    int64_t axis = axis_of(axis0, x.ndim(), "LayerNormalization");
    int64_t ndim = x.ndim() - axis;
    Shape trailing(x.shape().begin() + axis, x.shape().end());
    const Tensor* bias = in.size() > 2 && in[2].defined() ? &in[2] : nullptr;
    Tensor y;
    if (in[1].shape() == trailing && (!bias || bias->shape() == trailing)) {
      y = layer_norm(x, &in[1], bias, eps, ndim);
    } else {  // Scale and bias that broadcast some other way.
      y = layer_norm(x, nullptr, nullptr, eps, ndim) * in[1];
      if (bias) y = y + *bias;
    }
    Axes axes;
    for (int64_t i = axis; i < x.ndim(); ++i) axes.push_back(i);
    Tensor m = mean(x, axes, true);
    Tensor inv = rsqrt(var(x, axes, 0, true) + eps);
    return std::vector<Tensor>{y, m, inv};
  };
}

// Einsum as broadcast products: every operand is laid out over all the
// equation's letters (output letters first), multiplied, and the
// contracted letters summed. No ellipsis, no repeated letter in an operand.
Kernel einsum(const Node& n) {
  std::string eq;
  for (char c : n.s("equation", "")) {
    if (c != ' ') eq += c;
  }
  if (eq.find("...") != std::string::npos) {
    n.unsupported("Einsum with an ellipsis is not supported");
  }
  std::string lhs = eq, out;
  size_t arrow = eq.find("->");
  if (arrow != std::string::npos) {
    lhs = eq.substr(0, arrow);
    out = eq.substr(arrow + 2);
  }
  std::vector<std::string> terms;
  size_t start = 0;
  for (size_t k = 0; k <= lhs.size(); ++k) {
    if (k == lhs.size() || lhs[k] == ',') {
      terms.push_back(lhs.substr(start, k - start));
      start = k + 1;
    }
  }
  std::string letters;
  for (const auto& t : terms) {
    for (char c : t) {
      if (!std::isalpha(static_cast<unsigned char>(c))) {
        n.fail("Einsum: bad equation '" + eq + "'");
      }
      if (std::count(t.begin(), t.end(), c) > 1) {
        n.unsupported("Einsum with a repeated index in one operand");
      }
      if (letters.find(c) == std::string::npos) letters += c;
    }
  }
  if (arrow == std::string::npos) {  // Letters seen once, sorted.
    for (char c : letters) {
      int seen = 0;
      for (const auto& t : terms)
        seen += int(std::count(t.begin(), t.end(), c));
      if (seen == 1) out += c;
    }
    std::sort(out.begin(), out.end());
  }
  for (char c : out) {
    if (letters.find(c) == std::string::npos) {
      n.fail(fmt::format("Einsum: output index '{}' is in no operand", c));
    }
  }
  std::string all = out;
  for (char c : letters) {
    if (all.find(c) == std::string::npos) all += c;
  }
  if (n.input_count() != terms.size()) {
    n.fail(fmt::format("Einsum: {} operands for {} terms", n.input_count(),
                       terms.size()));
  }
  return [terms, all, out](const std::vector<Tensor>& in) {
    Tensor acc;
    for (size_t k = 0; k < terms.size(); ++k) {
      const std::string& t = terms[k];
      if (in[k].ndim() != int(t.size())) {
        throw ShapeError(fmt::format("Einsum: operand {} is {}, term '{}'", k,
                                     in[k].to_string(), t));
      }
      std::vector<int64_t> perm;
      Shape shape;
      for (char c : all) {
        size_t p = t.find(c);
        if (p != std::string::npos) {
          perm.push_back(int64_t(p));
          shape.push_back(in[k].shape(int64_t(p)));
        } else {
          shape.push_back(1);
        }
      }
      Tensor v = in[k].permute(perm).reshape(shape);
      acc = acc.defined() ? acc * v : v;
    }
    Axes contracted;
    for (size_t i = out.size(); i < all.size(); ++i)
      contracted.push_back(int64_t(i));
    if (!contracted.empty()) acc = sum(acc, contracted);
    return std::vector<Tensor>{acc.contiguous()};
  };
}

}  // namespace

void register_nn(Registry& r) {
  r["MatMul"] = {[](const Node&) -> Kernel {
                   return [](const std::vector<Tensor>& in) {
                     return std::vector<Tensor>{matmul(in[0], in[1])};
                   };
                 },
                 2, 2};
  r["Gemm"] = {
      [](const Node& n) -> Kernel {
        double alpha = n.f("alpha", 1.0f), beta = n.f("beta", 1.0f);
        bool ta = n.i("transA", 0) != 0, tb = n.i("transB", 0) != 0;
        // A constant transposed B (PyTorch's Linear) is also laid out [K, N]
        // once (a second copy of the weight): faster from a few rows of A
        // on, while a single row reads B's rows as they are.
        Tensor b_kn;
        if (Tensor b = n.constant(1); tb && b.defined() && b.ndim() == 2) {
          b_kn = b.transpose().contiguous();
          n.backend().set_persistent(b_kn, true);
        }
        return [=](const std::vector<Tensor>& in) {
          if (in[0].ndim() != 2 || in[1].ndim() != 2) {
            throw ShapeError(fmt::format("Gemm: A {} and B {} must be 2-D",
                                         in[0].to_string(), in[1].to_string()));
          }
          Tensor a = ta ? in[0].transpose() : in[0];
          Tensor b = tb ? in[1].transpose() : in[1];
          if (b_kn.defined() && a.shape(0) >= 4) b = b_kn;
          Tensor y = matmul(a, b);
          if (alpha != 1.0) y = y * alpha;
          if (in.size() > 2 && in[2].defined() && beta != 0.0) {
            y = y + (beta == 1.0 ? in[2] : in[2] * beta);
          }
          return std::vector<Tensor>{y};
        };
      },
      2, 3};
  r["Conv"] = {conv, 2, 3};
  r["ConvTranspose"] = {conv_transpose, 2, 3};
  r["MaxPool"] = {[](const Node& n) { return pool(n, true); }, 1, 1};
  r["AveragePool"] = {[](const Node& n) { return pool(n, false); }, 1, 1};
  r["LpPool"] = {[](const Node& n) {
                   int64_t p = n.i("p", 2);
                   if (p < 1) n.fail("LpPool: p must be positive");
                   return pool(n, false, double(p));
                 },
                 1, 1, 18};
  r["GroupNormalization"] = {
      [](const Node& n) -> Kernel {
        double eps = n.f("epsilon", 1e-5f);
        int64_t groups = n.required_i("num_groups");
        if (groups < 1) n.fail("num_groups must be positive");
        return [eps, groups](const std::vector<Tensor>& in) {
          const Tensor& x = in[0];
          if (x.ndim() < 2 || x.shape(1) % groups) {
            throw ShapeError(fmt::format(
                "GroupNormalization: {} channels of {} "
                "in {} groups",
                x.ndim() < 2 ? 0 : x.shape(1), x.to_string(), groups));
          }
          Tensor g = x.reshape({x.shape(0), groups, -1});
          Tensor y = layer_norm(g, nullptr, nullptr, eps, 1).reshape(x.shape());
          auto per = [&](const Tensor& p) {  // [C], or [groups] (opset 18).
            if (p.numel() == x.shape(1)) return per_channel(p, x);
            Shape s(size_t(x.ndim()), 1);
            s[1] = x.shape(1);
            Tensor rep = p.reshape({groups, 1})
                             .expand({groups, x.shape(1) / groups})
                             .reshape({x.shape(1)});
            return rep.reshape(s).cast(x.dtype());
          };
          return std::vector<Tensor>{y * per(in[1]) + per(in[2])};
        };
      },
      3, 3, 18};
  r["MeanVarianceNormalization"] = {
      [](const Node& n) -> Kernel {
        std::vector<int64_t> axes0 = n.ints("axes", {0, 2, 3});
        return [axes0](const std::vector<Tensor>& in) {
          const Tensor& x = in[0];
          Axes axes;
          for (int64_t a : axes0) axes.push_back(axis_of(a, x.ndim(), "MVN"));
          Tensor c = x - mean(x, axes, true);
          return std::vector<Tensor>{c / sqrt(mean(c * c, axes, true) + 1e-9)};
        };
      },
      1, 1};
  r["LRN"] = {[](const Node& n) -> Kernel {
                double alpha = n.f("alpha", 1e-4f), beta = n.f("beta", 0.75f);
                double bias = n.f("bias", 1.0f);
                int64_t size = n.required_i("size");
                if (size < 1) n.fail("LRN: size must be positive");
                return [=](const std::vector<Tensor>& in) {
                  const Tensor& x = in[0];
                  if (x.ndim() < 3)
                    throw ShapeError("LRN: input must be [N, C, ...]");
                  // Sum of squares over channels [c - lo, c + hi].
                  int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
                  std::vector<int64_t> pads(size_t(2 * (x.ndim() - 1)), 0);
                  pads[pads.size() - 2] = lo;
                  pads[pads.size() - 1] = hi;
                  Tensor sq = pad(x * x, pads);
                  Tensor acc = sq.slice(1, 0, x.shape(1));
                  for (int64_t i = 1; i < size; ++i) {
                    acc = acc + sq.slice(1, i, i + x.shape(1));
                  }
                  return std::vector<Tensor>{
                      x / pow(acc * (alpha / double(size)) + bias, beta)};
                };
              },
              1, 1};
  r["GlobalAveragePool"] = {
      [](const Node&) -> Kernel {
        return [](const std::vector<Tensor>& in) {
          return std::vector<Tensor>{mean(in[0], spatial_axes(in[0]), true)};
        };
      },
      1, 1};
  r["GlobalMaxPool"] = {
      [](const Node&) -> Kernel {
        return [](const std::vector<Tensor>& in) {
          return std::vector<Tensor>{max(in[0], spatial_axes(in[0]), true)};
        };
      },
      1, 1};
  r["BatchNormalization"] = {
      [](const Node& n) -> Kernel {
        double eps = n.f("epsilon", 1e-5f);
        if (n.i("training_mode", 0) != 0) {
          n.unsupported("BatchNormalization in training mode");
        }
        return [eps](const std::vector<Tensor>& in) {
          const Tensor& x = in[0];
          Tensor scale = per_channel(in[1], x), bias = per_channel(in[2], x);
          Tensor m = per_channel(in[3], x), v = per_channel(in[4], x);
          return std::vector<Tensor>{(x - m) * rsqrt(v + eps) * scale + bias};
        };
      },
      5, 5};
  r["InstanceNormalization"] = {
      [](const Node& n) -> Kernel {
        double eps = n.f("epsilon", 1e-5f);
        return [eps](const std::vector<Tensor>& in) {
          const Tensor& x = in[0];
          Axes axes = spatial_axes(x);
          Tensor y =
              (x - mean(x, axes, true)) * rsqrt(var(x, axes, 0, true) + eps);
          return std::vector<Tensor>{y * per_channel(in[1], x) +
                                     per_channel(in[2], x)};
        };
      },
      3, 3};
  r["LayerNormalization"] = {layer_norm_kernel, 2, 3, 17};
  for (bool log_form : {false, true}) {
    r[log_form ? "LogSoftmax" : "Softmax"] = {
        [log_form](const Node& n) -> Kernel {
          int64_t axis = n.i("axis", -1);
          return [axis, log_form](const std::vector<Tensor>& in) {
            int64_t a = axis_of(axis, in[0].ndim(), "Softmax");
            if (in[0].ndim() == 0) return std::vector<Tensor>{in[0]};
            return std::vector<Tensor>{log_form ? log_softmax(in[0], a)
                                                : softmax(in[0], a)};
          };
        },
        1, 1};
  }
  r["Einsum"] = {einsum, 1, -1, 12};
}

}  // namespace nascent::onnx
