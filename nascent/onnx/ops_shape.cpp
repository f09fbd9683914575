// Shape and data-movement operators. Shapes, axes and indices that arrive
// as tensors (Reshape's shape, Slice's starts...) are read on the host; a
// graph's shape arithmetic is usually constant and so folded at load.
#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "nascent/onnx/node.h"

namespace nascent::onnx {

namespace {

using Out = std::vector<Tensor>;

Shape to_shape(const std::vector<int64_t>& v) {
  return Shape(v.begin(), v.end());
}

// Axis values may be negative (counted from the end of `rank`).
std::vector<int64_t> norm_axes(std::vector<int64_t> axes, int64_t rank,
                               const char* op) {
  for (auto& a : axes) a = axis_of(a, rank, op);
  auto sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    throw ValueError(
        fmt::format("{}: repeated axis in [{}]", op, fmt::join(axes, ", ")));
  }
  return axes;
}

Tensor nonneg_index(const Tensor& idx, int64_t dim) {
  return where(lt(idx, Scalar(int64_t(0))), idx + Scalar(dim), idx);
}

// Pad's edge, reflect and wrap modes along one axis: each output position
// maps to an input one (clamped, mirrored or periodic, as numpy.pad, which
// ONNX's reference uses, also for pads longer than the axis).
Tensor pad_by_index(const Tensor& x, int64_t axis, int64_t before,
                    int64_t after, const std::string& mode) {
  const int64_t n = x.shape(axis);
  if (n == 0) {
    throw ValueError(
        fmt::format("Pad: mode '{}' cannot pad the empty axis {}", mode, axis));
  }
  // The index list lives on the host, so its length is bounded.
  constexpr int64_t max_axis = int64_t(1) << 26;
  if (before > max_axis || after > max_axis || n + before + after > max_axis) {
    throw ValueError(fmt::format("Pad: pads {} and {} of axis {} are too large",
                                 before, after, axis));
  }
  std::vector<int64_t> idx;
  idx.reserve(size_t(n + before + after));
  const int64_t period = 2 * (n - 1);
  for (int64_t j = -before; j < n + after; ++j) {
    if (mode == "edge") {
      idx.push_back(std::clamp<int64_t>(j, 0, n - 1));
    } else if (mode == "wrap") {
      idx.push_back(((j % n) + n) % n);
    } else if (period == 0) {  // reflect of a single element.
      idx.push_back(0);
    } else {
      int64_t m = ((j % period) + period) % period;
      idx.push_back(m < n ? m : period - m);
    }
  }
  return index_select(x, axis, from_vector(idx, x.backend()));
}

Tensor reshape_to(const Tensor& x, std::vector<int64_t> dims, bool allowzero) {
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 0 && !allowzero) {
      if (int64_t(i) >= x.ndim()) {
        throw ShapeError(
            fmt::format("Reshape: 0 at axis {} copies an axis {} does not have",
                        i, x.to_string()));
      }
      dims[i] = x.shape(int64_t(i));
    }
    if (dims[i] == -1) {
      if (infer >= 0) throw ShapeError("Reshape: more than one -1");
      infer = int64_t(i);
    } else if (dims[i] < 0) {
      throw ShapeError(fmt::format("Reshape: bad dimension {}", dims[i]));
    } else {
      known *= dims[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || x.numel() % known) {
      throw ShapeError(fmt::format("Reshape: cannot infer -1 of [{}] for {}",
                                   fmt::join(dims, ", "), x.to_string()));
    }
    dims[size_t(infer)] = x.numel() / known;
  }
  return x.reshape(to_shape(dims));
}

