// The autodiff decorator's behaviour: graphs with shared nodes,
// accumulation, retain_graph, no_grad, detach, gradients of gradients,
// writes into saved tensors, errors, memory, and f32 against f64.
#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "autodiff/gradcheck.h"
#include "nascent/backends/cpu/backend.h"

namespace nascent::autodiff::testing {
namespace {

std::vector<double> vals(const Tensor& t) {
  return t.to_vector<double>();
}

void expect_near(const std::vector<double>& got,
                 const std::vector<double>& want, double tol = 1e-12) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::fabs(want[i])))
        << "element " << i;
  }
}

Tensor leaf(const Shape& shape, uint64_t seed, double low = -2,
            double high = 2) {
  Tensor t = random(shape, seed, low, high);
  set_requires_grad(t);
  return t;
}

template <class E, class Fn>
void expect_error(Fn&& fn, const std::vector<std::string>& words) {
  try {
    fn();
    ADD_FAILURE() << "no exception";
  } catch (const E& e) {
    std::string msg = e.what();
    for (const std::string& w : words) {
      EXPECT_NE(msg.find(w), std::string::npos)
          << "message \"" << msg << "\" lacks \"" << w << "\"";
    }
  }
}

TEST(Autodiff, DiamondGraph) {
  // y = sin(x) * cos(x): x reaches y by two paths; dy/dx = cos(2x).
  Tensor x = leaf({5}, 1);
  backward(sum(mul(sin(x), cos(x))));
  std::vector<double> want;
  for (double v : vals(x)) want.push_back(std::cos(2 * v));
  expect_near(vals(grad(x)), want);
}

TEST(Autodiff, MulOfATensorWithItself) {
  Tensor x = leaf({4}, 2);
  Gradients g = backward(sum(mul(x, x)));
  std::vector<double> want;
  for (double v : vals(x)) want.push_back(2 * v);
  expect_near(vals(grad(x)), want);
  expect_near(vals(g.get(x)), want);
  EXPECT_TRUE(g.has(x));
  EXPECT_EQ(g.size(), 1u);
}

TEST(Autodiff, GradientsHaveTheTensorsShapeDtypeAndBackend) {
  Tensor w = leaf({3, 2}, 3);
  Tensor x = random({4, 3}, 4);
  backward(mean(tanh(matmul(x, w))));
  Tensor g = grad(w);
  EXPECT_EQ(g.shape(), (Shape{3, 2}));
  EXPECT_EQ(g.dtype(), DType::f64);
  EXPECT_EQ(&g.backend(), &backend());
  EXPECT_FALSE(requires_grad(g));
}

TEST(Autodiff, BroadcastGradientSumsToTheInputShape) {
  Tensor b = leaf({3}, 5);
  Tensor x = random({4, 3}, 6);
  backward(sum(mul(add(x, b), 2.0)));
  expect_near(vals(grad(b)), {8, 8, 8});
}

TEST(Autodiff, AccumulatesAcrossBackwardCalls) {
  Tensor x = leaf({3}, 7);
  backward(sum(mul(x, 3.0)));
  expect_near(vals(grad(x)), {3, 3, 3});
  Gradients second = backward(sum(square(x)));
  std::vector<double> want, step;
  for (double v : vals(x)) {
    want.push_back(3 + 2 * v);
    step.push_back(2 * v);
  }
  expect_near(vals(grad(x)), want);
  expect_near(vals(second.get(x)), step);  // This call's gradient only.
  zero_grad(x);
  EXPECT_FALSE(grad(x).defined());
  backward(sum(x));
  expect_near(vals(grad(x)), {1, 1, 1});
}

