// rope: validation, and the default Backend::rope composed from element-wise
// ops (angles from the positions, cos and sin, the rotation of each pair).
#include <cmath>
#include <vector>

#include "nascent/core/ops.h"
#include "nascent/core/ops/validate.h"

namespace nascent {

namespace {

// The dtype rope computes in: f64 for f64, f32 for the others.
DType compute_dtype(DType dtype) {
  return dtype == DType::f64 ? DType::f64 : DType::f32;
}

}  // namespace

Tensor rope(const Tensor& x, const Tensor& positions, const RopeParams& p,
            const Tensor* freq_factors) {
  const char* op = "rope";
  Backend& backend = detail::common_backend(op, {&x, &positions, freq_factors});
  auto what = [&] { return detail::describe({&x, &positions, freq_factors}); };
  detail::check_dtype(is_floating(x.dtype()), op, x, "a floating x");
  if (x.ndim() < 3) {
    throw ShapeError(fmt::format(
        "rope: expected x [..., n, heads, head_dim] and positions [n], got {}",
        what()));
  }
  const int64_t n = x.shape(-3), head_dim = x.shape(-1);
  detail::check_dtype(
      positions.dtype() == DType::i32 || positions.dtype() == DType::i64, op,
      positions, "positions of i32 or i64");
  if (positions.ndim() != 1 || positions.shape(0) != n) {
    throw ShapeError(
        fmt::format("rope: positions must be [n] = [{}] for x [..., n, heads, "
                    "head_dim], got {}",
                    n, what()));
  }
  RopeParams q = p;
  if (q.dims == 0) q.dims = head_dim;
  if (q.dims < 0 || q.dims > head_dim || q.dims % 2 != 0) {
    throw ValueError(fmt::format(
        "rope: dims = {} must be even and in (0, head_dim = {}] ({})", p.dims,
        head_dim, what()));
  }
  if (!(q.base > 0.0) || !std::isfinite(q.base) || !(q.scale > 0.0) ||
      !std::isfinite(q.scale)) {
    throw ValueError(fmt::format(
        "rope: base = {} and scale = {} must be finite and > 0 ({})", q.base,
        q.scale, what()));
  }
  Tensor factors;
  if (freq_factors != nullptr) {
    detail::check_dtype(is_floating(freq_factors->dtype()), op, *freq_factors,
                        "floating freq_factors");
    if (freq_factors->shape() != Shape{q.dims / 2}) {
      throw ShapeError(
          fmt::format("rope: freq_factors must be [dims / 2] = [{}], got {}",
                      q.dims / 2, what()));
    }
    factors = freq_factors->cast(DType::f32).contiguous();
  }
  Tensor out = detail::new_output(x.shape(), x.dtype(), backend);
  if (out.numel() == 0) return out;
  const Tensor pos = positions.cast(DType::i32).contiguous();
  backend.rope(x, pos, factors.defined() ? &factors : nullptr, q, out);
  return out;
}

Tensor rope(const Tensor& x, int64_t offset, const RopeParams& p,
            const Tensor* freq_factors) {
  if (!x.defined() || x.ndim() < 3) {
    throw ShapeError(fmt::format(
        "rope: expected x [..., n, heads, head_dim], got {}",
        x.defined() ? x.to_string() : std::string("an undefined tensor")));
  }
  const int64_t n = x.shape(-3);
  return rope(x, arange(offset, offset + n, 1, x.backend(), DType::i32), p,
              freq_factors);
}

void Backend::rope(const Tensor& x, const Tensor& positions,
                   const Tensor* freq_factors, const RopeParams& p,
                   Tensor& out) {
  const DType ct = compute_dtype(x.dtype());
  const int64_t n = x.shape(-3), head_dim = x.shape(-1), half = p.dims / 2;
  // base^(-2i / dims) as ggml's running product in f32 (in f64 for f64).
  std::vector<double> powers(static_cast<size_t>(half));
  if (ct == DType::f32) {
    const float step = std::pow(float(p.base), -2.0f / float(p.dims));
    float t = 1.0f;
    for (double& v : powers) v = t, t *= step;
  } else {
    for (int64_t i = 0; i < half; ++i) {
      powers[size_t(i)] = std::pow(p.base, -2.0 * double(i) / double(p.dims));
    }
  }
  Tensor angles = mul(positions.cast(ct).reshape({n, 1}),
                      from_vector(powers, {half}, *this).cast(ct));
  if (freq_factors != nullptr) angles = div(angles, freq_factors->cast(ct));
  if (p.scale != 1.0) angles = mul(angles, 1.0 / p.scale);
  // [n, 1, half]: the same angles for every head.
  const Tensor c = cos(angles).unsqueeze(1);
  Tensor s = sin(angles).unsqueeze(1);
  if (p.inverse) s = neg(s);

  const Tensor xr = x.narrow(-1, 0, p.dims).cast(ct);
  Tensor x0, x1;
  Shape pairs = xr.shape();
  if (p.mode == RopeMode::norm) {
    pairs.back() = half;
    pairs.push_back(2);
    const Tensor xp = xr.reshape(pairs);
    x0 = xp.select(-1, 0);
    x1 = xp.select(-1, 1);
  } else {
    x0 = xr.narrow(-1, 0, half);
    x1 = xr.narrow(-1, half, half);
  }
  const Tensor y0 = sub(mul(x0, c), mul(x1, s));
  const Tensor y1 = add(mul(x0, s), mul(x1, c));
  Tensor y = p.mode == RopeMode::norm ? stack({y0, y1}, -1).reshape(xr.shape())
                                      : cat({y0, y1}, -1);
  assign(out.narrow(-1, 0, p.dims), y);
  if (p.dims < head_dim) {
    assign(out.narrow(-1, p.dims, head_dim - p.dims),
           x.narrow(-1, p.dims, head_dim - p.dims));
  }
}

}  // namespace nascent
