// Gradients through the autodiff decorator over the CUDA backend against
// the same decorator over the CPU backend: every case builds the same f32
// leaves on both (values from a host generator), runs the function, pulls
// back the same random cotangent with autodiff::grad and compares the
// gradients of every input. The cases cover the differentiable op families
// (element-wise with broadcasting, matmul, reductions, softmax, norms,
// convolution, pooling, indexing, cat/split and views) on contiguous and
// strided inputs. TF32 is off, so both sides are plain f32 and agree up to
// the order of their sums. Without a GPU every case skips and says why.
#include <algorithm>
#include <cmath>
#include <functional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "nascent/autodiff/autodiff.h"
#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cuda/backend.h"
#include "nascent/core/ops.h"
#include "nascent/nn/loss.h"

namespace nascent::cuda {
namespace {

using Inputs = std::vector<Tensor>;
using Fn = std::function<Tensor(const Inputs&)>;

struct GradCase {
  std::string name;
  std::vector<Shape> shapes;
  Fn f;
  float low = -2.0f, high = 2.0f;
  float gap = 0.0f;  // Values kept out of (-gap, gap): kinks at 0.
};
// gtest names the case in its messages.
void PrintTo(const GradCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<float> host_values(int64_t n, uint32_t seed, float low, float high,
                               float gap) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(low, high);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) {
    x = dist(gen);
    if (std::fabs(x) < gap) x = x < 0.0f ? x - gap : x + gap;
  }
  return v;
}

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Tensor ids(const std::vector<int64_t>& v, const Shape& shape,
           nascent::Backend& b) {
  return from_vector(v, shape, b);
}

// The gradients of every input of `c` on `backend` (an autodiff backend).
std::vector<std::vector<float>> gradients(const GradCase& c,
                                          autodiff::Backend& backend) {
  Inputs leaves;
  for (size_t i = 0; i < c.shapes.size(); ++i) {
    const Shape& s = c.shapes[i];
    leaves.push_back(from_vector(
        host_values(numel(s), uint32_t(17 + i), c.low, c.high, c.gap), s,
        backend));
    autodiff::set_requires_grad(leaves.back());
  }
  const Tensor y = c.f(leaves);
  const Tensor cotangent = from_vector(
      host_values(y.numel(), 99, -1.0f, 1.0f, 0.0f), y.shape(), backend);
  const std::vector<Tensor> grads = autodiff::grad({y}, leaves, {cotangent});
  std::vector<std::vector<float>> out;
  for (const Tensor& g : grads) out.push_back(g.to_vector<float>());
  return out;
}

class CudaAutodiff : public ::testing::TestWithParam<GradCase> {};

TEST_P(CudaAutodiff, GradientsMatchTheCpu) {
  if (Backend::device_count() == 0) {
    GTEST_SKIP() << "no CUDA device: the driver reports none, so gradients "
                    "through autodiff over the CUDA backend cannot be "
                    "compared with the CPU's here";
  }
  // Never destroyed: the CUDA runtime may be gone by the time statics are.
  static Backend& gpu = *new Backend(0);
  static cpu::Backend& cpu = *new cpu::Backend();
  static autodiff::Backend& ad_gpu = *new autodiff::Backend(gpu);
  static autodiff::Backend& ad_cpu = *new autodiff::Backend(cpu);
  gpu.set_allow_tf32(false);
  const GradCase& c = GetParam();
  const auto want = gradients(c, ad_cpu);
  const auto got = gradients(c, ad_gpu);
  ASSERT_EQ(got.size(), c.shapes.size());
  ASSERT_EQ(want.size(), c.shapes.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i].size(), want[i].size()) << c.name << " input " << i;
    double scale = 0.0;
    for (float v : want[i]) scale = std::max(scale, std::fabs(double(v)));
    // Sums of a few hundred f32 terms in another order: a few ulps of the
    // largest gradient, and of each value. A wrong rule is off by O(1).
    int bad = 0;
    for (size_t j = 0; j < want[i].size(); ++j) {
      const double a = got[i][j], b = want[i][j];
      const double tol = 1e-4 * std::fabs(b) + 2e-5 * scale + 1e-7;
      if (!(std::fabs(a - b) <= tol) && ++bad <= 3) {
        ADD_FAILURE() << c.name << ": d/d(input " << i << ")[" << j << "] is "
                      << a << " on cuda, " << b << " on cpu";
      }
    }
    EXPECT_EQ(bad, 0) << c.name << " input " << i << ": " << bad << " of "
                      << want[i].size() << " gradient values differ";
    EXPECT_GT(scale, 0.0) << c.name << " input " << i
                          << ": the gradient is all zeros, the case tests "
                             "nothing";
  }
}

Conv2dParams conv(int64_t stride, int64_t padding, int64_t groups) {
  Conv2dParams p;
  p.stride[0] = p.stride[1] = stride;
  p.padding[0] = p.padding[1] = padding;
  p.groups = groups;
  return p;
}