TEST(Autodiff, GradIsSharedByCopiesOfTheHandle) {
  Tensor x = leaf({2}, 8);
  Tensor copy = x;
  EXPECT_TRUE(requires_grad(copy));
  EXPECT_TRUE(is_leaf(copy));
  EXPECT_FALSE(is_leaf(x.reshape({2, 1})));
  EXPECT_FALSE(is_leaf(exp(x)));
  backward(sum(mul(copy, 5.0)));
  expect_near(vals(grad(x)), {5, 5});
  // Views of a leaf require grad but are not the leaf.
  EXPECT_TRUE(requires_grad(x.reshape({2, 1})));
  EXPECT_FALSE(grad(x.reshape({2, 1})).defined());
}

TEST(Autodiff, RetainGraph) {
  Tensor x = leaf({3}, 9);
  Tensor loss = sum(exp(x));
  backward(loss, {.retain_graph = true});
  backward(loss);
  std::vector<double> want;
  for (double v : vals(x)) want.push_back(2 * std::exp(v));
  expect_near(vals(grad(x)), want);
  // The second backward freed the saved tensors.
  expect_error<ValueError>([&] { backward(loss); },
                           {"backward", "exp", "retain_graph"});
}

TEST(Autodiff, NoGradGuard) {
  Tensor x = leaf({3}, 10);
  EXPECT_TRUE(grad_enabled());
  Tensor y;
  {
    NoGradGuard no_grad;
    EXPECT_FALSE(grad_enabled());
    y = exp(x);
    {
      NoGradGuard nested;
      EXPECT_FALSE(grad_enabled());
    }
    EXPECT_FALSE(grad_enabled());
  }
  EXPECT_TRUE(grad_enabled());
  EXPECT_FALSE(requires_grad(y));
  EXPECT_TRUE(requires_grad(exp(x)));
  expect_error<ValueError>([&] { backward(sum(y)); },
                           {"backward", "does not require grad"});
}

TEST(Autodiff, Detach) {
  Tensor x = leaf({3}, 11);
  Tensor d = detach(x);
  EXPECT_FALSE(requires_grad(d));
  EXPECT_FALSE(requires_grad(d.reshape({3, 1})));
  EXPECT_EQ(d.data(), x.data());
  // Only the attached path carries gradient: d(x * d)/dx = d.
  backward(sum(mul(x, d)));
  expect_near(vals(grad(x)), vals(x));
  // x.detach().requires_grad_(): a new leaf over the same storage.
  Tensor h = detach(exp(x));
  set_requires_grad(h);
  backward(sum(mul(h, 3.0)));
  expect_near(vals(grad(h)), {3, 3, 3});
}

TEST(Autodiff, SetRequiresGradOff) {
  Tensor x = leaf({2}, 12);
  set_requires_grad(x, false);
  EXPECT_FALSE(requires_grad(x));
  EXPECT_FALSE(requires_grad(exp(x)));
}

TEST(Autodiff, FunctionalGradOfAnIntermediate) {
  Tensor x = leaf({3}, 13);
  Tensor y = exp(x);
  Tensor z = sum(square(y));
  std::vector<Tensor> g = grad({z}, {y, x});
  std::vector<double> gy, gx;
  for (double v : vals(x)) {
    gy.push_back(2 * std::exp(v));
    gx.push_back(2 * std::exp(2 * v));
  }
  expect_near(vals(g[0]), gy);
  expect_near(vals(g[1]), gx);
  EXPECT_FALSE(grad(x).defined());  // grad() does not accumulate.
  // An input the output does not depend on gets zeros.
  Tensor unused = leaf({2}, 14);
  std::vector<Tensor> g2 = grad({sum(exp(x))}, {unused});
  expect_near(vals(g2[0]), {0, 0});
}

TEST(Autodiff, SecondOrderElementwise) {
  Tensor x = leaf({4}, 15);
  // d2/dx2 x^3 = 6x, through pow and through mul.
  for (int form = 0; form < 2; ++form) {
    Tensor y = form == 0 ? pow(x, 3.0) : mul(mul(x, x), x);
    Tensor g = grad({sum(y)}, {x}, {}, true)[0];
    Tensor h = grad({sum(g)}, {x})[0];
    std::vector<double> want;
    for (double v : vals(x)) want.push_back(6 * v);
    expect_near(vals(h), want, 1e-10);
  }
  // tanh'' = -2 tanh (1 - tanh^2).
  Tensor g = grad({sum(tanh(x))}, {x}, {}, true)[0];
  Tensor h = grad({sum(g)}, {x})[0];
  std::vector<double> want;
  for (double v : vals(x)) {
    double t = std::tanh(v);
    want.push_back(-2 * t * (1 - t * t));
  }
  expect_near(vals(h), want, 1e-10);
}

