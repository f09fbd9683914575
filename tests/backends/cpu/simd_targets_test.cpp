// Runs the element-wise conformance cases once per SIMD target compiled in
// and supported by this CPU (SSSE3, SSE4, AVX2, AVX-512, and Highway's
// portable EMU128, whose code paths are those of WASM and NEON builds), so
// that the emulated f16/bf16 conversions and every target's special-value
// handling are checked here, not only on the best target.
#include <gtest/gtest.h>

#include "conformance/elementwise.h"
#include "conformance/registry.h"
#include "hwy/targets.h"
#include "nascent/backends/cpu/backend.h"

namespace nascent {
namespace {

bool is_elementwise(Op op) {
  OpFamily f = info(op).family;
  return f == OpFamily::Unary || f == OpFamily::Binary ||
         f == OpFamily::Where || f == OpFamily::Copy;
}

TEST(CpuSimdTargets, ElementwiseConformanceOnEveryTarget) {
  cpu::Backend backend;
  std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
  ASSERT_FALSE(targets.empty());
  conformance::coverage().large_shapes = false;
  for (int64_t target : targets) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    for (const conformance::Case& c : conformance::cases()) {
      if (!is_elementwise(c.op)) continue;
      SCOPED_TRACE(std::string(name(c.op)) + ": " + c.label);
      c.run(backend);
    }
  }
  hwy::SetSupportedTargetsForTest(0);
  conformance::coverage().large_shapes = true;
}

}  // namespace
}  // namespace nascent
