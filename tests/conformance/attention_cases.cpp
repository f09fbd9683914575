// Conformance cases for scaled_dot_product_attention: every floating dtype
// (and mixed ones, promoted), every layout of q, k, v (and of the mask) and
// the views a KV cache gives (q [B, Lq, Hq, D] split into heads, k and v
// the first Lk positions of a [Hkv, n_ctx, D] cache); one token, one head,
// MQA and GQA, Lq = Lk, Lq < Lk and Lq > Lk, causal or not, head dims off
// the SIMD width and Dv != D, the default and other scales, additive and
// bool masks of every broadcast shape, rows that see no key (NaN), and
// sizes that reach the CPU kernel's blocks of 64 queries, its packed path
// (>= 8 rows) and its mat-vec path (< 8 rows), and the composed default's
// blocks.
//
// The reference is the definition in float64: softmax_j(scale q.k_j +
// mask_j) over the keys the query sees, times v. Its error bound, per
// output element, follows the computation: each score is a sum of D
// products, wrong by up to 4 sqrt(D + 1) u (scale |q|.|k_j| + |mask_j|)
// (a random-walk bound, as in matmul_cases.cpp); a probability moves by the
// difference of two such errors plus exp's and the normalization's
// roundings; the output is a sum of Lk products. So
//   |err| <= (2 e_score + 4 sqrt(Lk + 1) u + 4 u) sum_j p_j |v_j|
//            + 2 u_out |out| + tiny,
// u the unit roundoff of the compute type (f32 for f16 and bf16), u_out
// that of the output.
#include <algorithm>
#include <cmath>
#include <limits>

#include "conformance/reference.h"
#include "conformance/registry.h"