TEST(Autodiff, SecondOrderMatmulChain) {
  // f(x) = (A x) . (B x): the Hessian is A^T B + B^T A; check H v.
  Tensor a = random({3, 4}, 16), b = random({3, 4}, 17), v = random({4}, 18);
  Tensor x = leaf({4}, 19);
  auto f = [&] { return sum(mul(matmul(a, x), matmul(b, x))); };
  Tensor g = grad({f()}, {x}, {}, true)[0];
  Tensor hv = grad({sum(mul(g, v))}, {x})[0];
  Tensor want = add(matmul(matmul(a.transpose(0, 1), b), v),
                    matmul(matmul(b.transpose(0, 1), a), v));
  expect_near(vals(hv), vals(want), 1e-10);
  // The same Hessian-vector product through backward(create_graph).
  // (The call above freed that graph: build it again.)
  backward(f(), {.create_graph = true});
  Tensor gx = grad(x);
  EXPECT_TRUE(requires_grad(gx));
  std::vector<Tensor> hv2 = autodiff::grad({sum(mul(gx, v))}, {x});
  zero_grad(x);  // Breaks the leaf <-> gradient cycle create_graph makes.
  expect_near(vals(hv2[0]), vals(want), 1e-10);
}

TEST(Autodiff, SecondOrderReductions) {
  Tensor x = leaf({5}, 20);
  Tensor v = random({5}, 21);
  double sv = 0;
  for (double e : vals(v)) sv += e;
  // f = sum(x)^2: H = 2 (all ones), so H v = 2 sum(v) everywhere.
  Tensor g = grad({square(sum(x))}, {x}, {}, true)[0];
  expect_near(vals(grad({sum(mul(g, v))}, {x})[0]),
              std::vector<double>(5, 2 * sv));
  // f = mean(x)^2: H = 2 / n^2.
  g = grad({square(mean(x))}, {x}, {}, true)[0];
  expect_near(vals(grad({sum(mul(g, v))}, {x})[0]),
              std::vector<double>(5, 2 * sv / 25));
}

TEST(Autodiff, WritingASavedInputKeepsItsGradient) {
  // mul saves x; an optimizer-style update of x before backward must not
  // change the gradient of the function as it was evaluated.
  Tensor x = leaf({3}, 22);
  std::vector<double> before = vals(x);
  Tensor loss = sum(mul(x, x));
  {
    NoGradGuard no_grad;
    assign(x, add(x, 1.0));
  }
  backward(loss);
  std::vector<double> want;
  for (double v : before) want.push_back(2 * v);
  expect_near(vals(grad(x)), want);
  expect_near(vals(x), {before[0] + 1, before[1] + 1, before[2] + 1});
}

TEST(Autodiff, WritingASavedOutputKeepsItsGradient) {
  // exp saves its output; overwriting it (with grad on: the tensor is not a
  // leaf) changes later uses but not exp's gradient.
  Tensor x = leaf({3}, 23);
  Tensor y = exp(x);
  Tensor loss = sum(mul(y, 2.0));
  assign(y.slice(0, 0, 2), 0.0);
  backward(loss, {.retain_graph = true});
  std::vector<double> want;
  for (double v : vals(x)) want.push_back(2 * std::exp(v));
  expect_near(vals(grad(x)), want);
  // And a use after the write sees the new values, with no gradient through
  // the overwritten part.
  zero_grad(x);
  backward(sum(y));
  std::vector<double> xs = vals(x);
  expect_near(vals(grad(x)), {0, 0, std::exp(xs[2])});
}

