// Conformance cases for matmul: NumPy semantics (1-D operands, broadcast
// batch axes) on every float dtype and input layout, against a float64
// reference with an error bound that grows with the length of the sums.
#include <cmath>

#include "conformance/reference.h"
#include "conformance/registry.h"
#include "nascent/backends/cpu/thread_pool.h"

namespace nascent::conformance {
namespace {

constexpr DType kFloatDTypes[] = {DType::f32, DType::f64, DType::f16,
                                  DType::bf16};

struct Product {
  HostTensor value;      // a @ b
  HostTensor magnitude;  // |a| @ |b|, the scale of the rounding error
  int64_t k = 0;
};

// Offset of the matrix that batch index `index` (over the broadcast batch)
// selects in a row-major tensor of `shape` (its last two axes are the
// matrix; its batch axes may be fewer, or of size 1).
int64_t matrix_offset(const Shape& shape, const std::vector<int64_t>& index) {
  const size_t batch_rank = shape.size() - 2;
  const size_t lead = index.size() - batch_rank;
  int64_t flat = 0;
  for (size_t d = 0; d < batch_rank; ++d) {
    flat = flat * shape[d] + (shape[d] == 1 ? 0 : index[lead + d]);
  }
  return flat * shape[batch_rank] * shape[batch_rank + 1];
}

Product reference_matmul(HostTensor a, HostTensor b) {
  const bool vec_a = a.shape.size() == 1, vec_b = b.shape.size() == 1;
  if (vec_a) a.shape.insert(a.shape.begin(), 1);
  if (vec_b) b.shape.push_back(1);
  const int64_t m = a.shape[a.shape.size() - 2], k = a.shape.back();
  const int64_t n = b.shape.back();
  const Shape batch =
      broadcast_shapes(Shape(a.shape.begin(), a.shape.end() - 2),
                       Shape(b.shape.begin(), b.shape.end() - 2), "reference");
  Shape out = batch;
  if (!vec_a) out.push_back(m);
  if (!vec_b) out.push_back(n);
  Product p{{out, {}}, {out, {}}, k};
  auto one = [&](const std::vector<int64_t>& index) {
    const int64_t oa = matrix_offset(a.shape, index);
    const int64_t ob = matrix_offset(b.shape, index);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0, mag = 0;
        for (int64_t q = 0; q < k; ++q) {
          const double x = a.v[size_t(oa + i * k + q)];
          const double y = b.v[size_t(ob + q * n + j)];
          s += x * y;
          mag += std::fabs(x * y);
        }
        p.value.v.push_back(s);
        p.magnitude.v.push_back(mag);
      }
    }
  };
  if (batch.empty()) {
    one({});
  } else {
    for_each_index(batch, one);
  }
  return p;
}

// Unit roundoff of the type the products accumulate in, and of the output.
double accumulate_eps(DType dt) {
  return dt == DType::f64 ? 0x1p-53 : 0x1p-24;
}
double output_eps(DType dt) {
  switch (dt) {
    case DType::f64:
      return 0x1p-53;
    case DType::f32:
      return 0x1p-24;
    case DType::f16:
      return 0x1p-11;
    case DType::bf16:
      return 0x1p-8;
    default:
      return 0.0;
  }
}

// Spacing of the output type's subnormals: a result there has an absolute,
// not a relative, rounding error.
double output_tiny(DType dt) {
  switch (dt) {
    case DType::f64:
      return 0x1p-1074;
    case DType::f32:
      return 0x1p-149;
    case DType::f16:
      return 0x1p-24;
    case DType::bf16:
      return 0x1p-133;
    default:
      return 0.0;
  }
}

// |got - want| <= 2 u_out |want| + tiny + 4 sqrt(k + 1) u_acc (|a| @ |b|):
// one rounding of the result plus a random-walk bound on the sum.
void expect_product(const Tensor& got, const Product& want,
                    const std::string& label) {
  ASSERT_EQ(got.shape(), want.value.shape) << label;
  const std::vector<double> g = got.to_vector<double>();
  const double u_out = output_eps(got.dtype());
  const double u_acc = accumulate_eps(got.dtype());
  const double growth = 4.0 * std::sqrt(double(want.k) + 1.0);
  int failures = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double w = want.value.v[i];
    const double tol = 2.0 * u_out * std::fabs(w) +
                       growth * u_acc * want.magnitude.v[i] +
                       output_tiny(got.dtype());
    if (!(std::fabs(g[i] - w) <= tol) && ++failures <= 5) {
      ADD_FAILURE() << label << ": element " << i << " is " << g[i]
                    << ", expected " << w << " (tolerance " << tol << ")";
    }
  }
  EXPECT_EQ(failures, 0) << label << ": " << failures << " of " << g.size()
                         << " elements differ";
}

