// The packed GEMM called directly: odd strides (transposed, padded,
// negative, zero), accumulate, sizes that are not multiples of the register
// tile or that cross the cache blocks, thread counts, and every SIMD target
// this CPU runs.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include "nascent/backends/cpu/gemm/gemm.h"
#include "nascent/backends/cpu/thread_pool.h"

namespace nascent::cpu {
namespace {

// An operand of rows x cols inside a larger buffer, reached through
// (row stride, column stride) from `origin`.
struct Strided {
  int64_t rows, cols, rs, cs, origin;
  std::vector<double> buffer;
  double at(int64_t i, int64_t j) const {
    return buffer[size_t(origin + i * rs + j * cs)];
  }
};

enum class Form { row_major, col_major, padded, reversed, broadcast_rows };

const char* form_name(Form f) {
  switch (f) {
    case Form::row_major:
      return "row-major";
    case Form::col_major:
      return "col-major";
    case Form::padded:
      return "padded";
    case Form::reversed:
      return "reversed";
    case Form::broadcast_rows:
      return "broadcast rows";
  }
  return "?";
}

// Random values of a small exact grid (multiples of 1/8 in [-2, 2]) so
// that f16/bf16 hold them exactly and sums of a few hundred are exact in
// f32 as well.
Strided make_operand(int64_t rows, int64_t cols, Form form, std::mt19937& rng) {
  std::uniform_int_distribution<int> dist(-16, 16);
  Strided s{rows, cols, 0, 0, 0, {}};
  int64_t size = 0;
  switch (form) {
    case Form::row_major:
      s.rs = cols, s.cs = 1, size = rows * cols;
      break;
    case Form::col_major:
      s.rs = 1, s.cs = rows, size = rows * cols;
      break;
    case Form::padded:  // Rows 3 apart beyond their length, columns 2 apart.
      s.rs = 2 * cols + 3, s.cs = 2, size = rows * s.rs;
      break;
    case Form::reversed:  // Both axes run backwards.
      s.rs = -cols, s.cs = -1, size = rows * cols, s.origin = size - 1;
      break;
    case Form::broadcast_rows:  // Every row is the same memory.
      s.rs = 0, s.cs = 1, size = cols;
      break;
  }
  s.buffer.resize(size_t(std::max<int64_t>(size, 1)));
  for (double& v : s.buffer) v = dist(rng) / 8.0;
  return s;
}

template <class T>
std::vector<T> cast_buffer(const std::vector<double>& v) {
  std::vector<T> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = from_double<T>(v[i]);
  return out;
}

// C = C0 (if accumulate) + A * B, in double.
std::vector<double> reference(const Strided& a, const Strided& b,
                              const std::vector<double>& c0, int64_t ldc,
                              bool accumulate) {
  std::vector<double> c = c0;
  for (int64_t i = 0; i < a.rows; ++i) {
    for (int64_t j = 0; j < b.cols; ++j) {
      double s = accumulate ? c0[size_t(i * ldc + j)] : 0.0;
      for (int64_t p = 0; p < a.cols; ++p) s += a.at(i, p) * b.at(p, j);
      c[size_t(i * ldc + j)] = s;
    }
  }
  return c;
}

// Runs one product of element type In (output Out) and checks every element
// of C, including the padding columns that must stay untouched.
template <class In, class Out, class Fn>
void check(Fn gemm, int64_t m, int64_t n, int64_t k, Form fa, Form fb,
           bool accumulate, uint32_t seed) {
  std::mt19937 rng(seed);
  Strided a = make_operand(m, k, fa, rng);
  Strided b = make_operand(k, n, fb, rng);
  const int64_t ldc = n + 5;
  std::vector<double> c0(size_t(std::max<int64_t>(m * ldc, 1)));
  for (double& v : c0)
    v = double(std::uniform_int_distribution<int>(-8, 8)(rng));
  std::vector<double> want = reference(a, b, c0, ldc, accumulate);

  std::vector<In> ab = cast_buffer<In>(a.buffer),
                  bb = cast_buffer<In>(b.buffer);
  std::vector<Out> c = cast_buffer<Out>(c0);
  GemmArgs g;
  g.m = m, g.n = n, g.k = k;
  g.rsa = a.rs, g.csa = a.cs, g.rsb = b.rs, g.csb = b.cs;
  g.ldc = ldc;
  g.accumulate = accumulate;
  gemm(g, ab.data() + a.origin, bb.data() + b.origin, c.data());

  const std::string label = fmt::format(
      "{}x{}x{} A {} B {}{} ({} threads)", m, n, k, form_name(fa),
      form_name(fb), accumulate ? " accumulate" : "", num_threads());
  int bad = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      // Values are multiples of 1/64 below 2^13 in magnitude (k <= 2000),
      // so every summation order gives them exactly in f32.
      const double got = double(c[size_t(i * ldc + j)]);
      const double expect =
          j < n ? want[size_t(i * ldc + j)] : c0[size_t(i * ldc + j)];
      if (got != expect && ++bad <= 3) {
        ADD_FAILURE() << label << ": C[" << i << ", " << j << "] = " << got
                      << ", expected " << expect;
      }
    }
  }
  EXPECT_EQ(bad, 0) << label;
}

