// Per-target vector math for the unary kernels: Highway's contrib math with
// the special values its fast paths skip (NaN, inf, domain edges, sin/cos
// beyond their valid range), and exp/tanh/erf/erfc/gelu of our own.
//
// Error bounds (f32; the conformance suite checks them on every target):
// exp 1 ulp (measured 0.73 with the table, AVX2), log 4, log1p 2, expm1 4,
// sin/cos 3, tanh 4 (measured 2.8; f64 uses Highway's), sigmoid 2 (1.6),
// erf 4 (measured 1.5 with FMA, 1.45 with ErfTable), gelu 4 + x^2 (the
// x^2 from rounding x^2/2 without FMA; with FMA it measures 2.2), pow 1
// (computed in f64).

#if defined(NASCENT_CPU_SIMD_MATH_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NASCENT_CPU_SIMD_MATH_INL_H_
#undef NASCENT_CPU_SIMD_MATH_INL_H_
#else
#define NASCENT_CPU_SIMD_MATH_INL_H_
#endif

#include <cmath>
#include <limits>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace nascent::cpu::HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

// c_n x^n + ... + c_1 x + c_0 by Horner's scheme, coefficients given from
// the highest power down: one FMA each after the first.
template <class D, class V, class... C>
HWY_INLINE V Horner(D d, V x, float highest, C... lower) {
  V p = hn::Set(d, highest);
  ((p = hn::MulAdd(p, x, hn::Set(d, lower))), ...);
  return p;
}

// r, except where x is NaN: there x itself.
template <class D, class V>
HWY_INLINE V KeepNaN(D /*d*/, V x, V r) {
  return hn::IfThenElse(hn::IsNaN(x), x, r);
}

// Highway's Exp is valid up to 104 (f32) and maps NaN to 0; past the
// clamp the result is inf either way.
template <class D, class V>
HWY_INLINE V SafeExp(D d, V x) {
  using T = hn::TFromD<D>;
  const V hi = hn::Set(d, T(sizeof(T) == 4 ? 104.0 : 750.0));
  return KeepNaN(d, x, hn::Exp(d, hn::Min(x, hi)));
}

// SafeExp out of line, so that the loops around FastExp keep their
// constants in registers.
template <class D, class V>
HWY_NOINLINE V SafeExpCold(D d, V x) {
  return SafeExp(d, x);
}

// e^r - 1 for |r| <= ln(2) / 2 (Highway's polynomial for Exp, 1 ulp).
template <class D, class V>
HWY_INLINE V ExpM1Reduced(D d, V r) {
  const V r2 = hn::Mul(r, r);
  const V p = hn::MulAdd(
      hn::MulAdd(hn::MulAdd(hn::Set(d, 0.000198527617612853646278381f), r,
                            hn::Set(d, 0.00139304355252534151077271f)),
                 r2,
                 hn::MulAdd(hn::Set(d, 0.00833336077630519866943359f), r,
                            hn::Set(d, 0.0416664853692054748535156f))),
      r2,
      hn::MulAdd(hn::Set(d, 0.166666671633720397949219f), r, hn::Set(d, 0.5f)));
  return hn::MulAdd(p, r2, r);
}

// e^x for f32 lanes with x in [-87.3, 88] (2^n normal, see FastExp):
// n = round(x / ln 2) comes from adding 1.5 * 2^23 (so t's low mantissa
// bits hold n), r = x - n ln 2 in two parts, e^r by Highway's polynomial
// (the same 1-ulp result), and 2^n goes straight into the exponent bits:
// about half of Highway's instructions.
template <class D, class V>
HWY_INLINE V ExpInRange(D d, V x) {
  const hn::RebindToSigned<D> di;
  const V shift = hn::Set(d, 12582912.0f);  // 1.5 * 2^23
  const V t = hn::MulAdd(x, hn::Set(d, 1.44269504088896341f), shift);
  const V n = hn::Sub(t, shift);
  V r = hn::MulAdd(n, hn::Set(d, -0.693145751953125f), x);
  r = hn::MulAdd(n, hn::Set(d, -1.428606765330187045e-6f), r);
  const V em1 = ExpM1Reduced(d, r);
  // t's bits are 0x4B400000 + n; shifted by 23 only n << 23 is left.
  const auto scale = hn::BitCast(
      d,
      hn::Add(hn::ShiftLeft<23>(hn::BitCast(di, t)), hn::Set(di, 0x3F800000)));
  return hn::Mul(hn::Add(em1, hn::Set(d, 1.0f)), scale);
}

