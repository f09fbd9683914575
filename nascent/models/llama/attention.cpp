// Causal attention over the KV cache, fused: one task per (query head, block
// of tokens) computes the block's scores, softmax in place and the product
// with V straight into the output. The only scratch is a block's scores
// (kTokens x context floats per thread), not the [heads, n, context] scores
// and probabilities of the whole batch: for a 512-token prompt of TinyLlama
// those were 2 x 32 MiB at the peak of the resident set, plus two permuted
// copies of q and of the output.
#include <algorithm>
#include <cmath>
#include <vector>

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/gemm.h"
#include "nascent/backends/cpu/gemm_xwt.h"
#include "nascent/backends/cpu/simd.h"
#include "nascent/backends/cpu/thread_pool.h"
#include "nascent/models/llama/model_impl.h"

namespace nascent::llama::detail {

namespace {

// Query rows per task: enough for the GEMM micro-kernel, few enough that a
// 512-token batch still makes n_head * 8 tasks.
constexpr int64_t kTokens = 64;
// Query rows from which the scores go through gemm_xwt.
constexpr int64_t kPackedRows = 8;

// Row r of scores [rows, len] (query at position first + r) becomes the
// softmax of its visible keys [0, first + r] times `scale`; the keys after
// it become 0, so the whole block multiplies V at once.
void softmax_rows(float* scores, int64_t rows, int64_t len, int64_t first,
                  float scale) {
  for (int64_t r = 0; r < rows; ++r) {
    float* s = scores + r * len;
    const int64_t visible = first + r + 1;
    float top = s[0];
    for (int64_t j = 1; j < visible; ++j) top = std::max(top, s[j]);
    // softmax(scale * s) with scale > 0: exp(scale * (s - max s)) / sum.
    for (int64_t j = 0; j < visible; ++j) s[j] = (s[j] - top) * scale;
    cpu::simd::unary(UnaryOp::exp, DType::f32, s, s, visible, {});
    float sum = 0.0f;
    for (int64_t j = 0; j < visible; ++j) sum += s[j];
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j < visible; ++j) s[j] *= inv;
    std::fill(s + visible, s + len, 0.0f);
  }
}

}  // namespace

// q f32 [n, n_head * head_dim] (contiguous, RoPE applied); keys and values of
// positions [0, pos0 + n) are in the cache. Query head h uses key head
// h / group, as ggml's broadcasting matmul does.
Tensor CpuModel::attention(const Tensor& q, int64_t layer, int64_t pos0,
                           int64_t n) const {
  const Config& c = config_;
  const int64_t group = c.n_head / c.n_head_kv, hd = c.head_dim;
  const int64_t width = c.n_head * hd;
  Tensor out = Tensor::empty({n, width}, DType::f32, *backend_);
  const Tensor qc = q.contiguous();
  const float* qp = cpu::data_ptr<const float>(qc);
  const float* kp = cpu::data_ptr<const float>(k_cache_[size_t(layer)]);
  const float* vp = cpu::data_ptr<const float>(v_cache_[size_t(layer)]);
  float* op = cpu::data_ptr<float>(out);
  const int64_t blocks = (n + kTokens - 1) / kTokens;
  const int64_t head_stride = n_ctx_ * hd;  // Of a key head in the cache.
  const float scale = 1.0f / std::sqrt(float(hd));
  cpu::parallel_for(c.n_head * blocks, 1, [&](int64_t t0, int64_t t1) {
    thread_local std::vector<float> scores;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t h = t / blocks, i0 = (t % blocks) * kTokens;
      const int64_t rows = std::min(kTokens, n - i0);
      const int64_t len = pos0 + i0 + rows;  // Keys the last row sees.
      const float* k = kp + (h / group) * head_stride;
      const float* v = vp + (h / group) * head_stride;
      if (scores.size() < size_t(rows * len)) scores.resize(size_t(rows * len));
      // scores = q[i0:i0 + rows, head h] @ K[0:len]^T. For a prompt's
      // block, x @ W^T with the keys as W (gemm_xwt packs them into
      // panels; as a GEMM with a transposed B, 64-deep dot products spent
      // half their time on horizontal sums); for a few rows (generation)
      // the GEMM's mat-vec path, which packs nothing.
      if (rows >= kPackedRows) {
        cpu::gemm_xwt(DType::f32, qp + i0 * width + h * hd, width, k, hd,
                      scores.data(), len, rows, len, hd);
      } else {
        cpu::GemmArgs g;
        g.m = rows;
        g.n = len;
        g.k = hd;
        g.rsa = width;
        g.csa = 1;
        g.rsb = 1;
        g.csb = hd;
        g.ldc = len;
        cpu::gemm_f32(g, qp + i0 * width + h * hd, k, scores.data());
      }
      softmax_rows(scores.data(), rows, len, pos0 + i0, scale);
      // out[i0:i0 + rows, head h] = probabilities @ V[0:len].
      cpu::GemmArgs o;
      o.m = rows;
      o.n = hd;
      o.k = len;
      o.rsa = len;
      o.csa = 1;
      o.rsb = hd;
      o.csb = 1;
      o.ldc = width;
      cpu::gemm_f32(o, scores.data(), v, op + i0 * width + h * hd);
    }
  });
  return out;
}

}  // namespace nascent::llama::detail
