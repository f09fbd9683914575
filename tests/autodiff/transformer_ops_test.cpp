// The transformer ops under autodiff on f32 (autodiff/rope.cpp,
// attention.cpp, glu.cpp): a transformer block's gradients through the
// CPU's fused kernels against those through the composed defaults
// (cpu:composed) and through the block written with basic ops, and the
// memory attention's node keeps after the forward.
#include <algorithm>
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "nascent/autodiff/autodiff.h"
#include "nascent/backends/cpu/backend.h"
#include "nascent/core/ops.h"

namespace nascent::autodiff {
namespace {

// Long enough that the attention rule runs over several blocks of queries
// (2^22 scores each: 953 of the 1100 rows for 4 query heads).
constexpr int64_t kTokens = 1100, kModel = 64, kHeads = 4, kKvHeads = 2;
constexpr int64_t kHeadDim = kModel / kHeads, kHidden = 96;

struct Weights {
  Tensor x, norm1, wq, wk, wv, wo, norm2, gate, up, down, loss;
  std::vector<Tensor> leaves() const {
    return {x, norm1, wq, wk, wv, wo, norm2, gate, up, down};
  }
};

Tensor leaf(const Shape& shape, Backend& backend, uint64_t seed,
            double scale = 1.0, double shift = 0.0, DType dtype = DType::f32) {
  Tensor t = add(mul(randn(shape, backend, seed, dtype), scale), shift);
  set_requires_grad(t);
  return t;
}

Weights weights(Backend& ad) {
  const double s = 1.0 / std::sqrt(double(kModel));
  Weights w;
  w.x = leaf({1, kTokens, kModel}, ad, 1);
  w.norm1 = leaf({kModel}, ad, 2, 0.1, 1.0);
  w.wq = leaf({kModel, kHeads * kHeadDim}, ad, 3, s);
  w.wk = leaf({kModel, kKvHeads * kHeadDim}, ad, 4, s);
  w.wv = leaf({kModel, kKvHeads * kHeadDim}, ad, 5, s);
  w.wo = leaf({kHeads * kHeadDim, kModel}, ad, 6, s);
  w.norm2 = leaf({kModel}, ad, 7, 0.1, 1.0);
  w.gate = leaf({kModel, kHidden}, ad, 8, s);
  w.up = leaf({kModel, kHidden}, ad, 9, s);
  w.down = leaf({kHidden, kModel}, ad, 10, 1.0 / std::sqrt(double(kHidden)));
  w.loss = detach(randn({1, kTokens, kModel}, ad, 11));
  return w;
}

// rope in basic ops (norm mode, every dim), as core's composed default.
Tensor basic_rope(const Tensor& x, const Tensor& positions, double base) {
  const int64_t n = x.shape(-3), half = x.shape(-1) / 2;
  // base^(-2i / dims) as a running product in f32, as the default.
  const float step = std::pow(float(base), -2.0f / float(2 * half));
  std::vector<float> powers;
  for (float t = 1.0f; int64_t(powers.size()) < half; t *= step) {
    powers.push_back(t);
  }
  const Tensor angles = mul(positions.cast(DType::f32).reshape({n, 1}),
                            from_vector(powers, {half}, x.backend()));
  const Tensor c = cos(angles).unsqueeze(1), s = sin(angles).unsqueeze(1);
  Shape pairs = x.shape();
  pairs.back() = half;
  pairs.push_back(2);
  const Tensor xp = x.reshape(pairs);
  const Tensor x0 = xp.select(-1, 0), x1 = xp.select(-1, 1);
  return stack({sub(mul(x0, c), mul(x1, s)), add(mul(x0, s), mul(x1, c))}, -1)
      .reshape(x.shape());
}

// Attention in basic ops: k and v repeated over each group of query heads,
// the full [B, Hq, Lq, Lk] scores, bottom-right causal.
Tensor basic_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                       bool causal, const Tensor* mask = nullptr) {
  const int64_t b = q.shape(0), hq = q.shape(1), lq = q.shape(2);
  const int64_t hkv = k.shape(1), lk = k.shape(2), group = hq / hkv;
  auto repeat = [&](const Tensor& t) {
    return t.unsqueeze(2)
        .expand({b, hkv, group, lk, t.shape(3)})
        .reshape({b, hq, lk, t.shape(3)});
  };
  Tensor s = mul(matmul(q, repeat(k).transpose(-1, -2)),
                 1.0 / std::sqrt(double(q.shape(3))));
  if (mask != nullptr) s = add(s, *mask);
  if (causal) {
    const Tensor i = arange(lq, q.backend(), DType::i64).unsqueeze(-1);
    const Tensor j = arange(lk, q.backend(), DType::i64);
    s = where(le(j, add(i, lk - lq)), s,
              Scalar(-std::numeric_limits<double>::infinity()));
  }
  return matmul(softmax(s, -1), repeat(v));
}

// rms_norm -> rope(q, k) -> causal GQA attention -> swiglu FFN, with
// residuals; the loss is sum(output * random weights).
Tensor block_loss(const Weights& w, bool basic) {
  const Tensor pos = arange(kTokens, w.x.backend(), DType::i32);
  const RopeParams rp{.base = 10000.0};
  const Tensor h = rms_norm(w.x, &w.norm1);
  Tensor q = matmul(h, w.wq).reshape({1, kTokens, kHeads, kHeadDim});
  Tensor k = matmul(h, w.wk).reshape({1, kTokens, kKvHeads, kHeadDim});
  Tensor v = matmul(h, w.wv).reshape({1, kTokens, kKvHeads, kHeadDim});
  q = basic ? basic_rope(q, pos, rp.base) : rope(q, pos, rp);
  k = basic ? basic_rope(k, pos, rp.base) : rope(k, pos, rp);
  q = q.transpose(1, 2), k = k.transpose(1, 2), v = v.transpose(1, 2);
  const Tensor a =
      basic ? basic_attention(q, k, v, true)
            : scaled_dot_product_attention(q, k, v, {.causal = true});
  const Tensor h2 =
      add(w.x, matmul(a.transpose(1, 2).reshape({1, kTokens, kModel}), w.wo));
  const Tensor f = rms_norm(h2, &w.norm2);
  const Tensor g = matmul(f, w.gate), u = matmul(f, w.up);
  const Tensor act = basic ? mul(silu(g), u) : swiglu(g, u);
  return sum(mul(add(h2, matmul(act, w.down)), w.loss));
}

using Values = std::vector<std::vector<double>>;

Values values(const std::vector<Tensor>& tensors) {
  Values out;
  for (const Tensor& t : tensors) out.push_back(t.to_vector<double>());
  return out;
}

// The gradients of the block's loss with respect to its weights, on the
// host (the autodiff backend does not outlive the call).
Values block_grads(nascent::Backend& inner, bool basic) {
  autodiff::Backend ad(inner);
  const Weights w = weights(ad);
  return values(grad({block_loss(w, basic)}, w.leaves()));
}

// Each gradient within `tol` of the largest magnitude of `want`'s.
void expect_close(const Values& got, const Values& want, double tol,
                  const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const std::vector<double>& a = got[i];
    const std::vector<double>& b = want[i];
    ASSERT_EQ(a.size(), b.size());
    double top = 0.0, err = 0.0;
    for (size_t j = 0; j < a.size(); ++j) {
      top = std::max(top, std::fabs(b[j]));
      err = std::max(err, std::fabs(a[j] - b[j]));
    }
    EXPECT_GT(top, 0.0) << what << ": gradient " << i << " is zero";
    EXPECT_LE(err, tol * top) << what << ": gradient " << i;
  }
}