// Whether ExpTable serves D: x86 vectors of 8 or more f32 lanes, where
// the table fits one vector and a lookup is one permute.
template <class D>
constexpr bool kExpTable =
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || \
    HWY_TARGET == HWY_AVX3_DL
    sizeof(hn::TFromD<D>) == 4 && hn::MaxLanes(D()) >= 8;
#else
    false;
#endif

// e^x for f32 lanes with x in [-87.3, 88] in 7 multiply-adds instead of
// ExpInRange's 11: n = round(8x / ln 2), r = x - n ln(2) / 8 in two parts
// (|r| <= ln(2) / 16, so e^r - 1 needs Taylor to degree 4 only, error
// 1e-9), 2^((n mod 8) / 8) from an 8-entry table (one permute) with n / 8
// added to its exponent, and T + T (e^r - 1) in one FMA. The table's
// rounding leaves 0.75 ulp at most (measured), inside exp's 1 ulp.
template <class D, class V>
HWY_INLINE V ExpTable(D d, V x) {
  // 2^(j/8), j = 0..7, twice: a 16-lane vector loads it whole.
  alignas(64) static constexpr float kPow2[16] = {
      1.0f,          1.0905077327f, 1.1892071150f, 1.2968395547f,
      1.4142135624f, 1.5422108254f, 1.6817928305f, 1.8340080864f,
      1.0f,          1.0905077327f, 1.1892071150f, 1.2968395547f,
      1.4142135624f, 1.5422108254f, 1.6817928305f, 1.8340080864f};
  const hn::RebindToSigned<D> di;
  const V shift = hn::Set(d, 12582912.0f);  // 1.5 * 2^23, as ExpInRange.
  const V t = hn::MulAdd(x, hn::Set(d, 11.5415603271117073f), shift);
  const V n = hn::Sub(t, shift);
  // ln(2) / 8 with 12 trailing zero bits (n * hi is exact), and the rest.
  V r = hn::MulAdd(n, hn::Set(d, -0.086639404296875f), x);
  r = hn::MulAdd(n, hn::Set(d, -3.993273118160778e-06f), r);
  const V q =
      hn::MulAdd(hn::MulAdd(hn::Set(d, 1.0f / 24), r, hn::Set(d, 1.0f / 6)), r,
                 hn::Set(d, 0.5f));
  const V em1 = hn::MulAdd(q, hn::Mul(r, r), r);
  const auto ti = hn::BitCast(di, t);  // 0x4B400000 + n
  const V table = hn::TableLookupLanes(
      hn::Load(d, kPow2), hn::IndicesFromVec(d, hn::And(ti, hn::Set(di, 7))));
  const V scaled =
      hn::BitCast(d, hn::Add(hn::BitCast(di, table),
                             hn::ShiftLeft<23>(hn::ShiftRight<3>(ti))));
  return hn::MulAdd(scaled, em1, scaled);
}

// Piecewise polynomials from 8-entry tables, on kExpTable's targets (a
// table row is one vector, a lookup one permute). For v in [-0.5, 7.5],
// piece k = round(v) and u = v - k in [-0.5, 0.5]; the result is
// sum_j c[j][k] u^j by Horner. Every row holds its 8 entries twice, so
// that a 16-lane vector loads it whole.
template <size_t kTerms, class D, class V>
HWY_INLINE V PolyTable8(D d, const float (*c)[16], V v) {
  const hn::RebindToSigned<D> di;
  // As in ExpTable: adding 1.5 * 2^23 rounds v, and the low mantissa bits
  // of the sum hold k.
  const V shift = hn::Set(d, 12582912.0f);
  const V t = hn::Add(v, shift);
  const auto idx =
      hn::IndicesFromVec(d, hn::And(hn::BitCast(di, t), hn::Set(di, 7)));
  const V u = hn::Sub(v, hn::Sub(t, shift));
  V p = hn::TableLookupLanes(hn::Load(d, c[kTerms - 1]), idx);
  for (size_t j = kTerms - 1; j-- > 0;) {
    p = hn::MulAdd(p, u, hn::TableLookupLanes(hn::Load(d, c[j]), idx));
  }
  return p;
}

