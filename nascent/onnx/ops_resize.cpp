// Resize (nearest, linear and cubic, every coordinate mode but
// tf_crop_and_resize): one axis at a time, each output coordinate mapped
// back to the input on the host, then index_select (nearest) or a weighted
// sum of 2 (linear) or 4 (cubic) index_selects; both are separable, so
// doing the axes in turn is exact.
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "nascent/onnx/node.h"

namespace nascent::onnx {

namespace {

struct ResizeAttrs {
  std::string mode, coord, nearest, policy;
  std::vector<int64_t> axes;
  double cubic_a = -0.75;
  bool exclude_outside = false;
};

double original_coord(const std::string& coord, double x, double scale,
                      int64_t in, int64_t out) {
  if (coord == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (coord == "pytorch_half_pixel") {
    return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  }
  if (coord == "align_corners") {  // Over in * scale, as ONNX's reference.
    return out == 1 ? 0.0 : x * double(in - 1) / (scale * double(in) - 1);
  }
  if (coord == "asymmetric") return x / scale;
  // half_pixel_symmetric: centred on the input's middle.
  double adjustment = double(out) / (scale * double(in));
  double offset = double(in) / 2 * (1 - adjustment);
  return offset + (x + 0.5) / scale - 0.5;
}

int64_t nearest_index(const std::string& mode, double x) {
  double f = std::floor(x);
  if (mode == "floor") return int64_t(f);
  if (mode == "ceil") return int64_t(std::ceil(x));
  if (x - f == 0.5) return int64_t(mode == "round_prefer_ceil" ? f + 1 : f);
  return int64_t(std::round(x));
}

// Keys' cubic convolution weights of the taps at floor(x) - 1 ... + 2, t
// the fraction of x, A the coefficient (ONNX's cubic_coeff_a).
std::array<double, 4> cubic_weights(double t, double A) {
  auto far = [A](double d) {
    return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A;
  };
  auto near = [A](double d) { return ((A + 2) * d - (A + 3)) * d * d + 1; };
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

Tensor resize_axis(const Tensor& x, const ResizeAttrs& a, int64_t axis,
                   int64_t out, double scale) {
  const int64_t in = x.shape(axis);
  const size_t n = static_cast<size_t>(out);
  Backend& b = x.backend();
  if (a.mode == "nearest") {
    std::vector<int64_t> idx(n);
    for (int64_t o = 0; o < out; ++o) {
      double xo = original_coord(a.coord, double(o), scale, in, out);
      idx[size_t(o)] =
          std::clamp<int64_t>(nearest_index(a.nearest, xo), 0, in - 1);
    }
    return index_select(x, axis, from_vector(idx, b));
  }
  // Linear: 2 taps, cubic: 4; each output a weighted sum of input entries
  // (edge-clamped, as ONNX's reference pads with the edge values).
  const bool cubic = a.mode == "cubic";
  const int taps = cubic ? 4 : 2;
  std::vector<std::vector<int64_t>> idx(static_cast<size_t>(taps),
                                        std::vector<int64_t>(n));
  std::vector<std::vector<double>> w(static_cast<size_t>(taps),
                                     std::vector<double>(n));
  for (int64_t o = 0; o < out; ++o) {
    double xo = original_coord(a.coord, double(o), scale, in, out);
    if (!cubic) xo = std::clamp(xo, 0.0, double(in - 1));
    const double f = std::floor(xo), t = xo - f;
    std::array<double, 4> wk = cubic ? cubic_weights(t, a.cubic_a)
                                     : std::array<double, 4>{1 - t, t, 0, 0};
    const int64_t first = int64_t(f) - (cubic ? 1 : 0);
    double total = 0;
    for (int k = 0; k < taps; ++k) {
      const int64_t at = first + k;
      if (a.exclude_outside && (at < 0 || at >= in)) wk[size_t(k)] = 0;
      total += wk[size_t(k)];
      idx[size_t(k)][size_t(o)] = std::clamp<int64_t>(at, 0, in - 1);
    }
    for (int k = 0; k < taps; ++k) {
      w[size_t(k)][size_t(o)] = a.exclude_outside && total != 0
                                    ? wk[size_t(k)] / total
                                    : wk[size_t(k)];
    }
  }
  Shape s(size_t(x.ndim()), 1);
  s[size_t(axis)] = out;
  Tensor y;
  for (int k = 0; k < taps; ++k) {
    Tensor term = index_select(x, axis, from_vector(idx[size_t(k)], b)) *
                  from_vector(w[size_t(k)], s, b).cast(x.dtype());
    y = k == 0 ? term : y + term;
  }
  return y;
}

// The output's size comes from the graph's data, so a hostile file could
// ask for anything: each axis is mapped on the host, so it is bounded, and
// the whole output is checked as every created tensor is (check_created).
std::vector<int64_t> checked_sizes(const Shape& in,
                                   const std::vector<int64_t>& axes,
                                   const std::vector<double>& want) {
  constexpr double max_axis = double(int64_t(1) << 26);
  double numel = 1;
  for (int64_t d : in) numel *= double(d);
  std::vector<int64_t> out(axes.size());
  for (size_t i = 0; i < axes.size(); ++i) {
    if (!(want[i] <= max_axis)) {
      throw ValueError(fmt::format(
          "Resize: axis {} would hold {} elements, more than the {} allowed",
          axes[i], want[i], max_axis));
    }
    out[i] = int64_t(want[i]);
    const int64_t d = in[size_t(axes[i])];
    if (d == 0 && out[i] > 0) {
      throw ValueError(
          fmt::format("Resize: axis {} is empty and cannot grow", axes[i]));
    }
    numel = d == 0 ? 0 : numel / double(d) * want[i];
  }
  check_created(numel, "Resize");
  return out;
}

}  // namespace

void register_resize(Registry& r) {
  r["Resize"] = {
      [](const Node& n) -> Kernel {
        ResizeAttrs a;
        a.mode = n.s("mode", "nearest");
        a.coord = n.s("coordinate_transformation_mode", "half_pixel");
        a.nearest = n.s("nearest_mode", "round_prefer_floor");
        a.policy = n.s("keep_aspect_ratio_policy", "stretch");
        a.axes = n.ints("axes");
        a.cubic_a = n.f("cubic_coeff_a", -0.75f);
        a.exclude_outside = n.i("exclude_outside", 0) != 0;
        if (a.mode != "nearest" && a.mode != "linear" && a.mode != "cubic") {
          n.fail("Resize: mode must be nearest, linear or cubic");
        }
        if (a.coord == "tf_crop_and_resize") {
          n.unsupported("Resize coordinate mode 'tf_crop_and_resize'");
        }
        if (a.coord != "half_pixel" && a.coord != "pytorch_half_pixel" &&
            a.coord != "align_corners" && a.coord != "asymmetric" &&
            a.coord != "half_pixel_symmetric") {
          n.fail("Resize: unknown coordinate_transformation_mode '" + a.coord +
                 "'");
        }
        if (a.nearest != "round_prefer_floor" &&
            a.nearest != "round_prefer_ceil" && a.nearest != "floor" &&
            a.nearest != "ceil") {
          n.fail("Resize: unknown nearest_mode '" + a.nearest + "'");
        }
        if (a.policy != "stretch" && a.policy != "not_larger" &&
            a.policy != "not_smaller") {
          n.fail("Resize: unknown keep_aspect_ratio_policy '" + a.policy + "'");
        }
        if (n.i("antialias", 0) != 0) n.unsupported("Resize with antialias");
        return [a](const std::vector<Tensor>& in) {
          const Tensor& x = in[0];
          if (a.mode != "nearest" && !is_floating(x.dtype())) {
            throw UnsupportedError(fmt::format(
                "Resize: mode '{}' of {} (only floating inputs blend)", a.mode,
                x.to_string()));
          }
          const int64_t rank = x.ndim();
          std::vector<int64_t> axes = a.axes;
          if (axes.empty()) {
            for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
          }
          for (auto& ax : axes) ax = axis_of(ax, rank, "Resize");
          std::vector<double> scales;
          std::vector<int64_t> sizes;
          if (in.size() > 2 && in[2].defined() && in[2].numel() > 0) {
            scales = in[2].to_vector<double>();
          }
          if (in.size() > 3 && in[3].defined() && in[3].numel() > 0) {
            sizes = host_ints(in[3]);
          }
          if (scales.empty() == sizes.empty()) {
            throw ValueError("Resize: give exactly one of scales and sizes");
          }
          size_t count = scales.empty() ? sizes.size() : scales.size();
          if (count != axes.size()) {
            throw ShapeError(fmt::format(
                "Resize: {} scales or sizes for {} axes", count, axes.size()));
          }
          // Output sizes as doubles first: a hostile scale must not
          // overflow the cast to int64.
          std::vector<double> want(axes.size());
          if (!sizes.empty()) {
            scales.resize(axes.size());
            for (size_t i = 0; i < axes.size(); ++i) {
              if (sizes[i] < 1) {
                throw ValueError("Resize: sizes must be positive");
              }
              const int64_t d = std::max<int64_t>(x.shape(axes[i]), 1);
              scales[i] = double(sizes[i]) / double(d);
              want[i] = double(sizes[i]);
            }
            if (a.policy != "stretch") {
              double s = scales[0];
              for (double v : scales) {
                s = a.policy == "not_larger" ? std::min(s, v) : std::max(s, v);
              }
              for (size_t i = 0; i < axes.size(); ++i) {
                scales[i] = s;
                want[i] = std::floor(s * double(x.shape(axes[i])) + 0.5);
              }
            }
          } else {
            for (size_t i = 0; i < axes.size(); ++i) {
              if (!(scales[i] > 0) || !std::isfinite(scales[i])) {
                throw ValueError("Resize: scales must be positive and finite");
              }
              want[i] = std::floor(double(x.shape(axes[i])) * scales[i]);
            }
          }
          const std::vector<int64_t> out = checked_sizes(x.shape(), axes, want);
          Tensor y = x;
          for (size_t i = 0; i < axes.size(); ++i) {
            if (out[i] == x.shape(axes[i]) && scales[i] == 1.0) continue;
            y = resize_axis(y, a, axes[i], out[i], scales[i]);
          }
          return std::vector<Tensor>{y.contiguous()};
        };
      },
      1, 4, 13};
}

}  // namespace nascent::onnx