namespace nascent::conformance {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr DType kFloatDTypes[] = {DType::f32, DType::f64, DType::f16,
                                  DType::bf16};

double compute_eps(DType dt) {
  return dt == DType::f64 ? 0x1p-53 : 0x1p-24;
}
double storage_eps(DType dt) {
  switch (dt) {
    case DType::f64:
      return 0x1p-53;
    case DType::f16:
      return 0x1p-11;
    case DType::bf16:
      return 0x1p-8;
    default:
      return 0x1p-24;
  }
}
double storage_tiny(DType dt) {
  switch (dt) {
    case DType::f64:
      return 0x1p-1074;
    case DType::f16:
      return 0x1p-24;
    case DType::bf16:
      return 0x1p-133;
    default:
      return 0x1p-149;
  }
}

struct AttentionResult {
  HostTensor out;
  std::vector<double> bound;
};

// mask: null, or additive values (a bool mask as 0 / -inf) that broadcast
// to [B, Hq, Lq, Lk].
AttentionResult ref_attention(const HostTensor& q, const HostTensor& k,
                              const HostTensor& v, const HostTensor* mask,
                              const AttentionParams& p, DType dt) {
  const int64_t nb = q.shape[0], hq = q.shape[1], lq = q.shape[2];
  const int64_t d = q.shape[3], hkv = k.shape[1], lk = k.shape[2];
  const int64_t dv = v.shape[3], group = hq / hkv;
  const double scale = p.scale == 0.0
                           ? 1.0 / std::sqrt(double(std::max<int64_t>(d, 1)))
                           : p.scale;
  const double u = compute_eps(dt), u_out = storage_eps(dt);
  AttentionResult res{{{nb, hq, lq, dv}, {}}, {}};
  res.out.v.reserve(size_t(nb * hq * lq * dv));
  // The mask's strides over [B, Hq, Lq, Lk] (0 where it broadcasts).
  int64_t ms[4] = {0, 0, 0, 0};
  if (mask != nullptr) {
    const size_t r = mask->shape.size();
    int64_t stride = 1;
    for (size_t a = r; a-- > 0;) {
      if (mask->shape[a] != 1) ms[4 - r + a] = stride;
      stride *= mask->shape[a];
    }
  }
  std::vector<double> s(static_cast<size_t>(lk)), o(static_cast<size_t>(dv)),
      pv(o);
  for (int64_t b = 0; b < nb; ++b) {
    for (int64_t h = 0; h < hq; ++h) {
      const int64_t g = h / group;
      const double* kh = k.v.data() + (b * hkv + g) * lk * d;
      const double* vh = v.v.data() + (b * hkv + g) * lk * dv;
      for (int64_t i = 0; i < lq; ++i) {
        const double* qi = q.v.data() + ((b * hq + h) * lq + i) * d;
        const double* mi =
            mask != nullptr ? mask->v.data() + b * ms[0] + h * ms[1] + i * ms[2]
                            : nullptr;
        double top = -kInf, e_score = 0;
        for (int64_t j = 0; j < lk; ++j) {
          const double* kj = kh + j * d;
          double dot = 0, m = 0;
          for (int64_t c = 0; c < d; ++c) {
            dot += qi[c] * kj[c];
            m += std::fabs(qi[c] * kj[c]);
          }
          const double add = mi != nullptr ? mi[j * ms[3]] : 0.0;
          const bool seen = (!p.causal || j <= lk - lq + i) && add != -kInf;
          s[size_t(j)] = seen ? scale * dot + add : -kInf;
          if (seen) {
            top = std::max(top, s[size_t(j)]);
            e_score = std::max(e_score, scale * m + std::fabs(add));
          }
        }
        if (top == -kInf) {  // A query that sees no key.
          res.out.v.insert(res.out.v.end(), size_t(dv), kNaN);
          res.bound.insert(res.bound.end(), size_t(dv), 0.0);
          continue;
        }
        e_score *= 4.0 * std::sqrt(double(d) + 1.0) * u;
        double z = 0;
        for (int64_t j = 0; j < lk; ++j) {
          s[size_t(j)] = std::exp(s[size_t(j)] - top);
          z += s[size_t(j)];
        }
        std::fill(o.begin(), o.end(), 0.0);
        std::fill(pv.begin(), pv.end(), 0.0);
        for (int64_t j = 0; j < lk; ++j) {
          const double pj = s[size_t(j)] / z;
          if (pj == 0.0) continue;
          for (int64_t c = 0; c < dv; ++c) {
            o[size_t(c)] += pj * vh[j * dv + c];
            pv[size_t(c)] += pj * std::fabs(vh[j * dv + c]);
          }
        }
        const double rel =
            2.0 * e_score + 4.0 * std::sqrt(double(lk) + 1.0) * u + 4.0 * u;
        for (int64_t c = 0; c < dv; ++c) {
          res.out.v.push_back(o[size_t(c)]);
          res.bound.push_back(rel * pv[size_t(c)] +
                              2.0 * u_out * std::fabs(o[size_t(c)]) +
                              storage_tiny(dt));
        }
      }
    }
  }
  return res;
}

void expect_within(const Tensor& got, const AttentionResult& want,
                   const std::string& label) {
  ASSERT_EQ(got.shape(), want.out.shape) << label;
  const std::vector<double> g = got.to_vector<double>();
  int failures = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double w = want.out.v[i];
    const bool ok =
        std::isnan(w) ? std::isnan(g[i]) : std::fabs(g[i] - w) <= want.bound[i];
    if (!ok && ++failures <= 5) {
      ADD_FAILURE() << label << ": element " << i << " is " << g[i]
                    << ", expected " << w << " (tolerance " << want.bound[i]
                    << ")";
    }
  }
  EXPECT_EQ(failures, 0) << label << ": " << failures << " of " << g.size()
                         << " elements differ";
}

enum class MaskKind {
  none,
  additive,   // Random values in [-2, 2) with some -inf, of q's dtype.
  boolean,    // Random true / false, true: the key is seen.
  no_key,     // A bool mask whose first query row sees nothing (NaN).
  minus_inf,  // An additive mask whose last query row is all -inf (NaN).
};

struct AttentionCase {
  int64_t b, hq, hkv, lq, lk, d, dv;
  bool causal = false;
  double scale = 0.0;
  MaskKind mask = MaskKind::none;
  Shape mask_shape = {};  // Broadcast to [B, Hq, Lq, Lk].
};

