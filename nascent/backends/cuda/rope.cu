// RoPE on the GPU for f32, in one kernel: each thread turns one pair of one
// head. Its angle is computed as the CPU's fused kernel computes it (theta
// multiplied up in float pair by pair, cpu/rope.cpp), so both backends turn
// by the same angles (cos and sin within 2 ulp of the CPU's), and the
// composed default's dozen launches become one. Other dtypes take the
// composed default.
#include <cmath>

#include "nascent/backends/cuda/device.cuh"

namespace nascent::cuda {

namespace {

struct RopeArgs {
  const float* x = nullptr;
  float* y = nullptr;
  const int32_t* pos = nullptr;
  const float* freq = nullptr;  // Null: all factors 1.
  int64_t rows = 0;             // outer * n * heads
  int64_t heads = 0, n = 0, head_dim = 0, half = 0;
  float theta_scale = 1.0f, freq_scale = 1.0f, sign = 1.0f;
  bool norm = true;  // Pairs (2i, 2i + 1); else (i, i + half) (NEOX).
};

__global__ void rope_kernel(RopeArgs a) {
  const int64_t width = a.head_dim - a.half;  // Pairs, then passed values.
  const int64_t total = a.rows * width;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = e / width, i = e % width;
    const float* x = a.x + row * a.head_dim;
    float* y = a.y + row * a.head_dim;
    if (i >= a.half) {
      // Values past the rotated dims pass through.
      const int64_t j = i + a.half;
      y[j] = x[j];
      continue;
    }
    float theta = float(a.pos[(row / a.heads) % a.n]);
    for (int64_t p = 0; p < i; ++p) theta = __fmul_rn(theta, a.theta_scale);
    const float f = a.freq != nullptr ? a.freq[i] : 1.0f;
    const float th = __fmul_rn(a.freq_scale, __fdiv_rn(theta, f));
    float sn, c;
    sincosf(th, &sn, &c);
    const float s = __fmul_rn(a.sign, sn);
    const int64_t i0 = a.norm ? 2 * i : i, i1 = a.norm ? 2 * i + 1 : i + a.half;
    const float x0 = x[i0], x1 = x[i1];
    y[i0] = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s));
    y[i1] = __fadd_rn(__fmul_rn(x0, s), __fmul_rn(x1, c));
  }
}

}  // namespace

void Backend::rope(const Tensor& x, const Tensor& positions,
                   const Tensor* freq_factors, const RopeParams& p,
                   Tensor& out) {
  if (x.dtype() != DType::f32) {
    return nascent::Backend::rope(x, positions, freq_factors, p, out);
  }
  DeviceGuard guard(ctx_->device);
  const Tensor xc = contiguous(*this, x);
  RopeArgs a;
  a.x = data_ptr<float>(xc);
  a.y = data_ptr<float>(out);
  a.pos = data_ptr<int32_t>(positions);
  a.freq = freq_factors != nullptr ? data_ptr<float>(*freq_factors) : nullptr;
  a.n = x.shape(-3);
  a.heads = x.shape(-2);
  a.head_dim = x.shape(-1);
  a.rows = x.numel() / a.head_dim;
  a.half = p.dims / 2;
  a.theta_scale = std::pow(float(p.base), -2.0f / float(p.dims));
  a.freq_scale = 1.0f / float(p.scale);
  a.sign = p.inverse ? -1.0f : 1.0f;
  a.norm = p.mode == RopeMode::norm;
  const int64_t items = a.rows * (a.head_dim - a.half);
  // Small blocks: a decoding step has a few thousand pairs; spread them
  // over many SMs.
  constexpr int kThreads = 64;
  rope_kernel<<<grid_for(items, kThreads), kThreads, 0, ctx_->stream>>>(a);
  check_launch("rope");
}

}  // namespace nascent::cuda
