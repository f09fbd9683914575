// MaxPool, AveragePool and LpPool: 1-D and 2-D windows without dilation
// run nascent's 2-D pools (1-D gains a height of 1; the pads are applied
// with pad(), -inf for max); dilated windows and 3 or more spatial axes
// take strided slices, one per kernel offset.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "nascent/onnx/node.h"
#include "nascent/onnx/window.h"

namespace nascent::onnx {

namespace {

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

}  // namespace

void register_pool(Registry& r) {
  r["MaxPool"] = {[](const Node& n) { return pool(n, true); }, 1, 1};
  r["AveragePool"] = {[](const Node& n) { return pool(n, false); }, 1, 1};
  r["LpPool"] = {[](const Node& n) {
                   int64_t p = n.i("p", 2);
                   if (p < 1) n.fail("LpPool: p must be positive");
                   return pool(n, false, double(p));
                 },
                 1, 1, 18};
}

}  // namespace nascent::onnx