// ONNX's Slice on one axis: clamping as the spec says, negative steps
// through a flip.
Tensor slice_axis(const Tensor& x, int64_t axis, int64_t start, int64_t end,
                  int64_t step) {
  const int64_t dim = x.shape(axis);
  if (step == 0) throw ValueError("Slice: step must not be 0");
  auto norm = [dim](int64_t v, int64_t lo, int64_t hi) {
    if (v < 0) v = v < -dim ? -1 - dim : v;  // No overflow near INT64_MIN.
    if (v < 0) v += dim;
    return std::clamp(v, lo, hi);
  };
  if (step > 0) {
    int64_t s = norm(start, 0, dim), e = norm(end, 0, dim);
    if (e <= s) return x.slice(axis, 0, 0);
    return x.slice(axis, s, e, step);
  }
  int64_t s = norm(start, 0, dim - 1), e = norm(end, -1, dim - 1);
  if (start < -dim) s = -1;
  if (end < -dim) e = -1;
  if (s <= e) return x.slice(axis, 0, 0);
  // Element i of the flipped axis is element dim - 1 - i.
  Tensor f = flip(x, {axis});
  int64_t step_pos = step == std::numeric_limits<int64_t>::min()
                         ? std::numeric_limits<int64_t>::max()
                         : -step;
  return f.slice(axis, dim - 1 - s, dim - 1 - e, step_pos);
}

Out split_kernel(size_t outs, int64_t axis0, std::vector<int64_t> split_attr,
                 int64_t num_outputs, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  int64_t axis = axis_of(axis0, x.ndim(), "Split");
  int64_t dim = x.shape(axis);
  std::vector<int64_t> sizes = split_attr;
  if (in.size() > 1 && in[1].defined()) sizes = host_ints(in[1]);
  if (sizes.empty()) {
    int64_t parts = num_outputs > 0 ? num_outputs : int64_t(outs);
    int64_t each = (dim + parts - 1) / parts;
    for (int64_t k = 0; k < parts; ++k) {
      sizes.push_back(std::max<int64_t>(0, std::min(each, dim - k * each)));
    }
  }
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) throw ValueError("Split: negative size");
    total += s;
  }
  if (total != dim || sizes.size() != outs) {
    throw ShapeError(fmt::format(
        "Split: sizes [{}] for {} outputs do not split axis {} of {}",
        fmt::join(sizes, ", "), outs, axis, x.to_string()));
  }
  Out out;
  int64_t at = 0;
  for (int64_t s : sizes) {
    out.push_back(x.slice(axis, at, at + s));
    at += s;
  }
  return out;
}

}  // namespace