Pool2dParams pool(int64_t kernel, int64_t stride, int64_t padding) {
  Pool2dParams p;
  p.kernel[0] = p.kernel[1] = kernel;
  p.stride[0] = p.stride[1] = stride;
  p.padding[0] = p.padding[1] = padding;
  return p;
}

std::vector<GradCase> unary_cases() {
  using U = Tensor (*)(const Tensor&);
  struct Entry {
    const char* name;
    U f;
    float low, high, gap;
  };
  const Entry entries[] = {
      {"exp", nascent::exp, -2, 2, 0},
      {"log", nascent::log, 0.5f, 2, 0},
      {"log1p", nascent::log1p, -0.5f, 2, 0},
      {"expm1", nascent::expm1, -2, 2, 0},
      {"sqrt", nascent::sqrt, 0.5f, 2, 0},
      {"rsqrt", nascent::rsqrt, 0.5f, 2, 0},
      {"sin", nascent::sin, -2, 2, 0},
      {"cos", nascent::cos, -2, 2, 0},
      {"tanh", nascent::tanh, -2, 2, 0},
      {"sigmoid", nascent::sigmoid, -2, 2, 0},
      {"relu", nascent::relu, -2, 2, 0.1f},
      {"gelu", nascent::gelu, -2, 2, 0},
      {"gelu_tanh", nascent::gelu_tanh, -2, 2, 0},
      {"silu", nascent::silu, -2, 2, 0},
      {"erf", nascent::erf, -2, 2, 0},
      {"abs", nascent::abs, -2, 2, 0.1f},
      {"neg", nascent::neg, -2, 2, 0},
      {"square", nascent::square, -2, 2, 0},
      {"reciprocal", nascent::reciprocal, 0.5f, 2, 0},
  };
  std::vector<GradCase> cases;
  for (const Entry& e : entries) {
    // On a transposed view: the GPU's strided path.
    U f = e.f;
    cases.push_back({e.name,
                     {{9, 33}},
                     [f](const Inputs& x) { return f(x[0].transpose(0, 1)); },
                     e.low,
                     e.high,
                     e.gap});
  }
  cases.push_back({"clamp", {{9, 33}}, [](const Inputs& x) {
                     return clamp(x[0], -1.0, 1.5);
                   }});
  cases.push_back({"pow_scalar",
                   {{9, 33}},
                   [](const Inputs& x) { return pow(x[0], 2.5); },
                   0.5f,
                   2.0f});
  return cases;
}

std::vector<GradCase> binary_cases() {
  return {
      {"add_broadcast",
       {{3, 4}, {4}},
       [](const Inputs& x) { return x[0] + x[1]; }},
      {"sub_mul_broadcast",
       {{2, 3, 4}, {3, 1}, {2, 1, 4}},
       [](const Inputs& x) { return (x[0] - x[1]) * x[2]; }},
      {"div_broadcast",
       {{3, 4}, {1, 4}},
       [](const Inputs& x) { return x[0] / x[1]; },
       0.5f,
       2.0f},
      {"maximum_minimum",
       {{3, 5}, {3, 5}},
       [](const Inputs& x) {
         return maximum(x[0], x[1]) + minimum(x[0], x[1]) * 2.0;
       }},
      {"pow_tensor",
       {{4, 3}, {4, 3}},
       [](const Inputs& x) { return pow(x[0], x[1]); },
       0.5f,
       2.0f},
      {"where",
       {{3, 4}, {3, 4}},
       [](const Inputs& x) { return where(gt(x[0], 0.0), x[0] * x[1], x[1]); },
       -2.0f,
       2.0f,
       0.1f},
      {"scalar_ops",
       {{5, 6}},
       [](const Inputs& x) { return (x[0] * 3.0 + 1.0) / 2.0 - x[0] * x[0]; }},
  };
}

std::vector<GradCase> matmul_cases() {
  auto mm = [](const Inputs& x) { return matmul(x[0], x[1]); };
  return {
      {"matmul_2d", {{5, 7}, {7, 3}}, mm},
      {"matmul_batched_broadcast", {{2, 5, 7}, {7, 3}}, mm},
      {"matmul_batched", {{3, 4, 6}, {3, 6, 2}}, mm},
      {"matmul_vector", {{7}, {7, 3}}, mm},
      {"matmul_transposed",
       {{7, 5}, {3, 7}},
       [](const Inputs& x) {
         return matmul(x[0].transpose(0, 1), x[1].transpose(0, 1));
       }},
  };
}