TEST(Autodiff, WritingUnderASavedViewKeepsItsGradient) {
  // matmul saves a transposed view of x; part of x changes before backward.
  Tensor x = leaf({3, 2}, 40);
  Tensor w = random({3, 4}, 41);
  std::vector<double> before = vals(x);
  Tensor loss = sum(square(matmul(x.transpose(0, 1), w)));
  {
    NoGradGuard no_grad;
    assign(x.slice(0, 1, 2), 5.0);
  }
  backward(loss);
  // d/dx sum((x^T w)^2) = 2 w (x^T w)^T, with the values before the write.
  Tensor x0 = from_vector(before, {3, 2}, backend());
  Tensor want =
      mul(matmul(w, matmul(x0.transpose(0, 1), w).transpose(0, 1)), 2.0);
  expect_near(vals(grad(x)), vals(want), 1e-12);
}

TEST(Autodiff, BackwardFreesSavedTensors) {
  cpu::Backend cpu;
  autodiff::Backend ad(cpu);
  Tensor x = full({1000}, 0.5, ad, DType::f32);
  set_requires_grad(x);
  // exp keeps its output for the gradient; nothing else holds it.
  Tensor loss = sum(exp(x));
  EXPECT_EQ(cpu.memory_stats().allocated_bytes, 4000u + 4000u + 4u);
  backward(loss, {.retain_graph = true});
  EXPECT_EQ(cpu.memory_stats().allocated_bytes, 4000u + 4000u + 4u + 4000u);
  backward(loss);  // Frees the saved output; the gradient stays.
  EXPECT_EQ(cpu.memory_stats().allocated_bytes, 4000u + 4u + 4000u);
  loss = Tensor();
  zero_grad(x);
  EXPECT_EQ(cpu.memory_stats().allocated_bytes, 4000u);
}

TEST(Autodiff, EmptyTensorsAndHalfPrecision) {
  Tensor e = leaf({0, 3}, 42);
  backward(sum(exp(e)));
  EXPECT_EQ(grad(e).shape(), (Shape{0, 3}));
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    Tensor x = random({5}, 43).cast(dt);
    set_requires_grad(x);
    backward(sum(mul(square(x), 0.5)));
    EXPECT_EQ(grad(x).dtype(), dt);
    EXPECT_EQ(vals(grad(x)), vals(x)) << name(dt);
  }
}

TEST(Autodiff, StackGradientsAndCapturedGradientsStayIntact) {
  // stack writes five parts into one buffer: backward splits the gradient
  // again, reusing its storage where nothing else sees it.
  std::vector<Tensor> parts;
  for (uint64_t i = 0; i < 5; ++i) parts.push_back(leaf({3}, 50 + i));
  Tensor w = random({5, 3}, 60);
  Tensor stacked = stack(parts, 0);
  Tensor loss = sum(mul(stacked, w));
  // The gradient at `stacked` itself is captured too: reusing its storage
  // must not change it.
  std::vector<Tensor> inputs = {stacked};
  inputs.insert(inputs.end(), parts.begin(), parts.end());
  std::vector<Tensor> g = grad({loss}, inputs, {}, false);
  expect_near(vals(g[0]), vals(w));
  for (int64_t i = 0; i < 5; ++i) {
    expect_near(vals(g[size_t(i) + 1]), vals(w.select(0, i)));
  }
  backward(sum(mul(stack(parts, 0), w)));
  for (int64_t i = 0; i < 5; ++i) {
    expect_near(vals(grad(parts[size_t(i)])), vals(w.select(0, i)));
  }
}

TEST(Autodiff, DeepChain) {
  // Long graphs must neither overflow the stack in backward nor when they
  // are freed.
  Tensor x = leaf({2}, 44);
  Tensor y = x;
  for (int i = 0; i < 100000; ++i) y = add(y, 1.0);
  backward(sum(y));
  expect_near(vals(grad(x)), {1, 1});
}