void check_f32(int64_t m, int64_t n, int64_t k, Form fa, Form fb,
               bool accumulate, uint32_t seed = 1) {
  check<float, float>(gemm_f32, m, n, k, fa, fb, accumulate, seed);
}

class GemmThreads : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    saved_ = num_threads();
    set_num_threads(GetParam());
  }
  void TearDown() override { set_num_threads(saved_); }
  int saved_ = 1;
};

constexpr Form kForms[] = {Form::row_major, Form::col_major, Form::padded,
                           Form::reversed, Form::broadcast_rows};

TEST_P(GemmThreads, EveryLayoutPairAndEdgeTiles) {
  for (Form fa : kForms) {
    for (Form fb : kForms) {
      check_f32(13, 37, 11, fa, fb, false);
      check_f32(7, 17, 5, fa, fb, true);
    }
  }
}

TEST_P(GemmThreads, SizesAroundTheTile) {
  for (int64_t m : {1, 5, 6, 7, 12, 13}) {
    for (int64_t n : {1, 7, 8, 15, 16, 17, 33}) {
      for (int64_t k : {1, 2, 9}) {
        check_f32(m, n, k, Form::row_major, Form::row_major, false,
                  uint32_t(m * 100 + n * 10 + k));
      }
    }
  }
}

TEST_P(GemmThreads, CrossesCacheBlocks) {
  // k past one KC block (256), m past one MC block, n past one NC block.
  check_f32(31, 29, 600, Form::row_major, Form::row_major, true);
  check_f32(301, 45, 260, Form::padded, Form::col_major, false);
  check_f32(3, 4200, 7, Form::row_major, Form::row_major, false);
  // Big enough for every thread to get blocks of its own.
  check_f32(203, 197, 311, Form::row_major, Form::row_major, false);
  check_f32(203, 197, 311, Form::col_major, Form::col_major, true);
}

// On several threads, f32 products with a small B pack B once, in column
// pieces, and split C by rows: row counts that leave a short last tile,
// fewer tiles than tasks, n short of a panel, a last KC block shorter than
// the others (514 = 172 + 172 + 170), and every operand form (transposed A
// packs by columns, transposed B through the 8x8 transposes).
TEST_P(GemmThreads, SharedPackedB) {
  for (Form fa : kForms) {
    for (Form fb : kForms) {
      check_f32(97, 45, 514, fa, fb, fa == Form::padded, 21);
    }
  }
  check_f32(7, 300, 600, Form::row_major, Form::row_major, false, 22);
  check_f32(250, 2, 2000, Form::row_major, Form::col_major, true, 23);
  check_f32(256, 256, 256, Form::row_major, Form::row_major, false, 24);
  check_f32(256, 256, 256, Form::col_major, Form::col_major, true, 25);
  check_f32(193, 161, 100, Form::reversed, Form::padded, false, 26);
}

