// The Highway set-up every CPU kernel relies on: a kernel written with
// foreach_target.h / HWY_EXPORT / HWY_DYNAMIC_DISPATCH builds natively (run
// time choice among the compiled targets) and for wasm (one target, SIMD128,
// static dispatch), runs on a real SIMD target, and matches scalar code.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/simd_dispatch_test.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace nascent::cpu::dispatch_test {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

int64_t CompiledTarget() {
  return HWY_TARGET;
}

// y = exp(x) + 1, whole vectors, then one lane at a time.
void ExpPlusOne(const float* x, float* y, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  HWY_ASSERT(lanes >= 1);  // Links hwy::Abort, which wasm builds supply.
  const auto one = hn::Set(d, 1.0f);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(hn::Add(hn::Exp(d, hn::LoadU(d, x + i)), one), d, y + i);
  }
  for (; i < n; ++i) {
    y[i] = hn::GetLane(hn::Add(hn::Exp(d, hn::Set(d, x[i])), one));
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace nascent::cpu::dispatch_test
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <gtest/gtest.h>

#include "hwy/aligned_allocator.h"

namespace nascent::cpu::dispatch_test {

HWY_EXPORT(CompiledTarget);
HWY_EXPORT(ExpPlusOne);

namespace {

TEST(SimdDispatch, RunsTheBestCompiledTarget) {
  int64_t chosen = HWY_DYNAMIC_DISPATCH(CompiledTarget)();
  int64_t available = hwy::SupportedTargets() & HWY_TARGETS;
  ASSERT_NE(available, 0);
  // Highway's target bits are ordered best first (lowest bit).
  EXPECT_EQ(chosen, available & -available)
      << "ran " << hwy::TargetName(chosen);
  EXPECT_NE(chosen, HWY_SCALAR) << "no SIMD target was compiled";
  EXPECT_NE(chosen, HWY_EMU128) << "no SIMD target was compiled";
#ifdef __EMSCRIPTEN__
  EXPECT_EQ(chosen, HWY_WASM) << "wasm builds must use SIMD128 (-msimd128)";
#endif
}

TEST(SimdDispatch, KernelMatchesScalarCode) {
  for (size_t n : {size_t(0), size_t(1), size_t(3), size_t(16), size_t(37)}) {
    std::vector<float> x(n), y(n, -1.0f);
    for (size_t i = 0; i < n; ++i) x[i] = -4.0f + 0.25f * float(i);
    HWY_DYNAMIC_DISPATCH(ExpPlusOne)(x.data(), y.data(), n);
    for (size_t i = 0; i < n; ++i) {
      double want = std::exp(double(x[i])) + 1.0;
      EXPECT_NEAR(y[i], want, 4e-7 * want) << "x = " << x[i] << ", n = " << n;
    }
  }
}

// Kernels may take scratch buffers from hwy::AllocateAligned (a wasm build
// gets it from cmake/wasm/hwy_runtime.cpp).
TEST(SimdDispatch, AlignedAllocationsAreAlignedAndUsable) {
  for (size_t n : {size_t(1), size_t(3), size_t(64), size_t(100000)}) {
    hwy::AlignedFreeUniquePtr<float[]> p = hwy::AllocateAligned<float>(n);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p.get()) % HWY_ALIGNMENT, 0u);
    for (size_t i = 0; i < n; ++i) p[i] = float(i);
    EXPECT_EQ(p[n - 1], float(n - 1));
  }
}

struct Counted {
  explicit Counted(int* destroyed) : destroyed_(destroyed) {}
  ~Counted() { ++*destroyed_; }
  int* destroyed_;
};

TEST(SimdDispatch, AlignedObjectsAreDestroyedOnce) {
  int destroyed = 0;
  {
    hwy::AlignedUniquePtr<Counted> p =
        hwy::MakeUniqueAligned<Counted>(&destroyed);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p.get()) % HWY_ALIGNMENT, 0u);
    EXPECT_EQ(destroyed, 0);
  }
  EXPECT_EQ(destroyed, 1);
}

}  // namespace
}  // namespace nascent::cpu::dispatch_test
#endif  // HWY_ONCE
