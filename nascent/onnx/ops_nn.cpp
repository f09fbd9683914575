// Network layers: MatMul, Gemm, Conv, ConvTranspose, the global pools, the
// norms, Softmax and Einsum (pooling: ops_pool.cpp). Convolution runs
// nascent's 2-D ops; 1-D inputs gain a height of 1, and padding that the
// 2-D op cannot express (asymmetric, SAME_*) is applied with pad() first.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "nascent/onnx/node.h"
#include "nascent/onnx/window.h"

namespace nascent::onnx {

namespace {

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