// On several threads, f32 products below 512^3 multiply-adds with at least
// 4 panels of columns per thread give each thread a group of columns (its
// own packed B) cut into row pieces: every operand form, the fewest rows
// and columns that take that path (one row piece per group), groups of
// unequal width with a partial last panel, and k over three KC blocks.
TEST_P(GemmThreads, ColumnGroups) {
  for (Form fa : kForms) {
    for (Form fb : kForms) {
      check_f32(100, 150, 300, fa, fb, fa == Form::reversed, 50);
    }
  }
  check_f32(24, 192, 64, Form::row_major, Form::row_major, false, 51);
  check_f32(24, 192, 64, Form::col_major, Form::col_major, true, 52);
  check_f32(250, 490, 520, Form::row_major, Form::row_major, true, 53);
  check_f32(131, 209, 700, Form::padded, Form::reversed, false, 54);
}

// x @ W^T with few rows of x (rows of A and columns of B contiguous) is a
// grid of 4 x 3 dot products on one thread: row and column counts around
// that tile, k with and without a tail past the SIMD width, accumulate, and
// A's rows all one (stride 0).
TEST_P(GemmThreads, DotProductsForFewRows) {
  uint32_t seed = 40;
  for (int64_t m : {2, 3, 4, 5, 63, 64, 96}) {
    for (int64_t n : {3, 4, 10, 29}) {
      for (int64_t k : {64, 67, 300}) {
        check_f32(m, n, k, Form::row_major, Form::col_major, m % 2 == 1,
                  seed++);
      }
    }
  }
  check_f32(7, 11, 70, Form::broadcast_rows, Form::col_major, true, seed++);
  check_f32(64, 512, 784, Form::row_major, Form::col_major, false, seed++);
}

TEST_P(GemmThreads, EmptyDimensions) {
  check_f32(0, 9, 4, Form::row_major, Form::row_major, false);
  check_f32(9, 0, 4, Form::row_major, Form::row_major, false);
  // k == 0: C becomes zero, or keeps its values with accumulate.
  check_f32(9, 21, 0, Form::row_major, Form::row_major, false);
  check_f32(9, 21, 0, Form::row_major, Form::row_major, true);
}

TEST_P(GemmThreads, OtherPrecisions) {
  for (bool acc : {false, true}) {
    check<double, double>(gemm_f64, 29, 23, 300, Form::padded, Form::col_major,
                          acc, 3);
    check<double, double>(gemm_f64, 130, 150, 70, Form::row_major,
                          Form::reversed, acc, 4);
    check<float16, float>(gemm_f16, 29, 37, 300, Form::row_major,
                          Form::col_major, acc, 5);
    check<float16, float>(gemm_f16, 140, 150, 60, Form::col_major, Form::padded,
                          acc, 6);
    check<bfloat16, float>(gemm_bf16, 29, 37, 300, Form::row_major,
                           Form::row_major, acc, 7);
    check<bfloat16, float>(gemm_bf16, 140, 150, 60, Form::reversed,
                           Form::broadcast_rows, acc, 8);
  }
}

// m == 1 or n == 1 take the matrix-vector kernels: dot products when the
// matrix's rows are contiguous, scaled-column sums when its columns are,
// and a plain loop otherwise; every operand form reaches one of them.
TEST_P(GemmThreads, MatrixVector) {
  for (Form fa : kForms) {
    for (Form fb : kForms) {
      check_f32(1, 37, 300, fa, fb, false, 11);
      check_f32(41, 1, 300, fa, fb, true, 12);
      check_f32(1, 1, 77, fa, fb, false, 13);
    }
  }
  // Past one 4096-element block of the output, and split over threads.
  check_f32(1, 4500, 9, Form::row_major, Form::row_major, true, 14);
  check_f32(4500, 1, 9, Form::col_major, Form::row_major, false, 15);
  check_f32(1, 700, 500, Form::row_major, Form::col_major, false, 16);
  for (bool acc : {false, true}) {
    check<double, double>(gemm_f64, 1, 45, 130, Form::row_major,
                          Form::row_major, acc, 17);
    check<double, double>(gemm_f64, 45, 1, 130, Form::row_major,
                          Form::row_major, acc, 18);
    check<float16, float>(gemm_f16, 1, 45, 130, Form::row_major,
                          Form::col_major, acc, 19);
    check<bfloat16, float>(gemm_bf16, 45, 1, 130, Form::col_major, Form::padded,
                           acc, 20);
  }
}

