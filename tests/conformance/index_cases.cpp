// Conformance cases for gather, scatter_add and index_select: every dtype,
// strided x / index / src, duplicate indices, edge shapes, and sizes large
// enough for the multithreaded paths. References are float64 on the host.
#include <random>

#include "conformance/reference.h"
#include "conformance/registry.h"

namespace nascent::conformance {
namespace {

constexpr DType kAllDTypes[] = {DType::f32,  DType::f64,    DType::f16,
                                DType::bf16, DType::i32,    DType::i64,
                                DType::u8,   DType::boolean};

int64_t flat_index(const Shape& shape, const std::vector<int64_t>& idx) {
  int64_t f = 0;
  for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + idx[d];
  return f;
}

// An index tensor of `shape` with values in [0, bound), in i64 or i32,
// laid out as `layout` (the values are drawn for the logical shape, so the
// reference reads them back with to_vector).
Tensor random_index(const Shape& shape, int64_t bound, DType dtype,
                    Backend& backend, uint64_t seed, Layout layout) {
  std::mt19937_64 rng(seed);
  auto draw = [&](const Shape& s) {
    std::vector<int64_t> v(size_t(numel(s)));
    for (int64_t& x : v) x = int64_t(rng() % uint64_t(bound));
    return from_vector(v, s, backend).cast(dtype);
  };
  switch (layout) {
    case Layout::contiguous:
      return draw(shape);
    case Layout::transposed: {
      if (shape.size() < 2) return draw(shape);
      Shape s = shape;
      std::swap(s[s.size() - 1], s[s.size() - 2]);
      return draw(s).transpose(-1, -2);
    }
    case Layout::sliced: {
      if (shape.empty()) return draw(shape);
      Shape s = shape;
      s.back() *= 2;
      return draw(s).slice(-1, 0, s.back(), 2);
    }
    case Layout::broadcast: {
      if (shape.empty()) return draw(shape);
      Shape s = shape;
      s[0] = 1;
      return draw(s).expand(shape);
    }
  }
  return draw(shape);
}

HostTensor ref_gather(const HostTensor& x, int axis, const Tensor& index) {
  std::vector<int64_t> idx = index.to_vector<int64_t>();
  HostTensor out{index.shape(), {}};
  for_each_index(index.shape(), [&](const std::vector<int64_t>& p) {
    std::vector<int64_t> q = p;
    q[size_t(axis)] = idx[size_t(flat_index(index.shape(), p))];
    out.v.push_back(x.v[size_t(flat_index(x.shape, q))]);
  });
  return out;
}

HostTensor ref_scatter_add(const HostTensor& x, int axis, const Tensor& index,
                           const HostTensor& src) {
  std::vector<int64_t> idx = index.to_vector<int64_t>();
  HostTensor out = x;
  for_each_index(index.shape(), [&](const std::vector<int64_t>& p) {
    std::vector<int64_t> q = p;
    q[size_t(axis)] = idx[size_t(flat_index(index.shape(), p))];
    out.v[size_t(flat_index(x.shape, q))] +=
        src.v[size_t(flat_index(src.shape, p))];
  });
  return out;
}

HostTensor ref_index_select(const HostTensor& x, int axis,
                            const Tensor& index) {
  std::vector<int64_t> idx = index.to_vector<int64_t>();
  Shape shape = x.shape;
  shape[size_t(axis)] = int64_t(idx.size());
  HostTensor out{shape, {}};
  for_each_index(shape, [&](const std::vector<int64_t>& p) {
    std::vector<int64_t> q = p;
    q[size_t(axis)] = idx[size_t(p[size_t(axis)])];
    out.v.push_back(x.v[size_t(flat_index(x.shape, q))]);
  });
  return out;
}

struct GatherShape {
  Shape x, index;
  int axis;
};

CONFORMANCE_CASE(gather, "every dtype and layout, smaller index") {
  const GatherShape shapes[] = {{{5, 7}, {3, 7}, 0},
                                {{5, 7}, {5, 9}, 1},
                                {{4, 6, 5}, {2, 3, 4}, 1},
                                {{4, 6, 5}, {4, 6, 8}, -1},
                                {{9}, {20}, 0},
                                {{1, 1}, {1, 3}, 1},
                                {{5, 7}, {0, 7}, 0},
                                {{3, 2, 2}, {3, 2, 2}, 0}};
  uint64_t seed = 1;
  for (DType dt : kAllDTypes) {
    for (const GatherShape& s : shapes) {
      int axis = s.axis < 0 ? s.axis + int(s.x.size()) : s.axis;
      for (Layout lx : kLayouts) {
        Tensor x = random_tensor(s.x, dt, backend, ++seed, lx, -3.0, 3.0);
        HostTensor hx = to_host(x);
        for (Layout li : kLayouts) {
          for (DType idt : {DType::i64, DType::i32}) {
            Tensor index = random_index(s.index, s.x[size_t(axis)], idt,
                                        backend, ++seed, li);
            Tensor got = gather(x, s.axis, index);
            EXPECT_EQ(got.dtype(), dt);
            expect_close(got, ref_gather(hx, axis, index),
                         fmt::format("gather {} x{} {} index{} {} {}", name(dt),
                                     to_string(s.x), name(lx),
                                     to_string(s.index), name(li), name(idt)),
                         0.0, 0.0);
          }
        }
      }
    }
  }
}

CONFORMANCE_CASE(gather, "0-d and multithreaded sizes") {
  Tensor s = full({}, 4.5, backend, DType::f64);
  Tensor got = gather(s, 0, full({}, 0, backend, DType::i64));
  EXPECT_EQ(got.shape(), Shape{});
  EXPECT_EQ(got.item<double>(), 4.5);
  // 300 * 200 elements: more than one task of the element-wise grain.
  for (int axis : {0, 1}) {
    Tensor x =
        random_tensor({300, 257}, DType::f32, backend, 5, Layout::transposed);
    Shape is = axis == 0 ? Shape{400, 200} : Shape{300, 200};
    Tensor index = random_index(is, x.shape(axis), DType::i64, backend, 6,
                                Layout::contiguous);
    expect_close(gather(x, axis, index), ref_gather(to_host(x), axis, index),
                 fmt::format("gather large axis {}", axis), 0.0, 0.0);
  }
}

struct ScatterShape {
  Shape x, index, src;
  int axis;
};

CONFORMANCE_CASE(scatter_add, "every dtype and layout, duplicates") {
  // Index larger than x on the scatter axis forces repeated targets.
  const ScatterShape shapes[] = {{{5, 7}, {8, 7}, {8, 7}, 0},
                                 {{5, 7}, {3, 5}, {4, 9}, 0},
                                 {{4, 6, 5}, {4, 9, 5}, {4, 9, 6}, 1},
                                 {{4, 6, 5}, {2, 3, 12}, {3, 3, 12}, 2},
                                 {{3}, {10}, {10}, 0},
                                 {{1, 1}, {1, 4}, {1, 4}, 1},
                                 {{5, 7}, {0, 7}, {2, 7}, 0}};
  uint64_t seed = 100;
  for (DType dt : kAllDTypes) {
    if (dt == DType::boolean) continue;  // Refused; see index_errors_test.
    for (const ScatterShape& s : shapes) {
      int axis = s.axis;
      for (Layout lx : kLayouts) {
        Tensor x = random_tensor(s.x, dt, backend, ++seed, lx, -3.0, 3.0);
        ++seed;
        Tensor src = random_tensor(s.src, dt, backend, seed, kLayouts[seed % 4],
                                   -3.0, 3.0);
        HostTensor hx = to_host(x), hsrc = to_host(src);
        for (Layout li : kLayouts) {
          for (DType idt : {DType::i64, DType::i32}) {
            Tensor index = random_index(s.index, s.x[size_t(axis)], idt,
                                        backend, ++seed, li);
            Tensor got = scatter_add(x, axis, index, src);
            EXPECT_EQ(got.dtype(), dt);
            // f16/bf16 round after every add: allow a few roundings of
            // the largest partial sum (|x| + up to 12 terms of |src| < 3).
            double tol = dt == DType::bf16  ? 0.25
                         : dt == DType::f16 ? 0.04
                         : dt == DType::f32 ? 1e-4
                                            : default_atol(dt);
            expect_close(got, ref_scatter_add(hx, axis, index, hsrc),
                         fmt::format("scatter_add {} x{} {} index{} {} {}",
                                     name(dt), to_string(s.x), name(lx),
                                     to_string(s.index), name(li), name(idt)),
                         default_rtol(dt), tol);
          }
        }
        // The input is not modified.
        expect_close(x, hx, "scatter_add leaves x alone", 0.0, 0.0);
      }
    }
  }
}

CONFORMANCE_CASE(scatter_add, "deterministic, multithreaded, wrapping") {
  // 200 rows scattered into 64 with 1000 columns: many threads, many
  // collisions; f32 sums must not depend on thread timing.
  for (int axis : {0, 1}) {
    Shape xs = axis == 0 ? Shape{64, 1000} : Shape{1000, 64};
    Shape is = axis == 0 ? Shape{200, 1000} : Shape{1000, 200};
    Tensor x = random_tensor(xs, DType::f32, backend, 7);
    Tensor src = random_tensor(is, DType::f32, backend, 8, Layout::sliced);
    Tensor index =
        random_index(is, 64, DType::i64, backend, 9, Layout::transposed);
    Tensor a = scatter_add(x, axis, index, src);
    Tensor b = scatter_add(x, axis, index, src);
    EXPECT_EQ(a.to_vector<float>(), b.to_vector<float>());
    expect_close(a, ref_scatter_add(to_host(x), axis, index, to_host(src)),
                 fmt::format("scatter_add large axis {}", axis), 1e-5, 1e-4);
  }
  // Integer sums wrap as in PyTorch, never undefined overflow.
  Tensor x = full({1}, int64_t(INT32_MAX), backend, DType::i32);
  Tensor idx = zeros({2}, backend, DType::i64);
  Tensor ones2 = ones({2}, backend, DType::i32);
  EXPECT_EQ(scatter_add(x, 0, idx, ones2).item<int64_t>(),
            int64_t(INT32_MIN) + 1);
  Tensor u = full({1}, 250, backend, DType::u8);
  EXPECT_EQ(
      scatter_add(u, 0, idx, full({2}, 5, backend, DType::u8)).item<int64_t>(),
      4);
  // 0-d input, 0-d index.
  Tensor s = full({}, 1.5, backend, DType::f64);
  Tensor got = scatter_add(s, 0, zeros({}, backend, DType::i32),
                           full({}, 2.0, backend, DType::f64));
  EXPECT_EQ(got.shape(), Shape{});
  EXPECT_EQ(got.item<double>(), 3.5);
}

struct SelectShape {
  Shape x;
  int axis;
  int64_t n;  // Index length.
};

CONFORMANCE_CASE(index_select,
                 "every dtype and layout, row and strided "
                 "paths") {
  // Axis 0/1 of 3-D x takes the row-copy path when the trailing slice is
  // contiguous; the last axis or a transposed x takes the strided one.
  const SelectShape shapes[] = {
      {{5, 7}, 0, 9},    {{5, 7}, 1, 3}, {{4, 6, 5}, 1, 8}, {{4, 6, 5}, 0, 2},
      {{4, 6, 5}, 2, 5}, {{6}, 0, 11},   {{1, 3}, 0, 4},    {{5, 7}, 0, 0}};
  uint64_t seed = 300;
  for (DType dt : kAllDTypes) {
    for (const SelectShape& s : shapes) {
      for (Layout lx : kLayouts) {
        Tensor x = random_tensor(s.x, dt, backend, ++seed, lx, -3.0, 3.0);
        HostTensor hx = to_host(x);
        for (Layout li : {Layout::contiguous, Layout::sliced}) {
          for (DType idt : {DType::i64, DType::i32}) {
            Tensor index = random_index({s.n}, s.x[size_t(s.axis)], idt,
                                        backend, ++seed, li);
            Tensor got = index_select(x, s.axis, index);
            EXPECT_EQ(got.dtype(), dt);
            expect_close(got, ref_index_select(hx, s.axis, index),
                         fmt::format("index_select {} x{} {} axis {} n {} "
                                     "{} {}",
                                     name(dt), to_string(s.x), name(lx), s.axis,
                                     s.n, name(li), name(idt)),
                         0.0, 0.0);
          }
        }
      }
    }
  }
}

CONFORMANCE_CASE(index_select, "strided outer axes, embedding-sized, 0-d") {
  // x [4, 6, 8] viewed from a [6, 4, 8] buffer: the rows along axis 1 are
  // contiguous but the outer axis 0 has stride 8, not 48.
  Tensor base = random_tensor({6, 4, 8}, DType::f32, backend, 21);
  Tensor x = base.transpose(0, 1);
  Tensor index =
      random_index({7}, 6, DType::i64, backend, 22, Layout::contiguous);
  expect_close(index_select(x, 1, index),
               ref_index_select(to_host(x), 1, index),
               "index_select strided outer", 0.0, 0.0);
  // An embedding-sized lookup: many rows, the threaded row-copy path.
  Tensor weight = random_tensor({1000, 64}, DType::bf16, backend, 23);
  Tensor ids =
      random_index({5000}, 1000, DType::i32, backend, 24, Layout::sliced);
  expect_close(index_select(weight, 0, ids),
               ref_index_select(to_host(weight), 0, ids),
               "index_select embedding-sized", 0.0, 0.0);
  // A 0-d x takes one index and stays 0-d; a 0-d index keeps its axis.
  Tensor s = full({}, 2.5, backend, DType::f32);
  Tensor got = index_select(s, 0, zeros({1}, backend, DType::i64));
  EXPECT_EQ(got.shape(), Shape{});
  EXPECT_EQ(got.item<double>(), 2.5);
  Tensor m = random_tensor({3, 4}, DType::f64, backend, 25);
  Tensor col = index_select(m, 1, full({}, 2, backend, DType::i64));
  EXPECT_EQ(col.shape(), (Shape{3, 1}));
  expect_close(col, to_host(m.narrow(1, 2, 1).contiguous()),
               "index_select 0-d index", 0.0, 0.0);
}

}  // namespace
}  // namespace nascent::conformance
