// Attention on the CPU for f32, fused: one task per (batch, query head,
// block of queries) computes the block's scores, the softmax in place and
// the product with V straight into the output. The only scratch is a
// block's scores (kTokens x keys floats per thread), not the [Hq, Lq, Lk]
// scores and probabilities of the whole batch: for a 512-token prompt of
// TinyLlama those were 2 x 32 MiB at the peak of the resident set.
#include <algorithm>
#include <cmath>
#include <vector>

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/gemm/gemm.h"
#include "nascent/backends/cpu/gemm/xwt.h"
#include "nascent/backends/cpu/simd/runs.h"
#include "nascent/backends/cpu/thread_pool.h"

namespace nascent::cpu {

namespace {

// Query rows per task: enough for the GEMM micro-kernel, few enough that a
// 512-token batch still makes Hq * 8 tasks.
constexpr int64_t kTokens = 64;
// Query rows from which the scores go through gemm_xwt.
constexpr int64_t kPackedRows = 8;

// The additive mask of a block: element (r, j) at m[r * rs + j * cs].
struct MaskRows {
  const float* m = nullptr;
  int64_t rs = 0, cs = 0;
};

// Row r of scores [rows, len] becomes the softmax of scale * s (+ mask) over
// its visible keys: all `len`, or [0, first + r] when causal (the query at
// position first + r); the keys after those become 0, so the whole block
// multiplies V at once.
void softmax_rows(float* scores, int64_t rows, int64_t len, bool causal,
                  int64_t first, float scale, const MaskRows& mask) {
  for (int64_t r = 0; r < rows; ++r) {
    float* s = scores + r * len;
    const int64_t visible = causal ? std::min(len, first + r + 1) : len;
    if (mask.m != nullptr) {
      const float* m = mask.m + r * mask.rs;
      for (int64_t j = 0; j < visible; ++j)
        s[j] = s[j] * scale + m[j * mask.cs];
      float top = s[0];
      for (int64_t j = 1; j < visible; ++j) top = std::max(top, s[j]);
      for (int64_t j = 0; j < visible; ++j) s[j] -= top;
    } else {
      // softmax(scale * s) with scale > 0: exp(scale * (s - max s)) / sum.
      float top = s[0];
      for (int64_t j = 1; j < visible; ++j) top = std::max(top, s[j]);
      for (int64_t j = 0; j < visible; ++j) s[j] = (s[j] - top) * scale;
    }
    simd::unary(UnaryOp::exp, DType::f32, s, s, visible, {});
    float sum = 0.0f;
    for (int64_t j = 0; j < visible; ++j) sum += s[j];
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j < visible; ++j) s[j] *= inv;
    std::fill(s + visible, s + len, 0.0f);
  }
}

// The tensor itself when its last axis is dense, else a dense copy.
Tensor rows_dense(const Tensor& t) {
  return t.strides()[3] == 1 || t.shape(3) <= 1 ? t : t.contiguous();
}

}  // namespace

void Backend::attention(const Tensor& q_in, const Tensor& k_in,
                        const Tensor& v_in, const Tensor* mask,
                        const AttentionParams& p, Tensor& out) {
  if (!fused_ || q_in.dtype() != DType::f32 || out.strides()[3] != 1) {
    return nascent::Backend::attention(q_in, k_in, v_in, mask, p, out);
  }
  const Tensor q = rows_dense(q_in), k = rows_dense(k_in), v = rows_dense(v_in);
  const int64_t nb = q.shape(0), hq = q.shape(1), lq = q.shape(2);
  const int64_t d = q.shape(3), hkv = k.shape(1), lk = k.shape(2);
  const int64_t dv = v.shape(3), group = hq / hkv;
  const auto& qs = q.strides();
  const auto& ks = k.strides();
  const auto& vs = v.strides();
  const auto& os = out.strides();
  const float* qp = data_ptr<const float>(q);
  const float* kp = data_ptr<const float>(k);
  const float* vp = data_ptr<const float>(v);
  float* op = data_ptr<float>(out);
  const float* mp = mask != nullptr ? data_ptr<const float>(*mask) : nullptr;
  const int64_t blocks = (lq + kTokens - 1) / kTokens;
  const float scale = float(p.scale);
  parallel_for(nb * hq * blocks, 1, [&](int64_t t0, int64_t t1) {
    thread_local std::vector<float> scores;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / (hq * blocks), h = t / blocks % hq;
      const int64_t i0 = (t % blocks) * kTokens;
      const int64_t rows = std::min(kTokens, lq - i0);
      // The block's first query sits at position first; keys it and the
      // block's last query see.
      const int64_t first = lk - lq + i0;
      const int64_t len = p.causal ? first + rows : lk;
      const float* qb = qp + b * qs[0] + h * qs[1] + i0 * qs[2];
      const float* kb = kp + b * ks[0] + (h / group) * ks[1];
      const float* vb = vp + b * vs[0] + (h / group) * vs[1];
      float* ob = op + b * os[0] + h * os[1] + i0 * os[2];
      if (scores.size() < size_t(rows * len)) scores.resize(size_t(rows * len));
      // scores = q block @ K[0:len]^T. For a prompt's block, x @ W^T with
      // the keys as W (gemm_xwt packs them into panels; as a GEMM with a
      // transposed B, 64-deep dot products spent half their time on
      // horizontal sums); for a few rows (generation) the GEMM's mat-vec
      // path, which packs nothing.
      if (rows >= kPackedRows) {
        gemm_xwt(DType::f32, qb, qs[2], kb, ks[2], scores.data(), len, rows,
                 len, d);
      } else {
        GemmArgs g;
        g.m = rows;
        g.n = len;
        g.k = d;
        g.rsa = qs[2];
        g.csa = 1;
        g.rsb = 1;
        g.csb = ks[2];
        g.ldc = len;
        gemm_f32(g, qb, kb, scores.data());
      }
      MaskRows m;
      if (mp != nullptr) {
        const auto& ms = mask->strides();
        m = {mp + b * ms[0] + h * ms[1] + i0 * ms[2], ms[2], ms[3]};
      }
      softmax_rows(scores.data(), rows, len, p.causal, first, scale, m);
      // out block = probabilities @ V[0:len].
      GemmArgs o;
      o.m = rows;
      o.n = dv;
      o.k = len;
      o.rsa = len;
      o.csa = 1;
      o.rsb = vs[2];
      o.csb = 1;
      o.ldc = os[2];
      gemm_f32(o, scores.data(), vb, ob);
    }
  });
}

}  // namespace nascent::cpu