TEST(TransformerOpsAutodiff, FusedKernelsGiveTheComposedGradients) {
  cpu::Backend fused;
  cpu::Backend composed(cpu::Options{.fused = false});
  const Values a = block_grads(fused, false);
  const Values b = block_grads(composed, false);
  // The rules against the gradients of the block in basic ops (the tape the
  // composed defaults recorded before the ops had rules).
  const Values c = block_grads(composed, true);
  expect_close(a, b, 1e-4, "fused against composed");
  expect_close(a, c, 1e-4, "fused against basic ops");
}

TEST(TransformerOpsAutodiff, AttentionMaskGradientOverSeveralBlocks) {
  // Lq < Lk, MQA, masks that require grad, over two blocks of queries.
  cpu::Backend cpu;
  autodiff::Backend ad(cpu);
  const int64_t hq = 4, lq = 1100, lk = 1200, d = 8;
  const Tensor q = leaf({1, hq, lq, d}, ad, 20);
  const Tensor k = leaf({1, 1, lk, d}, ad, 21);
  const Tensor v = leaf({1, 1, lk, d}, ad, 22);
  for (const Shape& m : {Shape{1, 1, lq, lk}, Shape{1, hq, 1, lk}}) {
    SCOPED_TRACE(to_string(m));
    const Tensor mask = leaf(m, ad, 23);
    const Tensor r = detach(randn({1, hq, lq, d}, ad, 24));
    const std::vector<Tensor> leaves = {q, k, v, mask};
    const Values a = values(
        grad({sum(mul(scaled_dot_product_attention(q, k, v, {}, &mask), r))},
             leaves));
    const Values b = values(
        grad({sum(mul(basic_attention(q, k, v, false, &mask), r))}, leaves));
    expect_close(a, b, 1e-4, "attention rule against basic ops");
  }
}