std::vector<GradCase> reduce_cases() {
  const Shape s = {3, 4, 5};
  return {
      {"sum_all", {s}, [](const Inputs& x) { return sum(x[0]); }},
      {"sum_axis", {s}, [](const Inputs& x) { return sum(x[0], {1}); }},
      {"mean_axes",
       {s},
       [](const Inputs& x) {
         return mean(x[0], {0, 2}, true);
       }},
      {"max_axis", {s}, [](const Inputs& x) { return max(x[0], {1}); }},
      {"min_all", {s}, [](const Inputs& x) { return min(x[0]); }},
      {"prod_axis",
       {s},
       [](const Inputs& x) { return prod(x[0], {2}); },
       0.5f,
       1.5f},
      {"var_std",
       {s},
       [](const Inputs& x) {
         return var(x[0], {1}) + nascent::std(x[0], {1});
       }},
      {"logsumexp", {s}, [](const Inputs& x) { return logsumexp(x[0], {2}); }},
      {"cumsum", {s}, [](const Inputs& x) { return cumsum(x[0], 1); }},
  };
}

std::vector<GradCase> nn_cases() {
  return {
      {"softmax_last",
       {{6, 37}},
       [](const Inputs& x) { return softmax(x[0], -1); }},
      {"softmax_axis0",
       {{6, 37}},
       [](const Inputs& x) { return softmax(x[0], 0); }},
      {"log_softmax",
       {{6, 37}},
       [](const Inputs& x) { return log_softmax(x[0], -1); }},
      {"layer_norm",
       {{4, 16}, {16}, {16}},
       [](const Inputs& x) { return layer_norm(x[0], &x[1], &x[2]); }},
      {"layer_norm_2d",
       {{3, 4, 8}, {4, 8}, {4, 8}},
       [](const Inputs& x) { return layer_norm(x[0], &x[1], &x[2], 1e-5, 2); }},
      {"rms_norm",
       {{4, 16}, {16}},
       [](const Inputs& x) { return rms_norm(x[0], &x[1]); }},
      {"conv2d",
       {{2, 3, 8, 8}, {4, 3, 3, 3}, {4}},
       [](const Inputs& x) {
         return conv2d(x[0], x[1], &x[2], conv(1, 1, 1));
       }},
      {"conv2d_stride_groups",
       {{1, 4, 9, 9}, {6, 2, 3, 3}},
       [](const Inputs& x) {
         return conv2d(x[0], x[1], nullptr, conv(2, 1, 2));
       }},
      {"max_pool2d",
       {{2, 3, 8, 8}},
       [](const Inputs& x) { return max_pool2d(x[0], pool(2, 2, 0)); }},
      {"avg_pool2d",
       {{2, 3, 9, 9}},
       [](const Inputs& x) { return avg_pool2d(x[0], pool(3, 2, 1)); }},
      {"cross_entropy",
       {{5, 7}},
       [](const Inputs& x) {
         return nn::cross_entropy(x[0],
                                  ids({0, 6, 3, 3, 1}, {5}, x[0].backend()));
       }},
  };
}

std::vector<GradCase> index_and_view_cases() {
  return {
      {"gather",
       {{4, 5}},
       [](const Inputs& x) {
         return gather(
             x[0], 1,
             ids({0, 4, 4, 1, 2, 2, 3, 0, 1, 4, 4, 4}, {4, 3}, x[0].backend()));
       }},
      {"index_select",
       {{6, 4}},
       [](const Inputs& x) {
         return index_select(x[0], 0, ids({5, 0, 2, 2}, {4}, x[0].backend()));
       }},
      {"embedding",
       {{10, 4}},
       [](const Inputs& x) {
         return embedding(x[0],
                          ids({1, 9, 1, 0, 3, 9}, {2, 3}, x[0].backend()));
       }},
      {"scatter_add",
       {{5, 3}, {4, 3}},
       [](const Inputs& x) {
         return scatter_add(
             x[0], 0,
             ids({0, 4, 4, 1, 1, 1, 3, 0, 2, 4, 2, 0}, {4, 3}, x[0].backend()),
             x[1]);
       }},
      {"cat_split",
       {{3, 4}, {3, 2}},
       [](const Inputs& x) {
         const std::vector<Tensor> parts =
             split(cat({x[0], x[1]}, 1), std::vector<int64_t>{1, 5}, 1);
         return cat({parts[1], parts[0] * 3.0}, 1);
       }},
      {"views",
       {{2, 3, 4}},
       [](const Inputs& x) {
         return x[0].permute({2, 0, 1}).reshape({4, 6}).slice(1, 1, 6, 2) *
                x[0].select(0, 1).select(0, 2).slice(0, 1, 4).expand({4, 3});
       }},
      {"pad_flip_repeat_tril",
       {{3, 4}},
       [](const Inputs& x) {
         return tril(repeat(pad(flip(x[0], {0}), {1, 2}), {2, 1}), 1);
       }},
  };
}

std::vector<GradCase> all_cases() {
  std::vector<GradCase> all;
  for (auto cases : {unary_cases(), binary_cases(), matmul_cases(),
                     reduce_cases(), nn_cases(), index_and_view_cases()}) {
    all.insert(all.end(), cases.begin(), cases.end());
  }
  return all;
}

INSTANTIATE_TEST_SUITE_P(Ops, CudaAutodiff, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<GradCase>& param) {
                           return param.param.name;
                         });

}  // namespace
}  // namespace nascent::cuda