// erf(x) for f32 lanes without exp or division: a P_k(a) with a = |x|
// and P_k a degree-6 fit of erf(a) / a on [k / 2, (k + 1) / 2] (relative
// error 8e-9 before rounding the coefficients to f32, 1.0 ulp after), with
// x's sign. Past a = 3.99 erf is 1 in f32, and so is 3.99 P_7(3.99).
template <class D, class V>
HWY_INLINE V ErfTable(D d, V x) {
  alignas(64) static constexpr float kErf[7][16] = {
      {1.10530555f, 0.948207498f, 0.738320112f, 0.563812375f, 0.44379434f,
       0.363599777f, 0.307690978f, 0.266666651f, 1.10530555f, 0.948207498f,
       0.738320112f, 0.563812375f, 0.44379434f, 0.363599777f, 0.307690978f,
       0.266666651f},
      {-0.0905827433f, -0.203517556f, -0.200719655f, -0.146010697f,
       -0.0970337689f, -0.0660024509f, -0.0473325849f, -0.0355554335f,
       -0.0905827433f, -0.203517556f, -0.200719655f, -0.146010697f,
       -0.0970337689f, -0.0660024509f, -0.0473325849f, -0.0355554335f},
      {-0.0838377103f, -0.0250543989f, 0.0211574994f, 0.0285236053f,
       0.0197774917f, 0.0118538756f, 0.00727463793f, 0.00474050408f,
       -0.0838377103f, -0.0250543989f, 0.0211574994f, 0.0285236053f,
       0.0197774917f, 0.0118538756f, 0.00727463793f, 0.00474050408f},
      {0.0130864792f, 0.0211655293f, 0.00829272252f, -0.00170914922f,
       -0.0031884776f, -0.00202993304f, -0.00111164863f, -0.000631793344f,
       0.0130864792f, 0.0211655293f, 0.00829272252f, -0.00170914922f,
       -0.0031884776f, -0.00202993304f, -0.00111164863f, -0.000631793344f},
      {0.00556332944f, -0.0015534932f, -0.00362352841f, -0.00122977607f,
       0.00017828244f, 0.000295042584f, 0.000165521793f, 8.40096327e-05f,
       0.00556332944f, -0.0015534932f, -0.00362352841f, -0.00122977607f,
       0.00017828244f, 0.000295042584f, 0.000165521793f, 8.40096327e-05f},
      {-0.00109282846f, -0.0011647077f, 0.000252689351f, 0.000464436744f,
       0.000111617548f, -2.10831186e-05f, -2.24100586e-05f, -1.11142617e-05f,
       -0.00109282846f, -0.0011647077f, 0.000252689351f, 0.000464436744f,
       0.000111617548f, -2.10831186e-05f, -2.24100586e-05f, -1.11142617e-05f},
      {-0.000280198175f, 0.00022117552f, 0.000155964517f, -5.176372e-05f,
       -4.40028416e-05f, -5.65033406e-06f, 2.12568943e-06f, 1.39493375e-06f,
       -0.000280198175f, 0.00022117552f, 0.000155964517f, -5.176372e-05f,
       -4.40028416e-05f, -5.65033406e-06f, 2.12568943e-06f, 1.39493375e-06f}};
  const V a = hn::Min(hn::Abs(x), hn::Set(d, 3.99f));
  const V v = hn::MulAdd(a, hn::Set(d, 2.0f), hn::Set(d, -0.5f));
  const V r = hn::Mul(a, PolyTable8<7>(d, kErf, v));
  return KeepNaN(d, x, hn::CopySignToAbs(r, x));
}

// e^x with every special value of SafeExp; vectors with all lanes in
// [-87.3, 87.3] or NaN (nearly all; NaN stays NaN on either path) take the
// short path. With kNonPositive the caller's x is <= 0 or NaN (sigmoid's
// e^-|x|, the e^-z^2 of erfc and gelu): only the lower end needs a check.
template <bool kNonPositive = false, class D, class V>
HWY_INLINE V FastExp(D d, V x) {
  if constexpr (sizeof(hn::TFromD<D>) != 4) {
    return SafeExp(d, x);
  } else {
    const auto far = kNonPositive ? hn::Lt(x, hn::Set(d, -87.3f))
                                  : hn::Gt(hn::Abs(x), hn::Set(d, 87.3f));
    if (HWY_UNLIKELY(!hn::AllFalse(d, far))) return SafeExpCold(d, x);
    if constexpr (kExpTable<D>) {
      return ExpTable(d, x);
    } else {
      return ExpInRange(d, x);
    }
  }
}

