// Conformance cases for rope: every floating dtype and layout of x (and a
// [B, H, n, D] buffer seen as [B, n, H, D]), norm and neox pairs, rotated
// dims below head_dim (the rest passes through), freq_factors, scale != 1,
// bases of llama 2, llama 3 and qwen2, i32 and i64 positions that do not
// start at 0, repeat and jump to 30000, one token and one head, threaded
// sizes, and the inverse rotation, alone and undoing the forward one.
//
// The reference turns each pair by theta = p * base^(-2i / dims) /
// (scale * freq_factor_i) in float64. The op computes theta the way ggml
// does, in f32 (in f64 for f64): base^(-2i / dims) as a running product,
// whose relative error grows by about (2 + 2 ln(base) / dims) ulps per
// pair, then a few more roundings (times p, / freq_factor, / scale), so the
// angle's absolute error is up to |theta| (i (2 + 2 ln(base) / dims) + 6) u
// and grows with the position: in f32 at p = 30000 the bound is about 1e-2
// radians, and the op's results there differ from float64's by up to 4e-4
// (the default f32 tolerance, 1e-5 + 2e-5 |y|, would reject ggml's own
// arithmetic). Each pair is checked against twice the first-order bound
// that follows (the angle's error plus sin/cos's 3 ulps and the products'
// roundings, times |x0| + |x1|), plus the rounding to the output type; the
// values after `dims` must come back exactly.
#include <cmath>

#include "conformance/reference.h"
#include "conformance/registry.h"

namespace nascent::conformance {
namespace {

constexpr DType kFloatDTypes[] = {DType::f32, DType::f64, DType::f16,
                                  DType::bf16};

// Unit roundoff of the type rope computes in (f32 for f16 and bf16) and of
// the type it stores; the spacing of the stored type's subnormals.
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

// The rotated values and, per element, how far the op may be from them.
struct RopeResult {
  HostTensor y;
  std::vector<double> bound;
};

RopeResult ref_rope(const HostTensor& x, const std::vector<int64_t>& pos,
                    const std::vector<double>& freq_factors,
                    const RopeParams& p, DType dt) {
  const size_t r = x.shape.size();
  const int64_t hd = x.shape[r - 1], heads = x.shape[r - 2];
  const int64_t n = x.shape[r - 3];
  const int64_t dims = p.dims == 0 ? hd : p.dims, half = dims / 2;
  const bool norm = p.mode == RopeMode::norm;
  const double u = compute_eps(dt), u_out = storage_eps(dt);
  const double growth = 2.0 + 2.0 * std::log(p.base) / double(dims);
  const double tiny = storage_tiny(dt);
  RopeResult res{x, std::vector<double>(x.v.size(), 0.0)};
  const int64_t rows = hd == 0 ? 0 : x.numel() / hd;
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t t = row / heads % n;
    const double* a = x.v.data() + row * hd;
    double* y = res.y.v.data() + row * hd;
    double* b = res.bound.data() + row * hd;
    for (int64_t i = 0; i < half; ++i) {
      const int64_t i0 = norm ? 2 * i : i, i1 = norm ? 2 * i + 1 : i + half;
      const double ff = freq_factors.empty() ? 1.0 : freq_factors[size_t(i)];
      const double theta = double(pos[size_t(t)]) *
                           std::pow(p.base, -2.0 * double(i) / double(dims)) /
                           (p.scale * ff);
      const double c = std::cos(theta);
      const double s = (p.inverse ? -1.0 : 1.0) * std::sin(theta);
      y[i0] = a[i0] * c - a[i1] * s;
      y[i1] = a[i0] * s + a[i1] * c;
      const double angle = std::fabs(theta) * (double(i) * growth + 6.0) * u;
      const double e =
          2.0 * (std::fabs(a[i0]) + std::fabs(a[i1])) * (angle + 6.0 * u);
      b[i0] = e + u_out * std::fabs(y[i0]) + tiny;
      b[i1] = e + u_out * std::fabs(y[i1]) + tiny;
    }
  }
  return res;
}

void expect_within(const Tensor& got, const HostTensor& want,
                   const std::vector<double>& bound, const std::string& label) {
  ASSERT_EQ(got.shape(), want.shape) << label;
  const std::vector<double> g = got.to_vector<double>();
  int failures = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (!(std::fabs(g[i] - want.v[i]) <= bound[i]) && ++failures <= 5) {
      ADD_FAILURE() << label << ": element " << i << " is " << g[i]
                    << ", expected " << want.v[i] << " (tolerance " << bound[i]
                    << ", " << got.to_string() << ")";
    }
  }
  EXPECT_EQ(failures, 0) << label << ": " << failures << " of " << g.size()
                         << " elements differ";
}