// A row-major A with k <= KC (rows already KC apart) is read in place, its
// last partial panel of rows packed: m one past and one short of the tile
// on one thread, in the column groups and with B shared; A padded (same k)
// is packed and must agree.
TEST_P(GemmThreads, RowMajorAReadInPlace) {
  for (int64_t m : {13, 101}) {
    check_f32(m, 150, 200, Form::row_major, Form::row_major, false, 60);
    check_f32(m, 150, 200, Form::row_major, Form::col_major, true, 61);
    check_f32(m, 150, 200, Form::padded, Form::row_major, false, 62);
  }
  check_f32(1201, 600, 200, Form::row_major, Form::row_major, true, 63);
}

INSTANTIATE_TEST_SUITE_P(Threads, GemmThreads, ::testing::Values(1, 2, 3));

// Big enough (> 512^3 multiply-adds) to be cut into 2 blocks per thread.
TEST(Gemm, BigProductInSeveralBlocksPerThread) {
  const int saved = num_threads();
  set_num_threads(2);
  check_f32(530, 517, 500, Form::row_major, Form::col_major, true);
  set_num_threads(saved);
}

// B over 8 MiB packed (2000 x 1100 f32) is not shared: each thread's block
// of C packs its own part of it.
TEST(Gemm, LargeBSplitIntoBlocks) {
  const int saved = num_threads();
  for (int threads : {2, 3}) {
    set_num_threads(threads);
    check_f32(40, 1100, 2000, Form::row_major, Form::row_major, false, 31);
    check_f32(40, 1100, 2000, Form::col_major, Form::col_major, true, 32);
  }
  set_num_threads(saved);
}

// The same products on each SIMD target this CPU can run (AVX2, SSE4, the
// scalar fallback...), so that a kernel of a target other than the best
// one is tested too. A build with one target (wasm) runs it once.
TEST(Gemm, EverySupportedTarget) {
  const std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
  ASSERT_FALSE(targets.empty());
  for (int64_t target : targets) {
#if (HWY_TARGETS & (HWY_TARGETS - 1)) != 0  // Dynamic dispatch is compiled.
    hwy::SetSupportedTargetsForTest(target);
#endif
    SCOPED_TRACE(hwy::TargetName(target));
    check_f32(13, 37, 300, Form::padded, Form::col_major, true);
    check_f32(203, 97, 31, Form::row_major, Form::reversed, false);
    check_f32(13, 37, 300, Form::row_major, Form::col_major, true);  // Dots.
    {  // The shared packed B of two threads, packed by this target.
      const int saved = num_threads();
      set_num_threads(2);
      check_f32(97, 45, 514, Form::col_major, Form::row_major, true, 6);
      set_num_threads(saved);
    }
    check<double, double>(gemm_f64, 13, 19, 30, Form::row_major,
                          Form::row_major, false, 2);
    check<float16, float>(gemm_f16, 13, 37, 30, Form::row_major,
                          Form::row_major, false, 2);
    check<bfloat16, float>(gemm_bf16, 13, 37, 30, Form::row_major,
                           Form::row_major, false, 2);
    check_f32(1, 37, 300, Form::row_major, Form::row_major, false, 3);
    check_f32(1, 37, 300, Form::row_major, Form::col_major, true, 4);
    check<double, double>(gemm_f64, 45, 1, 130, Form::row_major,
                          Form::row_major, false, 5);
  }
#if (HWY_TARGETS & (HWY_TARGETS - 1)) != 0
  hwy::SetSupportedTargetsForTest(0);
#endif
}

}  // namespace
}  // namespace nascent::cpu