// e^x for x <= 0 in sums of exponentials (softmax, logsumexp), where a term
// below 2^-126 of a sum that is at least 1 may as well be 0: those lanes,
// -inf and NaN give 0, with no branch (masked attention rows are full of
// -inf).
template <class D, class V>
HWY_INLINE V ExpNonPositive(D d, V x) {
  if constexpr (sizeof(hn::TFromD<D>) != 4) {
    return hn::Exp(d, x);
  } else {
    const V lo = hn::Set(d, -87.3f);
    const auto keep = hn::Ge(x, lo);
    return hn::IfThenElseZero(
        keep, ExpInRange(d, hn::Min(hn::Max(x, lo), hn::Zero(d))));
  }
}

template <class D, class V>
HWY_INLINE V SafeExpm1(D d, V x) {
  using T = hn::TFromD<D>;
  const V hi = hn::Set(d, T(sizeof(T) == 4 ? 104.0 : 750.0));
  return KeepNaN(d, x, hn::Expm1(d, hn::Min(x, hi)));
}

// Log is only valid on (0, inf): 0 gives -inf, inf gives inf, negative
// numbers and NaN give NaN.
template <class D, class V>
HWY_INLINE V SafeLog(D d, V x) {
  const V zero = hn::Zero(d), inf = hn::Inf(d);
  const V special =
      hn::IfThenElse(hn::Eq(x, zero), hn::Neg(inf),
                     hn::IfThenElse(hn::Eq(x, inf), inf, hn::NaN(d)));
  const auto valid = hn::And(hn::Gt(x, zero), hn::Lt(x, inf));
  return hn::IfThenElse(valid, hn::Log(d, x), special);
}

template <class D, class V>
HWY_INLINE V SafeLog1p(D d, V x) {
  using T = hn::TFromD<D>;
  const V minus_one = hn::Set(d, T(-1)), inf = hn::Inf(d);
  const V special =
      hn::IfThenElse(hn::Eq(x, minus_one), hn::Neg(inf),
                     hn::IfThenElse(hn::Eq(x, inf), inf, hn::NaN(d)));
  const auto valid = hn::And(hn::Gt(x, minus_one), hn::Lt(x, inf));
  return hn::IfThenElse(valid, hn::Log1p(d, x), special);
}

// Highway's sin and cos reduce the argument with a few digits of pi, good
// for |x| <= 39000. The rare vector with a larger finite lane is done with
// the C library, lane by lane.
template <bool kSin, class D, class V>
HWY_NOINLINE V SinCosScalar(D d, V x) {
  using T = hn::TFromD<D>;
  alignas(64) T lanes[HWY_MAX_BYTES / sizeof(T)];
  hn::Store(x, d, lanes);
  for (size_t i = 0; i < hn::Lanes(d); ++i) {
    double v = double(lanes[i]);
    lanes[i] = T(kSin ? std::sin(v) : std::cos(v));
  }
  return hn::Load(d, lanes);
}

template <bool kSin, class D, class V>
HWY_INLINE V SafeSinCos(D d, V x) {
  using T = hn::TFromD<D>;
  const auto finite = hn::IsFinite(x);
  const auto far = hn::And(finite, hn::Gt(hn::Abs(x), hn::Set(d, T(39000))));
  if (HWY_UNLIKELY(!hn::AllFalse(d, far))) return SinCosScalar<kSin>(d, x);
  const V r = kSin ? hn::Sin(d, x) : hn::Cos(d, x);
  return hn::IfThenElse(finite, r, hn::NaN(d));
}

// 1 / (1 + e^-x) for x >= 0 and e^x / (1 + e^x) below, so that e^-|x|
// never overflows and the tail keeps its relative precision. -|x| is x
// with the sign bit set. (Not IfNegativeThenElse: Highway 1.0.3's SSSE3
// version blends bits, not lanes.)
template <class D, class V>
HWY_INLINE V Sigmoid(D d, V x) {
  using T = hn::TFromD<D>;
  const V one = hn::Set(d, T(1));
  const V e = FastExp<true>(d, hn::Or(x, hn::SignBit(d)));
  return hn::Div(hn::IfThenElse(hn::Lt(x, hn::Zero(d)), e, one),
                 hn::Add(one, e));
}

