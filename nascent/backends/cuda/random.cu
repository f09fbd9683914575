// uniform, normal and bernoulli: core's Philox-4x32-10 definition
// (core/random.h) on the device, one counter block of four values per
// thread, so a seed gives the CPU's numbers. Uniforms match bit for bit;
// Box-Muller's log and cos/sin are computed in double and rounded to float,
// which gives the correctly rounded values glibc's logf/cosf/sinf return
// (CUDA's float versions may differ by an ulp or two).
#include "nascent/backends/cuda/device.cuh"
#include "nascent/core/random.h"

namespace nascent::cuda {

namespace {

NASCENT_D void philox(uint64_t counter, uint64_t key, uint32_t (&r)[4]) {
  uint32_t c0 = uint32_t(counter), c1 = uint32_t(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    const uint32_t hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
    const uint32_t hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  r[0] = c0;
  r[1] = c1;
  r[2] = c2;
  r[3] = c3;
}

NASCENT_D float unit_float(uint32_t x) {
  return float(x >> 8) * (1.0f / 16777216.0f);
}

template <class T>
__global__ void random_kernel(T* out, int64_t n, uint64_t seed, uint64_t offset,
                              uint64_t blocks, int op, double a, double b) {
  const uint64_t first = offset / 4;
  for (uint64_t k = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < blocks;
       k += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t blk = first + k;
    uint32_t r[4];
    philox(blk, seed, r);
    float v[4];
#pragma unroll
    for (int l = 0; l < 4; ++l) v[l] = unit_float(r[l]);
    if (op == int(RandomOp::normal)) {
      constexpr float kTwoPi = 6.2831853071795864f;
      const float l0 = float(::log(double(1.0f - v[0])));
      const float l1 = float(::log(double(1.0f - v[2])));
      const float r0 = sqrtf(-2.0f * l0), r1 = sqrtf(-2.0f * l1);
      const double t1 = double(__fmul_rn(kTwoPi, v[1]));
      const double t3 = double(__fmul_rn(kTwoPi, v[3]));
      v[0] = __fmul_rn(r0, float(::cos(t1)));
      v[1] = __fmul_rn(r0, float(::sin(t1)));
      v[2] = __fmul_rn(r1, float(::cos(t3)));
      v[3] = __fmul_rn(r1, float(::sin(t3)));
    }
#pragma unroll
    for (int l = 0; l < 4; ++l) {
      const int64_t i = int64_t(blk * 4 + uint64_t(l) - offset);
      if (i < 0 || i >= n) continue;
      double x = v[l];
      if (op == int(RandomOp::uniform)) {
        x = __dadd_rn(a, __dmul_rn(b - a, x));
      } else if (op == int(RandomOp::normal)) {
        x = __dadd_rn(a, __dmul_rn(b, x));
      } else {
        x = x < a ? 1.0 : 0.0;
      }
      out[i] = from_f64<T>(x);
    }
  }
}

}  // namespace

void Backend::random(RandomOp op, const RandomParams& p, Tensor& out) {
  DeviceGuard guard(ctx_->device);
  const int64_t n = out.numel();
  if (n == 0) return;
  const uint64_t first = p.offset / 4;
  const uint64_t last = (p.offset + uint64_t(n) + 3) / 4;
  const uint64_t blocks = last - first;
  dispatch(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    random_kernel<T>
        <<<grid_for(int64_t(blocks), 256, 8192), 256, 0, ctx_->stream>>>(
            data_ptr<T>(out), n, p.seed, p.offset, blocks, int(op), p.a, p.b);
    check_launch(nascent::name(op));
  });
}

}  // namespace nascent::cuda
