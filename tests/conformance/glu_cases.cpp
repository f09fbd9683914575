// Conformance cases for swiglu and geglu: every floating dtype, i32 (taken
// as f32) and mixed dtypes (promoted), every layout of gate and of up, the
// small shapes that reach each SIMD tail, 0-d and 0-size, and a threaded
// size. The reference is silu(g) u = g u / (1 + e^-g) and gelu_tanh(g) u =
// g u / 2 (1 + tanh(sqrt(2 / pi) (g + 0.044715 g^3))) in float64; the op
// rounds the activation and the product, a few ulps (see
// unary_cases.cpp), inside the dtype's default tolerance.
#include <cmath>
#include <numbers>
#include <utility>

#include "conformance/elementwise.h"
#include "conformance/reference.h"
#include "conformance/registry.h"

namespace nascent::conformance {
namespace {

double activation(GluOp op, double g) {
  if (op == GluOp::swiglu) return g / (1.0 + std::exp(-g));
  const double c = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * g * (1.0 + std::tanh(c * (g + 0.044715 * g * g * g)));
}

HostTensor ref_glu(GluOp op, const HostTensor& gate, const HostTensor& up) {
  HostTensor y = gate;
  for (size_t i = 0; i < y.v.size(); ++i) {
    y.v[i] = activation(op, gate.v[i]) * up.v[i];
  }
  return y;
}

void check_glu(Backend& backend, GluOp op) {
  std::vector<Shape> shapes = small_shapes();
  shapes.push_back(kThreadedShape);
  uint64_t seed = 1500;
  for (DType dt :
       {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32}) {
    // Both in one layout, or one of them contiguous.
    std::vector<std::pair<Layout, Layout>> layouts;
    for (Layout l : kLayouts) {
      layouts.push_back({l, l});
      if (l != Layout::contiguous) {
        layouts.push_back({l, Layout::contiguous});
        layouts.push_back({Layout::contiguous, l});
      }
    }
    for (const auto& [lg, lu] : layouts) {
      for (const Shape& s : shapes) {
        if (s == kThreadedShape && lu != lg) continue;
        const Tensor g = random_tensor(s, dt, backend, ++seed, lg, -8, 8);
        const Tensor u = random_tensor(s, dt, backend, ++seed, lu, -4, 4);
        const Tensor y = glu(op, g, u);
        const std::string what =
            fmt::format("{} {} {} (gate {}, up {})", name(op), name(dt),
                        to_string(s), name(lg), name(lu));
        EXPECT_EQ(y.dtype(), to_floating(dt)) << what;
        expect_close(y, ref_glu(op, to_host(g), to_host(u)), what);
      }
    }
  }
  // Mixed dtypes promote: f16 and f32 to f32, f16 and bf16 to f32, i32 and
  // f16 to f16.
  const DType pairs[][3] = {{DType::f16, DType::f32, DType::f32},
                            {DType::f16, DType::bf16, DType::f32},
                            {DType::i32, DType::f16, DType::f16},
                            {DType::bf16, DType::f64, DType::f64}};
  for (const auto& pair : pairs) {
    const Tensor g = random_tensor({5, 37}, pair[0], backend, ++seed,
                                   Layout::contiguous, -8, 8);
    const Tensor u = random_tensor({5, 37}, pair[1], backend, ++seed,
                                   Layout::transposed, -4, 4);
    const Tensor y = glu(op, g, u);
    const std::string what =
        fmt::format("{} {} and {}", name(op), name(pair[0]), name(pair[1]));
    EXPECT_EQ(y.dtype(), pair[2]) << what;
    expect_close(y, ref_glu(op, to_host(g), to_host(u)), what);
  }
}

CONFORMANCE_CASE(swiglu, "dtypes, layouts, tails, threaded, mixed") {
  check_glu(backend, GluOp::swiglu);
  // The named form is glu(swiglu).
  const Tensor g = random_tensor({3, 9}, DType::f32, backend, 1);
  const Tensor u = random_tensor({3, 9}, DType::f32, backend, 2);
  EXPECT_EQ(swiglu(g, u).to_vector<float>(),
            glu(GluOp::swiglu, g, u).to_vector<float>());
}

CONFORMANCE_CASE(geglu, "dtypes, layouts, tails, threaded, mixed") {
  check_glu(backend, GluOp::geglu);
  const Tensor g = random_tensor({3, 9}, DType::f32, backend, 1);
  const Tensor u = random_tensor({3, 9}, DType::f32, backend, 2);
  EXPECT_EQ(geglu(g, u).to_vector<float>(),
            glu(GluOp::geglu, g, u).to_vector<float>());
}

}  // namespace
}  // namespace nascent::conformance