// tanh(x) for f32 lanes as x P(x^2) / Q(x^2), a 13/6 rational fit on
// [-9, 9] (Eigen's generic_fast_tanh_float, coefficients divided by its
// Q(0) so that the leading term is exactly x: tiny and subnormal x come
// back unchanged). Max error 2.82 ulp over every float of [-10, 10]
// (bound 4). Past |x| = 9 tanh is 1 in f32. One division and no exp:
// about 40% fewer instructions than -expm1(-2|x|) / (2 + expm1(-2|x|)).
template <class D, class V>
HWY_INLINE V TanhF32(D d, V x) {
  const V c = hn::Min(hn::Max(x, hn::Set(d, -9.0f)), hn::Set(d, 9.0f));
  const V c2 = hn::Mul(c, c);
  const V p = hn::MulAdd(
      hn::Mul(c, c2),
      Horner(d, c2, -5.64167616e-14f, 4.08741721e-11f, -1.75837886e-08f,
             1.04674991e-05f, 0.00303609832f, 0.130225539f),
      c);
  const V q = Horner(d, c2, 0.000244866096f, 0.0242227633f, 0.463558376f, 1.0f);
  return KeepNaN(d, x, hn::Div(p, q));
}

// x * s for an s in [0, 1] that is 0 at x = -inf, where x as the lowest
// finite value makes the product -0, not NaN (2 instructions instead of a
// compare and a select). For a sigmoid s of a function of x, s is NaN
// wherever x is.
template <class D, class V>
HWY_INLINE V TimesSigmoid(D d, V x, V s) {
  using T = hn::TFromD<D>;
  return hn::Mul(hn::Max(x, hn::Set(d, std::numeric_limits<T>::lowest())), s);
}

// erfc(z) for z >= 0 given z^2 = hi + lo exactly (lo from an FMA):
// erfc(z) = e^-z^2 * P(z) / Q(z), a rational fit of erfc(z) e^(z^2) on
// [0, 10] with relative error 6e-9 (all coefficients positive, so Horner
// loses little); e^-(hi + lo) = e^-hi (1 - lo). Without FMA lo is 0 and the
// error grows as z^2 ulps. f32 only.
template <class D, class V>
HWY_INLINE V ErfcPositive(D d, V z, V hi, V lo) {
  const V p = Horner(d, z, 0.0327099003f, 0.228806391f, 0.730739176f,
                     1.23758483f, 1.0f);
  const V q = Horner(d, z, 0.0579760745f, 0.405575573f, 1.32375383f,
                     2.40043521f, 2.36596465f, 1.0f);
  const V e = FastExp<true>(d, hn::Neg(hi));  // hi >= 0
  return hn::Mul(hn::Div(p, q), hn::NegMulAdd(lo, e, e));
}

// erf(x): x * P(x^2) below 0.75 (a fit with relative error 1.4e-9), else
// 1 - erfc(|x|) with x's sign. Past |x| = 4, erf is 1 in f32.
template <class D, class V>
HWY_INLINE V ErfRational(D d, V x) {
  const V a = hn::Min(hn::Abs(x), hn::Set(d, 4.0f));
  const V x2 = hn::Mul(x, x);
  const V small =
      hn::Mul(x, Horner(d, x2, -0.000674954324f, 0.00511435f, -0.0268346276f,
                        0.112833768f, -0.3761262f, 1.12837911f));
  const V hi = hn::Mul(a, a);
  const V lo = hn::MulSub(a, a, hi);
  const V large =
      hn::CopySign(hn::Sub(hn::Set(d, 1.0f), ErfcPositive(d, a, hi, lo)), x);
  const V r =
      hn::IfThenElse(hn::Lt(hn::Abs(x), hn::Set(d, 0.75f)), small, large);
  return KeepNaN(d, x, r);
}

// erf(x): the table form where permutes are cheap enough, else the one
// above.
template <class D, class V>
HWY_INLINE V Erf(D d, V x) {
  if constexpr (kExpTable<D>) {
    return ErfTable(d, x);
  } else {
    return ErfRational(d, x);
  }
}

// gelu(x) = x * Phi(x), Phi(x) = erfc(-x / sqrt(2)) / 2, so that the tail
// for negative x keeps its relative precision (1 + erf(x / sqrt(2)) would
// cancel). Phi(-a) = e^(-a^2 / 2) P(a) / Q(a): ErfcPositive's fit with its
// coefficients rescaled from z = a / sqrt(2) to a and P's halved (two
// multiplies fewer); -a^2 / 2 = hi + lo exactly (lo from an FMA).
template <class D, class V>
HWY_INLINE V Gelu(D d, V x) {
  // Past |x| = 16 Phi(-|x|) is 0 in f32; the clamp also keeps x^2 finite.
  const V a = hn::Min(hn::Abs(x), hn::Set(d, 16.0f));
  const V b = hn::Mul(a, hn::Set(d, -0.5f));  // Exact.
  const V hi = hn::Mul(a, b);
  const V lo = hn::MulSub(a, b, hi);
  const V p = Horner(d, a, 0.00408873754f, 0.0404476374f, 0.182684794f,
                     0.437552303f, 0.5f);
  const V q = Horner(d, a, 0.0102488184f, 0.101393893f, 0.468017668f,
                     1.2002176f, 1.67298961f, 1.0f);
  const V e = FastExp<true>(d, hi);  // hi <= 0
  const V c = hn::Mul(hn::Div(p, q), hn::MulAdd(lo, e, e));
  const V phi =
      hn::IfThenElse(hn::Lt(x, hn::Zero(d)), c, hn::Sub(hn::Set(d, 1.0f), c));
  // phi is finite at NaN x (the clamp), so KeepNaN; at x = -inf phi is 0.
  return KeepNaN(d, x, TimesSigmoid(d, x, phi));
}

