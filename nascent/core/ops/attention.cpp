// scaled_dot_product_attention: validation, and the default
// Backend::attention composed from matmul, softmax and where, by blocks of
// queries so that the scores held at once stay bounded.
#include <algorithm>
#include <cmath>
#include <limits>

#include "nascent/core/ops.h"
#include "nascent/core/ops/validate.h"

namespace nascent {

namespace {

// Scores (elements of [B, Hq, rows, Lk]) per block of the composed default:
// 16 MiB of f32, a few times that in intermediates.
constexpr int64_t kScoresPerBlock = int64_t(1) << 22;

DType compute_dtype(DType dtype) {
  return dtype == DType::f64 ? DType::f64 : DType::f32;
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k,
                                    const Tensor& v, const AttentionParams& p,
                                    const Tensor* mask) {
  const char* op = "scaled_dot_product_attention";
  Backend& backend = detail::common_backend(op, {&q, &k, &v, mask});
  auto what = [&] { return detail::describe({&q, &k, &v, mask}); };
  if (q.ndim() != 4 || k.ndim() != 4 || v.ndim() != 4) {
    throw ShapeError(fmt::format(
        "{}: expected q [B, Hq, Lq, D], k [B, Hkv, Lk, D] and v [B, Hkv, Lk, "
        "Dv], got {}",
        op, what()));
  }
  const int64_t b = q.shape(0), hq = q.shape(1), lq = q.shape(2);
  const int64_t d = q.shape(3), hkv = k.shape(1), lk = k.shape(2);
  const int64_t dv = v.shape(3);
  if (k.shape(0) != b || v.shape(0) != b || k.shape(3) != d ||
      v.shape(1) != hkv || v.shape(2) != lk) {
    throw ShapeError(fmt::format(
        "{}: shapes do not fit q [B, Hq, Lq, D], k [B, Hkv, Lk, D] and v [B, "
        "Hkv, Lk, Dv]: {}",
        op, what()));
  }
  if (hkv == 0 || hq % hkv != 0) {
    throw ShapeError(fmt::format(
        "{}: {} query heads are not a multiple of {} key/value heads ({})", op,
        hq, hkv, what()));
  }
  if (lk == 0 && lq > 0) {
    throw ValueError(fmt::format("{}: no keys to attend to ({})", op, what()));
  }
  if (p.causal && lq > lk) {
    throw ValueError(fmt::format(
        "{}: causal attention of {} queries over {} keys: the first queries "
        "would see no key ({})",
        op, lq, lk, what()));
  }
  if (!std::isfinite(p.scale) || p.scale < 0.0) {
    throw ValueError(fmt::format("{}: scale = {} must be finite and >= 0 ({})",
                                 op, p.scale, what()));
  }
  DType dt = promote_types(promote_types(q.dtype(), k.dtype()), v.dtype());
  if (!is_floating(dt)) {
    throw DTypeError(
        fmt::format("{}: q, k and v must be floating, got {}", op, what()));
  }
  Tensor m;
  if (mask != nullptr) {
    const Shape scores = {b, hq, lq, lk};
    if (broadcast_shapes(mask->shape(), scores, op) != scores) {
      throw ShapeError(fmt::format(
          "{}: the mask must broadcast to the scores [B, Hq, Lq, Lk] = {} ({})",
          op, to_string(scores), what()));
    }
    if (mask->dtype() == DType::boolean) {
      m = where(*mask, full({}, 0.0, backend, dt),
                Scalar(-std::numeric_limits<double>::infinity()));
    } else if (is_floating(mask->dtype())) {
      m = mask->cast(dt);
    } else {
      throw DTypeError(fmt::format(
          "{}: the mask must be bool or floating, got {}", op, what()));
    }
    m = m.expand(scores);
  }
  AttentionParams ap = p;
  if (ap.scale == 0.0)
    ap.scale = 1.0 / std::sqrt(double(std::max<int64_t>(d, 1)));
  // [B, Lq, Hq, Dv] storage seen as [B, Hq, Lq, Dv].
  Tensor out = detail::new_output({b, lq, hq, dv}, dt, backend).transpose(1, 2);
  if (out.numel() == 0) return out;
  backend.attention(q.cast(dt), k.cast(dt), v.cast(dt),
                    m.defined() ? &m : nullptr, ap, out);
  return out;
}

void Backend::attention(const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor* mask, const AttentionParams& p,
                        Tensor& out) {
  const DType ct = compute_dtype(q.dtype());
  const int64_t b = q.shape(0), hq = q.shape(1), lq = q.shape(2);
  const int64_t d = q.shape(3), hkv = k.shape(1), lk = k.shape(2);
  const int64_t dv = v.shape(3), group = hq / hkv;
  // Query heads h = kv * group + g side by side with their key head: the
  // block's queries as [B, Hkv, group * rows, D] make one matmul per key
  // head, and its scores [B, Hq, rows, Lk] are the same memory.
  const Tensor kt = k.cast(ct).transpose(-1, -2);
  const Tensor vc = v.cast(ct);
  const int64_t block =
      std::clamp<int64_t>(kScoresPerBlock / std::max<int64_t>(b * hq * lk, 1),
                          1, std::max<int64_t>(lq, 1));
  for (int64_t i0 = 0; i0 < lq; i0 += block) {
    const int64_t rows = std::min(block, lq - i0);
    const Tensor qb = mul(q.narrow(2, i0, rows).cast(ct), p.scale)
                          .reshape({b, hkv, group * rows, d});
    Tensor s = nascent::matmul(qb, kt).view({b, hq, rows, lk});
    if (mask != nullptr) s = add(s, mask->narrow(2, i0, rows).cast(ct));
    if (p.causal) {
      // Row r is the query at position lk - lq + i0 + r.
      const Tensor r = arange(rows, *this, DType::i64).unsqueeze(-1);
      const Tensor j = arange(lk, *this, DType::i64);
      s = nascent::where(le(j, add(r, lk - lq + i0)), s,
                         Scalar(-std::numeric_limits<double>::infinity()));
    }
    const Tensor probs =
        nascent::softmax(s, -1).view({b, hkv, group * rows, lk});
    assign(out.narrow(2, i0, rows),
           nascent::matmul(probs, vc).view({b, hq, rows, dv}));
  }
}

}  // namespace nascent
