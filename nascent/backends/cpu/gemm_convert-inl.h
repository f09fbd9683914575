// Reads of GEMM operands in their storage type (f32, f64, f16, bf16) as the
// type the product is computed in, scalar and SIMD; shared by the per-target
// code of gemm_kernel.cpp and gemv_kernel.cpp.
//
// Highway's per-target header pattern: included once per SIMD target after
// hwy/highway.h (the guard toggles with HWY_TARGET_TOGGLE).
#if defined(NASCENT_BACKENDS_CPU_GEMM_CONVERT_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef NASCENT_BACKENDS_CPU_GEMM_CONVERT_INL_H_
#undef NASCENT_BACKENDS_CPU_GEMM_CONVERT_INL_H_
#else
#define NASCENT_BACKENDS_CPU_GEMM_CONVERT_INL_H_
#endif

#include <hwy/highway.h>

#include "nascent/core/dtype.h"

HWY_BEFORE_NAMESPACE();
namespace nascent::cpu {
namespace HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

template <class T>
inline T ToCompute(T v) {
  return v;
}
inline float ToCompute(float16 v) {
  return to_float(v);
}
inline float ToCompute(bfloat16 v) {
  return to_float(v);
}

template <class D>
HWY_INLINE hn::Vec<D> LoadAs(D d, const hn::TFromD<D>* p) {
  return hn::LoadU(d, p);
}
template <class D>
HWY_INLINE hn::Vec<D> LoadAs(D d, const float16* p) {
  const hn::Rebind<hwy::float16_t, D> dh;
  return hn::PromoteTo(
      d, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(p)));
}
template <class D>
HWY_INLINE hn::Vec<D> LoadAs(D d, const bfloat16* p) {
  const hn::Rebind<hwy::bfloat16_t, D> db;
  return hn::PromoteTo(
      d, hn::LoadU(db, reinterpret_cast<const hwy::bfloat16_t*>(p)));
}

// Converts n elements of a contiguous run to the compute type.
template <class D, class S, class T = hn::TFromD<D>>
void ConvertRun(D d, const S* src, size_t n, T* dst) {
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(LoadAs(d, src + i), d, dst + i);
  for (; i < n; ++i) dst[i] = ToCompute(src[i]);
}

}  // namespace HWY_NAMESPACE
}  // namespace nascent::cpu
HWY_AFTER_NAMESPACE();

#endif  // NASCENT_BACKENDS_CPU_GEMM_CONVERT_INL_H_