// 0.5 x (1 + tanh(u)) = x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3):
// the sigmoid form does not cancel for negative x.
template <class D, class V>
HWY_INLINE V GeluTanh(D d, V x) {
  using T = hn::TFromD<D>;
  const V x2 = hn::Mul(x, x);
  const V two_u =
      hn::Mul(hn::Mul(x, hn::Set(d, T(2 * 0.79788456080286535588))),
              hn::MulAdd(x2, hn::Set(d, T(0.044715)), hn::Set(d, T(1))));
  return TimesSigmoid(d, x, Sigmoid(d, two_u));
}

template <class D, class V>
HWY_INLINE V Silu(D d, V x) {
  return TimesSigmoid(d, x, Sigmoid(d, x));
}

#if HWY_HAVE_FLOAT64
// pow(x, y) in f64 lanes as e^(y log|x|) (for f32 results: the error of
// log and exp in f64 stays far below an f32 ulp), then C99's special cases
// (Annex F.9.4.4): signs for odd integer y, NaN for a finite negative x with
// a finite non-integer y, and 1 for pow(1, y), pow(x, 0), pow(-1, +-inf).
template <class D, class V>
HWY_INLINE V PowCore(D d, V x, V y) {
  const V one = hn::Set(d, 1.0), zero = hn::Zero(d);
  const V ax = hn::Abs(x);
  V r = SafeExp(d, hn::Mul(y, SafeLog(d, ax)));
  const auto is_int = hn::Eq(hn::Round(y), y);  // inf counts, as even.
  const V h = hn::Mul(y, hn::Set(d, 0.5));
  const auto odd = hn::AndNot(hn::Eq(hn::Round(h), h), is_int);
  const auto negative = hn::Lt(hn::CopySign(one, x), zero);  // -0 too.
  r = hn::IfThenElse(hn::And(negative, odd), hn::Neg(r), r);
  const auto domain = hn::And(hn::And(hn::Lt(x, zero), hn::IsFinite(x)),
                              hn::AndNot(is_int, hn::IsFinite(y)));
  r = hn::IfThenElse(domain, hn::NaN(d), r);
  const auto is_one = hn::Or(hn::Or(hn::Eq(x, one), hn::Eq(y, zero)),
                             hn::And(hn::Eq(ax, one), hn::IsInf(y)));
  return hn::IfThenElse(is_one, one, r);
}

// f64 lanes to f32, overflowing to inf. Highway's emulated targets
// (EMU128, SCALAR) saturate to the largest float instead; put inf back.
template <class DF, class V64>
HWY_INLINE hn::Vec<DF> DemoteToFloat(DF df, V64 v) {
  const hn::Rebind<double, DF> d;
  const auto big = hn::Ge(hn::Abs(v), hn::Set(d, 3.4028235677973366e38));
  const auto big32 =
      hn::Eq(hn::DemoteTo(df, hn::IfThenElseZero(big, hn::Set(d, 1.0))),
             hn::Set(df, 1.0f));
  const auto r = hn::DemoteTo(df, v);
  return hn::IfThenElse(big32, hn::CopySign(hn::Inf(df), r), r);
}

// pow of f32 lanes (DF holds as many lanes as an f64 vector has).
template <class DF, class VF>
HWY_INLINE VF PowF32(DF df, VF x, VF y) {
  const hn::Rebind<double, DF> d;
  return DemoteToFloat(df,
                       PowCore(d, hn::PromoteTo(d, x), hn::PromoteTo(d, y)));
}
#endif  // HWY_HAVE_FLOAT64

}  // namespace nascent::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // NASCENT_CPU_SIMD_MATH_INL_H_
