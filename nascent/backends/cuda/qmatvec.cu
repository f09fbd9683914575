// qmatmul for a few rows of x (decoding: one token per sequence): the GGML
// blocks are read where they lie, with no f32 copy of the weights.
//
// One warp computes two output columns for every x row: its lanes walk the
// two rows of W in "pieces" of 16 bytes of levels each (with the scales
// they need), decode them in registers and multiply them with x (f32, read
// through the L1; the same few rows serve every warp, and each x value a
// lane reads serves both rows), then the warp sums its lanes. 16-byte loads
// keep enough bytes in flight to approach the memory's bandwidth, which
// 4-byte loads did not. 4-bit and 6-bit levels become floats with a byte
// permute into the mantissa of 2^23 and one subtraction, which is exact
// and cheaper than an integer conversion. Sub-block scales multiply the
// partial sums, so the products are those of the decoded weights up to f32
// rounding, as the GEMM path's f32 products compute them.
//
// All the weights of one qmatmul call of one type go in one launch (q, k
// and v; gate and up): the grid covers their rows end to end.
#include <algorithm>
#include <vector>

#include "nascent/backends/cuda/qmatvec.h"
#include "nascent/backends/cuda/quant_pieces.cuh"

namespace nascent::cuda {

namespace {

using namespace pieces;

constexpr int kWarps = 4;  // Warps per block.
constexpr int kMaxWeights = 4;

struct Weight {
  const uint8_t* w = nullptr;
  int64_t ws = 0;  // Row stride in bytes.
  float* y = nullptr;
  int64_t ldy = 0;  // y's row stride (the weight's N).
};

struct Job {
  Weight w[kMaxWeights];
  int64_t first[kMaxWeights + 1] = {};  // Prefix sums of the weights' rows.
  int count = 0;
  const float* x = nullptr;
  int64_t k = 0;
};

// A warp takes two rows and loads both rows' pieces before it reads x, so
// each x value a lane reads serves both. (Four rows of eight lanes each,
// sharing x through the L1, measured no faster for q4_K and 25% slower for
// q8_0 on the H200.)
constexpr int kRowsPerWarp = 2;

// The weight and row of global row n of the job (n < its total).
NASCENT_D const uint8_t* row_of(const Job& job, int64_t n, int* weight,
                                int64_t* r) {
  int i = 0;
  while (n >= job.first[i + 1]) ++i;
  *weight = i;
  *r = n - job.first[i];
  return job.w[i].w + *r * job.w[i].ws;
}

template <QuantType T, int M>
__global__ void __launch_bounds__(kWarps * 32) matvec_kernel(Job job) {
  using R = Rows<T>;
  const int lane = int(threadIdx.x % 32);
  const int64_t total = job.first[job.count];
  const int64_t n0 =
      (int64_t(blockIdx.x) * kWarps + threadIdx.x / 32) * kRowsPerWarp;
  if (n0 >= total) return;  // The whole warp.
  const uint8_t* rows[kRowsPerWarp];
  int weight[kRowsPerWarp];
  int64_t r[kRowsPerWarp];
#pragma unroll
  for (int j = 0; j < kRowsPerWarp; ++j) {
    // A row past the end reads row n0 again and is not written.
    rows[j] = row_of(job, n0 + j < total ? n0 + j : n0, &weight[j], &r[j]);
  }
  float acc[M][kRowsPerWarp];
#pragma unroll
  for (int m = 0; m < M; ++m) {
#pragma unroll
    for (int j = 0; j < kRowsPerWarp; ++j) acc[m][j] = 0.0f;
  }
  const int64_t pieces = job.k / R::kValues;
#pragma unroll 2
  for (int64_t g = lane; g < pieces; g += 32) {
    typename R::Piece p[kRowsPerWarp];
#pragma unroll
    for (int j = 0; j < kRowsPerWarp; ++j) p[j] = R::load(rows[j], g);
#pragma unroll
    for (int m = 0; m < M; ++m) {
      float4 x[R::kX4];
#pragma unroll
      for (int i = 0; i < R::kX4; ++i) {
        x[i] = load_x4(job.x + m * job.k + R::x_col(g, i));
      }
#pragma unroll
      for (int j = 0; j < kRowsPerWarp; ++j) acc[m][j] += R::dot(p[j], x);
    }
  }
#pragma unroll
  for (int j = 0; j < kRowsPerWarp; ++j) {
    const Weight& w = job.w[weight[j]];
#pragma unroll
    for (int m = 0; m < M; ++m) {
      float v = acc[m][j];
#pragma unroll
      for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
      if (lane == 0 && n0 + j < total) w.y[m * w.ldy + r[j]] = v;
    }
  }
}

// Launches the kernel for m x rows, m in [1, M].
template <QuantType T, int M>
void launch(Context& ctx, const Job& job, int64_t m) {
  if constexpr (M > 1) {
    if (m < M) return launch<T, M - 1>(ctx, job, m);
  }
  const int64_t per_block = kWarps * kRowsPerWarp;
  const unsigned grid =
      unsigned((job.first[job.count] + per_block - 1) / per_block);
  matvec_kernel<T, M><<<grid, kWarps * 32, 0, ctx.stream>>>(job);
  check_launch("qmatmul");
}

}  // namespace

bool matvec_takes(QuantType type, const Tensor& w, int64_t m, int64_t k,
                  const float* x) {
  return m >= 1 && m <= kMatVecMaxRows && aligned16(x) &&
         pieces::reads(type, byte_ptr(w), w.strides()[0], k);
}

void matvec(Context& ctx, const float* x, int64_t m, int64_t k,
            std::span<const MatVecArg> args) {
  // Weights of one type share a launch, kMaxWeights at a time.
  std::vector<bool> done(args.size(), false);
  for (size_t i = 0; i < args.size(); ++i) {
    if (done[i]) continue;
    Job job;
    job.x = x;
    job.k = k;
    for (size_t j = i; j < args.size() && job.count < kMaxWeights; ++j) {
      if (done[j] || args[j].type != args[i].type) continue;
      done[j] = true;
      const Tensor& w = *args[j].w;
      job.w[job.count] = {reinterpret_cast<const uint8_t*>(byte_ptr(w)),
                          w.strides()[0], args[j].y, w.shape(0)};
      job.first[job.count + 1] = job.first[job.count] + w.shape(0);
      ++job.count;
    }
    if (job.first[job.count] == 0) continue;
    pieces::with_rows(args[i].type, [&](auto t) {
      launch<decltype(t)::value, int(kMatVecMaxRows)>(ctx, job, m);
    });
  }
}

}  // namespace nascent::cuda