void run_case(Backend& backend, const Shape& sa, const Shape& sb, DType dt,
              Layout la, Layout lb, uint64_t seed) {
  Tensor a = random_tensor(sa, dt, backend, seed, la);
  Tensor b = random_tensor(sb, dt, backend, seed + 1, lb);
  Tensor c = matmul(a, b);
  EXPECT_EQ(c.dtype(), dt);
  expect_product(c, reference_matmul(to_host(a), to_host(b)),
                 fmt::format("{} @ {} ({} @ {})", a.to_string(), b.to_string(),
                             name(la), name(lb)));
}

struct Shapes {
  Shape a, b;
};

CONFORMANCE_CASE(matmul, "small shapes, every dtype and layout pair") {
  const Shapes shapes[] = {
      {{17, 31}, {31, 13}},              // primes: no dimension fills a tile
      {{1, 1}, {1, 1}},                  //
      {{31}, {31, 13}},                  // vector @ matrix
      {{17, 31}, {31}},                  // matrix @ vector
      {{31}, {31}},                      // dot product, 0-d result
      {{1}, {1}},                        //
      {{2, 3, 17, 31}, {2, 3, 31, 13}},  // batched
      {{3, 1, 5, 7}, {4, 7, 6}},         // batch axes broadcast both ways
      {{5, 7}, {2, 7, 3}},               // a shared by the batch
      {{2, 5, 7}, {7, 3}},               // b shared: one tall GEMM
      {{4, 2, 5, 7}, {2, 7, 9}},         //
      {{6}, {3, 6, 4}},                  // vector @ batch
      {{3, 4, 6}, {6}},                  // batch @ vector
      {{0, 5}, {5, 3}},                  // empty outputs
      {{3, 5}, {5, 0}},                  //
      {{0, 2, 3}, {3, 4}},               //
      {{4, 0}, {0, 3}},                  // k == 0: zeros
      {{2, 0}, {3, 0, 2}},               //
  };
  uint64_t seed = 100;
  for (const Shapes& s : shapes) {
    for (DType dt : kFloatDTypes) {
      for (Layout la : kLayouts) {
        for (Layout lb : kLayouts) {
          run_case(backend, s.a, s.b, dt, la, lb, seed++);
        }
      }
    }
  }
}

CONFORMANCE_CASE(matmul, "sizes around the cache blocks") {
  // f32 blocks: k in 256 deep slices, A in 252-row blocks when k >= 256,
  // B in 4096-column blocks.
  const Shapes shapes[] = {
      {{253, 256}, {256, 33}},
      {{7, 255}, {255, 17}},
      {{13, 257}, {257, 19}},
      {{3, 5}, {5, 4100}},
  };
  uint64_t seed = 500;
  for (const Shapes& s : shapes) {
    for (DType dt : kFloatDTypes) {
      for (Layout l : kLayouts) run_case(backend, s.a, s.b, dt, l, l, seed++);
    }
  }
}

CONFORMANCE_CASE(matmul, "multithreaded, 1 and 3 threads") {
  const Shapes shapes[] = {
      {{200, 300}, {300, 190}},    // one GEMM split over the threads
      {{3, 40, 50}, {3, 50, 45}},  // batch entries spread over threads
      {{64, 9, 33}, {33, 70}},     // b shared: one tall GEMM, split
  };
  const int saved = cpu::num_threads();
  uint64_t seed = 700;
  // (Two threads, the test environment's default, run every other case.)
  for (int threads : {1, 3}) {
    cpu::set_num_threads(threads);
    for (const Shapes& s : shapes) {
      for (DType dt : kFloatDTypes) {
        run_case(backend, s.a, s.b, dt, Layout::contiguous, Layout::contiguous,
                 seed++);
        // Transposed A: the product of a backward pass.
        run_case(backend, s.a, s.b, dt, Layout::transposed, Layout::contiguous,
                 seed++);
        run_case(backend, s.a, s.b, dt, Layout::sliced, Layout::transposed,
                 seed++);
      }
    }
  }
  cpu::set_num_threads(saved);
}

CONFORMANCE_CASE(matmul, "mixed dtypes promote") {
  struct Mix {
    DType a, b, out;
  };
  for (Mix mix : {Mix{DType::f16, DType::f32, DType::f32},
                  Mix{DType::f16, DType::bf16, DType::f32},
                  Mix{DType::bf16, DType::f64, DType::f64},
                  Mix{DType::f32, DType::f64, DType::f64}}) {
    Tensor a = random_tensor({9, 21}, mix.a, backend, 7);
    Tensor b = random_tensor({2, 21, 11}, mix.b, backend, 8);
    Tensor c = matmul(a, b);
    EXPECT_EQ(c.dtype(), mix.out);
    expect_product(c, reference_matmul(to_host(a), to_host(b)),
                   fmt::format("{} @ {}", a.to_string(), b.to_string()));
  }
}

}  // namespace
}  // namespace nascent::conformance