const std::vector<AttentionCase>& attention_cases() {
  using M = MaskKind;
  static const std::vector<AttentionCase> cases = {
      // One token, one head, one key.
      {1, 1, 1, 1, 1, 5, 5},
      {1, 1, 1, 1, 1, 1, 3, true},
      // MQA, causal, Lq < Lk (a chunk after cached tokens).
      {2, 4, 1, 3, 9, 7, 7, true},
      // GQA, causal, Lq = Lk, Dv != D, a scale of its own.
      {1, 6, 2, 5, 5, 16, 12, true, 0.7},
      // Not causal, more queries than keys, D = 33 (no SIMD width).
      {2, 2, 2, 7, 3, 33, 9, false, 0.3},
      // Generation: one query over a cache, GQA, the mat-vec path; with an
      // additive mask per (query head, key).
      {1, 8, 2, 1, 37, 64, 64, true},
      {2, 8, 2, 1, 37, 64, 64, true, 0.0, M::additive, {8, 1, 37}},
      // Lq < 8 rows of a block, causal offset: mat-vec path with a mask.
      {1, 4, 2, 6, 40, 24, 24, true, 0.0, M::boolean, {1, 1, 1, 40}},
      // A prompt: 130 queries = 3 blocks of 64 (the last of 2), packed path.
      {1, 4, 2, 130, 130, 64, 64, true},
      // Prompts of 64 queries and more (a GPU's GEMM path): GQA after 28
      // cached tokens with D != Dv and batches; not causal, more queries
      // than keys, MQA.
      {2, 8, 2, 72, 100, 40, 24, true, 0.5},
      {1, 3, 1, 64, 50, 33, 17, false},
      // A chunked prefill: 20 queries after 130 cached, additive [Lq, Lk].
      {1, 2, 2, 20, 150, 40, 40, true, 0.0, M::additive, {20, 150}},
      // Masks that broadcast over batch, heads or queries; full masks.
      {2, 3, 3, 4, 6, 8, 8, false, 1.5, M::boolean, {2, 1, 1, 6}},
      {2, 3, 1, 4, 6, 8, 8, false, 0.0, M::additive, {2, 3, 4, 6}},
      {1, 2, 2, 9, 12, 8, 8, true, 0.0, M::boolean, {1, 2, 9, 12}},
      // Rows that see no key are NaN; the others are untouched.
      {2, 2, 1, 3, 5, 4, 4, false, 0.0, M::no_key, {2, 1, 3, 5}},
      {1, 3, 3, 10, 12, 16, 8, true, 0.0, M::minus_inf, {1, 3, 10, 12}},
      // A long cache: the composed default's blocks of queries (the scores
      // it holds at once are bounded, here to 32 queries of 8 heads), each
      // with its causal offset and its rows of the mask.
      {1, 8, 2, 40, 16384, 4, 4, true, 0.0, M::additive, {40, 16384}},
      // A prompt over a cache long enough that the GPU's scores (2^24
      // floats at most) take its queries in two chunks.
      {1, 8, 2, 96, 36000, 4, 4, true},
  };
  return cases;
}

Tensor make_mask(const AttentionCase& c, DType dt, Backend& backend,
                 uint64_t seed) {
  if (c.mask == MaskKind::none) return {};
  const Shape& s = c.mask_shape;
  const bool boolean =
      c.mask == MaskKind::boolean || c.mask == MaskKind::no_key;
  std::vector<double> m =
      random_tensor(s, DType::f64, backend, seed, Layout::contiguous, -2.0, 2.0)
          .to_vector<double>();
  const int64_t lk = s.back(), lq = s.size() >= 2 ? s[s.size() - 2] : 1;
  for (size_t i = 0; i < m.size(); ++i) {
    const int64_t j = int64_t(i) % lk, row = int64_t(i) / lk % lq;
    if (boolean) {
      // About 3 keys in 4 seen; no_key hides every key of query row 0.
      m[i] = m[i] > -1.0 && !(c.mask == MaskKind::no_key && row == 0);
    } else if (c.mask == MaskKind::minus_inf && row == lq - 1) {
      m[i] = -kInf;
    } else if (j % 5 == 2 && c.mask == MaskKind::additive) {
      m[i] = -kInf;  // A few keys hidden by -inf.
    }
  }
  const Tensor t = from_vector(m, s, backend);
  return boolean ? t.cast(DType::boolean) : t.cast(dt);
}

HostTensor mask_to_host(const Tensor& mask) {
  HostTensor h = to_host(mask);
  if (mask.dtype() == DType::boolean) {
    for (double& x : h.v) x = x != 0.0 ? 0.0 : -kInf;
  }
  return h;
}

// How q, k and v are laid out.
enum class Views {
  layout,    // random_tensor's layout for each.
  kv_cache,  // q split into heads from [B, Lq, Hq, D]; k and v the first
             // Lk positions of a [Hkv, n_ctx, D] cache (per batch index).
};

struct Operands {
  Tensor q, k, v;
};