TEST(Autodiff, Ties) {
  // max and min share the gradient among ties (PyTorch's amax), as do
  // maximum and minimum between their operands.
  Tensor x = from_vector<double>({1, 3, 3, 2}, backend());
  set_requires_grad(x);
  backward(max(x));
  expect_near(vals(grad(x)), {0, 0.5, 0.5, 0});
  Tensor a = from_vector<double>({1, 2}, backend());
  Tensor b = from_vector<double>({1, 3}, backend());
  set_requires_grad(a);
  set_requires_grad(b);
  backward(sum(maximum(a, b)));
  expect_near(vals(grad(a)), {0.5, 0});
  expect_near(vals(grad(b)), {0.5, 1});
  // max_pool2d gives the whole gradient to the element its index names.
  Tensor p = full({1, 1, 2, 2}, 1.0, backend(), DType::f64);
  set_requires_grad(p);
  Pool2dParams pp;
  backward(sum(max_pool2d(p, pp)));
  std::vector<double> g = vals(grad(p));
  EXPECT_EQ(g[0] + g[1] + g[2] + g[3], 1.0);
  EXPECT_EQ(std::count(g.begin(), g.end(), 1.0), 1);
}

TEST(Autodiff, WritingIntoALeafThatRequiresGrad) {
  Tensor w = leaf({3}, 24);
  Tensor x = leaf({3}, 25);
  expect_error<ValueError>([&] { assign(w, exp(x)); },
                           {"requires grad", "NoGradGuard"});
  // Values without history are a plain data update.
  assign(w, 1.0);
  expect_near(vals(w), {1, 1, 1});
  EXPECT_TRUE(requires_grad(w));
}

TEST(Autodiff, Errors) {
  Tensor x = leaf({2, 3}, 26);
  Tensor y = exp(x);
  expect_error<ValueError>([&] { backward(y); },
                           {"backward", "one element", "f64[2, 3]"});
  expect_error<ShapeError>(
      [&] {
        backward(y, random({3, 2}, 1));
      },
      {"backward", "grad_output", "f64[3, 2]", "f64[2, 3]"});
  expect_error<ValueError>([&] { backward(sum(random({3}, 2))); },
                           {"backward", "does not require grad"});
  expect_error<ValueError>([&] { set_requires_grad(y); },
                           {"set_requires_grad", "exp"});
  Tensor ints = arange(3, backend());
  expect_error<DTypeError>([&] { set_requires_grad(ints); },
                           {"set_requires_grad", "i64[3]"});
  cpu::Backend cpu;
  Tensor host = zeros({2}, cpu);
  expect_error<BackendError>([&] { set_requires_grad(host); },
                             {"set_requires_grad", "cpu"});
  expect_error<ValueError>([&] { grad({sum(y)}, {random({2}, 3)}); },
                           {"grad", "input 0", "does not require grad"});
  // Works with grad_output for non-scalar outputs.
  backward(y, ones_like(y));
  expect_near(vals(grad(x)), vals(y));
}

TEST(Autodiff, DelegatesStorageToTheWrappedBackend) {
  cpu::Backend cpu;
  autodiff::Backend ad(cpu);
  EXPECT_EQ(ad.name(), "autodiff(cpu)");
  EXPECT_EQ(&ad.inner(), &cpu);
  Tensor t = full({4}, 2.5, ad, DType::f32);
  EXPECT_EQ(cpu.memory_stats().allocated_bytes, 16u);
  ad.set_persistent(t, true);
  EXPECT_TRUE(ad.is_persistent(t));
  EXPECT_EQ(cpu.memory_stats().persistent_bytes, 16u);
  EXPECT_EQ(t.to(cpu).to_vector<float>(), std::vector<float>(4, 2.5f));
  Tensor inner = ad.unwrap(t);
  EXPECT_EQ(&inner.backend(), &cpu);
  Tensor back = ad.adopt(inner);
  EXPECT_EQ(back.to_vector<float>(), std::vector<float>(4, 2.5f));
  t = Tensor();
  inner = Tensor();
  back = Tensor();
  EXPECT_EQ(cpu.memory_stats().allocated_bytes, 0u);
}

