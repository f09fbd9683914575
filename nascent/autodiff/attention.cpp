// scaled_dot_product_attention. The forward is the wrapped backend's
// kernel (fused on the CPU); the node saves q, k, v and the mask (the
// tensors themselves, no copies) and its rule recomputes the probabilities
// from them, by blocks of queries as the composed default does:
//   S = scale q k^T + mask (keys after the query -inf when causal),
//   P = softmax(S), dV = P^T dO, dP = dO V^T, dS = P (dP - rowsum(dP P)),
//   dQ = scale dS K, dK = scale dS^T Q, dmask = dS.
// The query heads of one key/value head sit side by side ([B, Hkv, group *
// rows, ...], as in the default), so the products with K and V also sum
// dK and dV over each head's group.
#include <algorithm>
#include <limits>

#include "nascent/autodiff/graph.h"

namespace nascent::autodiff {

namespace {

using detail::Edge;
using detail::Saved;

// Scores (elements of [B, Hq, rows, Lk]) per block of the rule, as in the
// composed default (core/ops/attention.cpp): 16 MiB of f32, and a few
// block-sized intermediates (scores, P, dP, dS) alive at once. Under
// create_graph the tape keeps every block's; a mask gradient is the mask's
// size.
constexpr int64_t kScoresPerBlock = int64_t(1) << 22;

DType compute_dtype(DType dtype) {
  return dtype == DType::f64 ? DType::f64 : DType::f32;
}

// The mask as the node records it: its broadcast axes (stride 0) cut to
// size 1, so that its gradient is summed over them block by block rather
// than built at [B, Hq, Lq, Lk] (the way matmul records a batch-shared b).
Tensor without_broadcast(const Tensor& mask) {
  Shape s = mask.shape();
  for (size_t d = 0; d < s.size(); ++d) {
    if (mask.strides()[d] == 0) s[d] = 1;
  }
  return mask.as_strided(s, mask.strides(), mask.offset());
}

// sum += t, starting from t.
void accumulate(Tensor& sum, const Tensor& t) {
  sum = sum.defined() ? add(sum, t) : t;
}

Tensor cat_blocks(const std::vector<Tensor>& blocks, int64_t axis) {
  return blocks.size() == 1 ? blocks[0] : cat(blocks, axis);
}

class AttentionNode final : public detail::Node {
 public:
  AttentionNode(const AttentionParams& p, std::vector<Edge> next,
                const Tensor& out)
      : Node("attention", std::move(next), out), p_(p) {}

  std::vector<Tensor> apply(const Tensor& g) override;
  void release() override {
    released_ = released_ || q_.defined() || k_.defined() || v_.defined() ||
                mask_.defined();
    q_.reset();
    k_.reset();
    v_.reset();
    mask_.reset();
  }

  // mask_: the mask without its broadcast axes (without_broadcast).
  Saved q_, k_, v_, mask_;

