// cat, stack, split, chunk, pad, flip, repeat, tril and triu against host
// references, on every dtype, strided inputs and 0-size pieces.
#include <cmath>
#include <functional>

#include <gtest/gtest.h>

#include "conformance/reference.h"
#include "nascent/backends/cpu/backend.h"
#include "nascent/core/ops.h"

namespace nascent {
namespace {

using conformance::expect_close;
using conformance::for_each_index;
using conformance::HostTensor;
using conformance::kLayouts;
using conformance::Layout;
using conformance::random_tensor;
using conformance::to_host;

constexpr DType kAllDTypes[] = {DType::f32,  DType::f64,    DType::f16,
                                DType::bf16, DType::i32,    DType::i64,
                                DType::u8,   DType::boolean};

cpu::Backend& cpu_backend() {
  static cpu::Backend backend;
  return backend;
}

int64_t flat(const Shape& shape, const std::vector<int64_t>& idx) {
  int64_t f = 0;
  for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + idx[d];
  return f;
}

double at(const HostTensor& h, const std::vector<int64_t>& idx) {
  return h.v[size_t(flat(h.shape, idx))];
}

// A host tensor of `shape` whose element at p is fn(p).
HostTensor build(const Shape& shape,
                 const std::function<double(const std::vector<int64_t>&)>& fn) {
  HostTensor h{shape, {}};
  for_each_index(shape,
                 [&](const std::vector<int64_t>& p) { h.v.push_back(fn(p)); });
  return h;
}

// Values of `dtype` survive a round trip through it (cast rules).
HostTensor as_dtype(HostTensor h, DType dtype) {
  Tensor t = from_vector(h.v, h.shape, cpu_backend()).cast(dtype);
  return to_host(t);
}

template <class Fn>
void expect_error(Fn&& fn, const std::vector<std::string>& words) {
  try {
    fn();
    ADD_FAILURE() << "no exception";
  } catch (const Error& e) {
    std::string msg = e.what();
    for (const std::string& w : words) {
      EXPECT_NE(msg.find(w), std::string::npos)
          << "message \"" << msg << "\" lacks \"" << w << "\"";
    }
  }
}

HostTensor ref_cat(const std::vector<HostTensor>& parts, int axis) {
  Shape shape = parts[0].shape;
  shape[size_t(axis)] = 0;
  for (const HostTensor& p : parts)
    shape[size_t(axis)] += p.shape[size_t(axis)];
  return build(shape, [&](const std::vector<int64_t>& p) {
    std::vector<int64_t> q = p;
    for (const HostTensor& part : parts) {
      int64_t n = part.shape[size_t(axis)];
      if (q[size_t(axis)] < n) return at(part, q);
      q[size_t(axis)] -= n;
    }
    return std::nan("");
  });
}

TEST(ShapeOps, CatEveryDTypeAndLayout) {
  Backend& b = cpu_backend();
  uint64_t seed = 1;
  for (DType dt : kAllDTypes) {
    for (int axis : {0, 1, 2, -1}) {
      int ax = axis < 0 ? axis + 3 : axis;
      std::vector<Tensor> parts;
      std::vector<HostTensor> hosts;
      // Sizes along the axis include 0 and 1.
      for (int64_t n : {3, 0, 1, 5}) {
        Shape s = {4, 3, 6};
        s[size_t(ax)] = n;
        Layout layout = kLayouts[seed % 4];
        parts.push_back(random_tensor(s, dt, b, ++seed, layout, -3, 3));
        hosts.push_back(to_host(parts.back()));
      }
      Tensor got = cat(parts, axis);
      EXPECT_EQ(got.dtype(), dt);
      EXPECT_TRUE(got.is_contiguous());
      expect_close(got, ref_cat(hosts, ax),
                   fmt::format("cat {} axis {}", name(dt), axis), 0.0, 0.0);
    }
  }
}

TEST(ShapeOps, CatPromotesAndSkipsLegacyEmpty) {
  Backend& b = cpu_backend();
  Tensor a = random_tensor({2, 3}, DType::i32, b, 1);
  Tensor c = random_tensor({1, 3}, DType::f16, b, 2, Layout::sliced);
  Tensor d = random_tensor({2, 3}, DType::boolean, b, 3, Layout::transposed);
  Tensor got = cat({a, c, d});
  EXPECT_EQ(got.dtype(), DType::f16);
  expect_close(got, ref_cat({to_host(a), to_host(c), to_host(d)}, 0),
               "cat mixed dtypes", 0.0, 0.0);
  // i32 with bf16 gives bf16; f16 with bf16 gives f32.
  EXPECT_EQ(cat({a, ones({1, 3}, b, DType::bf16)}).dtype(), DType::bf16);
  EXPECT_EQ(cat({c, ones({1, 3}, b, DType::bf16)}).dtype(), DType::f32);
  // A 1-D tensor of size 0 joins anything (PyTorch's legacy rule).
  Tensor e = zeros({0}, b, DType::f64);
  Tensor joined = cat({e, a, e});
  EXPECT_EQ(joined.shape(), (Shape{2, 3}));
  EXPECT_EQ(joined.dtype(), DType::f64);
  expect_close(joined, to_host(a), "cat legacy empty", 0.0, 0.0);
  EXPECT_EQ(cat({e, e}).shape(), (Shape{0}));
  // A single input is copied, not aliased.
  Tensor one = cat({a});
  EXPECT_NE(one.data(), a.data());
  expect_close(one, to_host(a), "cat one", 0.0, 0.0);
}

TEST(ShapeOps, CatErrorsNameAllShapes) {
  Backend& b = cpu_backend();
  Tensor a = zeros({2, 3}, b), c = zeros({2, 4}, b), d = zeros({2, 3, 1}, b);
  EXPECT_THROW(cat({a, c}, 0), ShapeError);
  expect_error(
      [&] {
        cat({a, a, c}, 0);
      },
      {"cat", "axis 1", "f32[2, 3], f32[2, 3], f32[2, 4]"});
  EXPECT_EQ(cat({a, c}, 1).shape(), (Shape{2, 7}));
  expect_error([&] { cat({a, d}); }, {"cat", "f32[2, 3]", "f32[2, 3, 1]"});
  EXPECT_THROW(cat({a, d}), ShapeError);
  EXPECT_THROW(cat({}), ValueError);
  EXPECT_THROW(cat({a, a}, 2), ValueError);
  Tensor s = zeros({}, b);
  EXPECT_THROW(cat({s, s}), ShapeError);
  cpu::Backend other;
  EXPECT_THROW(cat({a, zeros({2, 3}, other)}), BackendError);
}

TEST(ShapeOps, Stack) {
  Backend& b = cpu_backend();
  for (DType dt : kAllDTypes) {
    std::vector<Tensor> ts;
    std::vector<HostTensor> hs;
    for (int i = 0; i < 3; ++i) {
      ts.push_back(random_tensor({2, 5}, dt, b, 10 + uint64_t(i),
                                 kLayouts[i + 1], -3, 3));
      hs.push_back(to_host(ts.back()));
    }
    for (int axis : {0, 1, 2, -1}) {
      int ax = axis < 0 ? axis + 3 : axis;
      Tensor got = stack(ts, axis);
      Shape shape = {2, 5};
      shape.insert(shape.begin() + ax, 3);
      HostTensor want = build(shape, [&](const std::vector<int64_t>& p) {
        std::vector<int64_t> q = p;
        int64_t which = q[size_t(ax)];
        q.erase(q.begin() + ax);
        return at(hs[size_t(which)], q);
      });
      expect_close(got, want, fmt::format("stack {} axis {}", name(dt), axis),
                   0.0, 0.0);
    }
  }
  // 0-d tensors stack into a vector; empty ones into an empty axis.
  Tensor v = stack({full({}, 1.0, b), full({}, 2.0, b)});
  EXPECT_EQ(v.to_vector<float>(), (std::vector<float>{1, 2}));
  EXPECT_EQ(stack({zeros({0, 2}, b), zeros({0, 2}, b)}, 1).shape(),
            (Shape{0, 2, 2}));
  expect_error(
      [&] {
        stack({zeros({2, 3}, b), zeros({3, 2}, b)});
      },
      {"stack", "f32[2, 3], f32[3, 2]"});
  EXPECT_THROW(stack({zeros({2}, b)}, 2), ValueError);
}

TEST(ShapeOps, SplitAndChunkAreViews) {
  Backend& b = cpu_backend();
  Tensor x = random_tensor({7, 4}, DType::f32, b, 5, Layout::transposed);
  HostTensor hx = to_host(x);
  auto check = [&](const std::vector<Tensor>& pieces,
                   const std::vector<int64_t>& sizes, int axis) {
    ASSERT_EQ(pieces.size(), sizes.size());
    int64_t at0 = 0;
    for (size_t i = 0; i < pieces.size(); ++i) {
      EXPECT_EQ(pieces[i].shape(axis), sizes[i]);
      EXPECT_EQ(pieces[i].data(), x.data());
      HostTensor want = build(pieces[i].shape(), [&](auto p) {
        p[size_t(axis)] += at0;
        return at(hx, p);
      });
      expect_close(pieces[i], want, fmt::format("piece {}", i), 0.0, 0.0);
      at0 += sizes[i];
    }
  };
  check(split(x, 3), {3, 3, 1}, 0);
  check(split(x, 7), {7}, 0);
  check(split(x, 10), {7}, 0);
  check(split(x, 1, 1), {1, 1, 1, 1}, 1);
  check(split(x, std::vector<int64_t>{2, 0, 5}), {2, 0, 5}, 0);
  check(split(x, std::vector<int64_t>{4}, -1), {4}, 1);
  check(chunk(x, 3), {3, 3, 1}, 0);
  check(chunk(x, 4), {2, 2, 2, 1}, 0);
  check(chunk(x, 7), {1, 1, 1, 1, 1, 1, 1}, 0);
  check(chunk(x, 10), {1, 1, 1, 1, 1, 1, 1}, 0);
  check(chunk(x, 3, 1), {2, 2}, 1);  // PyTorch: fewer pieces than asked.
  // Empty axes, as PyTorch.
  Tensor e = zeros({0, 2}, b);
  EXPECT_EQ(split(e, 2).size(), 1u);
  EXPECT_EQ(split(e, 0).size(), 1u);
  std::vector<Tensor> ce = chunk(e, 3);
  EXPECT_EQ(ce.size(), 3u);
  for (const Tensor& t : ce) EXPECT_EQ(t.shape(), (Shape{0, 2}));
  // Errors.
  EXPECT_THROW(split(x, 0), ValueError);
  EXPECT_THROW(split(x, -1), ValueError);
  EXPECT_THROW(split(x, std::vector<int64_t>{3, 3}), ValueError);
  EXPECT_THROW(split(x, std::vector<int64_t>{8, -1}), ValueError);
  expect_error(
      [&] {
        split(x, std::vector<int64_t>{3, 3});
      },
      {"split", "[3, 3]", "7", "f32[7, 4]"});
  EXPECT_THROW(chunk(x, 0), ValueError);
  EXPECT_THROW(split(zeros({}, b), 1), ShapeError);
  EXPECT_THROW(chunk(x, 2, 2), ValueError);
}

HostTensor ref_pad(const HostTensor& x, const std::vector<int64_t>& pads,
                   double value) {
  size_t nd = x.shape.size();
  std::vector<int64_t> before(nd, 0);
  Shape shape = x.shape;
  for (size_t i = 0; i < pads.size() / 2; ++i) {
    before[nd - 1 - i] = pads[2 * i];
    shape[nd - 1 - i] += pads[2 * i] + pads[2 * i + 1];
  }
  return build(shape, [&](const std::vector<int64_t>& p) {
    std::vector<int64_t> q = p;
    for (size_t d = 0; d < nd; ++d) {
      q[d] -= before[d];
      if (q[d] < 0 || q[d] >= x.shape[d]) return value;
    }
    return at(x, q);
  });
}

TEST(ShapeOps, Pad) {
  Backend& b = cpu_backend();
  const std::vector<std::vector<int64_t>> cases = {{1, 2},
                                                   {0, 0, 3, 1},
                                                   {-1, 2, 1, -2},
                                                   {2, 1, 0, 0, 1, 1},
                                                   {-2, -3},
                                                   {0, 0, -3, 0},
                                                   {}};
  uint64_t seed = 40;
  for (DType dt : kAllDTypes) {
    for (const auto& pads : cases) {
      for (Layout layout : kLayouts) {
        Tensor x = random_tensor({3, 4, 5}, dt, b, ++seed, layout, -3, 3);
        Tensor got = pad(x, pads, 2.0);
        HostTensor want = as_dtype(ref_pad(to_host(x), pads, 2.0), dt);
        expect_close(got, want,
                     fmt::format("pad {} [{}] {}", name(dt),
                                 fmt::join(pads, ", "), name(layout)),
                     0.0, 0.0);
      }
    }
  }
  // Crops that remove everything, and a 0-size input.
  Tensor x = random_tensor({2, 3}, DType::f32, b, 9);
  Tensor all = pad(x, {-3, 1});
  EXPECT_EQ(all.shape(), (Shape{2, 1}));
  EXPECT_EQ(all.to_vector<float>(), (std::vector<float>{0, 0}));
  Tensor grown = pad(zeros({0, 2}, b, DType::i64), {0, 0, 1, 1}, 7);
  EXPECT_EQ(grown.to_vector<int64_t>(), (std::vector<int64_t>{7, 7, 7, 7}));
  EXPECT_EQ(pad(zeros({}, b), {}).shape(), Shape{});
  EXPECT_THROW(pad(x, {1}), ValueError);
  EXPECT_THROW(pad(x, {1, 1, 1, 1, 1, 1}), ValueError);
  EXPECT_THROW(pad(x, {-2, -2}), ValueError);
  expect_error([&] { pad(x, {-2, -2}); }, {"pad", "[-2, -2]", "f32[2, 3]"});
}

TEST(ShapeOps, Flip) {
  Backend& b = cpu_backend();
  uint64_t seed = 60;
  const std::vector<Axes> cases = {{0}, {1}, {-1}, {0, 2}, {2, 1, 0}, {}};
  for (DType dt : kAllDTypes) {
    for (const Axes& axes : cases) {
      for (Layout layout : kLayouts) {
        Tensor x = random_tensor({3, 4, 5}, dt, b, ++seed, layout, -3, 3);
        HostTensor hx = to_host(x);
        Tensor got = flip(x, axes);
        EXPECT_NE(got.data(), x.data());
        HostTensor want = build(x.shape(), [&](std::vector<int64_t> p) {
          for (int64_t a : axes) {
            size_t d = size_t(a < 0 ? a + 3 : a);
            p[d] = x.shape()[d] - 1 - p[d];
          }
          return at(hx, p);
        });
        expect_close(got, want,
                     fmt::format("flip {} [{}] {}", name(dt),
                                 fmt::join(axes, ", "), name(layout)),
                     0.0, 0.0);
      }
    }
  }
  // Flipping twice is the identity, also through a flipped (negative
  // stride) input of the copy kernel's threaded path.
  Tensor big = random_tensor({300, 301}, DType::f32, b, 3, Layout::sliced);
  expect_close(flip(flip(big, {0, 1}), {1, 0}), to_host(big), "flip twice", 0.0,
               0.0);
  EXPECT_EQ(flip(zeros({0, 3}, b), {0, 1}).shape(), (Shape{0, 3}));
  EXPECT_EQ(flip(full({}, 3.0, b), {0}).item<float>(), 3.0f);
  EXPECT_THROW(flip(big, {0, 0}), ValueError);
  EXPECT_THROW(flip(big, {2}), ValueError);
}

TEST(ShapeOps, Repeat) {
  Backend& b = cpu_backend();
  const std::vector<std::vector<int64_t>> cases = {
      {1, 1}, {2, 3}, {3, 1, 2}, {0, 2}, {2, 1, 1, 1}};
  uint64_t seed = 80;
  for (DType dt : kAllDTypes) {
    for (const auto& reps : cases) {
      for (Layout layout : kLayouts) {
        Tensor x = random_tensor({2, 3}, dt, b, ++seed, layout, -3, 3);
        HostTensor hx = to_host(x);
        Tensor got = repeat(x, reps);
        size_t lead = reps.size() - 2;
        Shape shape;
        for (size_t i = 0; i < reps.size(); ++i) {
          shape.push_back(reps[i] * (i < lead ? 1 : x.shape()[i - lead]));
        }
        HostTensor want = build(shape, [&](const std::vector<int64_t>& p) {
          return at(hx, {p[lead] % 2, p[lead + 1] % 3});
        });
        EXPECT_NE(got.data(), x.data());
        expect_close(got, want,
                     fmt::format("repeat {} [{}] {}", name(dt),
                                 fmt::join(reps, ", "), name(layout)),
                     0.0, 0.0);
      }
    }
  }
  EXPECT_EQ(repeat(full({}, 2.0, b), {3}).to_vector<float>(),
            (std::vector<float>{2, 2, 2}));
  EXPECT_EQ(repeat(zeros({0, 2}, b), {3, 2}).shape(), (Shape{0, 4}));
  EXPECT_THROW(repeat(zeros({2, 3}, b), {2}), ValueError);
  EXPECT_THROW(repeat(zeros({2, 3}, b), {2, -1}), ValueError);
  expect_error([&] { repeat(zeros({2, 3}, b), {2}); }, {"repeat", "f32[2, 3]"});
}

TEST(ShapeOps, TrilTriu) {
  Backend& b = cpu_backend();
  uint64_t seed = 100;
  for (DType dt : kAllDTypes) {
    for (const Shape& shape : {Shape{4, 6}, Shape{2, 5, 3}, Shape{3, 3},
                               Shape{2, 0, 4}, Shape{1, 1}}) {
      for (int64_t k : {-7, -2, -1, 0, 1, 3, 10}) {
        Layout layout = kLayouts[seed % 4];
        Tensor x = random_tensor(shape, dt, b, ++seed, layout, -3, 3);
        HostTensor hx = to_host(x);
        size_t r = shape.size() - 2, c = shape.size() - 1;
        HostTensor lower = build(shape, [&](const std::vector<int64_t>& p) {
          return p[c] - p[r] <= k ? at(hx, p) : 0.0;
        });
        HostTensor upper = build(shape, [&](const std::vector<int64_t>& p) {
          return p[c] - p[r] >= k ? at(hx, p) : 0.0;
        });
        std::string label =
            fmt::format("{} {} k {}", name(dt), to_string(shape), k);
        Tensor lo = tril(x, k), up = triu(x, k);
        EXPECT_EQ(lo.dtype(), dt);
        expect_close(lo, lower, "tril " + label, 0.0, 0.0);
        expect_close(up, upper, "triu " + label, 0.0, 0.0);
      }
    }
  }
  EXPECT_THROW(tril(zeros({3}, b)), ShapeError);
  expect_error([&] { triu(zeros({3}, b)); }, {"triu", "f32[3]"});
}

}  // namespace
}  // namespace nascent