TEST(TransformerOpsAutodiff, RopeGradientsThroughTheKernel) {
  // dx is rope with inverse flipped: the kernel's inverse, neox and partial
  // rotation against the composed default's.
  const RopeParams params[] = {
      {.dims = 8, .mode = RopeMode::neox, .base = 500.0},
      {.mode = RopeMode::norm, .scale = 2.0, .inverse = true},
  };
  for (const RopeParams& p : params) {
    Values got[2];
    for (int fused = 0; fused < 2; ++fused) {
      cpu::Backend cpu(cpu::Options{.fused = fused == 1});
      autodiff::Backend ad(cpu);
      const Tensor x = leaf({2, 5, 3, 16}, ad, 40);
      const Tensor pos =
          from_vector(std::vector<int32_t>{7, 0, 1, 2, 300}, {5}, ad);
      const int64_t half = (p.dims == 0 ? 16 : p.dims) / 2;
      const Tensor factors = add(rand({half}, ad, 41), 1.0);
      const Tensor r = detach(randn(x.shape(), ad, 42));
      got[fused] = values(grad(
          {sum(mul(rope(x, pos, p, p.inverse ? nullptr : &factors), r))}, {x}));
    }
    expect_close(got[1], got[0], 1e-5, "rope kernel against composed");
  }
}

TEST(TransformerOpsAutodiff, AttentionGradientsOfSomeInputs) {
  // The node computes only what the inputs with history need: each input
  // alone gets the gradient it gets among all of them.
  cpu::Backend cpu;
  autodiff::Backend ad(cpu);
  const Shape shapes[] = {
      {2, 4, 3, 5}, {2, 2, 6, 5}, {2, 2, 6, 3}, {1, 4, 3, 6}};
  std::vector<Tensor> all;
  for (size_t i = 0; i < 4; ++i) {
    all.push_back(leaf(shapes[i], ad, 50 + i, 1.0, 0.0, DType::f64));
  }
  auto loss = [](const std::vector<Tensor>& x) {
    const Tensor y =
        scaled_dot_product_attention(x[0], x[1], x[2], {.causal = true}, &x[3]);
    return sum(mul(y, y));
  };
  const Values want = values(grad({loss(all)}, all));
  for (size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    std::vector<Tensor> x;
    for (const Tensor& t : all) x.push_back(detach(t));
    set_requires_grad(x[i]);
    expect_close(values(grad({loss(x)}, {x[i]})), {want[i]}, 1e-12,
                 "one input");
  }
}

TEST(TransformerOpsAutodiff, AttentionKeepsNoScoresAfterTheForward) {
  // The node saves q, k and v and recomputes the probabilities in backward:
  // after the forward, the tape holds nothing of [B, Hq, Lq, Lk].
  cpu::Backend cpu;
  autodiff::Backend ad(cpu);
  const int64_t hq = 8, hkv = 2, l = 512, d = 16;
  const Tensor q = leaf({1, hq, l, d}, ad, 30);
  const Tensor k = leaf({1, hkv, l, d}, ad, 31);
  const Tensor v = leaf({1, hkv, l, d}, ad, 32);
  const size_t probs = size_t(hq * l * l) * sizeof(float);
  const size_t before = cpu.memory_stats().allocated_bytes;
  Tensor out = scaled_dot_product_attention(q, k, v, {.causal = true});
  const size_t kept = cpu.memory_stats().allocated_bytes - before;
  EXPECT_EQ(kept, size_t(out.numel()) * sizeof(float));
  EXPECT_LT(kept * 16, probs);
  // The same attention in basic ops keeps its probabilities (and more), so
  // the measure would see them.
  {
    const Tensor basic = basic_attention(q, k, v, true);
    EXPECT_GE(cpu.memory_stats().allocated_bytes - before - kept, probs);
  }
  // And the gradient still comes out.
  Tensor loss = sum(out);
  backward(loss);
  EXPECT_TRUE(grad(q).defined() && grad(k).defined() && grad(v).defined());
}

}  // namespace
}  // namespace nascent::autodiff