Operands make_operands(const AttentionCase& c, DType dt, Backend& backend,
                       uint64_t seed, Layout layout, Views views) {
  if (views == Views::layout) {
    return {
        random_tensor({c.b, c.hq, c.lq, c.d}, dt, backend, seed, layout),
        random_tensor({c.b, c.hkv, c.lk, c.d}, dt, backend, seed + 1, layout),
        random_tensor({c.b, c.hkv, c.lk, c.dv}, dt, backend, seed + 2, layout)};
  }
  const int64_t n_ctx = c.lk + 11;
  auto cache = [&](int64_t width, uint64_t s) {
    if (c.b == 1) {
      return random_tensor({c.hkv, n_ctx, width}, dt, backend, s)
          .narrow(1, 0, c.lk)
          .unsqueeze(0);
    }
    return random_tensor({c.b, c.hkv, n_ctx, width}, dt, backend, s)
        .narrow(2, 0, c.lk);
  };
  return {
      random_tensor({c.b, c.lq, c.hq, c.d}, dt, backend, seed).transpose(1, 2),
      cache(c.d, seed + 1), cache(c.dv, seed + 2)};
}

std::string describe(const AttentionCase& c) {
  static const char* const kMasks[] = {"additive", "bool", "bool hiding a row",
                                       "additive with a -inf row"};
  std::string s = fmt::format(
      "B {} Hq {} Hkv {} Lq {} Lk {} D {} Dv {}{} scale {}", c.b, c.hq, c.hkv,
      c.lq, c.lk, c.d, c.dv, c.causal ? " causal" : "", c.scale);
  if (c.mask != MaskKind::none) {
    s += fmt::format(" {} mask {}", kMasks[int(c.mask) - 1],
                     to_string(c.mask_shape));
  }
  return s;
}

void run_case(Backend& backend, const AttentionCase& c, DType dt, Layout layout,
              Views views, uint64_t seed) {
  const Operands o = make_operands(c, dt, backend, seed, layout, views);
  Tensor mask = make_mask(c, dt, backend, seed + 3);
  if (layout == Layout::transposed && mask.defined() && mask.ndim() >= 2) {
    // The same values, the mask's last two axes swapped in memory.
    mask = mask.transpose(-1, -2).contiguous().transpose(-1, -2);
  }
  AttentionParams p;
  p.scale = c.scale;
  p.causal = c.causal;
  const Tensor out = scaled_dot_product_attention(
      o.q, o.k, o.v, p, mask.defined() ? &mask : nullptr);
  const std::string what =
      fmt::format("attention {} {} ({})", name(dt), describe(c),
                  views == Views::kv_cache ? "KV cache views" : name(layout));
  EXPECT_EQ(out.dtype(), dt) << what;
  // [B, Hq, Lq, Dv] whose transpose(1, 2) is contiguous.
  EXPECT_TRUE(out.transpose(1, 2).is_contiguous()) << what;
  const HostTensor mh = mask.defined() ? mask_to_host(mask) : HostTensor{};
  expect_within(out,
                ref_attention(to_host(o.q), to_host(o.k), to_host(o.v),
                              mask.defined() ? &mh : nullptr, p, dt),
                what);
}

CONFORMANCE_CASE(attention, "dtypes, layouts, KV cache views, GQA, masks") {
  uint64_t seed = 1200;
  for (const AttentionCase& c : attention_cases()) {
    // The long cache in f32, contiguous and as cache views only, to keep
    // the suite quick.
    const bool long_cache = c.lk > 1000;
    for (DType dt : kFloatDTypes) {
      if (long_cache && dt != DType::f32) continue;
      for (Layout layout : kLayouts) {
        if (long_cache && layout != Layout::contiguous) continue;
        run_case(backend, c, dt, layout, Views::layout, seed += 4);
      }
      run_case(backend, c, dt, Layout::contiguous, Views::kv_cache, seed += 4);
    }
  }
}

CONFORMANCE_CASE(attention, "mixed dtypes and masks of another dtype") {
  // q f16, k bf16, v f32 promote to f32; an f64 additive mask is cast to it.
  const AttentionCase c{
      2, 4, 2, 9, 11, 16, 16, true, 0.0, MaskKind::additive, {1, 4, 9, 11}};
  const Tensor q = random_tensor({2, 4, 9, 16}, DType::f16, backend, 1);
  const Tensor k = random_tensor({2, 2, 11, 16}, DType::bf16, backend, 2);
  const Tensor v =
      random_tensor({2, 2, 11, 16}, DType::f32, backend, 3, Layout::transposed);
  const Tensor mask = make_mask(c, DType::f64, backend, 4);
  AttentionParams p;
  p.causal = true;
  const Tensor out = scaled_dot_product_attention(q, k, v, p, &mask);
  EXPECT_EQ(out.dtype(), DType::f32);
  const HostTensor mh = mask_to_host(mask);
  expect_within(
      out,
      ref_attention(to_host(q), to_host(k), to_host(v), &mh, p, DType::f32),
      "attention f16 x bf16 x f32, f64 mask");
}

}  // namespace
}  // namespace nascent::conformance
