// Conformance cases for fill, arange, copy and the random ops.
#include <bit>
#include <cmath>

#include "conformance/reference.h"
#include "conformance/registry.h"
#include "quant/ggml_vectors.h"

namespace nascent::conformance {
namespace {

constexpr DType kAllDTypes[] = {DType::f32,  DType::f64,    DType::f16,
                                DType::bf16, DType::i32,    DType::i64,
                                DType::u8,   DType::boolean};

CONFORMANCE_CASE(fill, "every dtype, edge shapes") {
  for (DType dt : kAllDTypes) {
    for (const Shape& s : {Shape{}, Shape{0}, Shape{3, 1, 5}, Shape{70001}}) {
      Tensor t = full(s, 3, backend, dt);
      double want = dt == DType::boolean ? 1.0 : 3.0;
      expect_close(t,
                   HostTensor{s, std::vector<double>(size_t(numel(s)), want)},
                   fmt::format("fill {} {}", name(dt), to_string(s)));
    }
  }
  // Integers keep all 64 bits.
  Tensor big = full({2}, int64_t(1) << 60, backend, DType::i64);
  EXPECT_EQ(big.to_vector<int64_t>()[1], int64_t(1) << 60);
}

CONFORMANCE_CASE(arange, "int and float steps") {
  Tensor a = arange(int64_t(3), int64_t(-8), int64_t(-3), backend, DType::i64);
  EXPECT_EQ(a.to_vector<int64_t>(), (std::vector<int64_t>{3, 0, -3, -6}));
  Tensor b = arange(0.5, 2.0, 0.25, backend, DType::f64);
  HostTensor want{{6}, {0.5, 0.75, 1.0, 1.25, 1.5, 1.75}};
  expect_close(b, want, "arange f64");
  EXPECT_EQ(arange(0, backend).numel(), 0);
}

// v rounded to nearest even into a float format of mant_bits stored
// mantissa bits, min_exp the least normal exponent, max its largest finite
// value (overflow gives inf): the float64 reference of every narrowing
// float conversion.
double round_to_format(double v, int mant_bits, int min_exp, double max) {
  if (!std::isfinite(v) || v == 0.0) return v;
  int e = 0;
  std::frexp(v, &e);  // |v| in [2^(e-1), 2^e).
  const int quantum = std::max(e - 1, min_exp) - mant_bits;
  // nearbyint rounds to nearest even (the default mode); the quotient is
  // exact, so this is the one rounding.
  const double out =
      std::ldexp(std::nearbyint(std::ldexp(v, -quantum)), quantum);
  return std::fabs(out) > max ? std::copysign(INFINITY, v) : out;
}

double round_to(DType to, double v) {
  switch (to) {
    case DType::f32:
      return round_to_format(v, 23, -126, 3.4028234663852886e38);
    case DType::f16:
      return round_to_format(v, 10, -14, 65504.0);
    case DType::bf16:
      return round_to_format(v, 7, -126, 3.3895313892515355e38);
    default:
      return v;
  }
}

// Expects got to hold want exactly, signed zeros and infinities included.
void expect_exact(const Tensor& got, const std::vector<double>& want,
                  const std::string& what) {
  const std::vector<double> g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.size()) << what;
  int failures = 0;
  for (size_t i = 0; i < g.size() && failures < 5; ++i) {
    const bool same =
        std::isnan(want[i])
            ? std::isnan(g[i])
            : g[i] == want[i] && std::signbit(g[i]) == std::signbit(want[i]);
    if (!same) {
      ++failures;
      ADD_FAILURE() << what << ": element " << i << " is " << g[i]
                    << ", expected " << want[i];
    }
  }
}

CONFORMANCE_CASE(copy, "every dtype pair, strided, exact") {
  // Every conversion is exact or one correct rounding (to nearest even), so
  // no tolerance: f64 goes to f16/bf16 through f32, as core's from_double
  // does.
  for (DType from : kAllDTypes) {
    for (Layout layout : kLayouts) {
      Tensor x = random_tensor({5, 7}, from, backend, 11, layout, -3.0, 3.0);
      HostTensor hx = to_host(x);
      for (DType to : kAllDTypes) {
        Tensor y = x.cast(to).contiguous();
        std::vector<double> want = hx.v;
        for (double& v : want) {
          if (to == DType::boolean) {
            v = v != 0.0;
          } else if (is_integer(to) && is_floating(from)) {
            v = std::trunc(v) + 0.0;  // No -0 in integers; no saturation here.
            if (to == DType::u8) v = std::max(v, 0.0);
          } else if (to == DType::u8) {
            v = double(uint8_t(int64_t(v)));  // Integers wrap, as in C.
          } else if (to == DType::f16 || to == DType::bf16) {
            v = round_to(to, round_to(DType::f32, v));
          } else {
            v = round_to(to, v);
          }
        }
        expect_exact(y, want,
                     fmt::format("copy {} -> {} ({})", name(from), name(to),
                                 name(layout)));
      }
    }
  }
}

CONFORMANCE_CASE(copy, "f32 -> f16/bf16 bit for bit as ggml rounds") {
  // ggml's conversions of edge values (ties, subnormals, overflow, inf,
  // NaN) and random bits (quant/ggml_vectors.h), repeated to 3 x 61 + 2
  // values so that the vector loops and their tails both see each; from f32
  // and from f64 (the same values, exact there), contiguous and strided.
  std::vector<float> f;
  std::vector<uint16_t> h, b;
  for (int rep = 0; rep < 3; ++rep) {
    for (const test::ggml::HalfVector& v : test::ggml::kHalfVectors) {
      f.push_back(test::ggml::bits_float(v.f32));
      h.push_back(v.f16);
      b.push_back(v.bf16);
    }
  }
  const int64_t n = int64_t(f.size());
  for (const DType from : {DType::f32, DType::f64}) {
    for (const bool strided : {false, true}) {
      // Strided: every other element of a buffer twice as long.
      std::vector<float> buffer;
      for (float v : f) buffer.insert(buffer.end(), {v, 0.5f});
      Tensor x =
          strided ? from_vector(buffer, {2 * n}, backend).slice(0, 0, 2 * n, 2)
                  : from_vector(f, {n}, backend);
      if (from == DType::f64) x = x.cast(DType::f64);
      const std::string what =
          fmt::format("{}{}", name(from), strided ? " strided" : " contiguous");
      const std::vector<float16> gh = x.cast(DType::f16).to_vector<float16>();
      const std::vector<bfloat16> gb =
          x.cast(DType::bf16).to_vector<bfloat16>();
      ASSERT_EQ(gh.size(), h.size());
      ASSERT_EQ(gb.size(), b.size());
      int failures = 0;
      for (size_t i = 0; i < h.size() && failures < 5; ++i) {
        // A NaN must come out a quiet NaN of the same sign; its payload is
        // not fixed (x86's F16C keeps the top payload bits where ggml's
        // and core's scalar conversions give 0x7e00).
        const bool nan = std::isnan(f[i]);
        const uint16_t mask = nan ? 0xfe00 : 0xffff;
        if ((gh[i].bits & mask) != (h[i] & mask) || gb[i].bits != b[i]) {
          ++failures;
          ADD_FAILURE() << what << ": f32 bits " << std::hex
                        << test::ggml::float_bits(f[i]) << " gave f16 "
                        << gh[i].bits << " bf16 " << gb[i].bits
                        << ", ggml gives " << h[i] << " " << b[i];
        }
      }
    }
  }
}

CONFORMANCE_CASE(copy, "every f16 and bf16 bit pattern to f32 and f64") {
  // The value of each pattern from its fields in float64 (NaNs stay NaN).
  auto value = [](uint16_t bits, int exp_bits, int mant_bits) {
    const int bias = (1 << (exp_bits - 1)) - 1;
    const int e = (bits >> mant_bits) & ((1 << exp_bits) - 1);
    const int m = bits & ((1 << mant_bits) - 1);
    const double sign = bits >> 15 ? -1.0 : 1.0;
    if (e == (1 << exp_bits) - 1) return m ? double(NAN) : sign * INFINITY;
    if (e == 0) return sign * std::ldexp(m, 1 - bias - mant_bits);
    return sign * std::ldexp(m + (1 << mant_bits), e - bias - mant_bits);
  };
  std::vector<float16> h(65536);
  std::vector<bfloat16> b(65536);
  std::vector<double> wh(65536), wb(65536);
  for (uint32_t i = 0; i < 65536; ++i) {
    h[i].bits = b[i].bits = uint16_t(i);
    wh[i] = value(uint16_t(i), 5, 10);
    wb[i] = value(uint16_t(i), 8, 7);
  }
  const Tensor th = from_vector(h, {256, 256}, backend);
  const Tensor tb = from_vector(b, {256, 256}, backend);
  for (const DType to : {DType::f32, DType::f64}) {
    expect_exact(th.cast(to), wh, fmt::format("f16 -> {}", name(to)));
    expect_exact(tb.cast(to), wb, fmt::format("bf16 -> {}", name(to)));
    // Transposed: the strided path.
    std::vector<double> wt(65536);
    for (int r = 0; r < 256; ++r) {
      for (int c = 0; c < 256; ++c)
        wt[size_t(r * 256 + c)] = wh[size_t(c * 256 + r)];
    }
    expect_exact(th.transpose(0, 1).cast(to).contiguous(), wt,
                 fmt::format("f16 -> {} transposed", name(to)));
  }
}

// Philox-4x32-10 words (counter = block, key = seed, as core/random.h
// defines them), from an implementation written separately in Python from
// Salmon et al. and checked against the three philox4x32_10 entries of
// Random123's kat_vectors (all-zero, all-ones and pi counters and keys):
// known answers, not core's own uniform4/normal4.
struct PhiloxWords {
  uint64_t seed, block;
  uint32_t w[4];
};
constexpr PhiloxWords kPhilox[] = {
    {7, 0, {0xf4607a2d, 0xc009f9dc, 0x1d3aba42, 0x15edac82}},
    {7, 1, {0x682e8e9b, 0xcb97bc13, 0x2bfaff6b, 0xf535eea6}},
    {7, 2, {0x018e23c0, 0x0229fbb4, 0xcec27c6a, 0xd94320a7}},
    {7, 3, {0x63e41616, 0x40086b6f, 0x25d49543, 0x2397279f}},
    {3, 0, {0xd1104d77, 0x1de847ce, 0xa7f2ec5a, 0xc3e627f9}},
    {3, 1, {0x44aa54a1, 0x8d31473d, 0x39713e09, 0x9b939f1f}},
    {3, 2, {0xc4b04e6e, 0xc90cad3f, 0xd27230ee, 0x5c63fa10}},
    {3, 3, {0x2379e619, 0x27d27129, 0xad8a78f5, 0xc46287e2}},
    {5, 0, {0xc417681d, 0x11d85194, 0xfbd62c3b, 0xf739e278}},
    {5, 1, {0x58e37bc0, 0x27fa600a, 0x930e368e, 0x1e94611d}},
    // A key and a counter of more than 32 bits.
    {0x0123456789abcdef,
     (uint64_t(1) << 32) + 5,
     {0xb8b243f7, 0xda8fb9a8, 0x46004299, 0xe54c389c}},
    {0x0123456789abcdef,
     (uint64_t(1) << 32) + 6,
     {0x4a4ddc75, 0x15e29283, 0xd1cf459d, 0x4d375f15}},
};

// The uniforms in [0, 1) of `blocks` blocks of `seed` from `first` on
// (random.h: the top 24 bits of each word over 2^24), in float64.
std::vector<double> known_uniforms(uint64_t seed, uint64_t first, int blocks) {
  std::vector<double> out;
  for (uint64_t blk = first; blk < first + uint64_t(blocks); ++blk) {
    bool found = false;
    for (const PhiloxWords& p : kPhilox) {
      if (p.seed != seed || p.block != blk) continue;
      for (uint32_t w : p.w) out.push_back(std::ldexp(double(w >> 8), -24));
      found = true;
    }
    EXPECT_TRUE(found) << "no known words for seed " << seed << " block "
                       << blk;
  }
  return out;
}

CONFORMANCE_CASE(uniform, "range, moments and Philox known answers") {
  Generator gen(7);
  Tensor u = uniform({100000}, -1.0, 3.0, backend, gen, DType::f64);
  std::vector<double> v = u.to_vector<double>();
  double sum = 0;
  for (double x : v) {
    ASSERT_GE(x, -1.0);
    ASSERT_LT(x, 3.0);
    sum += x;
  }
  EXPECT_NEAR(sum / double(v.size()), 1.0, 0.02);
  // The first 16 values are low + (high - low) * u of the known words:
  // exact in f64 (u has 24 bits), and in f32 for [0, 1).
  const std::vector<double> known = known_uniforms(7, 0, 4);
  for (size_t i = 0; i < known.size(); ++i) {
    EXPECT_EQ(v[i], -1.0 + 4.0 * known[i]) << i;
  }
  // Element i depends only on (seed, offset + i): a second draw continues.
  Generator g1(7), g2(7);
  Tensor whole = uniform({10}, 0, 1, backend, g1);
  g2.advance(4);
  Tensor tail = uniform({6}, 0, 1, backend, g2);
  std::vector<float> w = whole.to_vector<float>(), t = tail.to_vector<float>();
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(double(w[i]), known[i]) << i;
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(t[i], w[i + 4]) << i;
  // A 64-bit seed at an offset past 2^32 blocks, starting mid-block.
  Generator far(0x0123456789abcdef);
  far.advance(4 * ((uint64_t(1) << 32) + 5));
  const std::vector<double> kf =
      known_uniforms(0x0123456789abcdef, (uint64_t(1) << 32) + 5, 2);
  std::vector<float> got = uniform({8}, 0, 1, backend, far).to_vector<float>();
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(double(got[i]), kf[i]) << i;
}

CONFORMANCE_CASE(normal, "moments and Philox known answers") {
  Generator gen(3);
  Tensor n = normal({200000}, 2.0, 0.5, backend, gen, DType::f32);
  std::vector<double> v = n.to_vector<double>();
  double s = 0, s2 = 0;
  for (double x : v) s += x, s2 += x * x;
  double m = s / double(v.size());
  EXPECT_NEAR(m, 2.0, 0.01);
  EXPECT_NEAR(std::sqrt(s2 / double(v.size()) - m * m), 0.5, 0.01);
  // Box-Muller (random.h) of the known words in float64: lanes (0, 1) and
  // (2, 3) give r cos(2 pi u) and r sin(2 pi u), r = sqrt(-2 log(1 - u')).
  // The f32 computation is a few ulps off (its 2 pi u is rounded).
  const std::vector<double> u = known_uniforms(3, 0, 4);
  const double two_pi = 6.283185307179586;
  for (size_t i = 0; i < u.size(); i += 2) {
    const double r = std::sqrt(-2.0 * std::log(1.0 - u[i]));
    EXPECT_NEAR(v[i], 2.0 + 0.5 * r * std::cos(two_pi * u[i + 1]), 4e-6) << i;
    EXPECT_NEAR(v[i + 1], 2.0 + 0.5 * r * std::sin(two_pi * u[i + 1]), 4e-6)
        << i + 1;
  }
}

CONFORMANCE_CASE(bernoulli, "rate and Philox known answers") {
  Generator gen(5);
  Tensor b = bernoulli({100000}, 0.3, backend, gen, DType::f32);
  std::vector<float> v = b.to_vector<float>();
  double sum = 0;
  for (float x : v) {
    ASSERT_TRUE(x == 0.0f || x == 1.0f);
    sum += x;
  }
  EXPECT_NEAR(sum / 100000.0, 0.3, 0.01);
  // 1 exactly where the known uniform is below p.
  const std::vector<double> u = known_uniforms(5, 0, 2);
  for (size_t i = 0; i < u.size(); ++i) {
    EXPECT_EQ(v[i], u[i] < 0.3 ? 1.0f : 0.0f) << i;
  }
}

}  // namespace
}  // namespace nascent::conformance
