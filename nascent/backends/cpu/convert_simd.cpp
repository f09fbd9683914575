// SIMD conversions among f32, f16 and bf16 (see simd/runs.h), compiled once per
// Highway target through foreach_target.h.
#include "nascent/backends/cpu/simd/runs.h"

// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "nascent/backends/cpu/convert_simd.cpp"
#include "hwy/foreach_target.h"  // Must come before highway.h.
#include "hwy/highway.h"
// clang-format on
#include "nascent/backends/cpu/simd/loops-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nascent::cpu::HWY_NAMESPACE {

template <class S>
void ConvertFrom(DType to, const S* src, void* dst, size_t n) {
  const hn::ScalableTag<float> d;
  switch (to) {
    case DType::f32:
      return ConvertRun(d, src, static_cast<float*>(dst), n);
    case DType::f16:
      return ConvertRun(d, src, static_cast<float16*>(dst), n);
    case DType::bf16:
      return ConvertRun(d, src, static_cast<bfloat16*>(dst), n);
    default:
      return;  // has_convert() admits only these.
  }
}

void ConvertRunAny(DType from, DType to, const void* src, void* dst, size_t n) {
  switch (from) {
    case DType::f32:
      return ConvertFrom(to, static_cast<const float*>(src), dst, n);
    case DType::f16:
      return ConvertFrom(to, static_cast<const float16*>(src), dst, n);
    case DType::bf16:
      return ConvertFrom(to, static_cast<const bfloat16*>(src), dst, n);
    default:
      return;
  }
}

}  // namespace nascent::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nascent::cpu::simd {

HWY_EXPORT(ConvertRunAny);

bool has_convert(DType from, DType to) {
  auto narrow_or_f32 = [](DType t) {
    return t == DType::f32 || t == DType::f16 || t == DType::bf16;
  };
  return from != to && narrow_or_f32(from) && narrow_or_f32(to);
}

void convert(DType from, DType to, const void* src, void* dst, int64_t n) {
  HWY_DYNAMIC_DISPATCH(ConvertRunAny)(from, to, src, dst, size_t(n));
}

}  // namespace nascent::cpu::simd
#endif  // HWY_ONCE
