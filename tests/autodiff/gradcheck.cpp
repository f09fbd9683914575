#include "autodiff/gradcheck.h"

#include <cmath>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "nascent/backends/cpu/backend.h"

namespace nascent::autodiff::testing {

namespace {

uint64_t g_seed = 1000;

// The leaf's shape for an input of `shape` laid out as `layout`.
Shape leaf_shape(const Input& in) {
  Shape s = in.shape;
  switch (in.layout) {
    case Layout::contiguous:
      break;
    case Layout::transposed:
      if (s.size() >= 2) std::swap(s[s.size() - 1], s[s.size() - 2]);
      break;
    case Layout::sliced:
      if (!s.empty()) s.back() *= 2;
      break;
    case Layout::broadcast:
      if (!s.empty()) s[0] = 1;
      break;
  }
  return s;
}

// The view the function sees.
Tensor layout_view(const Tensor& leaf, const Input& in) {
  switch (in.layout) {
    case Layout::contiguous:
      return leaf;
    case Layout::transposed:
      return in.shape.size() >= 2 ? leaf.transpose(-1, -2) : leaf;
    case Layout::sliced:
      return in.shape.empty() ? leaf : leaf.slice(-1, 1, leaf.shape(-1), 2);
    case Layout::broadcast:
      return in.shape.empty() ? leaf : leaf.expand(in.shape);
  }
  return leaf;
}

std::vector<double> values(const Input& in, uint64_t seed) {
  std::vector<double> v =
      random(leaf_shape(in), seed, in.low, in.high).to_vector<double>();
  if (in.gap > 0.0) {
    for (double& x : v) {
      if (std::fabs(x) < in.gap) x = x < 0.0 ? x - in.gap : x + in.gap;
    }
  }
  return v;
}

Tensor make_leaf(const std::vector<double>& v, const Shape& shape,
                 bool with_grad) {
  Tensor t = from_vector(v, shape, backend());
  if (with_grad) set_requires_grad(t);
  return t;
}

double dot(const Tensor& a, const Tensor& b) {
  std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  double s = 0.0;
  for (size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  return s;
}

// Compares analytic and numeric values, reporting the first few misses.
void compare(const std::string& what, const std::vector<double>& analytic,
             const std::vector<double>& numeric, const Options& o) {
  ASSERT_EQ(analytic.size(), numeric.size()) << what;
  int misses = 0;
  for (size_t i = 0; i < analytic.size(); ++i) {
    double a = analytic[i], n = numeric[i];
    double tol = o.atol + o.rtol * std::max(std::fabs(a), std::fabs(n));
    if (!(std::fabs(a - n) <= tol)) {
      if (++misses <= 5) {
        ADD_FAILURE() << what << ": element " << i << " analytic " << a
                      << " numeric " << n;
      }
    }
  }
}

}  // namespace

autodiff::Backend& backend() {
  static cpu::Backend cpu;
  static autodiff::Backend ad(cpu);
  return ad;
}

Tensor random(const Shape& shape, uint64_t seed, double low, double high) {
  Generator gen(seed);
  return uniform(shape, low, high, backend(), gen, DType::f64);
}

std::vector<Case>& cases() {
  static std::vector<Case> all;
  return all;
}

void check(const std::string& label, const std::vector<Input>& inputs,
           const Fn& f, Options o) {
  SCOPED_TRACE(label);
  std::vector<std::vector<double>> base;
  std::vector<Shape> shapes;
  for (const Input& in : inputs) {
    base.push_back(values(in, ++g_seed));
    shapes.push_back(leaf_shape(in));
  }
  auto leaves_at = [&](const std::vector<std::vector<double>>& v,
                       bool with_grad) {
    std::vector<Tensor> leaves;
    for (size_t i = 0; i < v.size(); ++i) {
      leaves.push_back(make_leaf(v[i], shapes[i], with_grad));
    }
    return leaves;
  };
  auto views = [&](const std::vector<Tensor>& leaves) {
    std::vector<Tensor> out;
    for (size_t i = 0; i < leaves.size(); ++i) {
      out.push_back(layout_view(leaves[i], inputs[i]));
    }
    return out;
  };

  // First order: d/dx sum(f(x) * r).
  std::vector<Tensor> leaves = leaves_at(base, true);
  Tensor y = f(views(leaves));
  ASSERT_EQ(y.dtype(), DType::f64) << "the checked function must give f64";
  ASSERT_TRUE(requires_grad(y)) << "the output does not depend on the inputs";
  const Tensor r = random(y.shape(), ++g_seed);
  auto first = [&](const std::vector<Tensor>& at, bool create) {
    return grad({f(views(at))}, at, {r}, create);
  };
  std::vector<Tensor> analytic = first(leaves, false);
  for (size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_EQ(analytic[i].shape(), shapes[i]);
    ASSERT_EQ(analytic[i].dtype(), DType::f64);
    std::vector<double> numeric;
    for (size_t j = 0; j < base[i].size(); ++j) {
      auto v = base;
      double sides[2];
      for (int s = 0; s < 2; ++s) {
        v[i][j] = base[i][j] + (s == 0 ? o.eps : -o.eps);
        NoGradGuard no_grad;
        sides[s] = dot(f(views(leaves_at(v, false))), r);
      }
      numeric.push_back((sides[0] - sides[1]) / (2.0 * o.eps));
    }
    compare(fmt::format("{}: d/d input {}", label, i),
            analytic[i].to_vector<double>(), numeric, o);
  }
  if (!o.second_order) return;

  // Second order: d/dx sum_i <grad_i(x), r2_i>, the gradient of the
  // gradient in direction r2.
  std::vector<Tensor> r2;
  for (const Shape& s : shapes) r2.push_back(random(s, ++g_seed));
  auto h_value = [&](const std::vector<Tensor>& grads) {
    double s = 0.0;
    for (size_t i = 0; i < grads.size(); ++i) s += dot(grads[i], r2[i]);
    return s;
  };
  leaves = leaves_at(base, true);
  std::vector<Tensor> grads = first(leaves, true);
  Tensor h;
  for (size_t i = 0; i < grads.size(); ++i) {
    Tensor term = sum(mul(grads[i], r2[i]));
    h = h.defined() ? add(h, term) : term;
  }
  std::vector<Tensor> analytic2;
  if (requires_grad(h)) {
    analytic2 = grad({h}, leaves);
  } else {  // f is linear: its gradient does not depend on x.
    for (const Shape& s : shapes)
      analytic2.push_back(zeros(s, backend(), DType::f64));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<double> numeric;
    for (size_t j = 0; j < base[i].size(); ++j) {
      auto v = base;
      double sides[2];
      for (int s = 0; s < 2; ++s) {
        v[i][j] = base[i][j] + (s == 0 ? o.eps : -o.eps);
        sides[s] = h_value(first(leaves_at(v, true), false));
      }
      numeric.push_back((sides[0] - sides[1]) / (2.0 * o.eps));
    }
    Options o2 = o;
    o2.atol *= 10.0;
    o2.rtol *= 10.0;
    compare(fmt::format("{}: d2/d input {}", label, i),
            analytic2[i].to_vector<double>(), numeric, o2);
  }
}

void check_layouts(const std::string& label, std::vector<Input> inputs,
                   const Fn& f, Options options) {
  for (Layout layout : kLayouts) {
    for (Input& in : inputs) in.layout = layout;
    check(label + " (" + conformance::name(layout) + ")", inputs, f, options);
  }
}

}  // namespace nascent::autodiff::testing
