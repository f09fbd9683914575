// RoPE on the CPU for f32: one task per block of tokens computes each
// token's cos and sin once, the way ggml does (theta multiplied up in
// float, pair by pair; the peer tests compare logits with llama.cpp's
// tightly), and turns every head of every leading index with them.
#include <cmath>
#include <vector>

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/thread_pool.h"

namespace nascent::cpu {

void Backend::rope(const Tensor& x, const Tensor& positions,
                   const Tensor* freq_factors, const RopeParams& p,
                   Tensor& out) {
  if (!fused_ || x.dtype() != DType::f32) {
    return nascent::Backend::rope(x, positions, freq_factors, p, out);
  }
  const Tensor xc = x.contiguous();
  const float* src = data_ptr<const float>(xc);
  float* dst = data_ptr<float>(out);
  const int32_t* pos = data_ptr<const int32_t>(positions);
  const float* ff =
      freq_factors != nullptr ? data_ptr<const float>(*freq_factors) : nullptr;
  const int64_t n = x.shape(-3), heads = x.shape(-2), hd = x.shape(-1);
  const int64_t outer = x.numel() / (n * heads * hd);
  const int64_t half = p.dims / 2;
  const float theta_scale = std::pow(float(p.base), -2.0f / float(p.dims));
  const float freq_scale = 1.0f / float(p.scale);
  const float sign = p.inverse ? -1.0f : 1.0f;
  const bool norm = p.mode == RopeMode::norm;
  parallel_for(
      n, std::max<int64_t>(1, 4096 / std::max<int64_t>(outer * heads * hd, 1)),
      [&](int64_t t0, int64_t t1) {
        std::vector<float> cs(size_t(2 * half));
        for (int64_t t = t0; t < t1; ++t) {
          float theta = float(pos[t]);
          for (int64_t i = 0; i < half; ++i) {
            const float th =
                freq_scale * (theta / (ff != nullptr ? ff[i] : 1.0f));
            cs[size_t(2 * i)] = std::cos(th);
            cs[size_t(2 * i + 1)] = sign * std::sin(th);
            theta *= theta_scale;
          }
          for (int64_t o = 0; o < outer; ++o) {
            for (int64_t h = 0; h < heads; ++h) {
              const int64_t base = ((o * n + t) * heads + h) * hd;
              const float* a = src + base;
              float* y = dst + base;
              for (int64_t i = 0; i < half; ++i) {
                const int64_t i0 = norm ? 2 * i : i;
                const int64_t i1 = norm ? 2 * i + 1 : i + half;
                const float c = cs[size_t(2 * i)], s = cs[size_t(2 * i + 1)];
                const float x0 = a[i0], x1 = a[i1];
                y[i0] = x0 * c - x1 * s;
                y[i1] = x0 * s + x1 * c;
              }
              for (int64_t i = p.dims; i < hd; ++i) y[i] = a[i];
            }
          }
        }
      });
}

}  // namespace nascent::cpu