void register_shape(Registry& r) {
  r["Reshape"] = {
      [](const Node& n) -> Kernel {
        bool allowzero = n.i("allowzero", 0) != 0;
        return [allowzero](const std::vector<Tensor>& in) {
          return Out{reshape_to(in[0], host_ints(in[1]), allowzero)};
        };
      },
      2, 2};
  r["Transpose"] = {[](const Node& n) -> Kernel {
                      std::vector<int64_t> perm = n.ints("perm");
                      return [perm](const std::vector<Tensor>& in) {
                        std::vector<int64_t> p = perm;
                        if (p.empty()) {
                          for (int64_t i = in[0].ndim() - 1; i >= 0; --i)
                            p.push_back(i);
                        }
                        return Out{in[0].permute(p)};
                      };
                    },
                    1, 1};
  r["Flatten"] = {[](const Node& n) -> Kernel {
                    int64_t axis0 = n.i("axis", 1);
                    return [axis0](const std::vector<Tensor>& in) {
                      const Tensor& x = in[0];
                      int64_t axis = axis0 < 0 ? axis0 + x.ndim() : axis0;
                      if (axis < 0 || axis > x.ndim()) {
                        throw ValueError(fmt::format("Flatten: axis {} for {}",
                                                     axis0, x.to_string()));
                      }
                      int64_t a = 1;
                      for (int64_t i = 0; i < axis; ++i) a *= x.shape(i);
                      return Out{x.reshape({a, a ? x.numel() / a : 0})};
                    };
                  },
                  1, 1};
  r["Concat"] = {[](const Node& n) -> Kernel {
                   int64_t axis = n.required_i("axis");
                   return [axis](const std::vector<Tensor>& in) {
                     return Out{cat(in, axis_of(axis, in[0].ndim(), "Concat"))};
                   };
                 },
                 1, -1};
  r["Split"] = {[](const Node& n) -> Kernel {
                  int64_t axis = n.i("axis", 0);
                  std::vector<int64_t> split = n.ints("split");
                  int64_t num = n.i("num_outputs", 0);
                  return [axis, split, num, outs = n.output_count()](
                             const std::vector<Tensor>& in) {
                    return split_kernel(outs, axis, split, num, in);
                  };
                },
                1, 2};
  r["Slice"] = {
      [](const Node&) -> Kernel {
        return [](const std::vector<Tensor>& in) {
          Tensor x = in[0];
          auto starts = host_ints(in[1]), ends = host_ints(in[2]);
          std::vector<int64_t> axes, steps;
          if (in.size() > 3 && in[3].defined())
            axes = host_ints(in[3]);
          else
            for (size_t i = 0; i < starts.size(); ++i)
              axes.push_back(int64_t(i));
          if (in.size() > 4 && in[4].defined())
            steps = host_ints(in[4]);
          else
            steps.assign(starts.size(), 1);
          if (ends.size() != starts.size() || axes.size() != starts.size() ||
              steps.size() != starts.size()) {
            throw ShapeError(
                "Slice: starts, ends, axes and steps differ in length");
          }
          axes = norm_axes(axes, x.ndim(), "Slice");
          for (size_t i = 0; i < axes.size(); ++i) {
            x = slice_axis(x, axes[i], starts[i], ends[i], steps[i]);
          }
          return Out{x};
        };
      },
      3, 5};
  r["Gather"] = {
      [](const Node& n) -> Kernel {
        int64_t axis0 = n.i("axis", 0);
        // Constant indices none of which counts from the end (the shape
        // arithmetic of exported attention) skip the wrap-around ops.
        bool wrap = true;
        if (Tensor c = n.constant(1);
            c.defined() && !is_floating(c.dtype()) && c.numel() <= 4096) {
          std::vector<int64_t> v = c.to_vector<int64_t>();
          wrap =
              std::any_of(v.begin(), v.end(), [](int64_t i) { return i < 0; });
        }
        return [axis0, wrap](const std::vector<Tensor>& in) {
          const Tensor& x = in[0];
          int64_t axis = axis_of(axis0, x.ndim(), "Gather");
          Tensor idx = wrap ? nonneg_index(in[1], x.shape(axis)) : in[1];
          Tensor y = index_select(x, axis, idx.reshape({idx.numel()}));
          Shape s(x.shape().begin(), x.shape().begin() + axis);
          s.insert(s.end(), idx.shape().begin(), idx.shape().end());
          s.insert(s.end(), x.shape().begin() + axis + 1, x.shape().end());
          return Out{y.reshape(s)};
        };
      },
      2, 2};
  r["GatherElements"] = {
      [](const Node& n) -> Kernel {
        int64_t axis0 = n.i("axis", 0);
        return [axis0](const std::vector<Tensor>& in) {
          int64_t axis = axis_of(axis0, in[0].ndim(), "GatherElements");
          return Out{
              gather(in[0], axis, nonneg_index(in[1], in[0].shape(axis)))};
        };
      },
      2, 2};
  r["Expand"] = {
      [](const Node&) -> Kernel {
        return [](const std::vector<Tensor>& in) {
          std::vector<int64_t> want = host_ints(in[1]);
          Shape a = in[0].shape();
          size_t rank = std::max(a.size(), want.size());
          Shape out(rank);
          for (size_t i = 0; i < rank; ++i) {
            int64_t x = i + a.size() >= rank ? a[i + a.size() - rank] : 1;
            int64_t y =
                i + want.size() >= rank ? want[i + want.size() - rank] : 1;
            if (x != y && x != 1 && y != 1) {
              throw ShapeError(
                  fmt::format("Expand: {} does not broadcast to [{}]",
                              in[0].to_string(), fmt::join(want, ", ")));
            }
            out[i] = x == 1 ? y : x;
          }
          check_created(numel_of(out), "Expand");
          return Out{broadcast_to(in[0], out)};
        };
      },
      2, 2};
  r["Shape"] = {[](const Node& n) -> Kernel {
                  int64_t start = n.i("start", 0), end = n.i("end", INT64_MAX);
                  return [start, end](const std::vector<Tensor>& in) {
                    const int64_t rank = in[0].ndim();
                    auto clampi = [rank](int64_t v) {
                      return std::clamp<int64_t>(
                          v < 0 ? std::max(v, -rank) + rank : v, 0, rank);
                    };
                    int64_t b = clampi(start), e = clampi(end);
                    std::vector<int64_t> dims;
                    for (int64_t i = b; i < e; ++i)
                      dims.push_back(in[0].shape(i));
                    return Out{from_vector(dims, in[0].backend())};
                  };
                },
                1, 1};
  r["Size"] = {[](const Node&) -> Kernel {
                 return [](const std::vector<Tensor>& in) {
                   return Out{full({}, Scalar(in[0].numel()), in[0].backend(),
                                   DType::i64)};
                 };
               },
               1, 1};
  r["Constant"] = {
      [](const Node& n) -> Kernel {
        Tensor value;
        Backend& b = n.backend();
        if (n.has("value"))
          value = n.t("value");
        else if (n.has("value_float"))
          value = full({}, Scalar(double(n.f("value_float", 0))), b);
        else if (n.has("value_int"))
          value = full({}, Scalar(n.i("value_int", 0)), b, DType::i64);
        else if (n.has("value_floats"))
          value = from_vector(n.floats("value_floats"), b);
        else if (n.has("value_ints"))
          value = from_vector(n.ints("value_ints"), b);
        else
          n.unsupported(
              "Constant without a tensor, float or int value (strings and "
              "sparse tensors are not supported)");
        return [value](const std::vector<Tensor>&) { return Out{value}; };
      },
      0, 0};
  r["ConstantOfShape"] = {
      [](const Node& n) -> Kernel {
        Tensor value = n.t("value");
        if (value.defined() && value.numel() != 1) {
          n.fail("ConstantOfShape: value must hold one element");
        }
        return [value](const std::vector<Tensor>& in) {
          std::vector<int64_t> dims = host_ints(in[0]);
          for (int64_t d : dims) {
            if (d < 0) throw ValueError("ConstantOfShape: negative dimension");
          }
          check_created(numel_of(dims), "ConstantOfShape");
          Shape s = to_shape(dims);
          if (!value.defined()) return Out{zeros(s, in[0].backend())};
          return Out{broadcast_to(value.reshape({}), s).contiguous()};
        };
      },
      1, 1};
  r["Squeeze"] = {
      [](const Node&) -> Kernel {
        return [](const std::vector<Tensor>& in) {
          Tensor x = in[0];
          if (in.size() < 2 || !in[1].defined()) return Out{x.squeeze()};
          auto axes = norm_axes(host_ints(in[1]), x.ndim(), "Squeeze");
          std::sort(axes.rbegin(), axes.rend());
          for (int64_t a : axes) {
            if (x.shape(a) != 1) {
              throw ShapeError(fmt::format("Squeeze: axis {} of {} is not 1", a,
                                           in[0].to_string()));
            }
            x = x.squeeze(a);
          }
          return Out{x};
        };
      },
      1, 2};
  r["Unsqueeze"] = {[](const Node& n) -> Kernel {
                      // Constant axes (as exporters write them) read once.
                      Tensor c = n.constant(1);
                      std::vector<int64_t> known;
                      if (c.defined()) known = host_ints(c);
                      return [known, c](const std::vector<Tensor>& in) {
                        Tensor x = in[0];
                        auto axes = c.defined() ? known : host_ints(in[1]);
                        axes = norm_axes(axes, x.ndim() + int64_t(axes.size()),
                                         "Unsqueeze");
                        std::sort(axes.begin(), axes.end());
                        for (int64_t a : axes) x = x.unsqueeze(a);
                        return Out{x};
                      };
                    },
                    2, 2};
  r["Tile"] = {[](const Node&) -> Kernel {
                 return [](const std::vector<Tensor>& in) {
                   std::vector<int64_t> reps = host_ints(in[1]);
                   double n = numel_of(reps) * double(in[0].numel());
                   for (int64_t v : reps) n = v < 0 ? 0 : n;  // repeat checks.
                   check_created(n, "Tile");
                   return Out{repeat(in[0], reps)};
                 };
               },
               2, 2};
  r["Range"] = {
      [](const Node&) -> Kernel {
        return [](const std::vector<Tensor>& in) {
          DType dt = in[0].dtype();
          Backend& b = in[0].backend();
          if (is_floating(dt)) {
            double s = host_double(in[0]), l = host_double(in[1]),
                   d = host_double(in[2]);
            if (d == 0) throw ValueError("Range: delta is 0");
            double c = std::max(0.0, std::ceil((l - s) / d));
            check_created(c, "Range");  // Also NaN and infinity.
            int64_t count = int64_t(c);
            return Out{(arange(count, b, DType::f64) * d + s).cast(dt)};
          }
          int64_t s = host_ints(in[0])[0], l = host_ints(in[1])[0],
                  d = host_ints(in[2])[0];
          if (d == 0) throw ValueError("Range: delta is 0");
          // In doubles first: limit - start may not fit in int64.
          check_created(
              std::max(0.0, std::ceil((double(l) - double(s)) / double(d))),
              "Range");
          int64_t span = l - s;
          int64_t count =
              std::max<int64_t>(0, (span + d + (d > 0 ? -1 : 1)) / d);
          return Out{
              (arange(count, b, DType::i64) * Scalar(d) + Scalar(s)).cast(dt)};
        };
      },
      3, 3, 11};
  r["Pad"] = {
      [](const Node& n) -> Kernel {
        std::string mode = n.s("mode", "constant");
        if (mode != "constant" && mode != "edge" && mode != "reflect" &&
            mode != "wrap") {
          n.fail("Pad: mode must be constant, edge, reflect or wrap, not '" +
                 mode + "'");
        }
        return [mode](const std::vector<Tensor>& in) {
          Tensor x = in[0];
          const int64_t rank = x.ndim();
          auto pads = host_ints(in[1]);
          double value =
              in.size() > 2 && in[2].defined() ? host_double(in[2]) : 0.0;
          std::vector<int64_t> axes;
          if (in.size() > 3 && in[3].defined())
            axes = norm_axes(host_ints(in[3]), rank, "Pad");
          else
            for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
          if (pads.size() != 2 * axes.size()) {
            throw ShapeError(fmt::format("Pad: {} pads for {} axes",
                                         pads.size(), axes.size()));
          }
          std::vector<int64_t> before(size_t(rank), 0), after(size_t(rank), 0);
          for (size_t i = 0; i < axes.size(); ++i) {
            before[size_t(axes[i])] = pads[i];
            after[size_t(axes[i])] = pads[i + axes.size()];
          }
          std::vector<int64_t> grown;
          for (int64_t a = 0; a < rank; ++a) {
            grown.push_back(std::max<int64_t>(
                0, x.shape(a) + before[size_t(a)] + after[size_t(a)]));
          }
          check_created(numel_of(grown), "Pad");
          for (int64_t a = 0; a < rank; ++a) {  // Negative pads crop.
            int64_t b = std::min<int64_t>(before[size_t(a)], 0);
            int64_t e = std::min<int64_t>(after[size_t(a)], 0);
            if (b || e) x = x.slice(a, -b, x.shape(a) + e);
          }
          if (mode != "constant") {
            for (int64_t a = 0; a < rank; ++a) {
              int64_t b = std::max<int64_t>(before[size_t(a)], 0);
              int64_t e = std::max<int64_t>(after[size_t(a)], 0);
              if (b || e) x = pad_by_index(x, a, b, e, mode);
            }
            return Out{x};
          }
          std::vector<int64_t> list;
          for (int64_t a = rank - 1; a >= 0; --a) {
            list.push_back(std::max<int64_t>(before[size_t(a)], 0));
            list.push_back(std::max<int64_t>(after[size_t(a)], 0));
          }
          Scalar v =
              is_floating(x.dtype()) ? Scalar(value) : Scalar(int64_t(value));
          return Out{pad(x, list, v)};
        };
      },
      2, 4};
  r["Trilu"] = {[](const Node& n) -> Kernel {
                  bool upper = n.i("upper", 1) != 0;
                  return [upper](const std::vector<Tensor>& in) {
                    int64_t k = in.size() > 1 && in[1].defined()
                                    ? host_ints(in[1])[0]
                                    : 0;
                    return Out{upper ? triu(in[0], k) : tril(in[0], k)};
                  };
                },
                1, 2, 14};
  r["CumSum"] = {[](const Node& n) -> Kernel {
                   bool exclusive = n.i("exclusive", 0) != 0,
                        reverse = n.i("reverse", 0) != 0;
                   return [exclusive, reverse](const std::vector<Tensor>& in) {
                     int64_t axis =
                         axis_of(host_ints(in[1])[0], in[0].ndim(), "CumSum");
                     Tensor x = reverse ? flip(in[0], {axis}) : in[0];
                     Tensor y = cumsum(x, axis);
                     if (exclusive) y = y - x;
                     if (reverse) y = flip(y, {axis});
                     return Out{y.cast(in[0].dtype())};
                   };
                 },
                 2, 2};
  r["OneHot"] = {
      [](const Node& n) -> Kernel {
        int64_t axis0 = n.i("axis", -1);
        return [axis0](const std::vector<Tensor>& in) {
          Tensor idx = in[0];
          double depth0 = host_double(in[1]);
          if (!(depth0 >= 1))
            throw ValueError("OneHot: depth must be positive");
          check_created(depth0 * double(in[0].numel()), "OneHot");
          int64_t depth = int64_t(depth0);
          Tensor ids = idx.cast(DType::i64);
          ids = where(lt(ids, Scalar(int64_t(0))), ids + Scalar(depth), ids);
          int64_t axis = axis_of(axis0, idx.ndim() + 1, "OneHot");
          Shape s(size_t(idx.ndim() + 1), 1);
          s[size_t(axis)] = depth;
          Tensor hot =
              eq(ids.unsqueeze(axis), arange(depth, idx.backend()).reshape(s));
          Tensor off = in[2].reshape({2}).slice(0, 0, 1).reshape({});
          Tensor on = in[2].reshape({2}).slice(0, 1, 2).reshape({});
          return Out{where(hot, on, off)};
        };
      },
      3, 3, 11};
  r["EyeLike"] = {
      [](const Node& n) -> Kernel {
        int64_t k = n.i("k", 0);
        bool has_dtype = n.has("dtype");
        DType to = has_dtype ? to_dtype(int32_t(n.i("dtype", 1)), n.where())
                             : DType::f32;
        return [k, has_dtype, to](const std::vector<Tensor>& in) {
          const Tensor& x = in[0];
          if (x.ndim() != 2) throw ShapeError("EyeLike: input must be 2-D");
          Backend& b = x.backend();
          Tensor rows = arange(x.shape(0), b).reshape({x.shape(0), 1});
          Tensor cols = arange(x.shape(1), b).reshape({1, x.shape(1)});
          return Out{
              eq(rows + Scalar(k), cols).cast(has_dtype ? to : x.dtype())};
        };
      },
      1, 1, 9};
  for (bool to_space : {true, false}) {
    r[to_space ? "DepthToSpace" : "SpaceToDepth"] = {
        [to_space](const Node& n) -> Kernel {
          int64_t b = n.required_i("blocksize");
          std::string mode = n.s("mode", "DCR");
          if (b < 1) n.fail("blocksize must be positive");
          if (mode != "DCR" && mode != "CRD") n.fail("mode must be DCR or CRD");
          bool crd = mode == "CRD";
          return [to_space, b, crd](const std::vector<Tensor>& in) {
            const Tensor& x = in[0];
            if (x.ndim() != 4)
              throw ShapeError("DepthToSpace/SpaceToDepth: input must be 4-D");
            int64_t N = x.shape(0), C = x.shape(1), H = x.shape(2),
                    W = x.shape(3);
            if (to_space) {
              if (C % (b * b))
                throw ShapeError("DepthToSpace: channels not divisible");
              int64_t c = C / (b * b);
              Tensor y = crd ? x.reshape({N, c, b, b, H, W})
                                   .permute({0, 1, 4, 2, 5, 3})
                             : x.reshape({N, b, b, c, H, W})
                                   .permute({0, 3, 4, 1, 5, 2});
              return Out{y.reshape({N, c, H * b, W * b})};
            }
            if (H % b || W % b)
              throw ShapeError("SpaceToDepth: size not divisible");
            Tensor y = x.reshape({N, C, H / b, b, W / b, b})
                           .permute({0, 3, 5, 1, 2, 4});
            return Out{y.reshape({N, C * b * b, H / b, W / b})};
          };
        },
        1, 1};
  }
}

}  // namespace nascent::onnx