// Where the positions come from: rope(x, offset) (offset, offset + 1,
// ...), or a tensor of positions in [0, spread) that jump about and repeat.
struct PositionSpec {
  bool scattered = false;
  int64_t value = 0;  // The offset, or the spread.
  DType dtype = DType::i32;
};
PositionSpec from(int64_t offset) {
  return {false, offset};
}
PositionSpec scattered(int64_t spread, DType dtype = DType::i32) {
  return {true, spread, dtype};
}

// llama 3.1's rope_freqs, in [1, 8): none, f32 as the op takes them, or f64
// holding f32 values (cast by the op).
enum class FreqFactors { none, f32, f64 };

struct RopeCase {
  Shape shape;  // [..., n, heads, head_dim]
  RopeParams p;
  PositionSpec pos;
  FreqFactors ff = FreqFactors::none;
};

RopeParams params(int64_t dims, RopeMode mode, double base = 10000.0,
                  double scale = 1.0, bool inverse = false) {
  RopeParams p;
  p.dims = dims;
  p.mode = mode;
  p.base = base;
  p.scale = scale;
  p.inverse = inverse;
  return p;
}

const std::vector<RopeCase>& rope_cases() {
  constexpr RopeMode norm = RopeMode::norm, neox = RopeMode::neox;
  constexpr bool inverse = true;
  static const std::vector<RopeCase> cases = {
      // One token, one head, one pair.
      {{1, 1, 2}, params(0, norm), from(0)},
      {{1, 1, 2}, params(0, neox), from(7)},
      // head_dim 6 (no SIMD width), 4 rotated, 2 passed through.
      {{5, 3, 6}, params(4, norm), from(3)},
      {{5, 3, 6}, params(4, neox, 1e6), scattered(50, DType::i64)},
      // Batched, whole head, generation after cached tokens.
      {{2, 7, 4, 16}, params(0, norm), from(100)},
      {{2, 7, 4, 16}, params(0, neox, 1e6, 1.0, inverse), scattered(4096)},
      // llama 3.1: rope_freqs and a large base, far positions.
      {{9, 2, 32}, params(0, norm, 5e5), scattered(30000), FreqFactors::f32},
      {{9, 2, 32},
       params(0, neox, 5e5, 1.0, inverse),
       scattered(30000, DType::i64),
       FreqFactors::f64},
      // Linear scaling, partial rotation of a 5-D x.
      {{2, 3, 6, 2, 10}, params(6, norm, 1e4, 4.0), scattered(2000)},
      {{2, 3, 6, 2, 10},
       params(8, neox, 1e4, 0.5, inverse),
       from(17),
       FreqFactors::f32},
      // Threaded: n * heads * head_dim well above the kernel's grain.
      {{2, 64, 4, 64}, params(0, neox, 1e6), from(5)},
      {{40, 3, 128}, params(64, norm), scattered(8192, DType::i64)},
  };
  return cases;
}

// Positions that jump about, repeat (every fourth one), and are not sorted.
std::vector<int64_t> scattered_positions(int64_t n, int64_t spread) {
  std::vector<int64_t> pos(static_cast<size_t>(n));
  for (int64_t t = 0; t < n; ++t) {
    pos[size_t(t)] = t % 4 == 3
                         ? pos[size_t(t - 1)]
                         : (t * 7919 + 13) % std::max<int64_t>(spread, 1);
  }
  return pos;
}

// x in `layout`, or (kv_view) a [..., heads, n, head_dim] buffer seen as
// [..., n, heads, head_dim], as a projection split into heads gives it.
Tensor make_x(const Shape& shape, DType dt, Backend& backend, uint64_t seed,
              Layout layout, bool kv_view) {
  if (!kv_view) return random_tensor(shape, dt, backend, seed, layout);
  Shape s = shape;
  const size_t r = s.size();
  std::swap(s[r - 2], s[r - 3]);
  return random_tensor(s, dt, backend, seed).transpose(-2, -3);
}