// A two-layer perceptron with a cross-entropy loss.
struct Mlp {
  Tensor w1, b1, w2, b2;
  std::vector<Tensor> params() const { return {w1, b1, w2, b2}; }
};

Mlp make_mlp(autodiff::Backend& ad, DType dtype) {
  Generator gen(42);
  Mlp m{normal({10, 16}, 0, 0.3, ad, gen, DType::f64).cast(dtype),
        normal({16}, 0, 0.1, ad, gen, DType::f64).cast(dtype),
        normal({16, 3}, 0, 0.3, ad, gen, DType::f64).cast(dtype),
        normal({3}, 0, 0.1, ad, gen, DType::f64).cast(dtype)};
  for (const Tensor& p : m.params()) set_requires_grad(p);
  return m;
}

Tensor mlp_loss(const Mlp& m, const Tensor& x, const Tensor& labels) {
  Tensor h = relu(add(matmul(x, m.w1), m.b1));
  Tensor logits = add(matmul(h, m.w2), m.b2);
  Tensor picked = gather(log_softmax(logits, 1), 1, labels.unsqueeze(1));
  return neg(mean(picked));
}

TEST(Autodiff, MlpFloat32MatchesFloat64) {
  autodiff::Backend& ad = backend();
  Generator gen(5);
  Tensor x = normal({8, 10}, 0, 1, ad, gen, DType::f64);
  Tensor labels = from_vector<int64_t>({0, 1, 2, 2, 1, 0, 1, 2}, ad);
  Mlp m64 = make_mlp(ad, DType::f64);
  Mlp m32 = make_mlp(ad, DType::f32);
  backward(mlp_loss(m64, x, labels));
  backward(mlp_loss(m32, x.cast(DType::f32), labels));
  for (size_t i = 0; i < 4; ++i) {
    Tensor g64 = grad(m64.params()[i]), g32 = grad(m32.params()[i]);
    ASSERT_EQ(g32.dtype(), DType::f32);
    std::vector<double> a = vals(g32), b = vals(g64);
    for (size_t j = 0; j < a.size(); ++j) {
      EXPECT_NEAR(a[j], b[j], 1e-5 + 1e-4 * std::fabs(b[j]))
          << "parameter " << i << " element " << j;
    }
  }
}

TEST(Autodiff, TrainingLoopDoesNotGrowMemory) {
  cpu::Backend cpu;
  autodiff::Backend ad(cpu);
  Generator gen(6);
  Tensor x = normal({8, 10}, 0, 1, ad, gen, DType::f32);
  Tensor labels = from_vector<int64_t>({0, 1, 2, 2, 1, 0, 1, 2}, ad);
  Mlp m = make_mlp(ad, DType::f32);
  std::vector<size_t> allocated;
  for (int step = 0; step < 6; ++step) {
    {
      Tensor loss = mlp_loss(m, x, labels);
      // Views of the parameters through the graph, cat and a write into a
      // part of a tensor too.
      Tensor extra = sum(cat({m.b1, m.b1.slice(0, 2, 8)}, 0));
      backward(add(loss, mul(extra, 0.01)));
    }
    {
      NoGradGuard no_grad;
      for (const Tensor& p : m.params()) {
        assign(p, sub(p, mul(grad(p), 0.1)));
        zero_grad(p);
      }
    }
    allocated.push_back(cpu.memory_stats().allocated_bytes);
  }
  for (size_t i = 2; i < allocated.size(); ++i) {
    EXPECT_EQ(allocated[i], allocated[1]) << "step " << i;
  }
  // What is left is the parameters, inputs and labels.
  size_t params = 0;
  for (const Tensor& p : m.params()) params += size_t(p.numel()) * 4;
  EXPECT_EQ(allocated.back(), params + 8 * 10 * 4 + 8 * 8);
}

}  // namespace
}  // namespace nascent::autodiff::testing