 private:
  AttentionParams p_;
};

std::vector<Tensor> AttentionNode::apply(const Tensor& g) {
  const Tensor q = q_.get(*this), k = k_.get(*this);
  const DType ct = compute_dtype(q.dtype());
  const int64_t b = q.shape(0), hq = q.shape(1), lq = q.shape(2);
  const int64_t d = q.shape(3), hkv = k.shape(1), lk = k.shape(2);
  const int64_t dv = g.shape(3), group = hq / hkv;
  const Shape scores = {b, hq, lq, lk};
  // The mask's gradient is summed over the axes it is broadcast along.
  Tensor mask;
  DType mask_dtype = ct;
  Axes mask_axes;
  if (mask_.defined()) {
    const Tensor m = mask_.get(*this);
    for (int64_t a = 0; a < 4; ++a) {
      if (m.shape(a) == 1 && scores[size_t(a)] > 1) mask_axes.push_back(a);
    }
    mask_dtype = m.dtype();
    mask = m.cast(ct).expand(scores);
  }
  const bool mask_over_queries =
      std::find(mask_axes.begin(), mask_axes.end(), 2) != mask_axes.end();
  const bool want_ds = needs(0) || needs(1) || needs(3);
  const Tensor kc = k.cast(ct);
  const Tensor vc = want_ds ? v_.get(*this).cast(ct) : Tensor();
  const Tensor gc = g.cast(ct);
  const int64_t block =
      std::clamp<int64_t>(kScoresPerBlock / std::max<int64_t>(b * hq * lk, 1),
                          1, std::max<int64_t>(lq, 1));
  std::vector<Tensor> dq_blocks, dmask_blocks;
  Tensor dk, dv_sum, dmask_sum;
  for (int64_t i0 = 0; i0 < lq; i0 += block) {
    const int64_t rows = std::min(block, lq - i0);
    const Tensor qs = mul(q.narrow(2, i0, rows).cast(ct), p_.scale)
                          .reshape({b, hkv, group * rows, d});
    Tensor s = matmul(qs, kc.transpose(-1, -2)).reshape({b, hq, rows, lk});
    if (mask.defined()) s = add(s, mask.narrow(2, i0, rows));
    if (p_.causal) {
      // Row r is the query at position lk - lq + i0 + r.
      const Tensor r = arange(rows, g.backend(), DType::i64).unsqueeze(-1);
      const Tensor j = arange(lk, g.backend(), DType::i64);
      s = where(le(j, add(r, lk - lq + i0)), s,
                Scalar(-std::numeric_limits<double>::infinity()));
    }
    const Tensor probs = softmax(s, -1).reshape({b, hkv, group * rows, lk});
    const Tensor go =
        gc.narrow(2, i0, rows).reshape({b, hkv, group * rows, dv});
    if (needs(2)) accumulate(dv_sum, matmul(probs.transpose(-1, -2), go));
    if (!want_ds) continue;
    const Tensor dp = matmul(go, vc.transpose(-1, -2));
    const Tensor ds = mul(probs, sub(dp, sum(mul(dp, probs), {-1}, true)));
    if (needs(0)) {
      dq_blocks.push_back(
          mul(matmul(ds, kc), p_.scale).reshape({b, hq, rows, d}));
    }
    if (needs(1)) accumulate(dk, matmul(ds.transpose(-1, -2), qs));
    if (needs(3)) {
      Tensor dm = ds.reshape({b, hq, rows, lk});
      if (!mask_axes.empty()) dm = sum(dm, mask_axes, true);
      if (mask_over_queries) {
        accumulate(dmask_sum, dm);
      } else {
        dmask_blocks.push_back(dm);
      }
    }
  }
  std::vector<Tensor> out(4);
  if (needs(0)) out[0] = cat_blocks(dq_blocks, 2).cast(q.dtype());
  if (needs(1)) out[1] = dk.cast(k.dtype());
  if (needs(2)) out[2] = dv_sum.cast(g.dtype());
  if (needs(3)) {
    const Tensor dm =
        mask_over_queries ? dmask_sum : cat_blocks(dmask_blocks, 2);
    out[3] = dm.cast(mask_dtype);
  }
  return out;
}

}  // namespace

void Backend::attention(const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor* mask, const AttentionParams& p,
                        Tensor& out) {
  const Tensor m = mask != nullptr ? without_broadcast(*mask) : Tensor();
  detail::Recording r =
      detail::record({&q, &k, &v, mask != nullptr ? &m : nullptr}, out.dtype());
  std::shared_ptr<AttentionNode> node;
  if (r.active) {
    node = std::make_shared<AttentionNode>(p, r.edges, out);
    // Every gradient needs P (q, k and the mask); all but dV need dP (v).
    node->q_ = Saved::input(q, r.edges[0]);
    node->k_ = Saved::input(k, r.edges[1]);
    if (r.any(0) || r.any(1) || r.any(3)) {
      node->v_ = Saved::input(v, r.edges[2]);
    }
    if (mask != nullptr) node->mask_ = Saved::input(m, r.edges[3]);
  }
  detail::begin_write(out, node != nullptr);
  Tensor o = detail::to_inner(out);
  Tensor mask_in = mask != nullptr ? detail::to_inner(*mask) : Tensor();
  inner_.attention(detail::to_inner(q), detail::to_inner(k),
                   detail::to_inner(v), mask != nullptr ? &mask_in : nullptr, p,
                   o);
  detail::end_write(out, node);
}

}  // namespace nascent::autodiff