void run_case(Backend& backend, const RopeCase& c, DType dt, Layout layout,
              bool kv_view, uint64_t seed) {
  const int64_t n = c.shape[c.shape.size() - 3];
  const int64_t hd = c.shape.back();
  const int64_t half = (c.p.dims == 0 ? hd : c.p.dims) / 2;
  const Tensor x = make_x(c.shape, dt, backend, seed, layout, kv_view);
  std::vector<int64_t> pos(static_cast<size_t>(n));
  Tensor positions;
  if (!c.pos.scattered) {
    for (int64_t t = 0; t < n; ++t) pos[size_t(t)] = c.pos.value + t;
  } else {
    pos = scattered_positions(n, c.pos.value);
    positions = from_vector(pos, {n}, backend).cast(c.pos.dtype);
  }
  Tensor ff;
  std::vector<double> ffh;
  if (c.ff != FreqFactors::none) {
    ff = random_tensor({half}, DType::f32, backend, seed + 1,
                       Layout::contiguous, 1.0, 8.0)
             .cast(c.ff == FreqFactors::f64 ? DType::f64 : DType::f32);
    ffh = ff.to_vector<double>();
  }
  const Tensor* ffp = ff.defined() ? &ff : nullptr;
  auto apply = [&](const Tensor& in, const RopeParams& p) {
    return c.pos.scattered ? rope(in, positions, p, ffp)
                           : rope(in, c.pos.value, p, ffp);
  };
  const std::string what = fmt::format(
      "rope {} {} dims {} {} base {} scale {}{} positions {} {}{} ({})",
      name(dt), to_string(c.shape), c.p.dims,
      c.p.mode == RopeMode::norm ? "norm" : "neox", c.p.base, c.p.scale,
      c.p.inverse ? " inverse" : "",
      c.pos.scattered ? "scattered over" : "from", c.pos.value,
      ffp != nullptr ? " freq_factors" : "",
      kv_view ? "heads-major buffer" : name(layout));
  const HostTensor xh = to_host(x);
  const Tensor y = apply(x, c.p);
  EXPECT_EQ(y.dtype(), dt) << what;
  const RopeResult want = ref_rope(xh, pos, ffh, c.p, dt);
  expect_within(y, want.y, want.bound, what);

  // The opposite rotation undoes it: within the forward error, turned back
  // (a pair's two bounds added), plus the error of the way back.
  RopeParams back = c.p;
  back.inverse = !c.p.inverse;
  const Tensor z = apply(y, back);
  const RopeResult undo = ref_rope(to_host(y), pos, ffh, back, dt);
  std::vector<double> bound = undo.bound;
  const int64_t dims = c.p.dims == 0 ? hd : c.p.dims;
  const bool norm = c.p.mode == RopeMode::norm;
  for (size_t row = 0; row < bound.size() / size_t(hd); ++row) {
    for (int64_t i = 0; i < dims / 2; ++i) {
      const size_t i0 = row * size_t(hd) + size_t(norm ? 2 * i : i);
      const size_t i1 = row * size_t(hd) + size_t(norm ? 2 * i + 1 : i + half);
      const double fwd = want.bound[i0] + want.bound[i1];
      bound[i0] += fwd;
      bound[i1] += fwd;
    }
  }
  expect_within(z, xh, bound, what + " then undone");
}

CONFORMANCE_CASE(rope, "dtypes, layouts, modes, dims, freq_factors, inverse") {
  uint64_t seed = 900;
  for (const RopeCase& c : rope_cases()) {
    for (DType dt : kFloatDTypes) {
      for (Layout layout : kLayouts) {
        run_case(backend, c, dt, layout, false, ++seed);
      }
      run_case(backend, c, dt, Layout::contiguous, true, ++seed);
    }
  }
}

CONFORMANCE_CASE(rope, "positions tensor equals the offset form") {
  // rope(x, offset) is rope(x, [offset, offset + n)) in i32 and i64.
  const Tensor x = random_tensor({2, 11, 3, 8}, DType::f32, backend, 5);
  const RopeParams p = params(0, RopeMode::neox);
  const std::vector<float> want = rope(x, int64_t(40), p).to_vector<float>();
  for (DType pd : {DType::i32, DType::i64}) {
    const Tensor pos = arange(40, 51, 1, backend, pd);
    EXPECT_EQ(rope(x, pos, p).to_vector<float>(), want) << name(pd);
  }
}

}  // namespace
}  // namespace nascent::conformance
